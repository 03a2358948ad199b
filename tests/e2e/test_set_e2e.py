"""IB-SM-MIB SETs end to end: `ibsnmp run` in a subprocess, net-snmp's
snmpset and snmptable. Path, multipath and trace queries on a fat-tree are
checked against a shortest-path search written here; every SET error is
provoked; configuration survives SIGKILL; read-only communities cannot write.
"""

from __future__ import annotations

import os
import subprocess
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.hop_distances import hop_distances
from tests.support.e2e import RunningAgent, assert_ok, ibsnmp_agent, varbinds
from tests.support.narrow import present
from tests.support.waiting import wait_for

from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.iba import NodeType, Rate
from ibsnmp.fabric.model import Fabric, Port

SPEC = "fat-tree:spines=2,leaves=3,hosts=2,faults=0,lmc=1"
SEED = 6
WRITE = ["-v2c", "-c", "private"]
READ = ["-v2c", "-c", "public"]
PREFIX = "254.128.0.0.0.0.0.0"  # fe80::/64, the simulated subnet prefix, as index octets
CREATE_AND_GO, CREATE_AND_WAIT, ACTIVE, DESTROY = 4, 5, 1, 6


@pytest.fixture(scope="module")
def fabric() -> Fabric:
    return build_fabric(SPEC, seed=SEED)


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningAgent]:
    state = tmp_path_factory.mktemp("state")
    with ibsnmp_agent("--write-community", "private", "--state-dir", str(state),
                      fabric=SPEC, seed=SEED) as running:
        yield running


# -- helpers ------------------------------------------------------------------------------------------


def snmpset(agent: RunningAgent, *args: str,
            options: list[str] = WRITE) -> subprocess.CompletedProcess[str]:
    return agent.snmp("snmpset", *options, "-r", "0", "-t", "5", *args)


def set_ok(agent: RunningAgent, *args: str) -> None:
    assert_ok(snmpset(agent, *args))


def set_error(agent: RunningAgent, *args: str, options: list[str] = WRITE) -> tuple[str, str]:
    """(error status, failed object) of a refused SET (-Ir: no client-side checks)."""
    result = snmpset(agent, "-Ir", *args, options=options)
    assert result.returncode != 0, result.stdout
    text = result.stdout + result.stderr
    reason = next(line for line in text.splitlines() if line.startswith("Reason:"))
    failed = next((line for line in text.splitlines() if line.startswith("Failed object:")), "")
    return reason.split()[1], failed.removeprefix("Failed object: ")


def table(agent: RunningAgent, name: str) -> list[dict[str, str]]:
    """snmptable rows: {column (without the table prefix): value}, with 'index'."""
    result = agent.snmp("snmptable", *READ, "-Cf", "|", "-Ci", "-Ob", "-Oe", f"IB-SM-MIB::{name}")
    lines = [line for line in assert_ok(result).splitlines() if "|" in line]
    if not lines:
        return []
    prefix = "ib" + name[2:].removesuffix("Table")
    header = [h.removeprefix(prefix) for h in lines[0].split("|")]
    return [dict(zip(header, line.split("|"))) for line in lines[1:]]


def session_rows(rows: list[dict[str, str]], session: int) -> list[dict[str, str]]:
    out = [r for r in rows if r["index"].split(".")[8] == str(session)]
    return sorted(out, key=lambda r: int(r["index"].split(".")[-1]))


def octets(value: str) -> bytes:
    return bytes.fromhex(value.strip('"').replace(" ", ""))


def gid_hex(port: Port) -> str:
    return f"{port.gid():032x}"


def hosts_on_two_leaves(fabric: Fabric) -> tuple[Port, Port]:
    hosts = [p for n in fabric.nodes.values() if n.is_ca for p in n.ports if p.lid]
    src = hosts[0]
    dst = next(p for p in hosts if present(p.remote).guid != present(src.remote).guid)
    return src, dst



def check_trace(fabric: Fabric, hops: list[dict[str, str]], src: Port, dst: Port) -> list[Port]:
    """The traced hops form a shortest path from src to dst, each cabled to the
    next through the ports named; returns the ports the packet leaves by."""
    nodes = [int.from_bytes(octets(h["NodeID"]), "big") for h in hops]
    assert nodes[0] == src.node_guid and nodes[-1] == dst.node_guid
    assert len(nodes) - 1 == hop_distances(fabric, src.node_guid)[dst.node_guid]
    leaving = [src]
    assert present(src.remote).guid == nodes[1]
    for hop, node, following in zip(hops[1:-1], nodes[1:-1], nodes[2:]):
        assert hop["NodeType"] == str(int(NodeType.SWITCH))
        entry, exit_ = int(hop["EntryPort"]), int(hop["ExitPort"])
        out = present(fabric.port(node, exit_))
        assert present(out.remote).guid == following
        leaving.append(out)
        assert entry != exit_
    assert hops[0]["NodeType"] == hops[-1]["NodeType"] == str(int(NodeType.CA))
    assert int.from_bytes(octets(hops[-1]["EntryPortID"]), "big") == dst.guid
    return leaving


def min_rate(ports: list[Port]) -> Rate:
    return Rate.from_gbps(min(p.info.rate_gbps for p in ports))


# -- path, multipath, trace ----------------------------------------------------------------------------


def test_path_and_trace_between_two_hosts(agent: RunningAgent, fabric: Fabric) -> None:
    src, dst = hosts_on_two_leaves(fabric)
    req = "IB-SM-MIB::ibSmPathReq"
    set_ok(agent, f"{req}RowStatus.{PREFIX}.101", "i", str(CREATE_AND_GO),
           f"{req}SrcLID.{PREFIX}.101", "i", str(src.lid),
           f"{req}DstLID.{PREFIX}.101", "i", str(dst.lid))
    (row,) = session_rows(table(agent, "ibSmPathResultTable"), 101)
    assert (int(row["SrcLID"]), int(row["DstLID"])) == (src.lid, dst.lid)
    assert octets(row["SrcGID"]) == src.gid().to_bytes(16, "big")
    assert octets(row["DstGID"]) == dst.gid().to_bytes(16, "big")
    set_ok(agent, f"IB-SM-MIB::ibSmTraceReqRowStatus.{PREFIX}.101", "i", str(CREATE_AND_GO))
    hops = session_rows(table(agent, "ibSmTraceResultTable"), 101)
    leaving = check_trace(fabric, hops, src, dst)
    assert int(row["MTU"]) == min(int(present(p.info.neighbor_mtu)) for p in leaving) - 1
    assert Rate(int(row["Rate"])).gbps == min_rate(leaving).gbps
    assert int(row["PktLifeTime"]) > 0 and octets(row["PKey"]) in (b"\xff\xff", b"\x7f\xff")
    (request,) = session_rows(table(agent, "ibSmPathReqTable"), 101)
    assert request["RowStatus"] == str(ACTIVE)
    set_ok(agent, f"{req}RowStatus.{PREFIX}.101", "i", str(DESTROY),
           f"IB-SM-MIB::ibSmTraceReqRowStatus.{PREFIX}.101", "i", str(DESTROY))
    assert session_rows(table(agent, "ibSmPathResultTable"), 101) == []


def test_every_lmc_path_by_gid(agent: RunningAgent, fabric: Fabric) -> None:
    src, dst = hosts_on_two_leaves(fabric)
    req = "IB-SM-MIB::ibSmPathReq"
    set_ok(agent, f"{req}RowStatus.{PREFIX}.102", "i", str(CREATE_AND_WAIT))
    set_ok(agent, f"{req}SrcGID.{PREFIX}.102", "x", gid_hex(src),
           f"{req}DstGID.{PREFIX}.102", "x", gid_hex(dst))
    set_ok(agent, f"{req}RowStatus.{PREFIX}.102", "i", str(ACTIVE))
    rows = session_rows(table(agent, "ibSmPathResultTable"), 102)
    pairs = [(int(r["SrcLID"]), int(r["DstLID"])) for r in rows]
    assert sorted(pairs) == sorted((s, d) for s in (src.lid, src.lid + 1)
                                   for d in (dst.lid, dst.lid + 1))
    assert [r["Preference"] for r in rows] == ["0", "0", "1", "1"]
    assert {r["NumbPath"] for r in rows} == {"4"}
    # The trace of a GID query covers every path, hop by hop.
    set_ok(agent, f"IB-SM-MIB::ibSmTraceReqRowStatus.{PREFIX}.102", "i", str(CREATE_AND_GO))
    hops = session_rows(table(agent, "ibSmTraceResultTable"), 102)
    hop_count = hop_distances(fabric, src.node_guid)[dst.node_guid] + 1
    assert len(hops) == 4 * hop_count
    for n in range(4):
        check_trace(fabric, hops[n * hop_count:(n + 1) * hop_count], src, dst)


def test_multipath_request(agent: RunningAgent, fabric: Fabric) -> None:
    src, dst = hosts_on_two_leaves(fabric)
    req = "IB-SM-MIB::ibSmMultiPathReq"
    set_ok(agent, f"{req}RowStatus.{PREFIX}.103", "i", str(CREATE_AND_GO),
           f"{req}SGIDCount.{PREFIX}.103", "i", "1", f"{req}DGIDCount.{PREFIX}.103", "i", "1",
           f"{req}SDGIDBlock1.{PREFIX}.103", "x", gid_hex(src) + gid_hex(dst),
           f"{req}IndepSel.{PREFIX}.103", "i", "1", f"{req}NumbPath.{PREFIX}.103", "i", "2")
    rows = session_rows(table(agent, "ibSmMultiPathResultTable"), 103)
    assert len(rows) == 2
    for row in rows:
        assert int(row["SrcLID"]) in (src.lid, src.lid + 1)
        assert int(row["DstLID"]) in (dst.lid, dst.lid + 1)
        assert row["Preference"] == "0"  # two spines: two independent paths


def test_unknown_lid_is_an_empty_result(agent: RunningAgent, fabric: Fabric) -> None:
    src, _ = hosts_on_two_leaves(fabric)
    req = "IB-SM-MIB::ibSmPathReq"
    set_ok(agent, f"{req}RowStatus.{PREFIX}.104", "i", str(CREATE_AND_GO),
           f"{req}SrcLID.{PREFIX}.104", "i", str(src.lid), f"{req}DstLID.{PREFIX}.104", "i", "4000")
    assert session_rows(table(agent, "ibSmPathResultTable"), 104) == []
    (request,) = session_rows(table(agent, "ibSmPathReqTable"), 104)
    assert request["RowStatus"] == str(ACTIVE)


# -- SET errors --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args,status", [
    (("IB-SM-MIB::ibSmConfigSweepInterval", "s", "ten"), "wrongType"),
    (("IB-SM-MIB::ibSmConfigSMKey", "x", "0102"), "wrongLength"),
    (("IB-SM-MIB::ibSmConfigDefaultLMC", "i", "8"), "wrongValue"),
    (("IB-SM-MIB::ibSmConfigPriority", "i", "16"), "wrongValue"),
    (("IB-SM-MIB::ibSmConfigMinUnicastLID", "i", "49151"), "inconsistentValue"),
    (("IB-SM-MIB::ibSmConfigOperStatus", "i", "3"), "notWritable"),
    (("IB-SM-MIB::ibSmConfigStatus", "i", str(DESTROY)), "inconsistentValue"),
], ids=lambda v: v if isinstance(v, str) else v[0].split("::")[1])
def test_config_set_errors(agent: RunningAgent, args: tuple[str, str, str], status: str) -> None:
    name, kind, value = args
    assert set_error(agent, f"{name}.{PREFIX}", kind, value)[0] == status


def test_row_set_errors(agent: RunningAgent) -> None:
    req = "IB-SM-MIB::ibSmPathReq"
    set_ok(agent, f"{req}RowStatus.{PREFIX}.110", "i", str(CREATE_AND_WAIT))
    cases = [
        ((f"{req}RowStatus.{PREFIX}.110", "i", str(CREATE_AND_GO)), "inconsistentValue"),
        ((f"{req}RowStatus.{PREFIX}.111", "i", str(ACTIVE)), "inconsistentValue"),
        ((f"{req}RowStatus.{PREFIX}.110", "i", "3"), "wrongValue"),  # notReady
        ((f"{req}DstLID.{PREFIX}.111", "i", "3"), "inconsistentName"),
        ((f"{req}RowStatus.1.2.3.4.5.6.7.8.110", "i", str(CREATE_AND_GO)), "noCreation"),
        ((f"{req}CreationTime.{PREFIX}.110", "t", "5"), "notWritable"),
        ((f"{req}SL.{PREFIX}.110", "i", "16"), "wrongValue"),
        ((f"{req}RowCompMask.{PREFIX}.110", "x", "01"), "wrongLength"),
        ((f"{req}DstLID.{PREFIX}.110", "u", "3"), "wrongType"),
        (("IB-SM-MIB::ibSmNodeInfoDescription.0", "s", "x"), "notWritable"),
        (("IB-SM-MIB::ibSmCaSLtoVLMapSL0toVL." + PREFIX + ".1.2.3.4.5.6.7.8.1", "i", "1"),
         "noCreation"),
    ]
    for args, status in cases:
        assert set_error(agent, *args)[0] == status, args
    set_ok(agent, f"{req}RowStatus.{PREFIX}.110", "i", str(DESTROY))


def test_a_failed_set_changes_nothing_and_names_the_varbind(agent: RunningAgent) -> None:
    sweep = f"IB-SM-MIB::ibSmConfigSweepInterval.{PREFIX}"
    before = assert_ok(agent.snmp("snmpget", *READ, "-Oqv", sweep)).strip()
    status, failed = set_error(
        agent, sweep, "i", str(int(before) + 5),
        f"IB-SM-MIB::ibSmPathReqRowStatus.{PREFIX}.120", "i", str(CREATE_AND_GO),
        f"IB-SM-MIB::ibSmConfigMaxUnicastLID.{PREFIX}", "i", "1")
    assert status == "inconsistentValue" and "ibSmConfigMaxUnicastLID" in failed
    status, failed = set_error(
        agent, sweep, "i", str(int(before) + 5),
        f"IB-SM-MIB::ibSmConfigPriority.{PREFIX}", "i", "99",
        f"IB-SM-MIB::ibSmConfigDefaultLMC.{PREFIX}", "i", "1")
    assert status == "wrongValue" and "ibSmConfigPriority" in failed  # the 2nd of 3
    assert assert_ok(agent.snmp("snmpget", *READ, "-Oqv", sweep)).strip() == before
    assert session_rows(table(agent, "ibSmPathReqTable"), 120) == []


def test_read_only_community_cannot_write(agent: RunningAgent) -> None:
    sweep = f"IB-SM-MIB::ibSmConfigSweepInterval.{PREFIX}"
    assert set_error(agent, sweep, "i", "12", options=READ)[0] == "noAccess"
    status, _ = set_error(agent, f"IB-SM-MIB::ibSmPathReqRowStatus.{PREFIX}.130", "i", "4",
                          options=READ)
    assert status == "noAccess"
    result = snmpset(agent, sweep, "i", "12", options=["-v1", "-c", "public"])
    assert result.returncode != 0 and "noSuchName" in result.stdout + result.stderr


def test_sessions_are_capped_and_expire(tmp_path: Path) -> None:
    req = "IB-SM-MIB::ibSmPathReqRowStatus"
    with ibsnmp_agent("--write-community", "private", "--max-sessions", "1",
                      "--session-lifetime", "2", fabric=SPEC, seed=SEED) as agent:
        set_ok(agent, f"{req}.{PREFIX}.1", "i", str(CREATE_AND_WAIT))
        assert set_error(agent, f"{req}.{PREFIX}.2", "i", str(CREATE_AND_WAIT))[0] == \
            "resourceUnavailable"
        wait_for(lambda: table(agent, "ibSmPathReqTable") == [], 10, "the session to expire")
        set_ok(agent, f"{req}.{PREFIX}.2", "i", str(CREATE_AND_WAIT))


# -- persistence --------------------------------------------------------------------------------------------


def assoc_oid(n: int) -> str:
    key = ".".join(["107"] * 16)  # "kkkk..."
    name = ".".join(str(ord(c)) for c in f"svc{n:03d}")
    return f"IB-SM-MIB::ibSmServiceAssocRowStatus.{PREFIX}.{key}.{name}"


def test_sigkill_loses_no_acknowledged_set(tmp_path: Path, fabric: Fabric) -> None:
    """A stream of SETs (service associations, and the sweep interval);
    SIGKILL in the middle; after a restart every acknowledged one is there."""
    sweep = f"IB-SM-MIB::ibSmConfigSweepInterval.{PREFIX}"
    acknowledged: list[int] = []
    attempted: list[int] = []
    stop = threading.Event()
    with ibsnmp_agent("--write-community", "private", "--state-dir", str(tmp_path),
                      fabric=SPEC, seed=SEED) as agent:

        def stream() -> None:
            for n in range(1, 200):
                if stop.is_set():
                    return
                attempted.append(n)
                result = agent.snmp("snmpset", *WRITE, "-r", "0", "-t", "2",
                                    assoc_oid(n), "i", str(CREATE_AND_GO), sweep, "i", str(n))
                if result.returncode != 0:
                    return  # the agent is gone
                acknowledged.append(n)

        writer = threading.Thread(target=stream)
        writer.start()
        deadline = time.monotonic() + 60
        while len(acknowledged) < 25 and time.monotonic() < deadline and writer.is_alive():
            time.sleep(0.005)
        os.kill(agent.process.pid, signal.SIGKILL)
        agent.process.wait()
        writer.join(timeout=30)
        stop.set()
    assert len(acknowledged) >= 25, "the stream did not get going"
    assert agent.process.returncode == -signal.SIGKILL
    with ibsnmp_agent("--write-community", "private", "--state-dir", str(tmp_path),
                      fabric=SPEC, seed=SEED) as again:
        rows = table(again, "ibSmServiceAssocTable")
        names = {r["Name"].strip('"') for r in rows}
        for n in acknowledged:
            assert f"svc{n:03d}" in names, n
        # The SET in flight may or may not have been saved; nothing else was.
        assert len(names) in (len(acknowledged), len(acknowledged) + 1)
        value = int(assert_ok(again.snmp("snmpget", *READ, "-Oqv", sweep)))
        assert value in (acknowledged[-1], acknowledged[-1] + 1)


V3_READER = ["-v3", "-l", "authPriv", "-u", "reader", "-a", "SHA-256", "-A", "reader-auth-key",
             "-x", "AES", "-X", "reader-priv-key"]
V3_ADMIN = ["-v3", "-l", "authPriv", "-u", "admin", "-a", "SHA-256", "-A", "admin-auth-key",
            "-x", "AES", "-X", "admin-priv-key"]
CONFIG = """
[[community]]
name = "public"

[[community]]
name = "rw"
access = "write"

[[user]]
name = "reader"
auth = "SHA256"
auth_key = "reader-auth-key"
priv = "AES"
priv_key = "reader-priv-key"

[[user]]
name = "admin"
auth = "SHA256"
auth_key = "admin-auth-key"
priv = "AES"
priv_key = "admin-priv-key"
access = "write"
"""


def test_config_survives_restart_and_shows_in_sma_mib(tmp_path: Path, fabric: Fabric) -> None:
    src, _ = hosts_on_two_leaves(fabric)
    guid = ".".join(str(b) for b in src.node_guid.to_bytes(8, "big"))
    sl2vl = f"IB-SM-MIB::ibSmCaSLtoVLMapSL5toVL.{PREFIX}.{guid}.{src.num}"
    weight = f"IB-SM-MIB::ibSmVLArbitrationWeight.{PREFIX}.{guid}.{src.num}.1"
    config = tmp_path / "agent.toml"
    config.write_text(CONFIG)
    state = ("--config", str(config), "--state-dir", str(tmp_path / "state"))
    with ibsnmp_agent(*state, fabric=SPEC, seed=SEED) as agent:
        assert_ok(agent.snmp("snmpset", "-v2c", "-c", "rw", sl2vl, "i", "6"))
        # SNMPv3: a user without write access gets noAccess, one with it writes.
        assert set_error(agent, weight, "i", "9", options=V3_READER)[0] == "noAccess"
        assert_ok(agent.snmp("snmpset", *V3_ADMIN, weight, "i", "9"))
    assert (tmp_path / "state" / "ibsnmp-state.json").exists()
    with ibsnmp_agent(*state, fabric=SPEC, seed=SEED) as agent:
        assert assert_ok(agent.snmp("snmpget", *READ, "-Oqv", sl2vl)).strip() == "6"
        assert assert_ok(agent.snmp("snmpget", *V3_READER, "-Oqv", weight)).strip() == "9"
        # SMA-MIB in the host's context: ibSmaVirtualLane (out port, in 255, SL 5 + 1),
        # ibSmaLowPriWeight (port, entry 1).
        context = f"public@{src.node_guid:016x}"
        values = varbinds(assert_ok(agent.snmp(
            "snmpget", "-v2c", "-c", context, "-On",
            f".1.3.6.1.3.117.3.1.7.1.1.4.{src.num}.255.6",
            f"SMA-MIB::ibSmaLowPriWeight.{src.num}.1")))
        assert [value for _, value in values] == ["INTEGER: 6", "INTEGER: 9"]

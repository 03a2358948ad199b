"""`ibsnmp run --provider live` under ibsim's preload, on an ibsim fabric that
OpenSM (LMC 1) brought up, compared with what infiniband-diags read from the
same fabric: nodes, ports (parallel links, a 1X link), forwarding tables,
P_Key, SL-to-VL and VL arbitration tables, PMA counters; a port disabled
mid-run, and an SM restart."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from tests.support.e2e import free_udp_port, net_snmp, stop
from tests.support.ibsim import NET_DIR, Fabric, ibsim_fabric, opensm_running
from tests.support.infiniband_diags import (
    IBROUTE_ENTRY,
    ibnetdiscover,
    labelled_values,
    run_diag,
    saquery_records,
)
from tests.support.trapd import TrapReceiver
from tests.support.paths import SUPPORT_DIR

PROBE = SUPPORT_DIR / "mad_probe.py"
LIVE_PROBE = SUPPORT_DIR / "live_probe.py"
POLL_S = 1.0
SWEEP_S = 4.0
WAIT_S = 30.0  # how long a change may take to show, on a loaded machine
LMC = 1
PORT_ACTIVE = 4
# ibnetdiscover's GUIDs of the nodes of live.net.
H1, H6 = 0x100000, 0x10000F
OPENSM_SM_KEY = 1  # OpenSM's default: the SA shows P_Key tables only to its holder
SUBNET_PREFIX = "254.128.0.0.0.0.0.0"  # fe80::/64 as IB-SM-MIB index octets
S1, S2, S3 = 0x200000, 0x200001, 0x200002
# SMA-MIB's IbPortState / IbPhysPortState count from noStateChange(1): IBA's code plus one.
MIB_ACTIVE, MIB_DISABLED, MIB_LINK_UP = 5, 4, 6
MIB_PHYS_STATES = {"Polling": 3, "Disabled": MIB_DISABLED, "LinkUp": MIB_LINK_UP}
MTU_CODES = {"256": 1, "512": 2, "1024": 3, "2048": 4, "4096": 5}
WIDTH_CODES = {"1X": 1, "4X": 2, "8X": 4, "12X": 8}

_T = TypeVar("_T")


class SubnetManager:
    """OpenSM on the fabric, stopped and started again on demand (on `host`: on
    that node, else on the fabric's first)."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        self._stack = ExitStack()

    def start(self, host: str | None = None) -> None:
        self._process = self._stack.enter_context(opensm_running(self.fabric, "--lmc", str(LMC), host=host))

    def stop(self) -> None:
        self._stack.close()

    def heavy_sweep(self) -> None:
        """SIGHUP: OpenSM sweeps the whole subnet at once, forgetting the
        nodes it cannot reach."""
        self._process.send_signal(signal.SIGHUP)

    def kill(self) -> None:
        """kill -9: nothing of its state is saved or unsubscribed."""
        self._process.kill()
        self._process.wait()
        self.stop()
        self._stack = ExitStack()


@dataclass
class Live:
    fabric: Fabric
    sm: SubnetManager
    agent: subprocess.Popen[bytes]
    address: str
    traps: TrapReceiver
    log: Path

    def walk(self, guid: int | None, oid: str) -> dict[str, str]:
        """`oid` walked in a node's context: instance suffix -> value (numbers, no labels)."""
        community = "public" if guid is None else f"public@{guid:016x}"
        done = net_snmp("snmpwalk", "-v2c", "-c", community, "-OQ", "-Oe", "-Os", "-Ob",
                        self.address, oid)
        assert done.returncode == 0, done.stderr
        return {name: value.strip('"') for name, _, value in
                (line.partition(" = ") for line in done.stdout.splitlines()) if value}

    def column(self, guid: int | None, name: str, table: str) -> dict[str, str]:
        """One column of a table: index -> value."""
        return {key.split(".", 1)[1]: value for key, value in self.walk(guid, table).items()
                if key.split(".", 1)[0] == name}


def until(what: str, read: Callable[[], _T], done: Callable[[_T], bool]) -> _T:
    deadline = time.monotonic() + WAIT_S
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: still {value!r} after {WAIT_S} s")
        time.sleep(0.2)


POLL_DONE = re.compile(r"live: poll (\d+) done")


def polls_done(log: Path) -> int:
    """The number of the last poll a --verbose agent logged as done (0: none yet)."""
    return max((int(n) for n in POLL_DONE.findall(log.read_text(errors="replace"))), default=0)


def wait_for_polls(log: Path, count: int) -> None:
    """Until `count` more polls than now are done: the first may have begun
    before this call, the others begin after it."""
    target = polls_done(log) + count
    until(f"poll {target} done", lambda: polls_done(log), lambda done: done >= target)


def port_state(fabric: Fabric, route: str, port: int) -> int:
    done = fabric.run([sys.executable, str(PROBE), "PORT_INFO", route, str(port)])
    assert done.returncode == 0, done.stderr
    return int(re.search(r'"PortState": (\d+)', done.stdout)[1])  # type: ignore[index]  # printed


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    workdir = tmp_path_factory.mktemp("ibsim-live")
    with ibsim_fabric(NET_DIR / "live.net", workdir) as fabric, ExitStack() as stack:
        sm = subnet_up(stack, fabric)
        traps = stack.enter_context(TrapReceiver(tmp_path_factory.mktemp("trapd")))
        sm_key = workdir / "sm_key"
        sm_key.write_text(f"{OPENSM_SM_KEY:#x}\n")
        sm_key.chmod(0o600)
        agent, address, log = agent_listening(
            stack, fabric, "--poll-interval", str(POLL_S), "--sweep-interval", str(SWEEP_S),
            "--trap-target", traps.address, "--write-community", "private",
            "--sm-key-file", str(sm_key), "--verbose")
        yield Live(fabric, sm, agent, address, traps, log)


def subnet_up(stack: ExitStack, fabric: Fabric) -> SubnetManager:
    """OpenSM on live.net (stopped with `stack`), once the subnet is up: the
    far end of the 1X link (H-6) is active."""
    sm = SubnetManager(fabric)
    stack.callback(sm.stop)
    sm.start()
    until("H-6 port 1", lambda: port_state(fabric, "0,1,8,2", 1), lambda s: s == PORT_ACTIVE)
    return sm


def agent_listening(stack: ExitStack, fabric: Fabric, *options: str
                    ) -> tuple[subprocess.Popen[bytes], str, Path]:
    """`live_agent` on a free port of 127.0.0.1 with a state directory of its
    own, logging to the fabric's agent.log: (process, address, log)."""
    state = stack.enter_context(tempfile.TemporaryDirectory(prefix="ibsnmp-state-"))
    address = f"127.0.0.1:{free_udp_port()}"
    log = fabric.workdir / "agent.log"
    agent = live_agent(stack, fabric, log, "--listen", address, "--state-dir", state, *options)
    return agent, address, log


def live_agent(stack: ExitStack, fabric: Fabric, log: Path, *options: str, host: str | None = None
               ) -> subprocess.Popen[bytes]:
    """`ibsnmp run --provider live` on `fabric` (attached to `host`, default its
    first node), serving once it returns; stopped with `stack`."""
    agent = subprocess.Popen([sys.executable, "-m", "ibsnmp", "run", "--provider", "live",
                              *options],
                             env=fabric.environment(host), cwd=fabric.workdir,
                             stdout=stack.enter_context(open(log, "wb")), stderr=subprocess.STDOUT)
    stack.callback(stop, agent)
    until("the agent's banner", lambda: (agent.poll(), log.read_text(errors="replace")),
          lambda seen: seen[0] is not None or "ibsnmp: serving" in seen[1])
    assert agent.poll() is None, log.read_text(errors="replace")
    return agent


def smpquery(live: Live, *args: str) -> dict[str, str]:
    return labelled_values(run_diag(live.fabric, "smpquery", *args))


def guid_of(octets: str) -> int:
    """net-snmp's "0:0:0:0:0:20:0:2" (a GUID as 8 octets) as a number."""
    return int("".join(f"{int(part, 16):02x}" for part in octets.split(":")), 16)


def lid_of(live: Live, guid: int) -> int:
    return int(live.walk(guid, "SMA-MIB::ibSmaPortLid")["ibSmaPortLid.0"])


def test_nodes_match_ibnetdiscover_and_smpquery(live: Live) -> None:
    nodes, _ = ibnetdiscover(live.fabric)
    served = live.column(None, "ibSmNodeInfoNodeGUID", "IB-SM-MIB::ibSmNodeInfoTable")
    assert len(served) == len(nodes) == 9
    for guid, (kind, ports, description) in nodes.items():
        ours = live.walk(guid, "SMA-MIB::ibSmaNodeInfo")
        theirs = smpquery(live, "nodeinfo", str(lid_of(live, guid)))
        assert ours["ibSmaNodeString.0"] == description
        assert int(ours["ibSmaNodeType.0"]) == kind
        assert int(ours["ibSmaNodeNumPorts.0"]) == int(theirs["NumPorts"]) == ports
        assert guid_of(ours["ibSmaNodeGuid.0"]) == int(theirs["Guid"], 16) == guid
        assert guid_of(ours["ibSmaNodePortGuid.0"]) == int(theirs["PortGuid"], 16)
        assert guid_of(ours["ibSmaSystemImageGuid.0"]) == int(theirs["SystemGuid"], 16)
        assert int(ours["ibSmaNodePartitionTableNum.0"]) == int(theirs["PartCap"])
        assert int(ours["ibSmaNodeBaseVersion.0"]) == int(theirs["BaseVers"])


def test_link_table_matches_ibnetdiscover(live: Live) -> None:
    _, links = ibnetdiscover(live.fabric)
    table = live.walk(None, "IB-SM-MIB::ibSmLinkTable")
    served = {}
    for name, value in table.items():
        column, _, index = name.partition(".")
        if column == "ibSmLinkToNodeGUID":
            octets = [int(part) for part in index.split(".")]
            # Index: subnet prefix (8 octets), from-node GUID (8), from-port.
            ref = (int.from_bytes(bytes(octets[8:16]), "big"), octets[16])
            to_port = table[f"ibSmLinkToPortNum.{index}"]
            served[ref] = (int(value.replace(" ", ""), 16), int(to_port))
    assert served == {ref: (peer, peer_port) for ref, (peer, peer_port, _, _) in links.items()}


def test_ports_match_smpquery_incl_parallel_and_1x_links(live: Live) -> None:
    _, links = ibnetdiscover(live.fabric)
    assert (S1, 5) in links and (S1, 7) in links  # the parallel links to S-2
    assert links[(S3, 2)][2] == WIDTH_CODES["1X"]  # the 1X link to H-6
    for (guid, port), (peer, peer_port, width, _) in links.items():
        ours = {name.split(".", 1)[0]: value for name, value in
                live.walk(guid, "SMA-MIB::ibSmaPortInfoTable").items()
                if name.endswith(f".{port}")}
        theirs = smpquery(live, "portinfo", str(lid_of(live, guid)), str(port))
        where = f"{guid:#x} port {port}"
        assert int(ours["ibSmaPortLinkWidthActive"]) == WIDTH_CODES[theirs["LinkWidthActive"]] \
            == width, where
        assert int(ours["ibSmaPortMtuCapacity"]) == MTU_CODES[theirs["MtuCap"]], where
        assert int(ours["ibSmaPortNeighborMtu"]) == MTU_CODES[theirs["NeighborMTU"]], where
        assert int(ours["ibSmaPortLidMaskCount"]) == int(theirs["LMC"]), where
        assert int(ours["ibSmaPortLinkState"]) == MIB_ACTIVE and theirs["LinkState"] == "Active"
        assert int(ours["ibSmaPortVlArbHighCapacity"]) == int(theirs["VLArbHighCap"]), where
        assert int(ours["ibSmaPortVlStallCount"]) == int(theirs["VLStallCount"]), where
        assert int(ours["ibSmaPortHeadOfQueueLife"]) == int(theirs["HoqLife"]), where
    # The CA ports carry the LMC OpenSM was started with; a switch's port 0 has LMC 0.
    h6 = live.walk(H6, "SMA-MIB::ibSmaPortInfoTable")
    assert int(h6["ibSmaPortLidMaskCount.1"]) == LMC


def lft_pair(live: Live, switch: int) -> tuple[dict[int, int], dict[int, int]]:
    """A switch's LFT as served (its own LID on port 0, as OpenSM programs it) and as ibroute reads it."""
    output = run_diag(live.fabric, "ibroute", str(lid_of(live, switch)))
    theirs = {int(m[1], 16): int(m[2])
              for m in map(IBROUTE_ENTRY.match, output.splitlines()) if m}
    ours = {int(index): int(port) for index, port in
            live.column(switch, "ibSmaLinForwEgressPort", "SMA-MIB::ibSmaLinForTable").items()}
    return ours, theirs


def test_forwarding_tables_match_ibroute(live: Live) -> None:
    for switch in (S1, S2, S3):
        ours, theirs = lft_pair(live, switch)
        assert ours == theirs, switch
        # LMC 1: each of the 7 active CA ports has two LIDs, each switch one.
        assert len(ours) == 2 * 7 + 3
        multicast = run_diag(live.fabric, "ibroute", "-M", str(lid_of(live, switch)))
        served = live.column(switch, "ibSmaMulForwMask", "SMA-MIB::ibSmaMulForTable")
        assert f"{len(served)} valid mlids dumped" in multicast


def test_pkey_sl2vl_and_vl_arbitration_tables_match_smpquery(live: Live) -> None:
    for guid, port in ((S3, 2), (H6, 1)):
        lid = str(lid_of(live, guid))
        pkeys = run_diag(live.fabric, "smpquery", "pkeys", lid, str(port))
        theirs = [int(v, 16) for line in pkeys.splitlines() if ":" in line and "0x" in line
                  for v in line.split(":", 1)[1].split()]
        index = "255" if guid == H6 else str(port)  # a CA's table is indexed 255 (the draft)
        table = live.walk(guid, "SMA-MIB::ibSmaPKeyTable")
        entries = {int(k.split(".")[2]): v for k, v in table.items()
                   if k.startswith(f"ibSmaPKeyMembership.{index}.")}
        bases = {int(k.split(".")[2]): int(v) for k, v in table.items()
                 if k.startswith(f"ibSmaPKeyBase.{index}.")}
        # Every entry up to the capacity is served; an unused one (0) has membership none.
        assert len(entries) == len(theirs) == 64
        assert bases == {i + 1: p & 0x7FFF for i, p in enumerate(theirs) if p & 0x7FFF}
        sl2vl = run_diag(live.fabric, "smpquery", "sl2vl", lid, str(port))
        row = next(line for line in sl2vl.splitlines() if line.startswith("ports:"))
        their_vls = [int(v) for v in row.split(":")[2].split("|") if v.strip()]
        lanes = live.column(guid, "ibSmaVirtualLane", "SMA-MIB::ibSmaSL2VLMapTable")
        out = str(port)
        our_vls = [int(lanes[f"{out}.255.{sl}" if guid == H6 else f"{out}.{out}.{sl}"])
                   for sl in range(1, 17)]
        assert our_vls == their_vls
        vlarb = run_diag(live.fabric, "smpquery", "vlarb", lid, str(port))
        rows = [[int(v, 16) for v in line.split(":")[1].split("|") if v.strip()]
                for line in vlarb.splitlines() if line.startswith(("VL ", "WEIGHT"))]
        low_vls, low_weights, high_vls, high_weights = rows
        for priority, vls, weights in (("Low", low_vls, low_weights),
                                       ("Hi", high_vls, high_weights)):
            served_vls = live.column(guid, f"ibSma{priority}PriVirtLane",
                                     f"SMA-MIB::ibSma{priority}PriVlArbTable")
            served_weights = live.column(guid, f"ibSma{priority}PriWeight",
                                         f"SMA-MIB::ibSma{priority}PriVlArbTable")
            assert [int(served_vls[f"{port}.{n + 1}"]) for n in range(len(vls))] == vls
            assert [int(served_weights[f"{port}.{n + 1}"]) for n in range(len(vls))] == weights


def test_counters_match_perfquery(live: Live) -> None:
    lid = str(lid_of(live, S2))
    before = labelled_values(run_diag(live.fabric, "perfquery", lid, "1"))
    wait_for_polls(live.log, 2)  # the second begins after `before`
    ours = {name.split(".")[0]: int(value) for table in ("Cntrs", "CntrsOpt")
            for name, value in live.walk(S2, f"PMA-MIB::ibPmaPort{table}Table").items()
            if name.endswith(".1")}
    after = labelled_values(run_diag(live.fabric, "perfquery", lid, "1"))
    assert ours["ibPmaSymbolErrCounter"] == int(after["SymbolErrorCounter"]) == 0
    assert ours["ibPmaLinkDownedCntr"] == int(after["LinkDownedCounter"])
    assert ours["ibPmaPortRcvErr"] == int(after["PortRcvErrors"])
    # The agent's own SMPs cross this link: the data counters only grow.
    for mib, diag in (("ibPmaPortXmitData", "PortXmitData"), ("ibPmaPortRcvPkts", "PortRcvPkts")):
        assert int(before[diag]) <= ours[mib] <= int(after[diag]), mib
        assert ours[mib] > 0


def test_interface_counters_are_perfquery_extended_values(live: Live) -> None:
    lid = str(lid_of(live, S2))
    before = labelled_values(run_diag(live.fabric, "perfquery", "-x", lid, "1"))
    done = live.fabric.run([sys.executable, str(LIVE_PROBE), "1", f"{S2:x}", "1"])
    after = labelled_values(run_diag(live.fabric, "perfquery", "-x", lid, "1"))
    assert done.returncode == 0, done.stderr
    ours = json.loads(done.stdout)["interface"]
    assert ours is not None  # ibsim's PMA keeps PortCountersExtended
    for field, diag, scale in (("out_octets", "PortXmitData", 4), ("in_octets", "PortRcvData", 4),
                               ("out_ucast_pkts", "PortUnicastXmitPkts", 1),
                               ("in_ucast_pkts", "PortUnicastRcvPkts", 1),
                               ("out_mcast_pkts", "PortMulticastXmitPkts", 1),
                               ("in_mcast_pkts", "PortMulticastRcvPkts", 1)):
        assert int(before[diag]) * scale <= ours[field] <= int(after[diag]) * scale, field
    assert ours["out_octets"] > 0


@pytest.mark.parametrize("guid", [None, S1, H6])
def test_every_table_answers_a_whole_walk(live: Live, guid: int | None) -> None:
    community = "public" if guid is None else f"public@{guid:016x}"
    done = net_snmp("snmpbulkwalk", "-v2c", "-c", community, "-Cr50", live.address,
                    ".1.3.6.1.3.117", timeout=300)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
    assert "SMA-MIB::ibSmaLinForwEgressPort" in done.stdout or guid != S1
    assert "PMA-MIB::ibPmaPortXmitData" in done.stdout or guid is None
    assert "Traceback" not in live.log.read_text(errors="replace")


def ca_lid(live: Live, guid: int | None) -> int:
    """Port 1's LID of a channel adapter (None: the agent's own)."""
    lids = live.walk(guid, "SMA-MIB::ibSmaPortLid")
    return int(lids.get("ibSmaPortLid.1", lids.get("ibSmaPortLid.0", "0")))


def session_rows(live: Live, table: str, session: int) -> dict[int, dict[str, str]]:
    """The rows of one request session in an IB-SM-MIB result table: result index -> row."""
    rows: dict[int, dict[str, str]] = {}
    prefix = f"{SUBNET_PREFIX}.{session}."
    for key, value in live.walk(None, f"IB-SM-MIB::{table}").items():
        column, _, index = key.partition(".")
        if index.startswith(prefix):
            rows.setdefault(int(index.removeprefix(prefix)), {})[column] = value
    return rows


def request_path(live: Live, session: int, src: int, dst: int) -> None:
    """An ibSmPathReqTable row (write community "private") asking for paths src -> dst."""
    req = "IB-SM-MIB::ibSmPathReq"
    done = net_snmp("snmpset", "-v2c", "-c", "private", live.address,
                    f"{req}RowStatus.{SUBNET_PREFIX}.{session}", "i", "4",
                    f"{req}SrcLID.{SUBNET_PREFIX}.{session}", "i", str(src),
                    f"{req}DstLID.{SUBNET_PREFIX}.{session}", "i", str(dst))
    assert done.returncode == 0, done.stderr


def test_path_and_trace_requests_hold_the_sas_answer(live: Live) -> None:
    src, dst = ca_lid(live, None), ca_lid(live, H6)
    (path,) = saquery_records(run_diag(live.fabric, "saquery", "--src-to-dst", f"{src}:{dst}"))
    request_path(live, 201, src, dst)
    rows = until("the SA's path record", lambda: session_rows(live, "ibSmPathResultTable", 201),
                 lambda found: len(found) == 1)
    (row,) = rows.values()
    assert (int(row["ibSmPathResultSrcLID"]), int(row["ibSmPathResultDstLID"])) == (src, dst)
    assert int(row["ibSmPathResultMTU"]) == (int(path["mtu"], 16) & 0x3F) - 1  # mtu256(0) is IBA 1
    assert int(row["ibSmPathResultRate"]) == int(path["rate"], 16) & 0x3F
    assert int(row["ibSmPathResultPktLifeTime"]) == int(path["pkt_life"], 16) & 0x3F
    assert int(row["ibSmPathResultSL"]) == int(path["sl"], 16)

    # The trace follows the switches' own forwarding tables, hop for hop as ibtracert.
    done = net_snmp("snmpset", "-v2c", "-c", "private", live.address,
                    f"IB-SM-MIB::ibSmTraceReqRowStatus.{SUBNET_PREFIX}.201", "i", "4")
    assert done.returncode == 0, done.stderr
    hops = until("the trace", lambda: session_rows(live, "ibSmTraceResultTable", 201),
                 lambda found: len(found) >= 2)
    served = [int(hops[n]["ibSmTraceResultNodeID"].replace(" ", ""), 16) for n in sorted(hops)]
    traced = run_diag(live.fabric, "ibtracert", str(src), str(dst))
    # ibtracert names the ends by node GUID, the switches between by their port GUID (the same).
    theirs = [int(guid, 16) for guid in
              re.findall(r"^(?:From \w+|\[\d+\] -> switch port|To \w+) \{(0x[0-9a-f]+)\}",
                         traced, re.MULTILINE)]
    assert served == theirs, traced


def test_sm_configuration_is_not_writable_with_a_live_sm(live: Live) -> None:
    done = net_snmp("snmpset", "-v2c", "-c", "private", live.address,
                    f"IB-SM-MIB::ibSmConfigSweepInterval.{SUBNET_PREFIX}", "i", "20")
    assert done.returncode != 0
    assert "notWritable" in done.stdout + done.stderr, done.stdout + done.stderr


SA_BACKEND_PROBE = SUPPORT_DIR / "sa_backend_probe.py"


def test_partitions_groups_and_services_come_from_the_sa(live: Live) -> None:
    # A host joins the IPoIB broadcast group and registers a service (the probe
    # does both): OpenSM shows a group to an SM_Key holder by its members.
    src, dst = ca_lid(live, None), ca_lid(live, H6)
    done = live.fabric.run([sys.executable, str(SA_BACKEND_PROBE), str(OPENSM_SM_KEY),
                            str(src), str(dst)])
    assert done.returncode == 0, done.stderr
    (member,) = saquery_records(run_diag(live.fabric, "saquery", "--smkey", str(OPENSM_SM_KEY),
                                         "-m"))
    served = until("the SA's multicast group after a sweep",
                   lambda: live.column(None, "ibSmMcastGroupMLID", "IB-SM-MIB::ibSmMcastGroupTable"),
                   lambda found: bool(found))
    assert [int(v.replace(" ", ""), 16) for v in served.values()] == [int(member["Mlid"], 16)]
    (service,) = saquery_records(run_diag(live.fabric, "saquery", "-S"))
    names = until("the SA's service", lambda: live.column(None, "ibSmServiceName",
                                                          "IB-SM-MIB::ibSmServiceTable"),
                  lambda found: bool(found))
    assert list(names.values()) == [service["ServiceName"]]
    # OpenSM's default partition (7fff: the key without the membership bit).
    keys = live.column(None, "ibSmPartitionKey", "IB-SM-MIB::ibSmPartitionTable")
    assert {value.replace(" ", "").lower() for value in keys.values()} == {"7fff"}, keys


def test_disabled_port_is_served_within_polls_and_trapped(live: Live) -> None:
    s1 = str(lid_of(live, S1))
    since = len(live.traps.received())
    phys: Callable[[], str] = lambda: (  # noqa: E731
        live.walk(S1, "SMA-MIB::ibSmaPortInfoTable")["ibSmaPortPhysState.5"])
    links: Callable[[], int] = lambda: len(live.column(None, "ibSmLinkSubnetPrefix",  # noqa: E731
                                    "IB-SM-MIB::ibSmLinkTable"))
    assert int(phys()) == MIB_LINK_UP and links() == 2 * 11  # each link from both ends
    run_diag(live.fabric, "ibportstate", s1, "5", "disable")
    try:
        # ibsim leaves the port's PortState Active: the physical state tells.
        until("S-1 port 5 served disabled", phys, lambda v: int(v) == MIB_DISABLED)
        assert smpquery(live, "portinfo", s1, "5")["PhysLinkState"] == "Disabled"
        until("the link served gone", links, lambda n: n == 2 * 10)
        got = live.traps.wait_for(2, timeout=WAIT_S, since=since)
        assert got[0].trap_oid.endswith("SMA-MIB::ibSmaPortLinkStateChange")
        assert s1 in [value.split()[-1] for _, value in got[0].varbinds], got[0]
        # Then IF-MIB's linkDown from S-1's port 5 (disabled: admin down too).
        (link_down,) = [r for r in got if r.trap_oid == "OID: IF-MIB::linkDown"]
        assert link_down.varbinds[2:5] == (("IF-MIB::ifIndex.5", "INTEGER: 5"),
                                          ("IF-MIB::ifAdminStatus.5", "INTEGER: down(2)"),
                                          ("IF-MIB::ifOperStatus.5", "INTEGER: down(2)"))
    finally:
        run_diag(live.fabric, "ibportstate", s1, "5", "enable")
    # Enabled, the port polls for its peer (ibsim trains it no further): served as read.
    until("S-1 port 5 served as smpquery reads it",
          lambda: (int(phys()), smpquery(live, "portinfo", s1, "5")["PhysLinkState"]),
          lambda pair: pair[0] == MIB_PHYS_STATES[pair[1]] != MIB_DISABLED)


def test_a_node_the_lid_route_no_longer_reaches_is_polled_by_directed_route(live: Live) -> None:
    # S-1 port 5 stays down after the test above and no SM sweep re-routed
    # around it: S-1 forwards S-2's LID into the dead link.
    s2 = str(lid_of(live, S2))
    assert live.fabric.run(["smpquery", "nodeinfo", s2]).returncode != 0
    done = live.fabric.run([sys.executable, str(LIVE_PROBE), "3"])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert all(len(ports) == result["ports"] for ports in result["refreshed"])
    assert any(port.startswith(f"{S2:x}:") for port in result["refreshed"][0])
    assert result["sweeps"] == 1  # no poll saw a change, so none swept again


def subscribed_traps(live: Live) -> set[int]:
    """The traps of the InformInfoRecords the master SM lists. ibsim passes on
    only the first 256 octets of an SA answer, so saquery sees the first two
    records only (OpenSM lists the newest first): the last two subscribed."""
    listed = run_diag(live.fabric, "saquery", "--smkey", str(OPENSM_SM_KEY), "-I")
    return {int(n) for n in re.findall(r"trap_num\.+(\d+)", listed)}


def test_agent_follows_a_subnet_manager_restart(live: Live) -> None:
    states: Callable[[], dict[str, str]] = lambda: live.column(  # noqa: E731
        None, "ibSmSMInfoSMState", "IB-SM-MIB::ibSmSMInfoTable")
    assert list(states().values()) == ["3"]  # OpenSM, master
    subscribed = subscribed_traps(live)
    assert subscribed
    live.sm.stop()
    until("no master SM served", states, lambda s: "3" not in s.values())
    assert live.walk(S3, "SMA-MIB::ibSmaNodeString")["ibSmaNodeString.0"] == "S-3"
    live.sm.start()
    until("the master SM served again", states, lambda s: list(s.values()) == ["3"])
    # The new SM knows no subscription of the old one's: the agent subscribed again.
    until("the agent's subscriptions at the new SM", lambda: subscribed_traps(live),
          lambda traps: traps == subscribed)
    # The new SM routes around S-1 port 5, still down: S-1's table follows.
    until("S-1's new routes served", lambda: lft_pair(live, S1), lambda pair: pair[0] == pair[1])
    assert 5 not in lft_pair(live, S1)[0].values()
    assert live.agent.poll() is None


def test_agent_subscribes_again_after_an_sm_restart_no_sweep_saw(live: Live, tmp_path: Path) -> None:
    """OpenSM killed (-9) and started again between two sweeps of an agent
    (one sweep an hour): after a poll the SA lists none of its InformInfoRecords,
    and it subscribes again. On H-2: subscriptions from the module's agent's
    port (H-1) would be the same records."""
    log = tmp_path / "agent.log"
    sm_key = tmp_path / "sm_key"
    sm_key.write_text(f"{OPENSM_SM_KEY:#x}\n")
    sm_key.chmod(0o600)
    text: Callable[[], str] = lambda: log.read_text(errors="replace")  # noqa: E731
    with ExitStack() as stack:
        state = stack.enter_context(tempfile.TemporaryDirectory(prefix="ibsnmp-state-"))
        live_agent(stack, live.fabric, log, "--listen", f"127.0.0.1:{free_udp_port()}",
                   "--state-dir", state, "--poll-interval", str(POLL_S), "--sweep-interval", "3600",
                   "--sm-key-file", str(sm_key), "--verbose", host="H-2")
        until("its subscriptions", text, lambda seen: "SA subscriptions: traps [1" in seen)
        until("a poll's check finds them listed", text,
              lambda seen: "SA lists the agent's subscriptions to traps [" in seen)
        assert "lists no InformInfoRecord" not in text(), text()
        live.sm.kill()
        live.sm.start()
        until("subscribed again", text, lambda seen: "subscribing again" in seen)
        # The line comes once the SA has taken the subscriptions: after the warning.
        until("the second subscription", text,
              lambda seen: seen.count("SA subscriptions: traps [1") == 2)
        assert "reopening the client there" not in text(), text()  # no sweep saw the restart
    until("subscriptions at the new SM", lambda: subscribed_traps(live), bool)


def test_no_umad_port_is_a_clear_error(live: Live) -> None:
    done = live.fabric.run([sys.executable, "-m", "ibsnmp", "run", "--provider", "live",
                            "--ca", "nosuch0", "--listen", f"127.0.0.1:{free_udp_port()}"])
    assert done.returncode == 2
    assert "ibsnmp: provider live: cannot open nosuch0" in done.stderr
    # The same from the environment, as a container would set it.
    done = subprocess.run([sys.executable, "-m", "ibsnmp", "run", "--listen",
                           f"127.0.0.1:{free_udp_port()}"],
                          env=dict(live.fabric.environment(), IBSNMP_PROVIDER="live",
                                   IBSNMP_CA="nosuch1", IBSNMP_PORT="2"),
                          cwd=live.fabric.workdir, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "ibsnmp: provider live: cannot open nosuch1, port 2" in done.stderr

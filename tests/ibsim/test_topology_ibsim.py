"""The topology provider against the real stack: ibsim, OpenSM and
infiniband-diags on one fabric (tests/data/ibsim/topology.net: parallel
links, a dual-homed host, a 1X link, LMC 1).

`ibnetdiscover` and OpenSM's LFT dump are taken from the running fabric and
served with `ibsnmp run --provider topology`; every value served is compared
with what smpquery and ibroute read from the fabric itself, and what the
dump does not carry must have no instance although the fabric has it.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.support.e2e import RunningAgent, ibsnmp_agent, net_snmp
from tests.support.narrow import present
from tests.support.ibsim import NET_DIR, Fabric, ibsim_fabric, opensm_running
from tests.support.infiniband_diags import ibroute, labelled_values, run_diag, smpquery_node_info

from ibsnmp.fabric.ibnetdiscover_read import load_topology
from ibsnmp.fabric.model import Fabric as Snapshot

SUBNET_UP_TIMEOUT = 60.0
PREFIX = "254.128.0.0.0.0.0.0"
SWITCHES = {0x200000: "0,1", 0x200001: "0,2", 0x200002: "0,1,8"}  # directed routes from H-1
WIDTHS = {"1X": 1, "4X": 2, "8X": 4, "12X": 8, "2X": 16}
STATES = {"Down": 1, "Initialize": 2, "Armed": 3, "Active": 4}


@dataclass(frozen=True)
class Served:
    fabric: Fabric  # the ibsim fabric, for the diags
    snapshot: Snapshot  # the dump as ibsnmp reads it
    agent: RunningAgent


def guid_index(guid: int) -> str:
    return ".".join(str(octet) for octet in guid.to_bytes(8, "big"))


def get(agent: RunningAgent, *names: str, community: str = "public") -> dict[str, str]:
    """snmpget of each name: its value, or 'No Such Instance ...'."""
    result = net_snmp("snmpget", "-v2c", "-c", community, "-Oqv", "-Ot", "-Oe", agent.address, *names)
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr
    return dict(zip(names, result.stdout.splitlines(), strict=True))


def subnet_routed(fabric: Fabric, dump: Path) -> bool:
    """OpenSM has routed the whole fabric: every switch's table is dumped
    and the farthest HCA (H-6, behind S-3) has its LID."""
    if not dump.exists() or dump.read_text().count("lids dumped") < 3:
        return False
    done = fabric.run(["smpquery", "-D", "portinfo", "0,1,8,2", "1"])
    return done.returncode == 0 and labelled_values(done.stdout).get("LinkState") == "Active"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    work = tmp_path_factory.mktemp("topology-ibsim")
    dumps = work / "osm-dump"
    dumps.mkdir()
    with ibsim_fabric(NET_DIR / "topology.net", work) as fabric:
        # -D 0x43: ERROR, INFO and ROUTING, which makes OpenSM write its LFT dump.
        with opensm_running(fabric, "-l", "1", "-D", "0x43", "--dump_files_dir", str(dumps)):
            deadline = time.monotonic() + SUBNET_UP_TIMEOUT
            while not subnet_routed(fabric, dumps / "opensm-lfts.dump"):
                if time.monotonic() > deadline:
                    pytest.fail(f"OpenSM did not route the subnet in {SUBNET_UP_TIMEOUT} s")
                time.sleep(0.5)
            topology = work / "fabric.topo"
            topology.write_text(run_diag(fabric, "ibnetdiscover"))
            lfts = work / "opensm-lfts.dump"
            shutil.copy(dumps / "opensm-lfts.dump", lfts)
            sminfo = run_diag(fabric, "sminfo")
            sm_guid = sminfo.split("sm guid ", 1)[1].split(",", 1)[0]
            with ibsnmp_agent("--provider", "topology", "--topology", str(topology),
                              "--lft-dump", str(lfts), "--sm-guid", sm_guid) as agent:
                yield Served(fabric, load_topology(topology), agent)


def test_the_dump_names_no_sm(served: Served) -> None:
    # OpenSM runs on H-1 port 1 (IsSM in its CapabilityMask), but ibnetdiscover
    # prints no capability mask and no SMInfo: the SM is named by --sm-guid.
    h1 = present(served.snapshot.nodes[0x100000].port(1))
    assert "IsSM" in run_diag(served.fabric, "smpquery", "portinfo", str(h1.lid), "1")
    assert served.snapshot.sms == ()
    index = guid_index(present(h1.guid))
    (sm,) = get(served.agent, f"IB-SM-MIB::ibSmSMInfoPriority.{PREFIX}.{index}").values()
    assert sm == "0"  # OpenSM's priority, from the SM that --sm-guid named


def test_linear_forwarding_tables_are_opensms(served: Served) -> None:
    for guid, route in SWITCHES.items():
        theirs = ibroute(served.fabric, route)
        result = net_snmp("snmpbulkwalk", "-v2c", "-c", f"public@{guid:016x}", "-Cr50", "-On",
                          served.agent.address, "SMA-MIB::ibSmaLinForwEgressPort")
        ours = {int(line.split(" = ")[0].rsplit(".", 1)[1]): int(line.rsplit(": ", 1)[1])
                for line in result.stdout.splitlines()}
        assert ours == theirs, hex(guid)
        own = served.snapshot.nodes[guid].ports[0].lid
        assert ours[own] == 0  # the switch's own LID: port 0, as OpenSM programs it
        # LinearFDBTop is the dump's range, which is what the switch reports.
        top = labelled_values(run_diag(served.fabric, "smpquery", "-D", "switchinfo", route))
        assert get(served.agent, "SMA-MIB::ibSmaSwLinearFdbTop.0", community=f"public@{guid:016x}") == {
            "SMA-MIB::ibSmaSwLinearFdbTop.0": top["LinearFdbTop"]}


def test_parallel_links_follow_the_sms_choice(served: Served) -> None:
    # S-1 reaches S-2's LIDs over port 5 or port 7: whichever OpenSM chose is served.
    s2_lid = served.snapshot.nodes[0x200001].ports[0].lid
    theirs = ibroute(served.fabric, SWITCHES[0x200000])[s2_lid]
    assert theirs in (5, 7)
    value = get(served.agent, f"SMA-MIB::ibSmaLinForwEgressPort.{s2_lid}", community="public@0000000000200000")
    assert list(value.values()) == [str(theirs)]


def test_node_info_present_values_equal_smpquery(served: Served) -> None:
    for guid, node in served.snapshot.nodes.items():
        lid = node.management_port.lid
        theirs = smpquery_node_info(served.fabric, str(lid), directed=False)
        base = f"{PREFIX}.{guid_index(guid)}"
        ours = get(served.agent, f"IB-SM-MIB::ibSmNodeInfoNumPorts.{base}",
                   f"IB-SM-MIB::ibSmNodeInfoType.{base}", f"IB-SM-MIB::ibSmNodeInfoSystemImageGUID.{base}",
                   f"IB-SM-MIB::ibSmNodeInfoRevision.{base}", f"IB-SM-MIB::ibSmNodeInfoPartitionCap.{base}")
        values = list(ours.values())
        assert int(values[0]) == theirs["NumPorts"] and int(values[1]) == theirs["NodeType"]
        assert int(values[2].replace(" ", "").strip('"'), 16) == theirs["SystemImageGUID"]
        # Revision and PartitionCap are not in the dump: no instance, though the node has them.
        assert all(v.startswith("No Such Instance") for v in values[3:]), (hex(guid), values)
        assert theirs["PartitionCap"] > 0


def test_port_info_present_values_equal_smpquery_absent_have_no_instance(served: Served) -> None:
    snapshot = served.snapshot
    for guid, node in snapshot.nodes.items():
        lid = node.management_port.lid
        for port in node.ports:
            theirs = labelled_values(run_diag(served.fabric, "smpquery", "portinfo", str(lid), str(port.num)))
            base = f"{PREFIX}.{guid_index(guid)}.{port.num}"
            names = [f"IB-SM-MIB::ibSmPortInfo{column}.{base}" for column in (
                "State", "LID", "LMC", "LinkWidthActive", "MTUCap", "NeighborMTU", "CapMask",
                "LinkWidthSupported", "VLCap")]
            state, our_lid, lmc, width, *absent = get(served.agent, *names).values()
            where = f"{guid:016x} port {port.num}"
            assert int(state) == STATES[theirs["LinkState"]], where
            if theirs["Lid"] == "0":  # a port without a link has no LID: no instance
                assert our_lid.startswith("No Such Instance"), where
            elif not node.is_switch or port.num == 0:
                assert (our_lid, lmc) == (theirs["Lid"], theirs["LMC"]), where
            if port.num and theirs["LinkState"] == "Active":
                assert int(width) == WIDTHS[theirs["LinkWidthActive"]], where
            # The fabric has these (MtuCap 2048 ...); the dump does not carry them.
            assert theirs["MtuCap"] and theirs["CapMask"]
            assert all(v.startswith("No Such Instance") for v in absent), (where, absent)

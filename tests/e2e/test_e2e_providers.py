"""`ibsnmp run --provider sysfs|topology` end to end: the CLI wiring of real sources."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import sysfs_trees
from tests.support.e2e import PROJECT_ROOT, assert_ok, ibsnmp_agent, varbinds
from tests.support.narrow import present

from ibsnmp.mib.targets import context_name
from ibsnmp.fabric.ibnetdiscover_read import load_topology

TOPOLOGY = PROJECT_ROOT / "tests" / "data" / "edr_hdr_router.topo"


def test_sysfs_host_is_served_per_device(tmp_path: Path) -> None:
    first, second = sysfs_trees.two_hcas(tmp_path)
    with ibsnmp_agent("--provider", "sysfs", "--sysfs-root", str(tmp_path),
                      "--poll-interval", "1") as agent:
        default = agent.snmp("snmpget", "-v2c", "-c", "public", "SMA-MIB::ibSmaNodeString.0")
        assert first.node_desc in assert_ok(default)
        other = agent.snmp("snmpget", "-v2c", "-c", f"public@{context_name(second.node_guid)}",
                           "SMA-MIB::ibSmaNodeString.0")
        assert second.node_desc in assert_ok(other)
        # A lone host knows no subnet manager: IB-SM-MIB is not served.
        sm = agent.snmp("snmpget", "-v2c", "-c", "public", "IB-SM-MIB::ibSmConfigPriority.0")
        assert "No Such Object" in sm.stdout


def test_topology_dump_is_served_in_ib_sm_mib_and_node_contexts() -> None:
    fabric = load_topology(TOPOLOGY)
    with ibsnmp_agent("--provider", "topology", "--topology", str(TOPOLOGY)) as agent:
        walk = varbinds(assert_ok(agent.snmp(
            "snmpbulkwalk", "-v2c", "-c", "public", "-Cr50", "IB-SM-MIB::ibSmNodeInfoDescription")))
        assert sorted(v.split(": ", 1)[1].strip('"') for _, v in walk) == sorted(
            present(n.description) for n in fabric.nodes.values())
        links = varbinds(assert_ok(agent.snmp(
            "snmpbulkwalk", "-v2c", "-c", "public", "-Cr50", "IB-SM-MIB::ibSmLinkToPortNum")))
        assert len(links) == 2 * len(fabric.links)
        # Without the SM's tables no forwarding table is served.
        switch = next(n for n in fabric.nodes.values() if n.is_switch)
        lft = agent.snmp("snmpbulkwalk", "-v2c", "-c", f"public@{context_name(switch.guid)}", "-Cr50",
                         "SMA-MIB::ibSmaLinForwEgressPort")
        assert varbinds(assert_ok(lft))[0][1].startswith("No Such Instance")


def test_every_mib_walks_without_error_over_a_dump_without_forwarding_tables() -> None:
    # Most values of a dump are absent: the walk must step over them, in every
    # kind of context, IB-SM-MIB included (an SM is named), and never fail.
    fabric = load_topology(TOPOLOGY)
    contexts = ["public"] + [f"public@{context_name(guid)}" for guid in (
        next(g for g, n in fabric.nodes.items() if n.is_switch),
        next(g for g, n in fabric.nodes.items() if n.is_ca),
        next(g for g, n in fabric.nodes.items() if not n.is_switch and not n.is_ca))]
    with ibsnmp_agent("--provider", "topology", "--topology", str(TOPOLOGY),
                      "--sm-guid", f"{fabric.local_node_guid:016x}") as agent:
        for community in contexts:
            walk = agent.snmp("snmpbulkwalk", "-v2c", "-c", community, "-Cr50", "-On", ".1.3.6.1.3.117")
            assert walk.returncode == 0 and not walk.stderr.strip(), (community, walk.stderr)
            lines = walk.stdout.splitlines()
            assert len(lines) > 20 and not any("No Such" in line or "Error" in line for line in lines)
        assert agent.process.poll() is None


def test_an_lft_dump_gives_the_switches_the_sms_tables() -> None:
    data = PROJECT_ROOT / "tests" / "data"
    with ibsnmp_agent("--provider", "topology", "--topology", str(data / "ibsim_ring.topo"),
                      "--lft-dump", str(data / "ibsim_ring-opensm-lfts.dump")) as agent:
        lft = varbinds(assert_ok(agent.snmp(
            "snmpbulkwalk", "-v2c", "-c", f"public@{context_name(0x200000)}", "-Cr50", "-On",
            "SMA-MIB::ibSmaLinForwEgressPort")))
        # As OpenSM programmed switch S-1 (LID 2): its own LID leaves by port 0.
        assert {int(name.rsplit(".", 1)[1]): int(value.split(": ")[1]) for name, value in lft} == {
            1: 1, 2: 0, 3: 7, 4: 8, 5: 2, 6: 7, 7: 8}


def test_bad_provider_arguments_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.topo"
    bad.write_text('Switch 36 "S-0002c90300a1b2c3" # "sw" enhanced port 0 lid 5 lmc 0\n[1] what\n')
    for args in (["--provider", "topology"],
                 ["--provider", "topology", "--topology", str(bad)],
                 ["--provider", "sysfs", "--sysfs-root", str(tmp_path / "none")]):
        run = subprocess.run([sys.executable, "-m", "ibsnmp", "run", "--listen", "127.0.0.1:0",
                              "--state-dir", str(tmp_path / "state"), *args],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 2, args
        assert run.stderr.strip().splitlines()[-1].startswith("ibsnmp: "), run.stderr

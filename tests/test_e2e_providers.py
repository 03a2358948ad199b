"""`ibsnmp run --provider sysfs|topology` end to end: the CLI wiring of real sources."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import sysfs_trees
from e2e import PROJECT_ROOT, assert_ok, ibsnmp_agent, object_name, varbinds

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
            n.description for n in fabric.nodes.values())
        links = varbinds(assert_ok(agent.snmp(
            "snmpbulkwalk", "-v2c", "-c", "public", "-Cr50", "IB-SM-MIB::ibSmLinkToPortNum")))
        assert len(links) == 2 * len(fabric.links)
        switch = next(n for n in fabric.nodes.values() if n.is_switch)
        lft = varbinds(assert_ok(agent.snmp(
            "snmpbulkwalk", "-v2c", "-c", f"public@{context_name(switch.guid)}", "-Cr50",
            "SMA-MIB::ibSmaLinForwEgressPort")))
        assert {object_name(name) for name, _ in lft} == {"SMA-MIB::ibSmaLinForwEgressPort"}
        # One entry per routed LID: every LID of each port's LMC block.
        lids = sum(1 << fabric.port_at(ref).lmc for ref in fabric.lid_map.values())
        assert len(lft) == lids > len(fabric.lid_map)


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

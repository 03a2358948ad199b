"""docs/collectd.md run as written: its snmp plugin configuration and the
agent's user for it, collectd checked, then in the foreground with the csv
plugin (at a 1 s interval rather than 10 s) until both nodes' ports have
values, then the page's `cat`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.e2e import net_snmp
from tests.support.guides import LEAF01, Guide, guide_agent, ran, sh, started, write_files
from tests.support.waiting import wait_for

pytestmark = pytest.mark.skipif(shutil.which("collectd") is None and not Path("/usr/sbin/collectd").exists(),
                                reason="collectd-core is not installed")

GUIDE = Guide("collectd.md")


def _values(path: Path) -> list[list[int]]:
    """The data lines of a csv file: epoch, rx, tx as whole numbers."""
    lines = path.read_text().splitlines() if path.exists() else []
    return [[int(float(field)) for field in line.split(",")] for line in lines[1:]]


def test_collectd_reads_each_nodes_ports_in_its_context(tmp_path: Path) -> None:
    check, run = GUIDE.script("collectd -t").splitlines()
    with guide_agent(GUIDE, tmp_path) as agent:
        write_files(GUIDE, agent.address, tmp_path, {"Interval 10": "Interval 1"})
        ran(sh(check, agent.address, tmp_path))
        csv = tmp_path / "tmp/ibsnmp-csv"
        with started(run, agent.address, tmp_path) as collectd:
            # leaf01 over SNMPv2c (public@GUID), spine01 over SNMPv3 (its context name).
            for node, port in (("leaf01", 5), ("spine01", 1)):
                wait_for(lambda: [f for f in csv.glob(f"{node}/snmp/if_octets-{node}_{port}-*")
                                  if len(_values(f)) >= 2],
                         30, f"two values of {node}/{port} (collectd: {(tmp_path / 'output').read_text()})")
            assert collectd.poll() is None
        now = net_snmp("snmpget", "-v2c", "-c", f"public@{LEAF01}", "-Oqv", agent.address,
                       "IF-MIB::ifHCInOctets.5", "IF-MIB::ifHCOutOctets.5").stdout.split()
        shown = ran(sh(GUIDE.script("cat "), agent.address, tmp_path))
    header, *rows = shown.splitlines()
    assert header == "epoch,rx,tx"
    values = [[int(float(field)) for field in row.split(",")] for row in rows]
    # The 64-bit counters of leaf01/5, as read: rising, never past what the agent says now.
    assert [row[1] for row in values] == sorted(row[1] for row in values)
    assert values[-1][1] <= int(now[0]) and values[-1][2] <= int(now[1])
    # Every port of both nodes, named by ifName; the unused ones too (their counters are 0).
    assert len(list(csv.glob("leaf01/snmp/if_octets-leaf01_*"))) == 36
    assert len(list(csv.glob("spine01/snmp/if_octets-spine01_*"))) > 1

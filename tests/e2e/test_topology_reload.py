"""The topology dump and the SM's forwarding tables are read again on SIGHUP
and when they change on disk; SETs stay, a broken file keeps the last good
snapshot, and SIGHUP never ends the agent."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from tests.support.e2e import RunningAgent, assert_ok, ibsnmp_agent
from tests.e2e.test_reload import wait_for_line

from ibsnmp.fabric import routing
from ibsnmp.fabric.ibnetdiscover_read import TopologyError
from ibsnmp.providers.topology import TopologyProvider, rereading
from tests.support.paths import DATA_DIR

DATA = DATA_DIR
RING = DATA / "ibsim_ring.topo"
LFTS = DATA / "ibsim_ring-opensm-lfts.dump"
S1 = 0x200000
H1_PORT = "0x100001"
PREFIX_INDEX = "254.128.0.0.0.0.0.0"
H4_NODE_INDEX = "0.0.0.0.0.16.0.9"  # node GUID 0x100009 as an IbGuid index


def copies(tmp_path: Path) -> tuple[Path, Path]:
    topology, lfts = tmp_path / "fabric.topo", tmp_path / "opensm-lfts.dump"
    shutil.copy(RING, topology)
    shutil.copy(LFTS, lfts)
    return topology, lfts


def rewrite(path: Path, text: str) -> None:
    """New content with a modification time that differs from the old one,
    however coarse the file system's clock."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))


# -- the provider ---------------------------------------------------------------------------------


def test_refresh_reads_both_files_and_keeps_the_last_good_on_error(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    topology, lfts = copies(tmp_path)
    provider = TopologyProvider(topology, lft_path=lfts)
    first = provider.snapshot
    assert routing.lft_port(first, S1, 7) == 8
    rewrite(lfts, LFTS.read_text().replace("0x0007 008 # Channel", "0x0007 007 # Channel", 1))
    assert provider.refresh("test") is True
    assert routing.lft_port(provider.snapshot, S1, 7) == 7  # OpenSM re-routed
    good = provider.snapshot
    text = LFTS.read_text()
    rewrite(lfts, text[: text.index("\n", 300) + 1])  # being rewritten: cut after a line
    with caplog.at_level(logging.INFO, "ibsnmp.providers.topology"):
        assert provider.refresh("test") is False
    assert provider.snapshot is good
    (line,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert line.startswith("topology not reloaded (test): ") and "the file is incomplete" in line
    assert line.endswith("the last good snapshot stays")
    with pytest.raises(TopologyError):  # reload() itself raises
        provider.reload()


def test_a_changed_file_is_read_once_it_has_settled(tmp_path: Path) -> None:
    topology, _ = copies(tmp_path)
    provider = TopologyProvider(topology, watch_interval=0.05)

    async def run() -> str | None:
        await provider.start()
        try:
            rewrite(topology, RING.read_text().replace('"H-4"', '"H-4 renamed"'))
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                node = provider.snapshot.nodes[0x100009]
                if node.description != "H-4":
                    return node.description
            return "not reloaded"
        finally:
            await provider.stop()

    assert asyncio.run(run()) == "H-4 renamed"


def test_the_sighup_reload_reads_the_files_before_the_configuration(tmp_path: Path) -> None:
    topology, _ = copies(tmp_path)
    provider = TopologyProvider(topology)
    calls: list[str | None] = []

    def load() -> str:
        calls.append(provider.snapshot.nodes[0x100009].description)
        return "settings"

    rewrite(topology, RING.read_text().replace('"H-4"', '"H-4 again"'))
    assert rereading(provider, load)() == "settings"
    assert calls == ["H-4 again"]
    assert rereading(object(), load) is load  # other providers: the configuration only


# -- the agent ------------------------------------------------------------------------------------


def node_description(agent: RunningAgent) -> str:
    result = agent.snmp("snmpget", "-v2c", "-c", "public", "-Oqv",
                        f"IB-SM-MIB::ibSmNodeInfoDescription.{PREFIX_INDEX}.{H4_NODE_INDEX}")
    return assert_ok(result).strip().strip('"')


def test_sighup_rereads_the_dump_keeps_sets_and_survives_a_bad_file(tmp_path: Path) -> None:
    topology, lfts = copies(tmp_path)
    with ibsnmp_agent("--provider", "topology", "--topology", str(topology), "--lft-dump", str(lfts),
                      "--sm-guid", H1_PORT, "--write-community", "private") as agent:
        priority = f"IB-SM-MIB::ibSmConfigPriority.{PREFIX_INDEX}"
        assert_ok(agent.snmp("snmpset", "-v2c", "-c", "private", priority, "=", "9"))
        rewrite(topology, RING.read_text().replace('"H-4"', '"H-4 after"'))
        os.kill(agent.process.pid, signal.SIGHUP)
        line = wait_for_line(agent, "topology reloaded (SIGHUP)")
        assert "7 nodes" in line and "forwarding tables of 3 switches" in line
        assert node_description(agent) == "H-4 after"
        # The SET is applied to the new snapshot as it was to the old.
        value = agent.snmp("snmpget", "-v2c", "-c", "public", "-Oqv", priority)
        assert assert_ok(value).strip() == "9"
        rewrite(topology, "garbage\n")
        os.kill(agent.process.pid, signal.SIGHUP)
        line = wait_for_line(agent, "topology not reloaded (SIGHUP)")
        assert "line 1" in line and "the last good snapshot stays" in line
        assert node_description(agent) == "H-4 after"
        assert agent.process.poll() is None

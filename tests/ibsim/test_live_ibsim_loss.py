"""`ibsnmp run --provider live` while ibsim drops MADs (its `Error` console
command): no node, row or context disappears while a switch loses 30% or
all of its MADs for a while; the log says what was kept and what it cost;
a switch cut off for longer than its confirmation is confirmed gone, and
one the SM forgets is confirmed gone at once."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from tests.ibsim.test_live_ibsim import agent_listening, subnet_up, until
from tests.support.e2e import net_snmp
from tests.support.ibsim import NET_DIR, Fabric, ibsim_fabric

POLL_S, SWEEP_S = 0.5, 3.0
S3 = 0x200002  # a leaf of live.net: H-4 and H-6 hang off it
NODES = 9  # live.net: three switches, six HCAs
SWEEP_LINE = re.compile(r"live: sweep in [\d.]+ s: (\d+) nodes \((\d+) kept from earlier sweeps\), "
                        r"(\d+) MADs, (\d+) timeouts, (\d+) retries")


def node_table(address: str) -> dict[int, str]:
    """IB-SM-MIB's node table: node GUID (the last 8 octets of the index) -> description."""
    done = net_snmp("snmpwalk", "-v2c", "-c", "public", "-OQ", "-Os", "-Ob", address,
                    "IB-SM-MIB::ibSmNodeInfoDescription")
    assert done.returncode == 0, done.stderr
    table = {}
    for name, _, value in (line.partition(" = ") for line in done.stdout.splitlines()):
        if value:
            octets = [int(part) for part in name.split(".")[-8:]]
            table[int.from_bytes(bytes(octets), "big")] = value.strip('"')
    return table


def node_string(address: str, guid: int) -> str | None:
    done = net_snmp("snmpget", "-v2c", "-c", f"public@{guid:016x}", "-Oqv", "-t", "2", "-r", "1",
                    address, "SMA-MIB::ibSmaNodeString.0")
    return done.stdout.strip().strip('"') if done.returncode == 0 else None


def symbol_errors(address: str, guid: int) -> int | None:
    """PMA-MIB's SymbolErrorCounter of port 1 in node `guid`'s context."""
    done = net_snmp("snmpget", "-v2c", "-c", f"public@{guid:016x}", "-Oqv", address,
                    "PMA-MIB::ibPmaSymbolErrCounter.1")
    return int(done.stdout) if done.returncode == 0 and done.stdout.strip().isdigit() else None


def sweeps(log: Path) -> list[tuple[int, ...]]:
    return [tuple(map(int, found)) for found in SWEEP_LINE.findall(log.read_text(errors="replace"))]


def more_sweeps(log: Path, count: int) -> list[tuple[int, ...]]:
    """Wait for `count` sweeps after those logged now; their figures."""
    seen = len(sweeps(log))
    return until(f"{count} more sweeps", lambda: sweeps(log), lambda now: len(now) >= seen + count)[seen:]


def lossy_agent(stack: ExitStack, fabric: Fabric, gone_after_sweeps: int
                ) -> tuple[subprocess.Popen[bytes], str, Path, Callable[[], str]]:
    """The agent with quick polls and sweeps and short MAD timeouts: (process,
    address, log, what the log says now)."""
    agent, address, log = agent_listening(
        stack, fabric, "--poll-interval", str(POLL_S), "--sweep-interval", str(SWEEP_S),
        "--mad-timeout", "0.05", "--gone-after-sweeps", str(gone_after_sweeps))
    return agent, address, log, lambda: log.read_text(errors="replace")


def test_mad_loss_at_a_leaf_keeps_every_node_row_and_context(tmp_path: Path) -> None:
    with ibsim_fabric(NET_DIR / "live.net", tmp_path, console=True) as fabric, ExitStack() as stack:
        subnet_up(stack, fabric)
        # Confirmation would take 30 s: longer than the 100% loss lasts here.
        agent, address, log, text = lossy_agent(stack, fabric, gone_after_sweeps=10)
        baseline = until("every node in the node table", lambda: node_table(address),
                         lambda table: len(table) == NODES)
        strings = {guid: node_string(address, guid) for guid in baseline}
        assert None not in strings.values()

        def all_served() -> None:
            assert node_table(address) == baseline
            for guid, string in strings.items():
                assert node_string(address, guid) == string, (f"{guid:016x}", text()[-3000:])

        fabric.command('Error "S-3" 30')
        lossy = more_sweeps(log, 2)
        all_served()
        assert all(nodes == NODES for nodes, *_ in lossy), lossy
        fabric.command('Error "S-3" 100')
        until("S-3 kept on old values", text, lambda seen: f"node {S3:016x} (S-3) did not answer" in seen)
        for figures in more_sweeps(log, 1):
            nodes, kept, _, timeouts, retries = figures
            assert nodes == NODES and kept >= 1 and timeouts > 0 and retries > 0, figures
        all_served()
        # A counter that changes while S-3 is cut off: its last good value stays
        # served, and the new one shows at the first poll after the loss stops.
        fabric.command('PerformanceSet "S-3"[1] PortCounters.SymbolErrorCounter=7')
        more_sweeps(log, 1)
        assert symbol_errors(address, S3) == 0
        fabric.command('Error "S-3" 0')
        stopped = time.monotonic()
        until("S-3's new counter value", lambda: symbol_errors(address, S3), lambda value: value == 7)
        # The next poll starts within one interval and takes under a second.
        assert time.monotonic() - stopped <= POLL_S + 1.0
        again = re.compile(rf"node {S3:016x} \(S-3\) answers again, after (\d+) s on earlier readings")
        seconds = until("S-3 answering again", lambda: again.findall(text()), bool)
        assert int(seconds[0]) >= SWEEP_S  # kept over at least one scheduled sweep
        all_served()
        assert "confirmed gone" not in text() and agent.poll() is None


def test_a_leaf_cut_off_is_confirmed_gone_after_its_sweeps(tmp_path: Path) -> None:
    with ibsim_fabric(NET_DIR / "live.net", tmp_path, console=True) as fabric, ExitStack() as stack:
        subnet_up(stack, fabric)
        agent, address, log, text = lossy_agent(stack, fabric, gone_after_sweeps=2)
        until("every node in the node table", lambda: node_table(address), lambda table: len(table) == NODES)
        fabric.command('Unlink "S-3"[7]')
        fabric.command('Unlink "S-3"[8]')
        until("S-3 kept on old values", text, lambda seen: f"node {S3:016x} (S-3) did not answer" in seen)
        assert len(node_table(address)) == NODES  # kept, for now
        until("S-3 confirmed gone", text, lambda seen: f"node {S3:016x} (S-3) confirmed gone" in seen)
        # S-3, and H-4 and H-6 behind it, leave the tables.
        until("the node table without S-3's side", lambda: node_table(address),
              lambda table: len(table) == NODES - 3)
        assert node_string(address, S3) is None and agent.poll() is None


def test_a_leaf_the_sm_forgets_is_confirmed_gone_before_its_sweeps(tmp_path: Path) -> None:
    with ibsim_fabric(NET_DIR / "live.net", tmp_path, console=True) as fabric, ExitStack() as stack:
        sm = subnet_up(stack, fabric)
        agent, address, log, text = lossy_agent(stack, fabric, gone_after_sweeps=50)
        baseline = until("every node in the node table", lambda: node_table(address),
                         lambda table: len(table) == NODES)
        fabric.command('Error "S-3" 100')
        # OpenSM still lists S-3: no heavy sweep of its own has missed it.
        until("S-3 kept on old values", text, lambda seen: f"node {S3:016x} (S-3) did not answer" in seen)
        more_sweeps(log, 1)
        assert node_table(address) == baseline
        sm.heavy_sweep()  # which cannot reach S-3: OpenSM forgets it
        until("S-3 confirmed gone", text,
              lambda seen: f"node {S3:016x} (S-3) confirmed gone: the SM no longer lists it" in seen)
        assert S3 not in until("the node table without S-3", lambda: node_table(address),
                               lambda table: S3 not in table)
        assert node_string(address, S3) is None
        fabric.command('Error "S-3" 0')
        sm.heavy_sweep()
        until("S-3 found again", text, lambda seen: f"node {S3:016x} (S-3) found" in seen)
        until("every node back", lambda: node_table(address), lambda table: table == baseline)
        assert "confirmed gone: missing from" not in text() and agent.poll() is None

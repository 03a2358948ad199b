#!/usr/bin/env python3
"""ibsnmp benchmark: how the agent's costs grow with a three-level fat-tree.

    .venv/bin/python bench/large_fabric.py              # about five minutes on 2 cores
    .venv/bin/python bench/large_fabric.py --pods 8 30  # some sizes only

Fabrics: `fat-tree3:radix=8` (208 nodes, the peer every figure is set
against) and `fat-tree3:radix=64` with 8, 30 and 44 pods (9,728, 33,664
and 48,896 nodes; 44 pods is the most one subnet's LIDs address). For
each, one `ibsnmp run` on the simulated provider, measured in turn:

- start-up: process start to its 'ibsnmp: serving' line, and VmRSS then;
- VmRSS with the walk cache full: after walks of IB-SM-MIB's port info
  table of at least the cache's 262,144 steps (the default);
- GETNEXT a few rows before the end of that table: the agent's CPU per
  request (from its CPU clock, less what it spends meanwhile on its own),
  as served (the walk cache full) and with the cache off (a reload with
  `walk_cache = 0`: every step found anew), as a ratio to the small
  fabric's in alternating rounds (the small agent runs throughout);
- walks of one host's IF-MIB (its own context): the agent's CPU per
  varbind the same way.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    Oid,
    Proc,
    Processes,
    SnmpClient,
    cpu_seconds,
    parse_oid,
    start_ibsnmp,
    vm_status,
)

SMALL = "fat-tree3:radix=8"
RADIX = 64
PORT_INFO_ENTRY = parse_oid("1.3.6.1.3.117.7.1.3.1.1")  # IB-SM-MIB ibSmPortInfoEntry
IF_MIB = parse_oid("1.3.6.1.2.1.2")  # interfaces: ifNumber, ifTable
NODE_TYPE = parse_oid("1.3.6.1.3.117.7.1.2.1.1.5")  # ibSmNodeInfoType: channelAdapter(1)
NODE_GUID = parse_oid("1.3.6.1.3.117.7.1.2.1.1.2")
WALK_CACHE_STEPS = 262_144
ROWS_BACK = 5
CACHE_OFF = "[limits]\nwalk_cache = 0\n"


def first_host_context(client: SnmpClient) -> str:
    """The GUID (hex) of the first channel adapter in IB-SM-MIB's node table."""
    for oid, _tag, value in client.walk(NODE_TYPE, limit=200_000):
        if value == 1:
            ((_name, _tag, guid),) = client.request("get", [NODE_GUID + oid[len(NODE_TYPE):]])
            return bytes(guid).hex()
    raise SystemExit("no channel adapter in the node table")


def fill_walk_cache(client: SnmpClient) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Walk port info columns until WALK_CACHE_STEPS varbinds are walked.
    Returns, in the first column, the OID ROWS_BACK rows before its end and
    the one after it (what a GETNEXT of it answers)."""
    walked, column = 0, 1
    near_end: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    while walked < WALK_CACHE_STEPS or near_end is None:
        oids = [oid for oid, _t, _v in client.walk(PORT_INFO_ENTRY + (column,), limit=2_000_000)]
        if not oids:
            break
        walked += len(oids)
        if near_end is None:
            near_end = (oids[-ROWS_BACK - 1], oids[-ROWS_BACK])
        column += 1
    assert near_end is not None
    return near_end


def busy_cpu(pid: int, work: Callable[[], int]) -> float:
    """The agent's CPU seconds per unit of `work()` (which returns its units),
    less what the agent spends meanwhile on its own (a large simulated
    fabric's provider polls its thresholds and counters): the work is
    followed by an idle spell as long, whose CPU is subtracted."""
    started, before = time.perf_counter(), cpu_seconds(pid)
    units = work()
    spent, took = cpu_seconds(pid) - before, time.perf_counter() - started
    idle_before = cpu_seconds(pid)
    time.sleep(took)
    idle = cpu_seconds(pid) - idle_before
    return max(spent - idle, 0.0) / units


def getnext_block(served: Served, count: int = 100) -> float:
    """The agent's CPU seconds per GETNEXT of the name near the port info table's end."""
    def block() -> int:
        for _ in range(count):
            (answer,) = served.client.request("next", [served.near_end])
            assert answer[0] == served.after, (answer[0], served.after)
        return count

    return busy_cpu(served.proc.pid, block)


def if_mib_block(served: Served, walks: int = 10) -> float:
    """The agent's CPU seconds per varbind of walks of one host's IF-MIB."""
    client = served.host_client
    return busy_cpu(served.proc.pid, lambda: sum(len(list(client.walk(IF_MIB))) for _ in range(walks)))


@dataclass
class Served:
    """One agent on its fabric, the walk cache filled, what to ask it found."""

    spec: str
    proc: Proc
    config: Path
    client: SnmpClient
    host_client: SnmpClient
    nodes: int
    start_s: float
    rss_start_mb: float
    rss_full_mb: float
    near_end: Oid
    after: Oid

    def reload(self, config: str) -> None:
        """Reload with `config` as the file, once the agent says it did."""
        self.config.write_text(config)
        seen = len(self.proc.lines)
        os.kill(self.proc.pid, signal.SIGHUP)
        self.proc.next_match(r"configuration reloaded: .*walk_cache", 30, seen)


def serve(procs: Processes, spec: str, workdir: Path) -> Served:
    config = workdir / f"{spec.replace(':', '_').replace(',', '_')}.toml"
    config.write_text("")
    proc, port, startup = start_ibsnmp(procs, spec, timeout=300, extra=("--config", str(config)))
    rss_start = vm_status(proc.pid)["VmRSS"] / 1024
    client = SnmpClient(port, timeout=60.0)
    near_end, after = fill_walk_cache(client)
    rss_full = vm_status(proc.pid)["VmRSS"] / 1024
    host = first_host_context(client)
    nodes = sum(1 for _ in client.walk(NODE_TYPE, limit=200_000))
    host_client = SnmpClient(port, community=f"public@{host}")
    list(host_client.walk(IF_MIB))  # the first walk builds what later ones reuse
    return Served(spec, proc, config, client, host_client, nodes, startup, rss_start, rss_full,
                  near_end, after)


def ratios(small: Served, large: Served, block: Callable[[Served], float],
           rounds: int) -> tuple[float, float, float]:
    """(small's, large's figure, and the median ratio of the two) over
    `rounds` rounds of one block each, in alternating order."""
    pairs = []
    for number in range(rounds):
        order = (small, large) if number % 2 else (large, small)
        figures = {id(served): block(served) for served in order}
        pairs.append((figures[id(small)], figures[id(large)]))
    return (statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs),
            statistics.median(p[1] / p[0] for p in pairs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, nargs="+", default=[8, 30, 44],
                        help="pods of the radix-64 fabrics (default 8 30 44)")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    lines = []
    with Processes() as procs, tempfile.TemporaryDirectory(prefix="ibsnmp-large-") as tmp:
        small = serve(procs, SMALL, Path(tmp))
        lines.append(f"{small.spec:28} {small.nodes:>7,} {small.start_s:>8.1f} "
                     f"{small.rss_start_mb:>7.0f} {small.rss_full_mb:>9.0f}")
        for pods in args.pods:
            started = time.monotonic()
            large = serve(procs, f"fat-tree3:radix={RADIX},pods={pods}", Path(tmp))
            served = ratios(small, large, getnext_block, args.rounds)
            walks = ratios(small, large, if_mib_block, args.rounds)
            for agent in (small, large):
                agent.reload(CACHE_OFF)  # every step found anew
            fresh = ratios(small, large, getnext_block, args.rounds)
            small.reload("")  # the small agent goes on with its cache
            fill_walk_cache(small.client)
            lines.append(
                f"{large.spec:28} {large.nodes:>7,} {large.start_s:>8.1f} {large.rss_start_mb:>7.0f} "
                f"{large.rss_full_mb:>9.0f} {served[1] * 1e6:>6.0f}us {served[2]:>6.2f} "
                f"{fresh[1] * 1e6:>6.0f}us {fresh[2]:>6.2f} {walks[1] * 1e6:>6.1f}us {walks[2]:>6.2f}")
            large.client.close()
            large.host_client.close()
            procs.stop(large.proc)
            print(f"pods={pods}: measured in {time.monotonic() - started:.0f} s (small fabric: "
                  f"GETNEXT {served[0] * 1e6:.0f} us kept, {fresh[0] * 1e6:.0f} us anew; IF-MIB "
                  f"{walks[0] * 1e6:.1f} us a varbind)", flush=True)
    print("\nstart: to 'ibsnmp: serving'; RSS full: after walking >= 262,144 port info rows "
          "(the walk cache's default). Agent CPU per GETNEXT 5 rows before the end of port info, "
          "as served (kept: the default walk cache, filled) and with the cache off (anew), and "
          "per varbind of walks of one host's IF-MIB; x small: the median of the ratios to "
          f"{SMALL} in {args.rounds} alternating rounds.")
    print(f"{'fabric':28} {'nodes':>7} {'start s':>8} {'RSS MB':>7} {'RSS full':>9} "
          f"{'kept':>8} {'x small':>6} {'anew':>8} {'x small':>6} {'IF-MIB':>8} {'x small':>6}")
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""ibsnmp benchmark: loading a ~10,000-node ibnetdiscover topology file.

    .venv/bin/python bench/topology_load.py            # 5 rounds
    .venv/bin/python bench/topology_load.py --quick    # 2 rounds

The file is the ibnetdiscover export of the simulated fabric
fat-tree:spines=18,leaves=72,hosts=138 (10,026 nodes), written to a
temporary directory. Timed, interleaved and repeated (medians reported):

- load: TopologyProvider(path), i.e. read the file, parse it, check both
  ends of every link and build the immutable snapshot the agent serves;
- peer 1, generate: building the same fabric with the simulator's
  generator (the other way ibsnmp makes a snapshot of this size);
- peer 2, line split: reading the same file and splitting every line into
  fields, the least any reader of this text must do.

The target is an absolute one: load < 5 s. The ratios put that figure
next to the two peers measured on this machine in this run. A dump carries
no forwarding tables and none are computed: they come from the SM's LFT
dump (--lft-dump). For information, "load + LFTs" also reads such a dump,
written from the generator's tables in OpenSM's layout.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ibsnmp.fabric import build_fabric, export_ibnetdiscover, routing  # noqa: E402
from ibsnmp.providers.topology import TopologyProvider  # noqa: E402

SPEC = "fat-tree:spines=18,leaves=72,hosts=138"
SEED = 1
TARGET_S = 5.0


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds, result) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def opensm_lft_dump(fabric: Any) -> str:
    """The generator's tables in the layout of OpenSM's opensm-lfts.dump."""
    out = []
    for guid in fabric.sorted_switch_guids():
        table = routing.linear_forwarding_table(fabric, guid)
        top = len(table) - 1
        out.append(f"Unicast lids [0-{top}] of switch Lid {fabric.nodes[guid].ports[0].lid} "
                   f"guid 0x{guid:016x} ('sw'):\n")
        out.extend(f"0x{lid:04x} {port:03d} # x\n" for lid, port in enumerate(table) if port != 255)
        out.append(f"{top} lids dumped\n")
    return "".join(out)


def line_split(path: Path) -> int:
    text = path.read_text(encoding="utf-8", errors="replace")
    return sum(len(line.split()) for line in text.splitlines())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds instead of 5")
    parser.add_argument("--rounds", type=int, help="rounds of each measurement")
    args = parser.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 5)

    fabric = build_fabric(SPEC, seed=SEED)
    with tempfile.TemporaryDirectory(prefix="ibsnmp-topology-") as tmp:
        path = Path(tmp) / "fabric.topo"
        path.write_text(export_ibnetdiscover(fabric))
        size = path.stat().st_size
        lines = path.read_text().count("\n")
        print(f"topology: {SPEC} seed {SEED}: {len(fabric.nodes)} nodes, {len(fabric.links)} links, "
              f"{len(fabric.lid_map)} LIDs; file {lines} lines, {size / 1e6:.1f} MB")
        lfts = Path(tmp) / "opensm-lfts.dump"
        lfts.write_text(opensm_lft_dump(fabric))
        print(f"LFT dump: {len(fabric.sorted_switch_guids())} switches, "
              f"{lfts.read_text().count(chr(10))} lines, {lfts.stat().st_size / 1e6:.1f} MB")

        cases: dict[str, Callable[[], Any]] = {
            "load": lambda: TopologyProvider(path),
            "load + LFTs": lambda: TopologyProvider(path, lft_path=lfts),
            "generate": lambda: build_fabric(SPEC, seed=SEED),
            "line split": lambda: line_split(path),
        }
        walls: dict[str, list[float]] = {name: [] for name in cases}
        cpus: dict[str, list[float]] = {name: [] for name in cases}
        loaded = None
        for n in range(rounds):
            order = list(cases) if n % 2 == 0 else list(reversed(cases))
            for name in order:
                wall, cpu, result = timed(cases[name])
                walls[name].append(wall)
                cpus[name].append(cpu)
                if name == "load":
                    loaded = result.snapshot
                del result

    assert loaded is not None
    same = (set(loaded.nodes) == set(fabric.nodes) and loaded.links == fabric.links
            and len(loaded.lid_map) == sum(1 for ref in fabric.lid_map.values()
                                           if ref.port == 0 or fabric.port_at(ref).remote is not None))
    print(f"loaded snapshot: {len(loaded.nodes)} nodes, {len(loaded.links)} links, "
          f"{len(loaded.lid_map)} LIDs; same nodes, links and linked LIDs as the generator's: "
          f"{'yes' if same else 'NO'}")

    med = {name: statistics.median(values) for name, values in walls.items()}
    cpu = {name: statistics.median(values) for name, values in cpus.items()}
    print(f"\nmedian of {rounds} rounds (interleaved):")
    print(f"  {'':<12} {'wall s':>8} {'CPU s':>8} {'load / this':>12}")
    for name in cases:
        ratio = med["load"] / med[name]
        print(f"  {name:<12} {med[name]:>8.3f} {cpu[name]:>8.3f} {ratio:>11.2f}x")


    ok = med["load"] < TARGET_S and same
    print(f"\nload {med['load']:.2f} s (target < {TARGET_S:.0f} s; {med['load'] / med['generate']:.2f}x "
          f"the generator, {med['load'] / med['line split']:.1f}x a bare line split): "
          f"{'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

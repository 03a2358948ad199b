#!/usr/bin/env python3
"""ibsnmp benchmark: the cost of one varbind in the MIB lookup, without SNMP.

    .venv/bin/python bench/lookup.py [--fabric SPEC] [--rounds N] [--sample N]

Over a simulated fabric (default: the `make run` fat-tree), every context
(the default one and each node's) is walked from the InfiniBand subtree to
its end. Of the instances found, an evenly spread sample (default 50,000 in
all) is read again: by GETNEXT from the instance before each, and by GET.
Timed in CPU seconds of this process (the machine may be shared) per
varbind, median of the rounds, row indexes already built (the first walk
builds them):

- next_cell / get_cell: the plain-value path a responder encodes itself;
- get_next / get: the pysnmp path, the same cells boxed as syntax objects.

Only the lookup is timed: no BER, no access control, no transport.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from ibsnmp.mib.api import INFINIBAND_MIB, ContextTarget, Oid
from ibsnmp.mib.registry import build_mib
from ibsnmp.mib.targets import FabricContexts, context_name
from ibsnmp.mib.virtual import InfinibandMib
from ibsnmp.providers.simulated import SimulatedProvider

DEFAULT_FABRIC = "fat-tree:spines=2,leaves=4,hosts=4"


def walk_oids(mib: InfinibandMib, target: ContextTarget) -> list[Oid]:
    oids = []
    oid = INFINIBAND_MIB
    while (step := mib.next_cell(target, oid)) is not None:
        oid = step[0]
        oids.append(oid)
    return oids


def per_varbind_us(action: Callable[[], int], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.process_time()
        count = action()
        samples.append((time.process_time() - start) / count * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fabric", default=DEFAULT_FABRIC)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sample", type=int, default=50_000)
    args = parser.parse_args()

    provider = SimulatedProvider(args.fabric, 1, watch_interval=0)
    resolve = FabricContexts(provider)
    names = [b""] + [context_name(g).encode() for g in sorted(provider.snapshot.nodes)]
    mib = build_mib()
    # One target per context for the whole run: the snapshot does not change.
    walked = []
    for name in names:
        target = resolve(name)
        assert target is not None
        walked.append((target, walk_oids(mib, target)))  # builds the row indexes
    instances = sum(len(oids) for _, oids in walked)
    stride = max(1, instances // args.sample)
    # (target, the instance before each sampled one, the sampled instances)
    work = [(target, ([INFINIBAND_MIB] + oids)[:len(oids)][::stride], oids[::stride])
            for target, oids in walked]
    total = sum(len(sampled) for _, _, sampled in work)

    def timed(step: Callable[[ContextTarget, Oid], object], by_next: bool) -> Callable[[], int]:
        """Ask `step` for every sampled instance: by GETNEXT from the one
        before it, or by GET of itself."""
        def run() -> int:
            for target, before, sampled in work:
                for oid in before if by_next else sampled:
                    step(target, oid)
            return total
        return run

    print(f"fabric {args.fabric}: {len(provider.snapshot.nodes)} nodes, {len(names)} contexts, "
          f"{instances} instances, {total} sampled; median of {args.rounds} rounds, "
          f"CPU microseconds per varbind")
    figures = {
        "next_cell": per_varbind_us(timed(mib.next_cell, True), args.rounds),
        "get_cell": per_varbind_us(timed(mib.get_cell, False), args.rounds),
        "get_next (boxed)": per_varbind_us(timed(mib.get_next, True), args.rounds),
        "get (boxed)": per_varbind_us(timed(mib.get, False), args.rounds),
    }
    for label, figure in figures.items():
        print(f"  {label:<18} {figure:7.2f} us")
    print(f"  boxing costs {figures['get_next (boxed)'] / figures['next_cell']:.1f}x next_cell, "
          f"{figures['get (boxed)'] / figures['get_cell']:.1f}x get_cell")


if __name__ == "__main__":
    main()

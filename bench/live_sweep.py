"""Directed-route discovery sweep vs ibnetdiscover on ibsim fabrics.

    python bench/live_sweep.py [--sizes 100,1000] [--window 64] [--rounds 3]

For each size a two-level fat tree of about that many nodes is written as
an ibsim net file; ibsim serves it on a private socket name, and in the
same run ibnetdiscover and ibsnmp's sweep (`ibsnmp.mad.discovery`, through
libibumad under ibsim's preload library) each discover it `--rounds` times.
Printed: median wall time of each (whole process, start-up included) and
the sweep's own time and MAD counts. Needs ibsim-utils, infiniband-diags
and libibumad3 (`make setup`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from ibsim import Fabric, ibsim_fabric  # noqa: E402

SWEEP = """
import json, time
from ibsnmp.mad.discovery import discover
from ibsnmp.mad.umad import UmadPort
from ibsnmp.mad.window import MadWindow
with UmadPort() as port:
    window = MadWindow(port, size={window})
    start = time.perf_counter()
    subnet = discover(window)
    elapsed = time.perf_counter() - start
print(json.dumps({{"nodes": len(subnet.nodes), "links": len(subnet.links) // 2,
                  "seconds": elapsed, "stats": vars(window.stats),
                  "unanswered": len(subnet.unanswered)}}))
"""


def fat_tree(nodes: int) -> str:
    """A net file: spines, leaves and hosts, about `nodes` nodes in all."""
    spines = max(2, round(nodes ** 0.5 / 4))
    leaves = max(2, round(nodes ** 0.5))
    hosts_per_leaf = max(1, (nodes - spines - leaves) // leaves)
    lines: list[str] = []
    for s in range(spines):
        lines.append(f'Switch\t{leaves} "spine-{s}"')
        lines += [f'[{leaf + 1}]\t"leaf-{leaf}"[{hosts_per_leaf + s + 1}]' for leaf in range(leaves)]
        lines.append("")
    for leaf in range(leaves):
        lines.append(f'Switch\t{hosts_per_leaf + spines} "leaf-{leaf}"')
        lines += [f'[{h + 1}]\t"host-{leaf}-{h}"[1]' for h in range(hosts_per_leaf)]
        lines += [f'[{hosts_per_leaf + s + 1}]\t"spine-{s}"[{leaf + 1}]' for s in range(spines)]
        lines.append("")
    for leaf in range(leaves):
        for h in range(hosts_per_leaf):
            lines += [f'Hca\t1 "host-{leaf}-{h}"', f'[1]\t"leaf-{leaf}"[{h + 1}]', ""]
    # Clients attach to the first node in the file: make that a host.
    first_host = lines.index('Hca\t1 "host-0-0"')
    return "\n".join(lines[first_host:first_host + 3] + lines[:first_host]
                     + lines[first_host + 3:]) + "\n"


def timed(fabric: Fabric, command: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = fabric.run(command, timeout=600)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed: {done.stderr[-500:]}")
    return elapsed, done.stdout


def bench(size: int, window: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="live-sweep-") as tmp:
        net = Path(tmp) / "fabric.net"
        net.write_text(fat_tree(size))
        with ibsim_fabric(net, Path(tmp)) as fabric:
            theirs, ours, inner = [], [], []
            result: dict[str, object] = {}
            for _ in range(rounds):
                elapsed, output = timed(fabric, ["ibnetdiscover"])
                theirs.append(elapsed)
                their_nodes = output.count("\nSwitch\t") + output.count("\nCa\t")
                elapsed, output = timed(fabric, [sys.executable, "-c",
                                                 SWEEP.format(window=window)])
                ours.append(elapsed)
                result = json.loads(output)
                inner.append(float(result["seconds"]))  # type: ignore[arg-type]
    print(f"{size:>5} nodes asked ({result['nodes']} found, ibnetdiscover {their_nodes}, "
          f"{result['links']} links): ibnetdiscover {statistics.median(theirs):.3f} s, "
          f"ibsnmp sweep {statistics.median(ours):.3f} s "
          f"(sweep alone {statistics.median(inner):.3f} s, window {window}, "
          f"MADs {result['stats']}, unanswered {result['unanswered']}); "
          f"ratio {statistics.median(ours) / statistics.median(theirs):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for size in map(int, args.sizes.split(",")):
        bench(size, args.window, args.rounds)


if __name__ == "__main__":
    main()

"""The live provider's start-up and poll in time, on an ibsim fabric with OpenSM.

    python bench/live_provider.py [--net tests/data/ibsim/ring.net] [--polls 20]
    python bench/live_provider.py --nodes 100      # a fat-tree of about 100 nodes

ibsim serves the net file on a private socket name and OpenSM brings the
subnet up; then, under ibsim's preload library, `LiveProvider()` is built
(the start-up: the full directed-route sweep with every table, ClassPortInfo
of every PMA and one counter poll) and `poll()` runs `--polls` times (one
LID-routed PortInfo per port, SwitchInfo per switch and PortCounters(+Extended)
per PMA port, and a new snapshot). Printed: the start-up time, the median and
slowest poll, with the fabric's size; of each poll, in CPU time of the
thread per 1,000 ports, the reading (requests, answers, and their decoding
into the model's counter values by node, which the agent runs in a worker
thread) and the part after the MADs were read and decoded (the refresh's
result made a snapshot and served: new counter values alone, or the nodes
read differently rebuilt; target <= 2 ms for a poll that moved counters
only).
Needs ibsim-utils, opensm and libibumad3 (`make setup`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from tests.support.ibsim import ibsim_fabric, opensm_running  # noqa: E402
from live_sweep import fat_tree  # noqa: E402

# Exit status while OpenSM has not yet made every connected CA port active.
NOT_YET = 3
MEASURE = """
import json, statistics, sys, time
from ibsnmp.providers.live import LiveProvider
start = time.perf_counter()
provider = LiveProvider()
startup = time.perf_counter() - start
fabric = provider.snapshot
if any(p.lid == 0 for n in fabric.nodes.values() if n.is_ca for p in n.ports if p.is_active):
    sys.exit({not_yet})
times, applies, reads, values_only = [], [], [], 0
for _ in range({polls}):
    start = time.perf_counter()
    before = provider.snapshot
    cpu = time.thread_time()
    read = provider._refresh_now()
    reads.append(time.thread_time() - cpu)
    cpu = time.thread_time()
    if provider._apply_refresh(read):
        provider.sweep()
    applies.append(time.thread_time() - cpu)
    values_only += provider.snapshot.lineage is before.lineage
    times.append(time.perf_counter() - start)
ports = sum(len(n.ports) for n in fabric.nodes.values())
print(json.dumps({{"nodes": len(fabric.nodes), "ports": ports, "startup": startup,
                  "poll_median": statistics.median(times), "poll_max": max(times),
                  "apply_median": statistics.median(applies), "apply_max": max(applies),
                  "read_median": statistics.median(reads),
                  "values_only": values_only, "sweeps": provider.sweeps}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--net", type=Path, default=ROOT / "tests" / "data" / "ibsim" / "ring.net")
    parser.add_argument("--polls", type=int, default=20)
    parser.add_argument("--nodes", type=int, default=0,
                        help="a fat-tree net of about this many nodes instead of --net")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ibsnmp-bench-") as tmp:
        if args.nodes:
            args.net = Path(tmp) / "fat-tree.net"
            args.net.write_text(fat_tree(args.nodes))
        measure(args, Path(tmp))


def measure(args: argparse.Namespace, tmp: Path) -> None:
    with ibsim_fabric(args.net, tmp) as fabric, opensm_running(fabric):
        code = MEASURE.format(polls=args.polls, not_yet=NOT_YET)
        deadline = time.monotonic() + 60
        while True:
            done = fabric.run([sys.executable, "-c", code], timeout=300)
            if done.returncode != NOT_YET or time.monotonic() > deadline:
                break
            time.sleep(1)
        if done.returncode:
            raise SystemExit(f"measurement failed ({done.returncode}): {done.stderr}")
        result = json.loads(done.stdout)
    print(f"{args.net.name}: {result['nodes']} nodes, {result['ports']} ports")
    print(f"  start-up (sweep with every table + counters): {result['startup'] * 1000:.1f} ms")
    print(f"  poll (PortInfo, SwitchInfo, counters of every port): median "
          f"{result['poll_median'] * 1000:.1f} ms, slowest {result['poll_max'] * 1000:.1f} ms "
          f"over {args.polls} polls ({result['sweeps'] - 1} re-sweeps)")
    per_thousand = 1000 / result["ports"] * 1000
    print(f"  the poll's requests, answers and their decoding (the model's counter names, by node): median "
          f"{result['read_median'] * per_thousand:.2f} ms of CPU per 1,000 ports")
    print(f"  after the MADs (a snapshot of what was read): median {result['apply_median'] * per_thousand:.2f} ms "
          f"of CPU per 1,000 ports, slowest {result['apply_max'] * per_thousand:.2f} ms; "
          f"{result['values_only']} of {args.polls} polls moved counter values only "
          f"(target <= 2 ms per 1,000 ports)")


if __name__ == "__main__":
    main()

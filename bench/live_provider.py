"""The live provider's start-up and poll in time, on an ibsim fabric with OpenSM.

    python bench/live_provider.py [--net tests/data/ibsim/ring.net] [--polls 20]

ibsim serves the net file on a private socket name and OpenSM brings the
subnet up; then, under ibsim's preload library, `LiveProvider()` is built
(the start-up: the full directed-route sweep with every table, ClassPortInfo
of every PMA and one counter poll) and `poll()` runs `--polls` times (one
LID-routed PortInfo per port, SwitchInfo per switch and PortCounters(+Extended)
per PMA port, and a new snapshot). Printed: the start-up time, the median and
slowest poll, with the fabric's size. Needs ibsim-utils, opensm and
libibumad3 (`make setup`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from ibsim import ibsim_fabric, opensm_running  # noqa: E402

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
times = []
for _ in range({polls}):
    start = time.perf_counter()
    provider.poll()
    times.append(time.perf_counter() - start)
ports = sum(len(n.ports) for n in fabric.nodes.values())
print(json.dumps({{"nodes": len(fabric.nodes), "ports": ports, "startup": startup,
                  "poll_median": statistics.median(times), "poll_max": max(times),
                  "sweeps": provider.sweeps}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--net", type=Path, default=ROOT / "tests" / "data" / "ibsim" / "ring.net")
    parser.add_argument("--polls", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ibsnmp-bench-") as tmp, \
            ibsim_fabric(args.net, Path(tmp)) as fabric, opensm_running(fabric):
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


if __name__ == "__main__":
    main()

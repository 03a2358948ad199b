"""SA PathRecord queries: ibsnmp's SA client against a `saquery` loop, on ibsim with OpenSM;
and how soon an IB-SM-MIB path request's result row is there.

    python bench/sa_queries.py [--queries 200] [--saquery-sample 30] [--requests 20]

ibsim serves tests/data/ibsim/ring.net on a private socket name and OpenSM
brings it up. One process then asks OpenSM's SA for the PathRecord between
LID 1 and each other LID, `--queries` times over, one query after the other
(`ibsnmp.sa.client`, as the agent's SA worker does); the same questions
go to `saquery --src-to-dst` run once per query, the way a script asks.
Then `--requests` path requests are SET into the agent's MIB, each timed
until its result row can be read (tests/support/sa_latency_probe.py: the agent's
path to the SA through its worker thread, the table read every millisecond).
Printed: time per query of each, and the median and slowest request.
Needs ibsim-utils, opensm, infiniband-diags and libibumad3 (`make setup`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.support.ibsim import NET_DIR, Fabric, ibsim_fabric, opensm_running  # noqa: E402

LIDS = range(2, 8)  # ring.net: seven nodes, one LID each at LMC 0
LATENCY_PROBE = ROOT / "tests" / "support" / "sa_latency_probe.py"
UP_TIMEOUT = 60.0

QUERIES = """
import json, time
from ibsnmp.sa import records
from ibsnmp.sa.client import SaClient
client = SaClient.open()
lids = {lids}
start = time.perf_counter()
for n in range({count}):
    answer = client.get_table(records.PATH_RECORD, {{"SLID": 1, "DLID": lids[n % len(lids)]}})
    assert len(answer.records) == 1, answer
elapsed = time.perf_counter() - start
client.close()
print(json.dumps({{"seconds": elapsed}}))
"""


def wait_until_up(fabric: Fabric) -> None:
    deadline = time.monotonic() + UP_TIMEOUT
    while True:
        done = fabric.run(["saquery", "--src-to-dst", "1:7"])
        if done.returncode == 0 and "PathRecord dump" in done.stdout:
            return
        if time.monotonic() > deadline:
            raise SystemExit("OpenSM did not bring the subnet up")
        time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--saquery-sample", type=int, default=30)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        with ibsim_fabric(NET_DIR / "ring.net", Path(work)) as fabric, opensm_running(fabric):
            wait_until_up(fabric)
            done = fabric.run([sys.executable, "-c",
                               QUERIES.format(lids=list(LIDS), count=args.queries)])
            if done.returncode:
                raise SystemExit(done.stderr)
            ours = json.loads(done.stdout)["seconds"] / args.queries
            start = time.perf_counter()
            for n in range(args.saquery_sample):
                fabric.run(["saquery", "--src-to-dst", f"1:{LIDS[n % len(LIDS)]}"])
            theirs = (time.perf_counter() - start) / args.saquery_sample
            done = fabric.run([sys.executable, str(LATENCY_PROBE), str(args.requests), "1",
                               *map(str, LIDS)])
            if done.returncode:
                raise SystemExit(done.stderr)
            latencies = json.loads(done.stdout)["latencies"]
    print(f"PathRecord query, ibsnmp SA client: {ours * 1e3:.2f} ms "
          f"({args.queries} queries in one process)")
    print(f"PathRecord query, saquery loop:     {theirs * 1e3:.2f} ms "
          f"({args.saquery_sample} processes)")
    print(f"ratio: {theirs / ours:.0f}x")
    print(f"path request, SET to result row: median {statistics.median(latencies) * 1e3:.1f} ms, "
          f"slowest {max(latencies) * 1e3:.1f} ms ({args.requests} requests)")


if __name__ == "__main__":
    main()

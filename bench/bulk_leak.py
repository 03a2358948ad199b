"""Benchmark: agent memory under a flood of GETBULKs whose answer is empty.

`ibsnmp run` on a small simulated fabric gets N GETBULK requests (SNMPv2c,
community public) that have nothing to return, alternating max-repetitions
0 on one varbind and a request without varbinds. Each used to go
unanswered and keep about 3.6 KB in the agent. The agent's RSS is printed
after a warm-up and after the flood, with how many requests were answered.
Target: every request answered, RSS growth < 5 MB after 100,000 requests.

    .venv/bin/python bench/bulk_leak.py [--count N]
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import LOCALHOST, ROOT, Processes, start_ibsnmp, vm_status  # noqa: E402

sys.path.insert(0, str(ROOT))
from tests.support.wire import community_request, exchange_many  # noqa: E402

FABRIC = "fat-tree:spines=2,leaves=2,hosts=2"
SYSTEM = "1.3.6.1.2.1.1"
BURST = 20  # requests in flight at once: well within the socket buffers
WARM_UP = 2_000
REQUESTS = {
    "max-repetitions 0": community_request("bulk", [SYSTEM], max_repetitions=0),
    "no varbinds": community_request("bulk", [], max_repetitions=10),
}


def flood(sock: socket.socket, port: int, payloads: list[bytes], count: int) -> int:
    """Send `count` requests (cycling through `payloads`); return how many were answered."""
    return exchange_many(sock, (LOCALHOST, port), payloads, count, BURST)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000, help="requests in the flood")
    args = parser.parse_args()
    payloads = list(REQUESTS.values())
    with Processes() as procs, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(5.0)
        proc, port, _ = start_ibsnmp(procs, FABRIC)
        warmed = flood(sock, port, payloads, WARM_UP)
        before = vm_status(proc.pid)["VmRSS"]
        start = time.perf_counter()
        answered = flood(sock, port, payloads, args.count)
        seconds = time.perf_counter() - start
        after = vm_status(proc.pid)["VmRSS"]
    print(f"empty GETBULK flood: {', '.join(REQUESTS)} (alternating)")
    print(f"  warm-up       {warmed}/{WARM_UP} answered")
    print(f"  flood         {answered}/{args.count} answered in {seconds:.1f} s "
          f"({args.count / seconds:.0f} requests/s)")
    print(f"  RSS           {before / 1024:.1f} MB before, {after / 1024:.1f} MB after, "
          f"growth {(after - before) / 1024:+.2f} MB (target < 5 MB)")
    ok = answered == args.count and after - before < 5 * 1024
    print("  result        " + ("OK" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

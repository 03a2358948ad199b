"""Benchmark: the memory a writer can make the agent hold, and whether it comes back.

`ibsnmp run` on a 532-node fat-tree (write community "private") gets:

1. N path requests (ibSmPathReqTable, createAndGo) with only SrcLID and
   NumbPath 127: each the largest answer one source LID has;
2. a walk of ibSmPathResultTable (every result row);
3. the N rows destroyed;
4. rounds of a walk (the first WALK_STEPS varbinds of IB-SM-MIB) alone,
   then rounds of the same walk interleaved with SETs (per round: the SM's
   sweep interval changed, which makes a new configured snapshot, a path
   request created, the walk, the request destroyed).

The agent's RSS (/proc/<pid>/status VmRSS) is printed after each phase and
each round, with its ratio to the RSS at the start. The start is taken after
a reader's walk long enough to fill the walk cache, so that what is
measured is what the writer adds. Target: the phases end within 10% of the
start; the rounds stay flat.

    .venv/bin/python bench/writer_memory.py [--requests N] [--rounds N] [--extra ARGS]
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Processes, SnmpClient, parse_oid, start_ibsnmp, vm_status  # noqa: E402

from ibsnmp.fabric.generators import build_fabric  # noqa: E402

FABRIC = "fat-tree:spines=4,leaves=16,hosts=32"  # 532 nodes
SEED = 1
WRITE_COMMUNITY = "private"
PREFIX = "254.128.0.0.0.0.0.0"  # fe80::/64 as index octets
REQ_ENTRY = "1.3.6.1.3.117.7.1.10.1.1"  # ibSmPathReqEntry
ROW_STATUS, NUMB_PATH, SRC_LID = 3, 8, 10  # its columns
RESULT_TABLE = parse_oid("1.3.6.1.3.117.7.1.10.2")  # ibSmPathResultTable
IB_SM_MIB = parse_oid("1.3.6.1.3.117.7")
WALK_STEPS = 50_000
SWEEP_INTERVAL = "1.3.6.1.3.117.7.1.1.1.1.9"  # ibSmConfigSweepInterval
CREATE_AND_GO, DESTROY = 4, 6


def snmpset(port: int, *varbinds: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SNMPCONFPATH="/nonexistent", MIBS="")
    return subprocess.run(["snmpset", "-v2c", "-c", WRITE_COMMUNITY, "-r", "0", "-t", "10",
                           "-On", f"127.0.0.1:{port}", *varbinds],
                          capture_output=True, text=True, env=env, timeout=30, check=False)


def column(number: int, session: int) -> str:
    return f"{REQ_ENTRY}.{number}.{PREFIX}.{session}"


def create(port: int, session: int, lid: int) -> bool:
    result = snmpset(port, column(ROW_STATUS, session), "i", str(CREATE_AND_GO),
                     column(SRC_LID, session), "i", str(lid),
                     column(NUMB_PATH, session), "i", "127")
    return result.returncode == 0


def destroy(port: int, session: int) -> bool:
    return snmpset(port, column(ROW_STATUS, session), "i", str(DESTROY)).returncode == 0


def host_lids(spec: str, seed: int) -> list[int]:
    fabric = build_fabric(spec, seed=seed)
    return sorted(p.lid for n in fabric.nodes.values() if n.is_ca for p in n.ports if p.lid)


def rss_mb(pid: int) -> float:
    return vm_status(pid)["VmRSS"] / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100, help="path requests created")
    parser.add_argument("--rounds", type=int, default=20, help="walk + SET rounds")
    parser.add_argument("--fabric", default=FABRIC)
    parser.add_argument("--warm-up", type=int, default=300_000,
                        help="varbinds of IB-SM-MIB walked before the start")
    parser.add_argument("--extra", default="", help="more `ibsnmp run` arguments")
    args = parser.parse_args()
    lids = host_lids(args.fabric, SEED)
    with Processes() as procs:
        proc, port, _ = start_ibsnmp(procs, args.fabric, seed=SEED, extra=[
            "--write-community", WRITE_COMMUNITY, *shlex.split(args.extra)])
        with SnmpClient(port, timeout=30) as client:
            # The start is a reader's worst: a walk long enough to fill the walk cache
            # ([limits] walk_cache, 262,144 steps by default) and the row indexes.
            sum(1 for _ in client.walk(IB_SM_MIB, limit=args.warm_up))
            sum(1 for _ in client.walk(RESULT_TABLE))
            start = rss_mb(proc.pid)
            print(f"fabric {args.fabric}: RSS at start {start:.1f} MB "
                  f"(after a walk of {args.warm_up} varbinds)")

            def report(what: str) -> None:
                now = rss_mb(proc.pid)
                print(f"  {what:<38} RSS {now:7.1f} MB  ({now / start:.2f}x start)")

            began = time.perf_counter()
            created = sum(create(port, 1000 + i, lids[i % len(lids)])
                          for i in range(args.requests))
            seconds = time.perf_counter() - began
            report(f"{created}/{args.requests} requests created")
            print(f"    {seconds / max(args.requests, 1) * 1000:.0f} ms per SET (snmpset included)")
            rows = sum(1 for _ in client.walk(RESULT_TABLE))
            report(f"walked ({rows} result varbinds)")
            destroyed = sum(destroy(port, 1000 + i) for i in range(args.requests))
            report(f"{destroyed} destroyed")
            sum(1 for _ in client.walk(RESULT_TABLE))
            report("walked again (empty)")
            for round_ in range(args.rounds):
                walked = sum(1 for _ in client.walk(IB_SM_MIB, limit=WALK_STEPS))
                report(f"walk alone {round_ + 1:3d}: {walked} varbinds")
            for round_ in range(args.rounds):
                snmpset(port, f"{SWEEP_INTERVAL}.{PREFIX}", "i", str(10 + round_ % 2))
                create(port, 5000 + round_, lids[round_ % len(lids)])
                walked = sum(1 for _ in client.walk(IB_SM_MIB, limit=WALK_STEPS))
                destroy(port, 5000 + round_)
                report(f"walk + SETs {round_ + 1:3d}: {walked} varbinds")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""ibsnmp benchmark: what hiding the M_Key column from read-only communities costs.

    .venv/bin/python bench/hidden_keys.py [--fabric SPEC] [--rounds N]

A read-only community does not see IB-SM-MIB's ibSmPortInfoMKey (one row
per port of the fabric); a GETNEXT on the column's OID must then answer the
next column's first row. The agent leaves the hidden column in one step, so
that GETNEXT should cost what a GETNEXT on a visible column costs, not one
access check per hidden row. Printed: the median latency of GETNEXT on the
hidden column (read community), on the same column where it is visible
(write community) and on the next column (read community), over a raw UDP
socket; and the hidden column's row count. The agent listens on 127.0.0.1
only and is stopped before the script exits.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import (  # noqa: E402
    LOCALHOST,
    VENV_BIN,
    Processes,
    SnmpClient,
    free_udp_port,
    median,
    oid_text,
)

from ibsnmp.mib.loader import definitions  # noqa: E402

READ, WRITE = "bench-read", "bench-write"


def latency(client: SnmpClient, oid: tuple[int, ...], rounds: int) -> tuple[float, tuple[int, ...]]:
    times = []
    answer: tuple[int, ...] = ()
    for _ in range(rounds):
        start = time.perf_counter()
        answer = client.get_next(oid)[0]
        times.append(time.perf_counter() - start)
    return median(times), answer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fabric", default="fat-tree:spines=18,leaves=36,hosts=36")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    column = definitions().objects["ibSmPortInfoMKey"].oid
    next_column = column[:-1] + (column[-1] + 1,)
    port = free_udp_port()
    with Processes() as procs:
        # The communities come from the environment: nothing secret in argv.
        proc = procs.start("ibsnmp", [str(VENV_BIN / "ibsnmp"), "run", "--listen",
                                      f"{LOCALHOST}:{port}", "--fabric", args.fabric],
                           env=dict(os.environ, IBSNMP_COMMUNITY=READ,
                                    IBSNMP_WRITE_COMMUNITY=WRITE))
        proc.wait_for_line(r"^ibsnmp: serving", 300)
        with SnmpClient(port, READ, timeout=60) as reader, \
                SnmpClient(port, WRITE, timeout=60) as writer:
            rows = sum(1 for _ in writer.walk(column))
            hidden, first = latency(reader, column, args.rounds)
            assert first[: len(next_column)] == next_column, oid_text(first)
            visible, _ = latency(writer, column, args.rounds)
            neighbour, _ = latency(reader, next_column, args.rounds)
    print(f"fabric {args.fabric}: ibSmPortInfoMKey has {rows} rows")
    print(f"GETNEXT ibSmPortInfoMKey, read community (hidden): {hidden * 1e3:.2f} ms median")
    print(f"GETNEXT ibSmPortInfoMKey, write community (shown): {visible * 1e3:.2f} ms median")
    print(f"GETNEXT the next column, read community:          {neighbour * 1e3:.2f} ms median")
    print(f"hidden / shown: {hidden / visible:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run under ibsim's preload library: how soon an IB-SM-MIB path request's result
row is there, as a manager sees it: SET createAndGo, then read the result
table every millisecond until the row appears. Prints JSON: each request's
latency in seconds and its result rows.

usage: python sa_latency_probe.py COUNT SLID DLID...   (request n asks SLID -> DLID n mod len)

The requests go through the agent's own path (the MIB's write, `SaRequestRunner`,
`MadSaBackend`, `SaWorker`) to the subnet's SA. They are spaced by random
gaps of up to 0.2 s, so each SET lands at another moment of whatever the
worker does while idle.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time

from tests.support.sa_mib_probe import CREATE_AND_GO, answered_by_the_sa, result_rows
from tests.support.set_support import i, instance

POLL_S = 0.001  # how often the result table is read while waiting
GAP_S = 0.2  # the longest pause between one request's result and the next SET
GIVE_UP_S = 5.0


async def main(count: int, slid: int, dlids: list[int]) -> dict[str, object]:
    agent, worker, runner = answered_by_the_sa()
    prefix = agent.prefix
    latencies: list[float] = []
    gaps = random.Random(0)
    try:
        for session in range(1, count + 1):
            await asyncio.sleep(gaps.uniform(0, GAP_S))
            first_row = instance("ibSmPathResultSrcLID", prefix, session, 1)
            start = time.perf_counter()
            agent.set((instance("ibSmPathReqRowStatus", prefix, session), i(CREATE_AND_GO)),
                      (instance("ibSmPathReqSrcLID", prefix, session), i(slid)),
                      (instance("ibSmPathReqDstLID", prefix, session),
                       i(dlids[(session - 1) % len(dlids)])))
            while agent.get(first_row) is None:
                if time.perf_counter() - start > GIVE_UP_S:
                    raise SystemExit(f"request {session}: no result row in {GIVE_UP_S} s")
                await asyncio.sleep(POLL_S)
            latencies.append(time.perf_counter() - start)
        await runner.wait()
    finally:
        worker.stop()
    return {"latencies": latencies,
            "rows": [result_rows(agent, "Path", n) for n in range(1, count + 1)]}


if __name__ == "__main__":
    count, slid, *dlids = map(int, sys.argv[1:])
    print(json.dumps(asyncio.run(main(count, slid, dlids))))

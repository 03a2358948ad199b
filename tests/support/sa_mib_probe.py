"""Run under ibsim's preload library: IB-SM-MIB path and multipath requests, SET
through the agent's MIB, answered by the subnet's SA over MADs; prints the
result rows as JSON.

usage: python sa_mib_probe.py SLID DLID SGID DGID   (GIDs in hex)

The agent's fabric model here is a simulated one with the same subnet prefix:
the rows come from the SA alone, which is what this shows.
"""

from __future__ import annotations

import asyncio
import json
import sys

from tests.support.set_support import Agent, i, instance, s

from ibsnmp.mib.sm_sa_live import SaRequestRunner
from ibsnmp.sa.client import SaClient
from ibsnmp.sa.mad_backend import MadSaBackend
from ibsnmp.sa.worker import SaWorker

CREATE_AND_GO = 4
PATH_COLUMNS = ("SrcLID", "DstLID", "MTU", "Rate", "PKey", "PktLifeTime", "NumbPath", "SL")


def result_rows(agent: Agent, table: str, session: int) -> list[dict[str, object]]:
    rows: dict[int, dict[str, object]] = {}
    for column in PATH_COLUMNS:
        for suffix, value in agent.column(f"ibSm{table}Result{column}").items():
            if suffix[8] == session:
                rows.setdefault(suffix[9], {})[column] = (
                    value.hex() if isinstance(value, bytes) else value)
    return [rows[n] for n in sorted(rows)]


def answered_by_the_sa() -> tuple[Agent, SaWorker, SaRequestRunner]:
    """An agent whose request rows the subnet's SA answers; the worker is started."""
    agent = Agent("fat-tree:spines=1,leaves=1,hosts=1,faults=0")
    worker = SaWorker(SaClient.open)
    worker.start()
    runner = SaRequestRunner(agent.state, MadSaBackend(worker, lambda lid: None,
                                                       lambda gid: None, list))
    runner.attach()
    return agent, worker, runner


async def main(slid: int, dlid: int, sgid: bytes, dgid: bytes) -> dict[str, object]:
    agent, worker, runner = answered_by_the_sa()
    try:
        prefix = agent.prefix
        agent.set((instance("ibSmPathReqRowStatus", prefix, 1), i(CREATE_AND_GO)),
                  (instance("ibSmPathReqSrcLID", prefix, 1), i(slid)),
                  (instance("ibSmPathReqDstLID", prefix, 1), i(dlid)))
        status_before = agent.get(instance("ibSmPathReqRowStatus", prefix, 1))
        rows_before = result_rows(agent, "Path", 1)
        agent.set((instance("ibSmMultiPathReqRowStatus", prefix, 2), i(CREATE_AND_GO)),
                  (instance("ibSmMultiPathReqSGIDCount", prefix, 2), i(1)),
                  (instance("ibSmMultiPathReqDGIDCount", prefix, 2), i(1)),
                  (instance("ibSmMultiPathReqSDGIDBlock1", prefix, 2), s(sgid + dgid)))
        await runner.wait()
    finally:
        worker.stop()
    return {"status_before": status_before, "rows_before": rows_before,
            "path": result_rows(agent, "Path", 1),
            "multipath": result_rows(agent, "MultiPath", 2)}


if __name__ == "__main__":
    first, second, source, destination = sys.argv[1:]
    print(json.dumps(asyncio.run(main(int(first), int(second), bytes.fromhex(source),
                                      bytes.fromhex(destination)))))

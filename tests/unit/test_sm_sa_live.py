"""IB-SM-MIB request rows answered by an SA back end (a live SM's), asynchronously:
the SET returns at once, the answer lands in the row, a missing answer turns
the row notInService; the SM's configuration is notWritable."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.support.set_support import Agent, i, instance
from tests.unit.test_set_mib import ACTIVE, CREATE_AND_GO, CREATE_AND_WAIT, DESTROY, NOT_IN_SERVICE, SPEC
from tests.unit.test_set_mib import hosts, path_req, refused, results

from ibsnmp.fabric import routing
from ibsnmp.fabric.model import Port
from ibsnmp.mib.sm_sa_live import SaRequestRunner, attach_provider_sa
from ibsnmp.sa import query
from ibsnmp.sa.backend import SaUnavailable


class GatedSa:
    """An SA that answers from the fabric model once `gate` opens, with no routes
    (as a real SA: the trace must follow the forwarding tables itself)."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.gate = asyncio.Event()
        self.asked: list[query.PathQuery] = []
        self.refuse = False

    async def path_records(self, q: query.PathQuery) -> list[query.PathRecord]:
        self.asked.append(q)
        await self.gate.wait()
        if self.refuse:
            raise SaUnavailable("ERR_REQ_INVALID")
        return [dataclasses.replace(r, route=None)
                for r in query.path_records(self.agent.fabric, q)]

    async def multipath_records(self, q: query.PathQuery, sgids: Sequence[int],
                                dgids: Sequence[int], *, independent: bool = False
                                ) -> list[query.PathRecord]:
        await self.gate.wait()
        return [dataclasses.replace(r, route=None) for r in query.multipath_records(
            self.agent.fabric, q, sgids, dgids, independent=independent)]


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    return Agent(SPEC, seed=4, path=tmp_path / "state.json")


def ask_path(agent: Agent, session: int) -> tuple[Port, Port]:
    """createAndGo of a path request between the first and the last host."""
    src, dst = hosts(agent)[0], hosts(agent)[-1]
    agent.set((path_req(agent, "RowStatus", session), i(CREATE_AND_GO)),
              (path_req(agent, "SrcLID", session), i(src.lid)),
              (path_req(agent, "DstLID", session), i(dst.lid)))
    return src, dst


def live(agent: Agent) -> tuple[GatedSa, SaRequestRunner]:
    sa = GatedSa(agent)
    runner = SaRequestRunner(agent.state, sa)  # type: ignore[arg-type]  # a partial SA
    runner.attach()
    return sa, runner


def test_the_answer_lands_in_the_active_row_after_the_set() -> None:
    async def scenario(agent: Agent) -> None:
        sa, runner = live(agent)
        src, dst = ask_path(agent, 7)
        await asyncio.sleep(0)  # the SA was asked, and has not answered
        assert sa.asked == [query.PathQuery(slid=src.lid, dlid=dst.lid)]
        assert agent.get(path_req(agent, "RowStatus", 7)) == ACTIVE
        assert results(agent, "Path", 7) == []
        sa.gate.set()
        await runner.wait()
        (row,) = results(agent, "Path", 7)
        assert (row["SrcLID"], row["DstLID"], row["NumbPath"]) == (src.lid, dst.lid, 1)

    with_agent(scenario)


def test_a_trace_follows_the_forwarding_tables_of_the_path_the_sa_gave() -> None:
    async def scenario(agent: Agent) -> None:
        sa, runner = live(agent)
        sa.gate.set()
        src, dst = hosts(agent)[0], hosts(agent)[-1]
        agent.set((instance("ibSmTraceReqRowStatus", agent.prefix, 3), i(CREATE_AND_GO)),
                  (path_req(agent, "RowStatus", 3), i(CREATE_AND_WAIT)),
                  (path_req(agent, "SrcLID", 3), i(src.lid)),
                  (path_req(agent, "DstLID", 3), i(dst.lid)))
        await runner.wait()
        route = routing.trace(agent.fabric, src.lid, dst.lid)
        assert [int.from_bytes(h["NodeID"], "big") for h in results(agent, "Trace", 3)] == [
            h.node_guid for h in route.hops]

    with_agent(scenario)


def test_no_answer_turns_the_row_not_in_service_and_active_asks_again() -> None:
    async def scenario(agent: Agent) -> None:
        sa, runner = live(agent)
        sa.refuse = True
        sa.gate.set()
        src, dst = ask_path(agent, 2)
        await runner.wait()
        assert agent.get(path_req(agent, "RowStatus", 2)) == NOT_IN_SERVICE
        sa.refuse = False
        agent.set((path_req(agent, "RowStatus", 2), i(ACTIVE)))
        await runner.wait()
        assert agent.get(path_req(agent, "RowStatus", 2)) == ACTIVE
        assert len(results(agent, "Path", 2)) == 1

    with_agent(scenario)


def test_an_answer_for_a_row_destroyed_meanwhile_is_dropped() -> None:
    async def scenario(agent: Agent) -> None:
        sa, runner = live(agent)
        src, dst = ask_path(agent, 5)
        await asyncio.sleep(0)
        agent.set((path_req(agent, "RowStatus", 5), i(DESTROY)))
        sa.gate.set()
        await runner.wait()
        assert agent.get(path_req(agent, "RowStatus", 5)) is None
        assert results(agent, "Path", 5) == []

    with_agent(scenario)


def test_the_sms_configuration_is_not_writable_with_a_live_sm(tmp_path: Path) -> None:
    agent = Agent(SPEC, seed=4, path=tmp_path / "state.json")
    priority = (instance("ibSmConfigPriority", agent.prefix), i(9))
    assert agent.set(priority) is None  # type: ignore[func-returns-value]  # checks it is None
    SaRequestRunner(agent.state, GatedSa(agent)).attach()  # type: ignore[arg-type]  # a partial SA
    assert refused(agent, (instance("ibSmConfigPriority", agent.prefix), i(8))) == (
        "notWritable", 0)
    host = hosts(agent)[0]
    weight = instance("ibSmVLArbitrationWeight", agent.prefix,
                      host.node_guid.to_bytes(8, "big"), host.num, 1)
    assert refused(agent, (weight, i(200))) == ("notWritable", 0)
    # Request rows stay writable: they are questions to the SA.
    agent.set((path_req(agent, "RowStatus", 1), i(CREATE_AND_WAIT)))
    assert agent.get(path_req(agent, "RowStatus", 1)) == NOT_IN_SERVICE


def with_agent(scenario: Callable[[Agent], Coroutine[Any, Any, None]]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        agent = Agent(SPEC, seed=4, path=Path(directory) / "state.json")
        asyncio.run(scenario(agent))


def test_a_provider_with_an_sa_backend_gets_its_request_rows_answered(tmp_path: Path) -> None:
    agent = Agent(SPEC, seed=4, path=tmp_path / "state.json")
    assert attach_provider_sa(agent.raw, agent.state) is None  # the simulated fabric is its SM
    assert agent.state.sa_runner is None and agent.state.sm_config_writable

    class LiveProvider:
        sa_backend: object = GatedSa(agent)  # a partial SaBackend

    runner = attach_provider_sa(LiveProvider(), agent.state)
    assert runner is not None and runner.backend is LiveProvider.sa_backend
    assert agent.state.sa_runner == runner.start and not agent.state.sm_config_writable

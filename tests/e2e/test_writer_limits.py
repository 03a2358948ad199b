"""[limits] max_result_rows_per_request and max_result_rows: the result rows
a writer's SA requests may make the agent hold, per request and in all.

`ibsnmp run` in a subprocess with a small configuration, net-snmp's snmpset
and snmptable. A request past either limit is refused with
resourceUnavailable and leaves no row; destroying a request gives its room
back; with a live SM, an SA answer past them is not kept. And what
requests, walks and SETs leave behind: nothing of older snapshots, nothing
of destroyed requests.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.support.e2e import RunningAgent, ibsnmp_agent
from tests.support.set_support import Agent, i, instance
from tests.e2e.test_set_e2e import CREATE_AND_GO, DESTROY, PREFIX, SEED, SPEC, set_error, set_ok, table

from ibsnmp.agent.config import ConfigError, load_config
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.sa import query
from ibsnmp.sa.sessions import PATH, Session
from ibsnmp.state.store import AgentState

REQ = "IB-SM-MIB::ibSmPathReq"


def host_lids() -> list[int]:
    fabric = build_fabric(SPEC, seed=SEED)
    return sorted(p.lid for n in fabric.nodes.values() if n.is_ca for p in n.ports if p.lid)


def rows_from(lid: int) -> int:
    """How many result rows a request with only SrcLID makes on this fabric."""
    return len(query.path_records(build_fabric(SPEC, seed=SEED), query.PathQuery(slid=lid)))


@contextmanager
def limited_agent(tmp_path: Path, per_request: int, in_all: int) -> Iterator[RunningAgent]:
    config = tmp_path / "ibsnmp.toml"
    config.write_text(f"[limits]\nmax_result_rows_per_request = {per_request}\n"
                      f"max_result_rows = {in_all}\n")
    with ibsnmp_agent("--config", str(config), "--community", "public",
                      "--write-community", "private", fabric=SPEC, seed=SEED) as running:
        yield running


def create(session: int, *columns: str) -> list[str]:
    """The varbinds of a createAndGo of request `session`; "@" in a column stands for its index."""
    return [f"{REQ}RowStatus.{PREFIX}.{session}", "i", str(CREATE_AND_GO),
            *(part.replace("@", f".{PREFIX}.{session}") for part in columns)]


def result_sessions(agent: RunningAgent) -> dict[int, int]:
    """session id -> result rows shown."""
    counts: dict[int, int] = {}
    for row in table(agent, "ibSmPathResultTable"):
        session = int(row["index"].split(".")[8])
        counts[session] = counts.get(session, 0) + 1
    return counts


def test_a_request_past_the_per_request_limit_is_refused(tmp_path: Path) -> None:
    src, dst = host_lids()[:2]
    many = rows_from(src)
    assert many > 10
    with limited_agent(tmp_path, per_request=10, in_all=1000) as agent:
        status, failed = set_error(agent, *create(1, f"{REQ}SrcLID@", "i", str(src)))
        assert status == "resourceUnavailable" and "ibSmPathReqRowStatus" in failed
        assert table(agent, "ibSmPathReqTable") == []  # the refused SET left no row
        set_ok(agent, *create(2, f"{REQ}SrcLID@", "i", str(src),
                              f"{REQ}DstLID@", "i", str(dst)))
        assert result_sessions(agent) == {2: 1}


def test_requests_past_the_limit_in_all_are_refused_until_one_is_destroyed(
        tmp_path: Path) -> None:
    src, dst = host_lids()[:2]
    many = rows_from(src)
    with limited_agent(tmp_path, per_request=1000, in_all=many + 5) as agent:
        set_ok(agent, *create(1, f"{REQ}SrcLID@", "i", str(src)))
        status, _ = set_error(agent, *create(2, f"{REQ}SrcLID@", "i", str(src)))
        assert status == "resourceUnavailable"
        # What is left of the room still takes a small request.
        set_ok(agent, *create(3, f"{REQ}SrcLID@", "i", str(src),
                              f"{REQ}DstLID@", "i", str(dst)))
        assert result_sessions(agent) == {1: many, 3: 1}
        set_ok(agent, f"{REQ}RowStatus.{PREFIX}.1", "i", str(DESTROY))
        set_ok(agent, *create(2, f"{REQ}SrcLID@", "i", str(src)))
        assert result_sessions(agent) == {2: many, 3: 1}


def test_the_limits_are_checked_when_the_configuration_is_read(tmp_path: Path) -> None:
    path = tmp_path / "ibsnmp.toml"
    path.write_text("[limits]\nmax_result_rows_per_request = 300\nmax_result_rows = 900\n")
    limits = load_config(path).limits
    assert (limits.max_result_rows_per_request, limits.max_result_rows) == (300, 900)
    path.write_text("[limits]\nmax_result_rows = -1\n")
    with pytest.raises(ConfigError, match="limits.max_result_rows"):
        load_config(path)


def test_sets_interleaved_with_walks_keep_no_older_snapshot() -> None:
    """Every configuration SET makes a new configured snapshot: what the
    walks indexed for the older ones must go with them (it used to stay,
    ~0.45 MB per SET on this fabric, for up to 512 snapshots per table)."""
    agent = Agent("fat-tree:spines=4,leaves=16,hosts=32")
    sweep = instance("ibSmConfigSweepInterval", agent.prefix)
    ib_sm_mib = (1, 3, 6, 1, 3, 117, 7)

    def walk(steps: int) -> None:
        oid: tuple[int, ...]
        target, oid = agent.target(), ib_sm_mib
        for _ in range(steps):
            found = agent.mib.get_next(target, oid)
            if found is None:
                return
            oid = found[0]

    tracemalloc.start()
    try:
        agent.set((sweep, i(10)))
        walk(10_000)
        start = tracemalloc.get_traced_memory()[0]
        for round_ in range(12):
            agent.set((sweep, i(11 + round_ % 2)))
            walk(10_000)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert grown < 500_000, f"{grown} octets kept after 12 SETs"


def test_destroyed_requests_leave_nothing_behind() -> None:
    """Results created, walked and destroyed: the Python heap is back where
    it started (what the walks kept for older versions goes too)."""
    agent = Agent("fat-tree:spines=2,leaves=4,hosts=8,lmc=1")
    lids = sorted(p.lid for n in agent.fabric.nodes.values() if n.is_ca for p in n.ports if p.lid)
    results = (1, 3, 6, 1, 3, 117, 7, 1, 10, 2)  # ibSmPathResultTable

    def walk() -> int:
        oid: tuple[int, ...]
        target, oid, count = agent.target(), results, 0
        while (found := agent.mib.get_next(target, oid)) is not None \
                and found[0][: len(results)] == results:
            oid, count = found[0], count + 1
        return count

    def request(column: str, session: int) -> tuple[int, ...]:
        return instance(f"ibSmPathReq{column}", agent.prefix, session)

    tracemalloc.start()
    try:
        walk()
        start = tracemalloc.get_traced_memory()[0]
        for session, lid in enumerate(lids, 1):
            agent.set((request("RowStatus", session), i(CREATE_AND_GO)),
                      (request("SrcLID", session), i(lid)), (request("NumbPath", session), i(127)))
        walked = walk()
        held = tracemalloc.get_traced_memory()[0] - start
        for session in range(1, len(lids) + 1):
            agent.set((request("RowStatus", session), i(DESTROY)))
        assert walk() == 0
        gc.collect()
        left = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert walked > 10_000 and held > 1_000_000
    assert left < held / 20, f"{left} of {held} octets left"


def test_an_sa_answer_past_the_limits_leaves_the_row_not_in_service() -> None:
    """With a live SM the SA answers after the SET: an answer with more rows
    than the limits leave room for is not kept (the row goes notInService)."""
    state = AgentState(max_result_rows_per_request=3, max_result_rows=5)
    txn = state.begin()
    for number in (1, 2):
        txn.put_session(Session(PATH, (b"p", number), 1, txn.now))
    state.commit(txn)
    first, second = (state.sessions[(PATH, (b"p", n))] for n in (1, 2))
    assert state.settle(first, ({},) * 3)
    assert state.sessions[first.key].results == ({},) * 3
    assert state.settle(second, ({},) * 3)  # 3 + 3 > 5 in all
    assert state.sessions[second.key].status == 2 and state.sessions[second.key].results == ()

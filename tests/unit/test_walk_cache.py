"""Walk steps kept encoded: what the cache keeps, for how long, and what it never keeps."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from typing import Any

import pytest
from tests.support.fast_diff import WRITE_COMMUNITY, TwoPaths, response_varbind_octets
from tests.support.set_support import DEFS, Agent, FakeClock, i, instance, oid_of
from tests.support.set_support import s as s_
from tests.support.wire import community_request, decode_response

from ibsnmp.agent.config import ConfigError, parse_config
from ibsnmp.agent.fast_reads import _step_of
from ibsnmp.wire.ber import oid_of_element as _oid_of
from ibsnmp.agent.walk_cache import WalkCache
from ibsnmp.fabric.lineage import Aspect, Lineage
from ibsnmp.mib.api import INFINIBAND_MIB, ContextTarget, Oid
from ibsnmp.mib.virtual import Invalidation
from ibsnmp.mib.write import state_value_problem
from ibsnmp.providers.simulated import SimulatedProvider
from ibsnmp.state.store import AgentState, ConfiguredProvider

SPEC = "fat-tree:spines=1,leaves=2,hosts=2"
PMA_OBJECTS = INFINIBAND_MIB + (6, 1)  # PMA-MIB ibPmaObjects: every counter table
SMA_MIB = INFINIBAND_MIB + (3,)
IB_SM_MIB = INFINIBAND_MIB + (7,)
PATH_REQUEST = oid_of("ibSmPathReqTable")
SM_SL_TO_VL = oid_of("ibSmSwSLtoVLMapTable")
SYS_CONTACT = (1, 3, 6, 1, 2, 1, 1, 4, 0)


# -- the cache itself ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Node:
    guid: int


@dataclasses.dataclass(frozen=True, eq=False)
class _Snapshot:
    """What the cache reads of a fabric snapshot: its lineage."""

    lineage: Lineage = dataclasses.field(default_factory=Lineage)


def _target(fabric: object, guid: int = 1) -> ContextTarget:
    return ContextTarget(fabric, _Node(guid), False)


def _key(n: int) -> bytes:
    return bytes((0x06, 0x02, 0x2B, n))  # OID 1.3.n


def _step(n: int) -> bytes:
    return bytes((0x30, 0x06)) + _key(n) + b"\x05\x00"


def test_a_context_keeps_its_steps_for_one_snapshot_and_version() -> None:
    cache, fabric, view = WalkCache(10), _Snapshot(), object()
    steps = cache.steps_for(_target(fabric), view, (0,))
    assert steps is not None
    cache.remember(steps, _key(0), _step(1))
    assert cache.steps_for(_target(fabric), view, (0,)) == {_key(0): _step(1)}
    assert cache.size == 1
    # Another view, node or version is another set of steps.
    assert cache.steps_for(_target(fabric), object(), (0,)) == {}
    assert cache.steps_for(_target(fabric, 2), view, (0,)) == {}
    # A new version drops what older versions kept, a new snapshot too.
    assert cache.steps_for(_target(fabric), view, (1,)) == {}
    assert cache.size == 0
    steps = cache.steps_for(_target(fabric), view, (1,))
    assert steps is not None
    cache.remember(steps, _key(0), _step(1))
    assert cache.steps_for(_target(_Snapshot()), view, (1,)) == {}
    assert cache.size == 0


def test_a_new_version_the_mib_can_judge_drops_only_the_steps_it_alters() -> None:
    def judge_version(before: Any, after: Any) -> Invalidation | None:
        # The first element as InfinibandMib's commit count: a change of it alters anything.
        return None if before[0] != after[0] else Invalidation(bytearray(b"\0\1\0"), {})

    cache, fabric, view = WalkCache(10, version_judge=judge_version), _Snapshot(), object()
    steps = cache.steps_for(_target(fabric), view, (0, 0))
    assert steps is not None
    for n in range(3):
        cache.remember(steps, _key(n), _step(n + 1), (n, n, (), ()))
    cache.remember(steps, _key(3), _step(4), (0, 2, (), ()))  # passed through handler 1
    cache.remember(steps, _key(4), _step(5))  # no tag: what it depends on is unknown
    assert cache.steps_for(_target(fabric), view, (0, 1)) == {_key(0): _step(1), _key(2): _step(3)}
    assert cache.size == 2 and cache.carried_versions == 1
    # With a structural change at once, and no judge for that: nothing holds.
    moved = _Snapshot(fabric.lineage.successor(Aspect.LINKS))
    assert cache.steps_for(_target(moved), view, (0, 2)) == {}
    steps = cache.steps_for(_target(moved), view, (0, 2))
    assert steps is not None
    cache.remember(steps, _key(0), _step(1), (0, 0, (), ()))
    assert cache.steps_for(_target(moved), view, (1, 2)) == {} and cache.size == 0


def _two_octet_key(n: int) -> bytes:
    return bytes((0x06, 0x03, 0x2B, 0x80 | n >> 7, n & 0x7F))  # OID 1.3.n, n < 2^14


def test_equal_tags_are_kept_as_one_and_forgotten_with_their_steps() -> None:
    cache, view = WalkCache(1000), object()
    steps = cache.steps_for(_target(_Snapshot()), view, (0,))
    assert steps is not None
    # Tags as the MIB builds them: a new tuple for every step, equal within a row.
    for n in range(300):
        row = n // 100
        cache.remember(steps, _two_octet_key(n), _step(1), (row, row, (7, 8), (row,)))
    assert len(steps.shared) == 3
    first = steps.tags[_two_octet_key(0)]
    assert first is steps.tags[_two_octet_key(99)] and first == (0, 0, (7, 8), (0,))
    assert first is not steps.tags[_two_octet_key(100)]
    # Steps forgotten take their tags with them once unused ones outnumber the rest.
    steps.forget([_two_octet_key(n) for n in range(100, 300)])
    assert set(steps) == {_two_octet_key(n) for n in range(100)} and len(steps.tags) == 100
    assert len(steps.shared) == 3  # two unused, not yet more than twice the used plus 64
    for n in range(100, 300):
        cache.remember(steps, _two_octet_key(n), _step(1), (n, n, (7, 8), (n,)))
    steps.forget([_two_octet_key(n) for n in range(1, 300)])
    assert list(steps.shared.values()) == [steps.tags[_two_octet_key(0)]] == [(0, 0, (7, 8), (0,))]


def test_a_snapshot_with_new_counter_values_keeps_the_steps() -> None:
    cache, fabric, view = WalkCache(10), _Snapshot(), object()
    steps = cache.steps_for(_target(fabric), view, (0,))
    assert steps is not None
    cache.remember(steps, _key(0), _step(1))
    # Another snapshot object of the same structure (succession.with_values shares the lineage).
    polled = _Snapshot(fabric.lineage)
    assert cache.steps_for(_target(polled), view, (0,)) == {_key(0): _step(1)}
    assert cache.steps_for(_target(_Snapshot(fabric.lineage.successor(Aspect.LINKS))), view, (0,)) == {}


def test_the_limit_drops_the_least_recently_used_context_first() -> None:
    cache, fabric, view = WalkCache(4), _Snapshot(), object()
    first = cache.steps_for(_target(fabric, 1), view, ())
    second = cache.steps_for(_target(fabric, 2), view, ())
    assert first is not None and second is not None
    for n in range(2):
        cache.remember(first, _key(n), _step(n + 1))
        cache.remember(second, _key(n), _step(n + 1))
    assert cache.size == 4
    cache.steps_for(_target(fabric, 1), view, ())  # the first is used again
    third = cache.steps_for(_target(fabric, 3), view, ())
    assert third is not None
    cache.remember(third, _key(0), _step(1))
    assert cache.size == 3
    assert cache.steps_for(_target(fabric, 2), view, ()) == {}  # the second went
    assert len(cache.steps_for(_target(fabric, 1), view, ()) or {}) == 2


def test_a_context_that_fills_the_cache_alone_keeps_what_it_has() -> None:
    cache, fabric, view = WalkCache(3), _Snapshot(), object()
    steps = cache.steps_for(_target(fabric), view, ())
    assert steps is not None
    for n in range(10):
        cache.remember(steps, _key(n), _step(n + 1))
    assert cache.size == 3 and sorted(steps) == [_key(0), _key(1), _key(2)]


def test_a_limit_of_zero_keeps_nothing_and_resize_applies_at_once() -> None:
    assert WalkCache(0).steps_for(_target(_Snapshot()), object(), ()) is None
    cache, fabric, view = WalkCache(8), _Snapshot(), object()
    steps = cache.steps_for(_target(fabric), view, ())
    assert steps is not None
    for n in range(8):
        cache.remember(steps, _key(n), _step(n + 1))
    cache.resize(0)
    assert cache.size == 0 and cache.steps_for(_target(fabric), view, ()) is None
    with pytest.raises(ValueError):
        WalkCache(-1)


def test_the_limit_is_configured_in_limits() -> None:
    assert parse_config({}).limits.walk_cache == 262_144
    assert parse_config({"limits": {"walk_cache": 0}}).limits.walk_cache == 0
    with pytest.raises(ConfigError, match="limits.walk_cache"):
        parse_config({"limits": {"walk_cache": -1}})
    with pytest.raises(ConfigError, match="limits.walk_cache"):
        parse_config({"limits": {"walk_cache": "many"}})


# -- what may be kept -----------------------------------------------------------------------


def _walk(agent: Agent, target: ContextTarget) -> Iterator[tuple[Oid, Any, bool]]:
    oid = INFINIBAND_MIB
    while (found := agent.mib.next_step(target, oid)) is not None:
        yield found[:3]
        oid = found[0]


@pytest.mark.slow  # seconds of its own: left out of make quick
def test_every_cell_that_moves_with_time_is_marked_so() -> None:
    """Each context walked at two instants of one snapshot: a cell that differs
    comes from an object marked as reading the time (so no walk keeps it)."""
    agent = Agent("fat-tree:spines=2,leaves=2,hosts=2")
    moved = timed = 0
    for context in [b""] + [b"%016x" % guid for guid in sorted(agent.fabric.nodes)]:
        early = agent.target(context)
        late = dataclasses.replace(early, elapsed=early.elapsed + 86_400.0)
        before, after = list(_walk(agent, early)), list(_walk(agent, late))
        assert [oid for oid, _, _ in before] == [oid for oid, _, _ in after]
        for (oid, cell, static), (_, later_cell, _) in zip(before, after):
            timed += not static
            if cell != later_cell:
                moved += 1
                assert not static, f"{'.'.join(map(str, oid))} changes with time"
    assert moved > 1000 and timed >= moved  # the counters did move, and were marked


def test_the_version_changes_with_a_commit_and_with_a_session() -> None:
    agent = Agent(SPEC)
    target = agent.target()
    first = agent.mib.version(target)
    assert agent.mib.version(target) == first
    agent.set((instance("ibSmConfigSweepInterval", agent.prefix), i(31)))
    second = agent.mib.version(target)
    assert second != first
    # A request session that opens (a path request row) is another change.
    agent.set((instance("ibSmPathReqRowStatus", agent.prefix, 1), i(5)))  # createAndWait
    assert agent.mib.version(target) != second


# The tables whose rows are request sessions and service associations: the
# ones that follow the state's stamp.
STAMPED_ENTRIES = {"ibSmPathReqEntry", "ibSmPathResultEntry", "ibSmMultiPathReqEntry",
                   "ibSmMultiPathResultEntry", "ibSmTraceReqEntry", "ibSmTraceResultEntry",
                   "ibSmServiceAssocEntry"}


def _altered_entries(agent: Agent, before: Any, after: Any) -> set[str] | None:
    altered = agent.mib.version_change(before, after)
    if altered is None:
        return None
    assert not altered.owned
    entries = {o.oid: o.name for o in DEFS.objects.values() if o.kind == "entry"}
    return {entries.get(oid[:-1], "scalar")
            for oid, hit in zip(agent.mib.object_oids, altered.whole) if hit}


def test_a_request_session_alters_the_session_tables_alone_a_configuration_set_anything() -> None:
    agent = Agent(SPEC)
    target = agent.target()
    first = agent.mib.version(target)
    assert _altered_entries(agent, first, first) == set()
    agent.set((instance("ibSmPathReqRowStatus", agent.prefix, 1), i(5)))  # createAndWait
    opened = agent.mib.version(target)
    assert _altered_entries(agent, first, opened) == STAMPED_ENTRIES
    agent.set((instance("ibSmPathReqRowStatus", agent.prefix, 1), i(6)))  # destroy
    destroyed = agent.mib.version(target)
    assert _altered_entries(agent, opened, destroyed) == STAMPED_ENTRIES
    # A session that expires is one too.
    agent.set((instance("ibSmTraceReqRowStatus", agent.prefix, 7), i(5)))
    traced = agent.mib.version(target)
    agent.clock.now += agent.state.lifetime + 1
    assert _altered_entries(agent, traced, agent.mib.version(target)) == STAMPED_ENTRIES
    # The system group is read outside the bound subtrees: as a session.
    before_contact = agent.mib.version(target)
    agent.set((SYS_CONTACT, s_("noc@example.net")))
    assert _altered_entries(agent, before_contact, agent.mib.version(target)) == STAMPED_ENTRIES
    # The SM's configuration reaches the fabric's tables: anything may change.
    agent.set((instance("ibSmConfigSweepInterval", agent.prefix), i(31)))
    assert _altered_entries(agent, destroyed, agent.mib.version(target)) is None
    # So does a SET of both kinds at once.
    latest = agent.mib.version(target)
    agent.set((instance("ibSmPathReqRowStatus", agent.prefix, 2), i(5)),
              (instance("ibSmConfigSweepInterval", agent.prefix), i(32)))
    assert _altered_entries(agent, latest, agent.mib.version(target)) is None


# -- through the fast responder --------------------------------------------------------------


class _Clocked(TwoPaths):
    """TwoPaths whose reads happen at `self.elapsed`, which a test moves."""

    def __init__(self) -> None:
        super().__init__(SimulatedProvider(SPEC, 1, watch_interval=0))
        self.elapsed = 100.0
        directory = self.agent.directory
        resolve = directory._resolver  # the frozen resolver TwoPaths installed

        def clocked(name: bytes) -> ContextTarget | None:
            target = resolve(name)
            return None if target is None else dataclasses.replace(target, elapsed=self.elapsed)

        directory._resolver = clocked


def _bulk_walk(paths: TwoPaths, root: Oid, fast: bool,
               stop: Oid | None = None) -> list[tuple[Oid, int, bytes]]:
    """(OID, tag, value content octets) of every varbind under `root`, up to
    `stop` (None: to the subtree's end)."""
    out: list[tuple[Oid, int, bytes]] = []
    oid = root
    while True:
        reply = paths.send(community_request("bulk", [oid], max_repetitions=40), fast=fast)
        assert reply is not None
        for name, tag, value in response_varbind_octets(reply):
            if name[: len(root)] != root or stop is not None and name >= stop:
                return out
            out.append((name, tag, value))
            oid = name


def _sm_walk(paths: TwoPaths, fast: bool) -> list[tuple[Oid, int, bytes]]:
    """IB-SM-MIB up to its switches' SL-to-VL tables: every table the SM's
    configuration and the SA request sessions reach, without the SL-to-VL
    maps' 77,760 rows (slow through pysnmp)."""
    return _bulk_walk(paths, IB_SM_MIB, fast, stop=SM_SL_TO_VL)


def test_the_fast_path_keeps_static_steps_but_never_counters() -> None:
    paths = _Clocked()
    walks = paths.dispatcher.parts.fast_reads.walks
    sma = _bulk_walk(paths, SMA_MIB, fast=True)
    assert len(sma) > 300 and walks.size >= len(sma) - 1  # all but the step leaving the MIB
    assert _bulk_walk(paths, SMA_MIB, fast=True) == sma == _bulk_walk(paths, SMA_MIB, fast=False)
    early = _bulk_walk(paths, PMA_OBJECTS, fast=True)
    paths.elapsed += 3600.0
    late = _bulk_walk(paths, PMA_OBJECTS, fast=True)
    assert late == _bulk_walk(paths, PMA_OBJECTS, fast=False)
    moved = {a[0] for a, b in zip(early, late) if a != b}
    assert len(moved) > 20  # the counters moved ...
    kept = {_oid_of(_step_of(varbind)[0]) for context in walks._contexts.values()
            for varbind in context.values()}
    assert not moved & kept  # ... and not one of them was kept


def test_a_request_session_shows_at_once_and_leaves_the_fabric_s_kept_steps() -> None:
    state = AgentState.open(None, state_value_problem, clock=FakeClock())
    provider = ConfiguredProvider(SimulatedProvider(SPEC, 1, watch_interval=0), state)
    paths = TwoPaths(provider, state)
    walks = paths.dispatcher.parts.fast_reads.walks
    first = _sm_walk(paths, fast=True)
    kept = walks.size
    assert len(first) > 300 and kept >= len(first) - 1

    def set_(oid: Oid, value: Any) -> None:
        reply = paths.pysnmp(community_request("set", [oid], community=WRITE_COMMUNITY,
                                               values=[value]))
        assert reply is not None and decode_response(reply)[1] == 0  # noError

    def row(column: str, *index: Any) -> Oid:
        return instance(column, provider.snapshot.subnet_prefix.to_bytes(8, "big"), *index)

    set_(row("ibSmPathReqRowStatus", 1), i(5))  # createAndWait: a session opens
    opened = _sm_walk(paths, fast=True)
    assert opened == _sm_walk(paths, fast=False)
    new_names = {name for name, _, _ in opened} - {name for name, _, _ in first}
    assert new_names and all(name[:len(PATH_REQUEST)] == PATH_REQUEST for name in new_names)
    # Only the steps that passed the request tables were walked again.
    assert walks.carried_versions == 1 and walks.size >= kept - 20 + len(new_names)
    set_(row("ibSmPathReqRowStatus", 1), i(6))  # destroy
    assert _sm_walk(paths, fast=True) == first == _sm_walk(paths, fast=False)
    assert walks.carried_versions == 2 and walks.size >= kept - 20
    # sysContact is read outside the bound subtrees: as a session.
    set_(SYS_CONTACT, s_("noc@example.net"))
    assert paths.fast(community_request("next", [IB_SM_MIB])) is not None
    assert walks.carried_versions == 3 and walks.size >= kept - 20
    # The SM's configuration reaches the fabric's tables: nothing kept holds.
    set_(row("ibSmConfigSweepInterval"), i(31))
    assert paths.fast(community_request("next", [IB_SM_MIB])) is not None
    assert walks.carried_versions == 3 and walks.size == 1


def test_a_reload_applies_a_new_limit() -> None:
    paths = TwoPaths(SimulatedProvider("single", 1, watch_interval=0))
    walks = paths.dispatcher.parts.fast_reads.walks
    assert walks.limit == 262_144
    settings = paths.agent.settings
    paths.agent.replace_principals(dataclasses.replace(
        settings, limits=dataclasses.replace(settings.limits, walk_cache=0)))
    assert walks.limit == 0 and walks.size == 0
    assert paths.fast(community_request("next", [SMA_MIB])) is not None  # still answered


def test_a_kept_varbind_reads_back_as_the_step_it_was() -> None:
    """Kept steps are read by hand where lengths take one octet; long OIDs
    and long values (multi-octet lengths) must read back the same."""
    from ibsnmp.agent.fast_reads import _encoded
    from ibsnmp.mib.api import Cell
    from ibsnmp.wire.ber import OidEncodings

    encode_oid, rnd = OidEncodings(), random.Random(7)
    for n in range(2000):
        arcs = rnd.randrange(1, 126 if n % 10 == 0 else 40)
        oid = (1, 3) + tuple(rnd.choice((rnd.randrange(128), rnd.randrange(1 << 31)))
                             for _ in range(arcs))
        cell = (Cell(0x04, rnd.randbytes(rnd.choice((0, 5, 120, 300)))) if n % 2
                else Cell(0x02, rnd.randrange(-2**31, 2**31)))
        step = _encoded(oid, cell, encode_oid)
        assert _step_of(step[1]) == step[:3] + (None,)  # kept steps carry no OID tuple
        assert _oid_of(step[0]) == oid


# -- whole answers kept ----------------------------------------------------------------------


def _counting_answers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many answers the fast responder works out step by step (kept ones aside)."""
    from ibsnmp.agent import fast_reads

    made = [0]
    work_out = fast_reads._Request._respond

    def counted(self: Any) -> Any:
        made[0] += 1
        return work_out(self)

    monkeypatch.setattr(fast_reads._Request, "_respond", counted)
    return made


def test_a_repeated_request_is_answered_whole_from_kept_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _Clocked()
    walks = paths.dispatcher.parts.fast_reads.walks
    made = _counting_answers(monkeypatch)
    first = _bulk_walk(paths, SMA_MIB, fast=True)  # steps found and kept
    assert walks.answer_octets == 0
    second = _bulk_walk(paths, SMA_MIB, fast=True)  # answers of kept steps alone: kept
    assert walks.answer_octets > 0
    made[0] = 0
    paths.elapsed += 60.0  # ibSmaSmInfoActCount counts with the time: read anew
    third = _bulk_walk(paths, SMA_MIB, fast=True)
    assert first == second and third == _bulk_walk(paths, SMA_MIB, fast=False) != first
    assert 0 < made[0] <= 3  # the answers with ActCount in them, the one leaving the MIB


def test_answers_holding_counters_are_never_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _Clocked()
    walks = paths.dispatcher.parts.fast_reads.walks
    early = [_bulk_walk(paths, PMA_OBJECTS, fast=True) for _ in range(3)][-1]
    paths.elapsed += 3600.0
    late = _bulk_walk(paths, PMA_OBJECTS, fast=True)
    assert late == _bulk_walk(paths, PMA_OBJECTS, fast=False) != early
    for context in walks._contexts.values():
        for answer, _ in context.answers.values():
            kept = {_oid_of(_step_of(varbind)[0]) for varbind in _varbinds_of(answer)}
            assert not kept & {name for name, _, _ in late if name[:len(PMA_OBJECTS)] == PMA_OBJECTS}


def _varbinds_of(octets: bytes) -> list[bytes]:
    """The varbind elements of concatenated varbind octets."""
    out, at = [], 0
    while at < len(octets):
        size = octets[at + 1]
        head = 2
        if size & 0x80:
            head = 2 + (size & 0x7F)
            size = int.from_bytes(octets[at + 2:at + head], "big")
        out.append(octets[at:at + head + size])
        at += head + size
    return out


def test_a_change_that_alters_a_kept_step_drops_its_context_s_answers() -> None:
    state = AgentState.open(None, state_value_problem, clock=FakeClock())
    provider = ConfiguredProvider(SimulatedProvider(SPEC, 1, watch_interval=0), state)
    paths = TwoPaths(provider, state)
    walks = paths.dispatcher.parts.fast_reads.walks
    first = [_sm_walk(paths, fast=True) for _ in range(2)][-1]
    assert walks.answer_octets > 0

    def set_(oid: Oid, value: Any) -> None:
        reply = paths.pysnmp(community_request("set", [oid], community=WRITE_COMMUNITY,
                                               values=[value]))
        assert reply is not None and decode_response(reply)[1] == 0  # noError

    row = instance("ibSmPathReqRowStatus", provider.snapshot.subnet_prefix.to_bytes(8, "big"), 1)
    set_(row, i(5))  # createAndWait: the session tables gain a row
    opened = _sm_walk(paths, fast=True)
    assert opened == _sm_walk(paths, fast=False) != first
    set_(row, i(6))  # destroy
    assert _sm_walk(paths, fast=True) == first


def test_kept_answers_take_at_most_their_share_of_the_limit() -> None:
    from ibsnmp.agent.walk_cache import ANSWER_OCTETS_PER_STEP

    cache = WalkCache(limit=4)
    steps = cache.steps_for(_target(_Snapshot()), None, 1)
    assert steps is not None
    budget = 4 * ANSWER_OCTETS_PER_STEP
    cache.keep_answer(steps, b"a", b"x" * (budget - 1), 1)
    cache.keep_answer(steps, b"b", b"y", 1)  # one octet over: not kept
    assert set(steps.answers) == {b"a"} and cache.answer_octets == budget
    cache.remember(steps, _key(1), _step(1))
    cache.remember(steps, _key(1), _step(2))  # a kept step changed: its answers go
    assert steps.answers == {} and cache.answer_octets == 0
    cache.keep_answer(steps, b"c", b"z", 1)
    cache.resize(0)
    assert cache.answer_octets == 0

"""What the fast responder does beyond pysnmp's answers, and what it leaves alone."""

from __future__ import annotations

from typing import NoReturn

import pytest
from pysnmp.proto.api import v2c as api_v2c
from tests.support.fast_diff import COMMUNITY, TwoPaths, assert_same_response, response_varbinds
from tests.support.wire import V1, V2C, community_request, decode_response

from ibsnmp.agent.config import ConfigError, parse_config
from ibsnmp.providers.simulated import SimulatedProvider
from ibsnmp.wire.ber import END_OF_MIB_VIEW

SYS_DESCR = (1, 3, 6, 1, 2, 1, 1, 1, 0)
SNMP_IN_PKTS = (1, 3, 6, 1, 2, 1, 11, 1, 0)
INFINIBAND = (1, 3, 6, 1, 3, 117)
MAX_MESSAGE = 65507  # snmpEngineMaxMessageSize


@pytest.fixture(scope="module")
def paths() -> TwoPaths:
    return TwoPaths(SimulatedProvider("single", 1, watch_interval=0))


REQUESTS = {
    "v2c get": community_request("get", [SYS_DESCR, INFINIBAND + (3, 1, 1, 0), (1, 3, 6, 1, 9)]),
    "v2c next": community_request("next", [INFINIBAND, SYS_DESCR]),
    "v2c bulk": community_request("bulk", [SYS_DESCR, INFINIBAND], non_repeaters=1,
                                  max_repetitions=9),
    "v2c bulk at the end": community_request("bulk", [(2, 1)], max_repetitions=3),
    "v1 get": community_request("get", [SYS_DESCR], version=V1),
    "v1 get missing": community_request("get", [SYS_DESCR, (1, 3, 6, 1, 9)], version=V1),
    "v1 next at the end": community_request("next", [(2, 1)], version=V1),
    "v1 next": community_request("next", [INFINIBAND], version=V1),
}


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_statistics_count_the_same_on_both_paths(paths: TwoPaths, name: str) -> None:
    data = REQUESTS[name]
    before = paths.counters()
    slow = paths.pysnmp(data)
    middle = paths.counters()
    fast = paths.fast(data)
    after = paths.counters()
    assert_same_response(data, slow, fast)
    slow_delta = {key: middle[key] - before[key] for key in before}
    fast_delta = {key: after[key] - middle[key] for key in before}
    assert fast_delta == slow_delta
    assert fast_delta["snmpInPkts"] == 1 and fast_delta["snmpOutGetResponses"] == 1


def test_a_get_of_snmp_in_pkts_counts_itself(paths: TwoPaths) -> None:
    data = community_request("get", [SNMP_IN_PKTS])
    before = paths.counters()["snmpInPkts"]
    reply = paths.fast(data)
    assert reply is not None
    assert int(decode_response(reply)[3][0][1]) == before + 1


def test_getbulk_stops_at_max_getbulk_varbinds(paths: TwoPaths) -> None:
    data = community_request("bulk", [INFINIBAND, INFINIBAND + (5,)], max_repetitions=100_000)
    fast = paths.fast(data)
    assert fast is not None and decode_response(fast)[1:3] == (0, 0)
    assert len(response_varbinds(fast)) == 100  # [limits] max_getbulk_varbinds, as snmpd's


def test_getbulk_fills_the_message_beyond_pysnmps_64(paths: TwoPaths) -> None:
    data = community_request("bulk", [INFINIBAND, INFINIBAND + (5,)], max_repetitions=100_000)
    reads = paths.dispatcher.parts.fast_reads
    reads.max_getbulk_varbinds = 0  # no such limit: as many as the message holds
    try:
        fast = paths.fast(data)
    finally:
        reads.max_getbulk_varbinds = 100
    slow = paths.pysnmp(data)
    assert fast is not None and slow is not None
    fast_varbinds, slow_varbinds = response_varbinds(fast), response_varbinds(slow)
    assert len(slow_varbinds) == 64
    assert fast_varbinds[:64] == slow_varbinds
    # Fewer varbinds, never tooBig (RFC 3416 4.2.3): as many as the message holds.
    assert decode_response(fast)[1:3] == (0, 0)
    assert MAX_MESSAGE - 100 < len(fast) <= MAX_MESSAGE


def test_getbulk_of_a_walk_past_the_end_stops_with_end_of_mib_view(paths: TwoPaths) -> None:
    reply = paths.fast(community_request("bulk", [(1, 3, 6, 1, 6, 3, 99), (2, 1)],
                                         max_repetitions=100_000))
    assert reply is not None
    tags = [tag for _, tag in response_varbinds(reply)]
    assert tags[-2:] == [END_OF_MIB_VIEW, END_OF_MIB_VIEW] and len(reply) < 10_000


LEFT_TO_PYSNMP = {
    "set": community_request("set", [SYS_DESCR], values=[api_v2c.OctetString("x")]),
    "unknown community": community_request("get", [SYS_DESCR], community="nobody"),
    "unknown node": community_request("get", [SYS_DESCR],
                                      community=f"{COMMUNITY}@0123456789abcdef"),
    "trailing octets": community_request("get", [SYS_DESCR]) + b"\x00",
}


@pytest.mark.parametrize("name", sorted(LEFT_TO_PYSNMP))
def test_what_the_fast_path_leaves_to_pysnmp(paths: TwoPaths, name: str) -> None:
    data = LEFT_TO_PYSNMP[name]
    before = paths.counters()
    passed = paths.passed(data)  # None: the prefilter drops it (pysnmp never sees it)
    assert passed is None or paths.dispatcher.parts.fast_reads.answer(data, passed) is None
    assert paths.counters() == before  # nothing counted twice: pysnmp counts it


def test_fast_path_switch() -> None:
    assert parse_config({}).limits.fast_path is True
    assert parse_config({"limits": {"fast_path": False}}).limits.fast_path is False
    with pytest.raises(ConfigError, match="limits.fast_path"):
        parse_config({"limits": {"fast_path": "no"}})


def test_switched_off_pysnmp_answers(paths: TwoPaths) -> None:
    paths.fast_answered = False
    reply = paths.send(community_request("get", [SYS_DESCR], version=V2C), fast=False)
    assert reply is not None and not paths.fast_answered


def test_read_views_hide_what_vacm_hides() -> None:
    from ibsnmp.agent.read_view import SECRET_SUBTREES, ReadView
    from ibsnmp.agent.views import key_subtrees

    no_keys, with_keys = ReadView("no-keys"), ReadView("with-keys")
    for key in key_subtrees():
        inside = key + (1, 2)
        assert not no_keys.contains(inside) and not no_keys.contains_below_root(inside)
        assert with_keys.contains(inside) and with_keys.contains_below_root(inside)
        assert no_keys.contains(key[:-1])  # the entry above a key column is shown
    for secret in SECRET_SUBTREES:
        assert not with_keys.contains(secret + (1,))
    assert not no_keys.contains((1, 3, 6, 2)) and not no_keys.contains((1, 3))


def test_the_view_lookup_by_first_arcs_agrees_with_the_rule() -> None:
    from ibsnmp.agent.read_view import SECRET_SUBTREES, ReadView
    from ibsnmp.agent.views import key_subtrees

    # Every excluded subtree, its parent, its siblings, what lies in and after it,
    # and its prefixes: names on both sides of each boundary.
    names = set()
    for subtree in (*SECRET_SUBTREES, *key_subtrees()):
        for depth in range(5, len(subtree) + 1):  # under VIEW_ROOT (1.3.6.1)
            prefix = subtree[:depth]
            names.update({prefix, prefix[:-1] + (prefix[-1] + 1,), prefix + (0,), prefix + (1, 2)})
    for view in (ReadView("no-keys"), ReadView("with-keys")):
        hidden = [name for name in sorted(names) if not view.contains_below_root(name)]
        assert hidden == [name for name in sorted(names) if not view.contains(name)]
        assert hidden  # the secrets, in both views


def test_a_failing_read_leaves_the_request_to_pysnmp(paths: TwoPaths,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    fast_reads = paths.dispatcher.parts.fast_reads
    cells = fast_reads._cells

    class Broken:
        subtrees = cells.subtrees
        get_cell = cells.get_cell
        version = cells.version

        @staticmethod
        def next_step(target: object, oid: tuple[int, ...]) -> NoReturn:
            raise ValueError("binding bug")

    data = community_request("next", [INFINIBAND])
    before, failures = paths.counters(), fast_reads.failures
    fast_reads._cells = Broken()
    limit = fast_reads.walks.limit
    fast_reads.walks.resize(0)  # no step kept from earlier walks: the read is made
    try:
        passed = paths.passed(data)
        assert passed is not None
        reply = fast_reads.answer(data, passed)
    finally:
        fast_reads._cells = cells
        fast_reads.walks.resize(limit)
    assert reply is None and fast_reads.failures == failures + 1
    assert paths.counters() == before
    assert "Traceback" not in caplog.text


def test_getbulk_repetitions_stop_at_the_fill_time(paths: TwoPaths) -> None:
    """`[limits] getbulk_fill_ms`: past it no more repetitions are added (the
    non-repeaters and the first repetition always come); what comes is the
    start of the whole answer, without an error."""
    data = community_request("bulk", [SYS_DESCR, INFINIBAND], non_repeaters=1, max_repetitions=100)
    whole = paths.fast(data)
    reads = paths.dispatcher.parts.fast_reads
    reads.getbulk_fill_ms = 1e-9  # over at once: stops at the first look at the clock
    try:
        cut = paths.fast(data)
    finally:
        reads.getbulk_fill_ms = 0
    assert whole is not None and cut is not None
    assert decode_response(cut)[1:3] == (0, 0)
    whole_varbinds, cut_varbinds = response_varbinds(whole), response_varbinds(cut)
    assert len(whole_varbinds) == 100
    assert len(cut_varbinds) == 1 + 1 and cut_varbinds == whole_varbinds[:2]


def test_getbulk_fill_time_counts_from_the_datagram_s_arrival(
        paths: TwoPaths, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a costly request leaves less of the fill time: a GETBULK that
    arrived more than `getbulk_fill_ms` ago gets its first repetition alone."""
    import time

    from ibsnmp.agent import engine

    class ArrivedLongAgo:
        """The dispatcher's clock, one second behind: the datagram arrived then."""

        @staticmethod
        def perf_counter() -> float:
            return time.perf_counter() - 1.0

    data = community_request("bulk", [SYS_DESCR, INFINIBAND], non_repeaters=1, max_repetitions=100)
    reads = paths.dispatcher.parts.fast_reads
    whole = paths.fast(data)  # no fill time: every repetition
    monkeypatch.setattr(engine, "time", ArrivedLongAgo)
    reads.getbulk_fill_ms = 0.5
    try:
        cut = paths.fast(data)
    finally:
        reads.getbulk_fill_ms = 0
    assert whole is not None and cut is not None and reads.arrived is None
    whole_varbinds, cut_varbinds = response_varbinds(whole), response_varbinds(cut)
    assert len(whole_varbinds) == 100
    assert cut_varbinds == whole_varbinds[:2]  # sysDescr.0, then one repetition


def test_getbulk_fill_time_is_configured_in_limits() -> None:
    assert parse_config({}).limits.getbulk_fill_ms == 0.5
    assert parse_config({"limits": {"getbulk_fill_ms": 0}}).limits.getbulk_fill_ms == 0
    with pytest.raises(ConfigError, match="limits.getbulk_fill_ms"):
        parse_config({"limits": {"getbulk_fill_ms": -1}})


# A GUID-indexed IB-SM-MIB column (ibSmNodeTable's): names under it reach
# past every instance when longer than the index.
SM_NODE_COLUMN = INFINIBAND + (7, 1, 2, 1, 2)
PAST_ANY_INSTANCE = (2**32 - 1,) * 20  # 100 octets: a name past SHORT_NAME


def _long_names() -> list[tuple[int, ...]]:
    """Names that agree in every arc an instance has and differ after it,
    one of them twice, and some past the end of the MIB (endOfMibView)."""
    under_column: list[tuple[int, ...]] = [SM_NODE_COLUMN + PAST_ANY_INSTANCE + (i,)
                                           for i in range(6)]
    past_the_end: list[tuple[int, ...]] = [(2, 1) + PAST_ANY_INSTANCE + (i,) for i in range(3)]
    return under_column + [under_column[2]] + past_the_end


@pytest.mark.parametrize("kind", ["get", "next"])
def test_long_names_looked_up_once_are_answered_each_as_pysnmp_does(paths: TwoPaths,
                                                                   kind: str) -> None:
    """One lookup serves the names that differ only past every instance (the
    request's memo): each varbind still carries its own name where the answer
    echoes it (a GET's exceptions, GETNEXT's endOfMibView)."""
    names = _long_names()
    data = community_request(kind, names)
    fast = paths.fast(data)
    assert_same_response(data, paths.pysnmp(data), fast)
    assert fast is not None
    answered = [tuple(int(arc) for arc in oid.split(".")) for oid, _ in decode_response(fast)[3]]
    if kind == "get":
        assert answered == names
    else:
        assert len(set(answered[:7])) == 1  # one next instance for all of them
        assert answered[7:] == names[7:]  # endOfMibView names the asked OID


def test_getnext_of_long_names_keeps_no_walk_step(paths: TwoPaths) -> None:
    """Names past SHORT_NAME octets are nobody's walk: kept, they would push
    a walk's steps out of the cache."""
    walks = paths.dispatcher.parts.fast_reads.walks
    short = community_request("next", [SM_NODE_COLUMN])
    assert paths.fast(short) is not None
    before = walks._size
    assert paths.fast(community_request("next", [SM_NODE_COLUMN + (7,) + PAST_ANY_INSTANCE])) \
        is not None
    assert walks._size == before


def test_getnext_of_names_in_a_gap_keeps_their_answer_once(paths: TwoPaths) -> None:
    """Names between two instances (or two objects) answer as the one before
    the gap does: that answer is kept once, under it, and serves every other
    name of the gap; the names themselves are never kept."""
    first = response_varbinds(paths.fast(community_request("next", [INFINIBAND])) or b"")[0][0]
    names = [first + (1,), first + (2, 5), SM_NODE_COLUMN + (256,), first + PAST_ANY_INSTANCE]
    data = community_request("next", names)
    assert_same_response(data, paths.pysnmp(data), paths.fast(data))
    walks = paths.dispatcher.parts.fast_reads.walks
    kept = walks.size
    others = [name[:-1] + (name[-1] - 1,) for name in names]  # the same gaps
    data = community_request("next", others)
    assert_same_response(data, paths.pysnmp(data), paths.fast(data))
    assert walks.size == kept

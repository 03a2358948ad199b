"""Repeated read requests answered by their octets (agent.repeats): the same
answers and counts as the whole way, and never one the whole way would not give."""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Callable
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.fast_diff import DOMAIN, WRITE_COMMUNITY, TwoPaths
from tests.support.held import Held
from tests.support.measured import with_measured
from tests.support.set_support import FakeClock, i, instance
from tests.support.wire import V1, V2C, community_request, decode_response
from tests.support.wire_v3 import Auth, V3Answer, decode_v3, v3_message

from ibsnmp.agent.config import Community, User
from ibsnmp.agent.engine import build_engine
from ibsnmp.agent.repeats import (MAX_REQUEST, KeptAnswer, Repeats, request_id_span, request_key,
                                  response_parts, written_as_is)
from ibsnmp.fabric import build_fabric
from ibsnmp.fabric.model import Fabric, MeasuredCounters
from ibsnmp.fabric.succession import with_values
from ibsnmp.mib.api import INFINIBAND_MIB
from ibsnmp.mib.registry import build_mib
from ibsnmp.mib.targets import FabricContexts
from ibsnmp.mib.write import state_value_problem
from ibsnmp.providers.simulated import SimulatedProvider
from ibsnmp.state.store import AgentState, ConfiguredProvider
from ibsnmp.wire.ber import OBJECT_IDENTIFIER, SEQUENCE, element, integer_octets, oid_octets
from ibsnmp.wire.usm_inbound import localize_users, seal_message
from ibsnmp.wire.usm_message import (FLAG_AUTH, FLAG_PRIV, FLAG_REPORTABLE, Outgoing,
                                     encode_scoped_pdu)

SPEC = "fat-tree:spines=1,leaves=2,hosts=2"
SMA_MIB = INFINIBAND_MIB + (3,)
IB_SM_MIB = INFINIBAND_MIB + (7,)


# -- where the request-id lies -----------------------------------------------------------------


@given(st.integers(-2**31, 2**31 - 1), st.sampled_from([V1, V2C]),
       st.sampled_from(["get", "next", "bulk"]), st.integers(0, 200),
       st.binary(max_size=140))
def test_the_request_id_is_found_in_any_read_request(request_id: int, version: int, kind: str,
                                                     names: int, community: bytes) -> None:
    """Short and long lengths of the message, the community and the PDU."""
    if version == V1 and kind == "bulk":
        kind = "next"
    oids: list[tuple[int, ...]] = [(1, 3, 6, 1, 2, 1, 1, n % 9 + 1, 0) for n in range(names)]
    oids = oids or [(1, 3)]
    data = community_request(kind, oids, version=version, request_id=request_id,
                             community=community)
    span = request_id_span(data)
    if len(community) >= 0x80:
        assert span is None  # a long community: the whole way answers
        return
    assert span is not None
    start, end = span
    assert data[start:end] == integer_octets(request_id) and written_as_is(data[start:end])


@settings(max_examples=500)
@given(st.binary(max_size=64))
def test_any_octets_give_a_span_inside_them_or_none(data: bytes) -> None:
    span = request_id_span(data)
    assert span is None or 0 < span[0] <= span[1] <= len(data)


def test_a_request_id_is_written_as_it_came_in_pyasn1_s_form_only() -> None:
    assert [written_as_is(octets) for octets in (
        b"\x00", b"\x00\x80", b"\x00\x7f", b"\xff\x7f", b"\xff\x80", b"\x80", b"\x80\x00",
        b"\x81", b"\x01\x00")] == [True, True, False, True, True, False, False, True, True]


# -- answers ----------------------------------------------------------------------------------


def _walk(paths: TwoPaths, root: tuple[int, ...], first_id: int, fast: bool = True,
          stop: tuple[int, ...] | None = None) -> list[bytes]:
    """Every reply of a GETBULK walk of `root` (to `stop`), request-ids from `first_id`."""
    replies, oid, request_id = [], root, first_id
    while True:
        reply = paths.send(community_request("bulk", [oid], max_repetitions=40,
                                             request_id=request_id), fast=fast)
        assert reply is not None
        replies.append(reply)
        names = [name for name, _ in decode_response(reply)[3]]
        last = tuple(int(arc) for arc in str(names[-1]).split("."))
        if last[:len(root)] != root or stop is not None and last >= stop:
            return replies
        oid, request_id = last, request_id + 1


def _replies_without_repeats(paths: TwoPaths, root: tuple[int, ...], first_id: int,
                             stop: tuple[int, ...] | None = None) -> list[bytes]:
    repeats = paths.dispatcher.parts.fast_reads.repeats
    limit, repeats.max_entries = repeats.max_entries, 0
    try:
        repeats.clear()
        return _walk(paths, root, first_id, stop=stop)
    finally:
        repeats.max_entries = limit


def test_a_walk_repeated_is_answered_by_its_octets_with_the_same_answers_and_counts() -> None:
    paths = TwoPaths(SimulatedProvider(SPEC, 1, watch_interval=0))
    _walk(paths, SMA_MIB, 1)  # the steps are kept
    _walk(paths, SMA_MIB, 1)  # the answers of kept steps are kept, and their requests
    assert paths.repeated == 0 and len(paths.dispatcher.parts.fast_reads.repeats) > 5
    _walk(paths, SMA_MIB, 300_000)  # other request-ids, of three octets
    assert paths.repeated == 0  # request-ids of another length: other datagrams
    before = paths.counters()
    repeated = _walk(paths, SMA_MIB, 300_000)
    counted = {name: value - before[name] for name, value in paths.counters().items()}
    # All but the last, which steps out of the MIB (that step is never kept).
    assert paths.repeated == len(repeated) - 1 > 5
    before = paths.counters()
    assert _replies_without_repeats(paths, SMA_MIB, 300_000) == repeated
    whole_way = {name: value - before[name] for name, value in paths.counters().items()}
    assert whole_way == counted and counted["snmpInTotalReqVars"] > 200


def test_a_repeated_getnext_counts_as_the_whole_way_counts() -> None:
    """A GETNEXT counts on arrival (snmpInGetNexts); a GETBULK, as above, does not."""
    paths = TwoPaths(SimulatedProvider(SPEC, 1, watch_interval=0))
    data = community_request("next", [SMA_MIB])
    deltas = []
    for _ in range(4):  # the step kept, the answer kept, then a repeat twice
        before = paths.counters()
        assert paths.fast(data) is not None
        deltas.append({name: value - before[name]
                       for name, value in paths.counters().items() if value != before[name]})
    assert paths.repeated == 2
    assert deltas[0] == deltas[1] == deltas[2] == deltas[3]
    assert deltas[3]["snmpInGetNexts"] == deltas[3]["snmpInTotalReqVars"] == 1


def test_a_datagram_too_long_to_be_kept_is_not_looked_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its key would be a copy of it, hashed, for every such datagram."""
    from ibsnmp.agent import fast_reads, repeats

    paths = TwoPaths(SimulatedProvider(SPEC, 1, watch_interval=0))
    looked_up: list[bytes] = []
    key_of = repeats.request_key

    def counted(data: bytes) -> tuple[bytes, bytes] | None:
        looked_up.append(data)
        return key_of(data)

    monkeypatch.setattr(fast_reads, "request_key", counted)
    primer = community_request("next", [SMA_MIB])
    for _ in range(2):  # its step kept, then its answer and itself
        paths.send(primer, fast=True)
    # No lookup while nothing was kept; from now on, lookups.
    assert len(paths.dispatcher.parts.fast_reads.repeats) == 1 and looked_up == []
    short = community_request("get", [SMA_MIB + (1,)])
    long = community_request("get", [SMA_MIB + (1,)] * 200)
    assert len(short) <= MAX_REQUEST < len(long)
    for data in (short, long, community_request("get", [SMA_MIB] * 200, community="wrong")):
        paths.send(data, fast=True)
    assert looked_up == [short]


def test_a_request_id_in_a_longer_form_goes_the_whole_way() -> None:
    paths = TwoPaths(SimulatedProvider(SPEC, 1, watch_interval=0))
    data = community_request("next", [SMA_MIB], request_id=0x1234)
    for _ in range(3):
        assert paths.fast(data) is not None
    assert paths.repeated == 1
    varbind = element(SEQUENCE, element(OBJECT_IDENTIFIER, oid_octets(SMA_MIB)) + b"\x05\x00")
    pdu = element(0xA1, b"\x02\x03\x00\x12\x34" + b"\x02\x01\x00" * 2 + element(SEQUENCE, varbind))
    longer = element(SEQUENCE, b"\x02\x01\x01" + element(0x04, b"public") + pdu)
    for _ in range(2):
        reply = paths.fast(longer)
        assert paths.repeated == 1  # not a repeat ...
        assert reply is not None and decode_response(reply)[0] == 0x1234  # ... but answered


def _measured(scale: int) -> Fabric:
    """The test fabric with every port's counters measured (as a live poll reads them)."""
    fabric = build_fabric(SPEC, seed=4)
    readings = {port.ref: MeasuredCounters(MappingProxyType({"port_xmit_data": scale}),
                                           frozenset({"port_xmit_data"}))
                for node in fabric.nodes.values() for port in node.data_ports}
    return with_measured(fabric, readings)


def test_new_counter_values_leave_the_repeats_of_a_walk_without_counters() -> None:
    """A poll that moved counters alone keeps the structure (its lineage):
    a walk of SMA-MIB, which holds no counter, is still answered by repeats."""
    held = Held(_measured(1))
    paths = TwoPaths(held)
    first = [_walk(paths, SMA_MIB, 7) for _ in range(3)][-1]
    repeated = paths.repeated
    assert repeated == len(first) - 1  # all but the step out of the MIB
    before = held.snapshot
    held.snapshot = with_values(before, _measured(2).counter_values)
    assert held.snapshot.lineage is before.lineage and held.snapshot is not before
    assert _walk(paths, SMA_MIB, 7) == first
    assert paths.repeated == 2 * repeated  # every one again
    assert _replies_without_repeats(paths, SMA_MIB, 7) == first


def test_a_change_the_kept_answer_does_not_survive_is_not_answered_from_it() -> None:
    state = AgentState.open(None, state_value_problem, clock=FakeClock())
    provider = ConfiguredProvider(SimulatedProvider(SPEC, 1, watch_interval=0), state)
    paths = TwoPaths(provider, state)
    stop = IB_SM_MIB + (1, 12)
    first = [_walk(paths, IB_SM_MIB, 7, stop=stop) for _ in range(3)][-1]
    assert paths.repeated > 5
    row = instance("ibSmPathReqRowStatus", provider.snapshot.subnet_prefix.to_bytes(8, "big"), 1)
    reply = paths.pysnmp(community_request("set", [row], community=WRITE_COMMUNITY,
                                           values=[i(5)]))  # a request session opens
    assert reply is not None and decode_response(reply)[1] == 0
    repeated = paths.repeated
    opened = _walk(paths, IB_SM_MIB, 7, stop=stop)
    assert opened != first and paths.repeated < repeated + len(opened)
    assert opened == _walk(paths, IB_SM_MIB, 7, fast=False, stop=stop)


def test_a_reload_forgets_every_repeat_and_its_community() -> None:
    paths = TwoPaths(SimulatedProvider(SPEC, 1, watch_interval=0))
    data = community_request("next", [SMA_MIB])
    for _ in range(3):
        assert paths.fast(data) is not None
    assert paths.repeated == 1
    settings_ = paths.agent.settings
    paths.agent.replace_principals(dataclasses.replace(
        settings_, communities=(Community(name="other"),)))
    assert len(paths.dispatcher.parts.fast_reads.repeats) == 0
    before = paths.counters()["snmpInBadCommunityNames"]
    assert paths.fast(data) is None and paths.repeated == 1
    assert paths.counters()["snmpInBadCommunityNames"] == before + 1


def test_a_repeat_from_outside_the_community_s_sources_is_refused() -> None:
    paths = TwoPaths(SimulatedProvider(SPEC, 1, watch_interval=0))
    settings_ = paths.agent.settings
    paths.agent.replace_principals(dataclasses.replace(settings_, communities=(Community(
        name="public", sources=(ipaddress.ip_network("127.0.0.0/8"),)),)))
    data = community_request("next", [SMA_MIB])
    for _ in range(3):
        assert paths.fast(data) is not None
    assert paths.repeated == 1
    before = paths.counters()["snmpInBadCommunityNames"]
    handle = paths.dispatcher.handle
    assert handle(paths.engine, DOMAIN, ("192.0.2.1", 161), data) is None
    assert paths.repeated == 1
    assert paths.counters()["snmpInBadCommunityNames"] == before + 1


# -- SNMPv3 ------------------------------------------------------------------------------------


def test_an_snmpv3_read_repeated_is_answered_from_its_kept_answer() -> None:
    """authNoPriv, so the answers read in plaintext; the USM checks each message anew."""
    user = User(name="watcher", auth="SHA", auth_key="watcher-auth-key")
    settings_ = dataclasses.replace(TwoPaths(SimulatedProvider(SPEC, 1)).agent.settings,
                                    users=(user,))
    agent = build_engine(settings_, FabricContexts(SimulatedProvider(SPEC, 1, watch_interval=0)),
                         build_mib(None), fabric_summary="repeats")
    engine = agent.engine
    (engine_id,) = engine.get_mib_builder().import_symbols("__SNMP-FRAMEWORK-MIB", "snmpEngineID")
    fast_v3 = engine.message_dispatcher.parts.decision._v3
    auth = Auth("SHA", "watcher-auth-key")
    repeated: list[KeptAnswer] = []
    answer_again: Callable[[KeptAnswer], bytes | None] = fast_v3._answer_again

    def counted(kept: KeptAnswer) -> bytes | None:
        repeated.append(kept)
        return answer_again(kept)

    fast_v3._answer_again = counted

    def get_next(request_id: int) -> V3Answer:
        data = v3_message("next", [SMA_MIB], user=b"watcher", engine_id=bytes(engine_id.syntax),
                          boots=fast_v3.clock.boots(), engine_time=fast_v3.clock.time(),
                          auth=auth, msg_id=request_id, request_id=request_id)
        reply = engine.message_dispatcher.handle(engine, DOMAIN, ("127.0.0.1", 161), data)
        assert reply is not None
        return decode_v3(reply)

    first = [get_next(1000 + n) for n in range(2)][-1]  # steps kept, then the answer
    assert len(fast_v3.repeats) == 1 and not repeated
    again = get_next(2000)  # a repeat: request-ids of the same length
    assert len(repeated) == 1 and again.request_id == 2000 and again.msg_id == 2000
    assert again.varbinds == first.varbinds and again.error_status == 0
    fast_v3.repeats.clear()
    assert get_next(2001).varbinds == first.varbinds  # the whole way, the same
    agent.replace_principals(settings_)
    assert len(fast_v3.repeats) == 0  # a reload forgets them


def test_snmpv3_repeats_are_kept_apart_by_the_room_their_response_leaves() -> None:
    """Request-ids of one length on the wire, but not in the Response (00 00 05
    is written 05): another room, another answer, so another entry."""
    user = User(name="watcher", auth="SHA256", auth_key="watcher-auth", priv="AES",
                priv_key="watcher-priv")
    settings_ = dataclasses.replace(TwoPaths(SimulatedProvider(SPEC, 1)).agent.settings,
                                    users=(user,))
    agent = build_engine(settings_, FabricContexts(SimulatedProvider(SPEC, 1, watch_interval=0)),
                         build_mib(None), fabric_summary="repeats")
    engine = agent.engine
    fast_v3 = engine.message_dispatcher.parts.decision._v3
    keys = localize_users([user], fast_v3.engine_id)[b"watcher"]
    varbind = element(SEQUENCE, element(OBJECT_IDENTIFIER, oid_octets(SMA_MIB)) + b"\x05\x00")

    def send(request_id: bytes, n: int) -> bytes:
        pdu = element(0xA5, element(0x02, request_id) + b"\x02\x01\x00\x02\x01\x28"
                      + element(SEQUENCE, varbind))
        out = Outgoing(message_id=n, max_size=65507, flags=FLAG_REPORTABLE | FLAG_AUTH | FLAG_PRIV,
                       engine_id=fast_v3.engine_id, boots=fast_v3.clock.boots(),
                       engine_time=fast_v3.clock.time(), user=b"watcher",
                       mac_length=keys.mac.mac_length, priv_params=n.to_bytes(8, "big"))
        data = seal_message(out, keys, encode_scoped_pdu(fast_v3.engine_id, b"", pdu))
        reply: bytes | None = engine.message_dispatcher.handle(engine, DOMAIN,
                                                              ("127.0.0.1", 161), data)
        assert reply is not None
        return reply

    for n in range(1, 4):
        send(b"\x01\x00\x05", n)  # steps, then the answer kept
    assert len(fast_v3.repeats) == 1
    send(b"\x00\x00\x05", 9)
    send(b"\x00\x00\x05", 10)
    assert len(fast_v3.repeats) == 2


# -- the bounds --------------------------------------------------------------------------------


def _request_and_reply(n: int, varbinds: bytes) -> tuple[bytes, bytes]:
    data = community_request("get", [(1, 3, 6, 1, 2, 1, 1, 1, n)], request_id=n + 1)
    reply = b"\x30\x82" + (len(varbinds) + 13).to_bytes(2, "big") + b"\x02\x01\x01\x04\x00\xa2" \
        + bytes((len(varbinds) + 7,)) + b"\x02\x01" + bytes((n + 1,)) + b"\x02\x01\x00" * 2 \
        + b"\x30" + bytes((len(varbinds),)) + varbinds
    return data, reply


def test_a_response_is_kept_around_its_request_id() -> None:
    data, reply = _request_and_reply(4, b"\x05\x00" * 10)
    element = (data.index(b"\x02\x01\x05"), data.index(b"\x02\x01\x05") + 3)
    parts = response_parts(data, element, reply, 20)
    assert parts is not None
    key, head, middle = parts
    assert head + b"\x05" + middle + b"\x05\x00" * 10 == reply
    assert (key, b"\x05") == request_key(data)
    too_long = data + b"\x00" * MAX_REQUEST
    assert response_parts(too_long, element, reply, 20) is None
    other = reply.replace(b"\x02\x01\x05", b"\x02\x01\x06")
    assert response_parts(data, element, other, 20) is None  # not echoed as it came
    # A version in a longer form than needed: the request-id is not where the
    # octets before it say, and the request is not kept.
    longer = data[:1] + bytes((data[1] + 1,)) + b"\x02\x02\x00\x01" + data[5:]
    moved = (element[0] + 1, element[1] + 1)
    assert request_id_span(longer) != (moved[0] + 2, moved[1])
    assert response_parts(longer, moved, reply, 20) is None


def test_the_oldest_go_first_and_what_is_kept_stays_within_its_bounds() -> None:
    repeats: Repeats[int, str] = Repeats(max_entries=3, max_octets=1_000)
    for n in range(5):
        repeats.put(n, f"entry {n}", 100)
    assert len(repeats) == 3 and [repeats.get(n) for n in range(5)] == [
        None, None, "entry 2", "entry 3", "entry 4"]
    repeats.put(9, "big", 800)  # the oldest makes room
    assert [repeats.get(n) for n in (2, 3, 4, 9)] == [None, "entry 3", "entry 4", "big"]
    assert repeats.octets == 1_000
    repeats.put(10, "too big", 1_001)  # over the bound alone: not kept
    assert repeats.get(10) is None and repeats.octets == 1_000
    repeats.put(4, "again", 50)  # in place of the old entry 4
    assert repeats.octets == 950 and repeats.get(4) == "again"
    for key in (3, 4, 9):
        repeats.forget(key)
    assert repeats.octets == 0 and len(repeats) == 0

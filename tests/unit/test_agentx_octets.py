"""A master's Get and GetNext answered from their octets, and the GetNext answers kept.

`MasterRequests.answer_read` must write, octet for octet, the Response that
`answer` gives through the PDU objects (but for sysUpTime, read anew), in
both byte orders, in the default and in node contexts; its kept answers
must follow the fabric's structure, SETs, and counters that move, and stay
within their limit. `SubagentSession.lone_request` says which reads may
take that path.
"""

from __future__ import annotations

import time

import pytest
from tests.support.held import Held, linked_host_port
from tests.support.set_support import Agent, i, instance

from ibsnmp.agent.context_hooks import ContextDirectory
from ibsnmp.agentx import pdu as ax
from ibsnmp.agentx.answers import MasterRequests
from ibsnmp.agentx.kept import KeptAnswers
from ibsnmp.agentx.pdu import Packet, SearchRange
from ibsnmp.agentx.session import SubagentSession
from ibsnmp.fabric import build_fabric
from ibsnmp.fabric.changes import with_port_state
from ibsnmp.fabric.iba import PortState
from ibsnmp.fabric.model import Fabric
from ibsnmp.fabric.succession import successor
from ibsnmp.mib.api import INFINIBAND_MIB, Oid
from ibsnmp.mib.registry import build_mib
from ibsnmp.mib.subtrees import Subtrees
from ibsnmp.mib.targets import FabricContexts
from ibsnmp.wire import ber

SPEC = "fat-tree:spines=1,leaves=2,hosts=2"
END = (1, 3, 6, 1, 3, 118)
SESSION = 42
UPTIME = 4242  # both paths write it: the Responses compare whole


def requests_over(provider: object, kept: KeptAnswers | None = None,
                  clock: float = 1234.5) -> MasterRequests:
    """The subagent's answers over `provider`, its counters read at one instant."""
    contexts = FabricContexts(provider, clock=lambda: clock)  # type: ignore[arg-type]
    mib = build_mib()
    subtrees = Subtrees((INFINIBAND_MIB,))
    return MasterRequests(mib, ContextDirectory(contexts),
                          lambda context: subtrees if context is None else mib.subtrees,
                          lambda: UPTIME, kept=kept or KeptAnswers())


def request(message: ax.Pdu, big_endian: bool, packet_id: int) -> bytes:
    return ax.encode(Packet(message, SESSION, packet_id, packet_id, big_endian))


def by_objects(requests: MasterRequests, wire: bytes) -> bytes:
    packet = ax.decode(wire)
    response = requests.answer(packet)
    assert response is not None
    return ax.encode(Packet(response, packet.session_id, packet.transaction_id,
                            packet.packet_id, packet.big_endian))


def by_octets(requests: MasterRequests, wire: bytes) -> bytes:
    return requests.answer_read(ax.decode_header(wire), wire)


def walk(requests: MasterRequests, context: bytes | None, big_endian: bool,
         limit: int = 100_000) -> list[bytes]:
    """The Responses of a walk through the master (at most `limit`), from answer_read."""
    out: list[bytes] = []
    name: Oid = INFINIBAND_MIB if context is None else (1, 3, 6, 1, 2, 1, 2)
    for packet_id in range(1, limit + 1):
        wire = request(ax.GetNext((SearchRange(name, END),), context), big_endian, packet_id)
        reply = by_octets(requests, wire)
        out.append(reply)
        [varbind] = ax.decode(reply).pdu.varbinds  # type: ignore[union-attr]
        if varbind.type == ber.END_OF_MIB_VIEW:
            return out
        name = varbind.name
    return out


def contexts_of(fabric: Fabric) -> list[bytes | None]:
    host = next(g for g, n in sorted(fabric.nodes.items()) if n.is_ca)
    switch = next(g for g, n in sorted(fabric.nodes.items()) if n.is_switch)
    return [None, b"%016x" % host, b"%016x" % switch]


@pytest.mark.parametrize("big_endian", [True, False])
def test_octets_answer_as_the_objects_do_cold_and_kept(big_endian: bool) -> None:
    """Every step of a lone host's walks (each value type it serves), in both contexts."""
    held = Held(build_fabric("single", seed=4), 0.0)
    requests = requests_over(held)
    reference = requests_over(held, KeptAnswers(0))
    [guid] = held.snapshot.nodes
    for context in (None, b"%016x" % guid):
        name: Oid = INFINIBAND_MIB if context is None else (1, 3, 6, 1, 2, 1, 2)
        steps = 0
        for packet_id in range(1, 100_000):
            wire = request(ax.GetNext((SearchRange(name, END),), context), big_endian, packet_id)
            cold = by_octets(requests, wire)
            assert cold == by_objects(reference, wire)
            assert by_octets(requests, wire) == cold  # asked again: kept, or read again
            [varbind] = ax.decode(cold).pdu.varbinds  # type: ignore[union-attr]
            if varbind.type == ber.END_OF_MIB_VIEW:
                break
            name, steps = varbind.name, steps + 1
        assert steps > 500
    assert requests.kept.size > 1000


@pytest.mark.parametrize("big_endian", [True, False])
def test_every_read_shape_answers_as_the_objects_do(big_endian: bool) -> None:
    held = Held(build_fabric(SPEC, seed=4), 0.0)
    requests, reference = requests_over(held), requests_over(held, KeptAnswers(0))
    node = contexts_of(held.snapshot)[1]
    first = walk(requests, None, big_endian, limit=2)
    [one] = ax.decode(first[0]).pdu.varbinds  # type: ignore[union-attr]
    [two] = ax.decode(first[1]).pdu.varbinds  # type: ignore[union-attr]
    shapes: list[ax.Pdu] = [
        ax.Get((SearchRange(one.name), SearchRange((1, 3, 6, 1, 3, 117, 99, 1)),
                SearchRange((1, 3, 6, 1, 2, 1, 1, 1, 0))), None),
        ax.Get((SearchRange((1, 3, 6, 1, 2, 1, 2, 1, 0)),), node),
        ax.GetNext((SearchRange(one.name, END, True),), None),  # include: the name itself
        ax.GetNext((SearchRange(one.name, two.name),), None),  # the end bounds it
        ax.GetNext((SearchRange(one.name, END), SearchRange(two.name, END)), None),
        ax.GetNext((SearchRange((1, 3, 6, 1, 3, 118)),), None),  # past the region
        ax.GetNext((SearchRange((1, 3, 6, 1, 2, 1, 2), END),), b"00000000deadbeef"),  # no node
        ax.GetNext((), None),
    ]
    for packet_id, shape in enumerate(shapes, start=1):
        wire = request(shape, big_endian, packet_id)
        for _ in range(2):
            assert by_octets(requests, wire) == by_objects(reference, wire), shape


def test_a_structure_change_drops_the_kept_answers() -> None:
    held = Held(build_fabric(SPEC, seed=4), 0.0)
    requests = requests_over(held)
    contexts = contexts_of(held.snapshot)[1:]  # IF-MIB first: the port's rows
    before = {context: walk(requests, context, True, STEPS) for context in contexts}
    assert requests.kept.size > STEPS
    ref = linked_host_port(held.snapshot)
    down, _ = with_port_state(held.snapshot, ref, PortState.DOWN, at=5.0)
    held.snapshot = successor(held.snapshot, down)
    fresh = requests_over(Held(held.snapshot, 0.0), KeptAnswers(0))
    for context in contexts:
        warm = walk(requests, context, True, STEPS)
        expected = [by_objects(fresh, request(ax.GetNext((SearchRange(start, END),), context),
                                              True, n))
                    for n, start in enumerate(_starts(warm, context), start=1)]
        assert warm == expected
    assert any(walk(requests, c, True, STEPS) != before[c] for c in contexts)


STEPS = 3000  # of a node context's walk: its IF-MIB and more


def _starts(replies: list[bytes], context: bytes | None) -> list[Oid]:
    """The names a walk asked after: its first, then each answer's but the last."""
    first: Oid = INFINIBAND_MIB if context is None else (1, 3, 6, 1, 2, 1, 2)
    names = [ax.decode(r).pdu.varbinds[0].name for r in replies[:-1]]  # type: ignore[union-attr]
    return [first, *names]


def test_a_committed_set_is_read_at_once() -> None:
    agent = Agent("fat-tree:spines=1,leaves=1,hosts=2,faults=0")
    requests = MasterRequests(agent.mib, ContextDirectory(agent.contexts),
                              lambda _c: Subtrees((INFINIBAND_MIB,)), lambda: UPTIME)
    sweep = instance("ibSmConfigSweepInterval", agent.prefix)
    before_sweep = sweep[:-1]  # its object: the next instance is it
    wire = request(ax.GetNext((SearchRange(before_sweep, END),)), True, 1)

    def value() -> object:
        [varbind] = ax.decode(by_octets(requests, wire)).pdu.varbinds  # type: ignore[union-attr]
        assert varbind.name == sweep
        return varbind.value

    start = value()
    assert value() == start and requests.kept.size == 1  # kept
    agent.set((sweep, i(int(start) + 3)))  # type: ignore[call-overload]
    assert value() == int(start) + 3  # type: ignore[call-overload]


def test_counters_are_read_anew_never_kept() -> None:
    held = Held(build_fabric(SPEC, seed=4), 0.0)
    now = [1000.0]
    contexts = FabricContexts(held, clock=lambda: now[0])  # type: ignore[arg-type]
    mib = build_mib()
    requests = MasterRequests(mib, ContextDirectory(contexts), lambda _c: mib.subtrees,
                              lambda: UPTIME)
    node = contexts_of(held.snapshot)[1]
    target = contexts(node or b"")
    assert target is not None
    # The first step of the walk that lands on a value that moves with time.
    oid: Oid = (1, 3, 6, 1, 2, 1, 2)
    while True:
        found = mib.next_step(target, oid)
        assert found is not None
        next_oid, cell, static, _tag = found
        if not static and cell.tag in (ber.COUNTER32, ber.COUNTER64):
            break
        oid = next_oid
    wire = request(ax.GetNext((SearchRange(oid, END),), node), True, 1)
    values = []
    for moment in (1000.0, 1000.0 + 3600):
        now[0] = moment
        [varbind] = ax.decode(by_octets(requests, wire)).pdu.varbinds  # type: ignore[union-attr]
        assert varbind.name == next_oid
        values.append(varbind.value)
    assert requests.kept.size == 0
    assert values[0] != values[1]  # an hour of traffic on the simulated port


def test_kept_answers_stay_within_their_limit() -> None:
    held = Held(build_fabric("single", seed=4), 0.0)
    limited = requests_over(held, KeptAnswers(50))
    reference = requests_over(held, KeptAnswers(0))
    sizes = []
    for _ in range(2):
        replies = walk(limited, None, True)
        assert replies == walk(reference, None, True)
        sizes.append(limited.kept.size)
    assert 0 < max(sizes) <= 50
    with pytest.raises(ValueError):
        KeptAnswers(-1)


def opened_session() -> SubagentSession:
    session = SubagentSession((1, 3, 6, 1, 3, 117, 3), b"test")
    ax.decode(session.open())
    session.receive(ax.encode(Packet(ax.Response(), SESSION, 0, 1)))
    return session


def test_lone_request_takes_one_whole_read_of_the_session() -> None:
    session = opened_session()
    get_next = request(ax.GetNext((SearchRange(INFINIBAND_MIB, END),)), True, 7)
    header = session.lone_request(get_next)
    assert header is not None and header.packet_id == 7 and header.pdu_type == ax.GET_NEXT
    assert session.lone_request(request(ax.Get((SearchRange(INFINIBAND_MIB),)), False, 8))
    # Not a read, part of one, two at once, another session's: the usual path.
    assert session.lone_request(request(ax.TestSet(()), True, 9)) is None
    assert session.lone_request(get_next[:-4]) is None
    assert session.lone_request(get_next + get_next) is None
    foreign = ax.encode(Packet(ax.GetNext((SearchRange(INFINIBAND_MIB),)), SESSION + 1, 1, 1))
    assert session.lone_request(foreign) is None
    # Half a PDU buffered: what comes next completes it, not a lone request.
    assert session.receive(get_next[:10]) == []
    assert session.lone_request(get_next) is None
    assert len(session.receive(get_next[10:])) == 1
    assert session.lone_request(get_next) is not None
    not_open = SubagentSession((1, 3), b"")
    assert not_open.lone_request(get_next) is None


def test_a_lone_read_that_is_not_agentx_is_refused() -> None:
    held = Held(build_fabric(SPEC, seed=4), 0.0)
    requests = requests_over(held)
    bad = bytearray(request(ax.GetNext((SearchRange(INFINIBAND_MIB, END),)), True, 1))
    bad[HEADER_AT_COUNT] = 200  # an OID of 200 sub-identifiers
    with pytest.raises(ax.AgentxParseError):
        by_octets(requests, bytes(bad))
    context = request(ax.GetNext((SearchRange(INFINIBAND_MIB, END),), b"x" * 8), True, 2)
    overrun = bytearray(context)
    overrun[20:24] = (1000).to_bytes(4, "big")  # a context longer than the payload
    with pytest.raises(ax.AgentxParseError):
        by_octets(requests, bytes(overrun))


HEADER_AT_COUNT = ax.HEADER_SIZE  # a GetNext without context: its first OID's n_subid


def test_uptime_is_written_anew_in_a_kept_answer() -> None:
    held = Held(build_fabric(SPEC, seed=4), 0.0)
    ticks = iter(range(100, 200))
    contexts = FabricContexts(held, clock=time.monotonic)  # type: ignore[arg-type]
    mib = build_mib()
    requests = MasterRequests(mib, ContextDirectory(contexts),
                              lambda _c: Subtrees((INFINIBAND_MIB,)), lambda: next(ticks))
    wire = request(ax.GetNext((SearchRange(INFINIBAND_MIB, END),)), True, 1)
    first, second = by_octets(requests, wire), by_octets(requests, wire)
    assert requests.kept.size == 1
    up = [ax.decode(r).pdu.sys_up_time for r in (first, second)]  # type: ignore[union-attr]
    assert up == [100, 101] and first[24:] == second[24:]

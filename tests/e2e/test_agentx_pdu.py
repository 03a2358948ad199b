"""The AgentX codec (ibsnmp.agentx.pdu), the session state and the answers.

Byte strings are built by hand from RFC 2741's diagrams (sections 5 and 6),
in both byte orders; the last tests capture what net-snmp's snmpd sends as
a master over a socket of the test's own and read it back.
"""

from __future__ import annotations

import random
import socket
import struct
import subprocess
import threading
from pathlib import Path

import pytest
from tests.support.agentx_master import SnmpdMaster
from tests.support.set_support import Agent, i, instance

from ibsnmp.agent.context_hooks import ContextDirectory
from ibsnmp.agentx import pdu as ax
from ibsnmp.agentx.answers import MasterRequests
from ibsnmp.agentx.pdu import AgentxParseError, Packet, PacketReader, SearchRange, VarBind
from ibsnmp.agentx.session import (
    Answered,
    Ignored,
    MasterClosed,
    MasterRequest,
    Opened,
    OpenRefused,
    SessionError,
    State,
    SubagentSession,
)
from ibsnmp.mib.api import INFINIBAND_MIB
from ibsnmp.mib.subtrees import Subtrees
from ibsnmp.wire import ber


def header(pdu_type: int, flags: int, session: int, transaction: int, packet: int,
           payload: bytes, big: bool = True) -> bytes:
    order = ">" if big else "<"
    return bytes((1, pdu_type, flags | (0x10 if big else 0), 0)) + struct.pack(
        order + "IIII", session, transaction, packet, len(payload)) + payload


def u32(value: int, big: bool = True) -> bytes:
    return struct.pack(">I" if big else "<I", value)


# -- RFC 2741 layouts, by hand -----------------------------------------------------

@pytest.mark.parametrize("big", [True, False])
def test_open_pdu_matches_the_rfc_layout(big: bool) -> None:
    # 6.2.1: timeout, 3 reserved; id (1.3.6.1.4.1.99: prefix 4, subids 1 99); descr.
    payload = (bytes((5, 0, 0, 0)) + bytes((2, 4, 0, 0)) + u32(1, big) + u32(99, big)
               + u32(6, big) + b"ibsnmp\x00\x00")
    wire = header(ax.OPEN, 0, 0, 0, 7, payload, big)
    packet = Packet(ax.Open(5, (1, 3, 6, 1, 4, 1, 99), b"ibsnmp"), 0, 0, 7, big)
    assert ax.encode(packet) == wire
    assert ax.decode(wire) == packet


@pytest.mark.parametrize("big", [True, False])
def test_oid_prefix_and_include_as_in_rfc_5_1(big: bool) -> None:
    # 5.1's example: 1.3.6.1.2.1.1.1.0 is prefix 2 and 1.1.1.0; 1.2.3 has no prefix;
    # the null OID is four zero octets. A GetNext's first SearchRange has include set.
    sysdescr = bytes((4, 2, 1, 0)) + b"".join(u32(a, big) for a in (1, 1, 1, 0))
    sysdescr_end = bytes((4, 2, 0, 0)) + b"".join(u32(a, big) for a in (1, 1, 1, 1))
    short = bytes((3, 0, 0, 0)) + b"".join(u32(a, big) for a in (1, 2, 3))
    null = bytes(4)
    wire = header(ax.GET_NEXT, 0, 9, 8, 7, sysdescr + sysdescr_end + short + null, big)
    packet = ax.decode(wire)
    assert packet.pdu == ax.GetNext((
        SearchRange((1, 3, 6, 1, 2, 1, 1, 1, 0), (1, 3, 6, 1, 2, 1, 1, 1, 1), True),
        SearchRange((1, 2, 3), ())))
    assert (packet.session_id, packet.transaction_id, packet.packet_id) == (9, 8, 7)
    assert ax.encode(packet) == wire


@pytest.mark.parametrize("big", [True, False])
def test_register_with_context_range_and_instance_flag(big: bool) -> None:
    # 6.2.3: context (NON_DEFAULT_CONTEXT), timeout, priority, range_subid, reserved,
    # subtree, upper_bound (only with range_subid).
    context = u32(3, big) + b"abc\x00"
    subtree = bytes((5, 3, 0, 0)) + b"".join(u32(a, big) for a in (117, 7, 1, 14, 1))
    payload = context + bytes((10, 127, 9, 0)) + subtree + u32(22, big)
    wire = header(ax.REGISTER, ax.NON_DEFAULT_CONTEXT | ax.INSTANCE_REGISTRATION, 1, 0, 2,
                  payload, big)
    register = ax.Register((1, 3, 6, 1, 3, 117, 7, 1, 14, 1), 127, 10, 9, 22, b"abc", True)
    assert ax.decode(wire).pdu == register
    assert ax.encode(Packet(register, 1, 0, 2, big)) == wire


@pytest.mark.parametrize("big", [True, False])
def test_response_varbinds_of_every_type(big: bool) -> None:
    name = bytes((1, 0, 0, 0)) + u32(1, big)  # the OID 1
    order = ">" if big else "<"
    values: list[tuple[int, ax.Value, bytes]] = [
        (ber.INTEGER, -5, struct.pack(order + "i", -5)),
        (ber.OCTET_STRING, b"hello", u32(5, big) + b"hello\x00\x00\x00"),
        (ber.OCTET_STRING, b"", u32(0, big)),
        (ber.NULL, None, b""),
        (ber.OBJECT_IDENTIFIER, (1, 3, 6, 1, 6, 3, 1, 1, 5, 1),
         bytes((5, 6, 0, 0)) + b"".join(u32(a, big) for a in (3, 1, 1, 5, 1))),
        (ber.IP_ADDRESS, b"\x7f\x00\x00\x01", u32(4, big) + b"\x7f\x00\x00\x01"),
        (ber.COUNTER32, 0xFFFFFFFF, u32(0xFFFFFFFF, big)),
        (ber.GAUGE32, 7, u32(7, big)),
        (ax.TIME_TICKS, 12345, u32(12345, big)),
        (ber.OPAQUE, b"\x9f\x78\x04", u32(3, big) + b"\x9f\x78\x04\x00"),
        (ber.COUNTER64, (1 << 64) - 1, struct.pack(order + "Q", (1 << 64) - 1)),
        (ber.NO_SUCH_OBJECT, None, b""),
        (ber.NO_SUCH_INSTANCE, None, b""),
        (ber.END_OF_MIB_VIEW, None, b""),
    ]
    body = b"".join(struct.pack(order + "HH", kind, 0) + name + data for kind, _, data in values)
    payload = u32(100, big) + struct.pack(order + "HH", 0, 0) + body
    wire = header(ax.RESPONSE, 0, 4, 5, 6, payload, big)
    response = ax.Response(100, 0, 0, tuple(VarBind((1,), k, v) for k, v, _ in values))
    assert ax.decode(wire).pdu == response
    assert ax.encode(Packet(response, 4, 5, 6, big)) == wire


def test_every_pdu_round_trips_in_both_orders() -> None:
    varbinds = (VarBind((1, 3, 6, 1, 3, 117, 1), ber.GAUGE32, 3),)
    pdus: list[ax.Pdu] = [
        ax.Open(0, (), b""), ax.Close(ax.REASON_SHUTDOWN),
        ax.Register((1, 3, 6, 1, 3, 117)), ax.Unregister((1, 3, 6, 1, 3, 117, 1), 127, 7, 20, b"c"),
        ax.Get((SearchRange((1, 3, 6, 1, 3, 117, 1)),), b"ctx"),
        ax.GetNext((SearchRange((1, 3), (1, 4), True),)),
        ax.GetBulk(1, 10, (SearchRange((1, 3)), SearchRange((1, 4))), b"x"),
        ax.TestSet(varbinds), ax.CommitSet(), ax.UndoSet(), ax.CleanupSet(),
        ax.Notify(varbinds), ax.Ping(b"ctx"), ax.Ping(),
        ax.IndexAllocate(varbinds, None, new_index=True), ax.IndexAllocate(varbinds, any_index=True),
        ax.IndexDeallocate(varbinds, b"c"), ax.AddAgentCaps((1, 3, 6, 1, 4, 1, 9), b"caps"),
        ax.RemoveAgentCaps((1, 3, 6, 1, 4, 1, 9), b"ctx"),
        ax.Response(1, ax.DUPLICATE_REGISTRATION, 2, varbinds),
    ]
    assert {type(p).TYPE for p in pdus} == set(range(ax.OPEN, ax.RESPONSE + 1))
    for message in pdus:
        for big in (True, False):
            packet = Packet(message, 11, 12, 13, big)
            wire = ax.encode(packet)
            assert ax.decode(wire) == packet
            assert bool(wire[2] & ax.NETWORK_BYTE_ORDER) == big
            assert len(wire) % 4 == 0


# -- strict reading --------------------------------------------------------------------

GOOD = ax.encode(Packet(ax.Response(1, 0, 0, (VarBind((1, 3, 6, 1, 3, 117), ber.OCTET_STRING,
                                                       b"abcde"),)), 1, 2, 3))


@pytest.mark.parametrize("wire, why", [
    (GOOD[:19], "header"),
    (bytes((2,)) + GOOD[1:], "version"),
    (GOOD[:1] + bytes((19,)) + GOOD[2:], "PDU type"),
    (GOOD[:2] + bytes((0x30,)) + GOOD[3:], "flags"),
    (GOOD[:16] + u32(len(GOOD) - 20 + 4) + GOOD[20:], "payload_length"),
    (GOOD + bytes(4), "payload_length"),
    (GOOD[:16] + u32(len(GOOD) - 20 - 2) + GOOD[20:-2], "multiple of 4"),
    (header(ax.RESPONSE, 0, 0, 0, 0, bytes(8) + struct.pack(">HH", 2, 0) + bytes((129, 0, 0, 0))),
     "sub-identifiers"),
    (header(ax.RESPONSE, 0, 0, 0, 0, bytes(8) + struct.pack(">HH", 4, 0) + bytes(4)
            + u32(9) + b"abcd"), "overruns"),
    (header(ax.RESPONSE, 0, 0, 0, 0, bytes(8) + struct.pack(">HH", 64, 0) + bytes(4)
            + u32(8) + bytes(8)), "IpAddress"),
    (header(ax.RESPONSE, 0, 0, 0, 0, bytes(8) + struct.pack(">HH", 3, 0) + bytes(4)),
     "varbind type"),
    (header(ax.RESPONSE, 0, 0, 0, 0, bytes(8) + struct.pack(">HH", 2, 0) + bytes((0, 0, 1, 0))
            + bytes(4)), "include"),
    (header(ax.COMMIT_SET, 0, 0, 0, 0, bytes(4)), "left after"),
    (header(ax.CLOSE, ax.NON_DEFAULT_CONTEXT, 0, 0, 0, bytes(4)), "context"),
    (header(ax.REGISTER, 0, 0, 0, 0, bytes((0, 127, 5, 0)) + bytes((2, 0, 0, 0)) + bytes(8)
            + u32(1)), "range_subid"),
])
def test_malformed_pdus_raise_one_clear_error(wire: bytes, why: str) -> None:
    with pytest.raises(AgentxParseError, match=why):
        ax.decode(wire)


def test_damaged_pdus_never_raise_anything_else() -> None:
    pdus = [GOOD, ax.encode(Packet(ax.GetBulk(1, 5, (SearchRange((1, 3, 6, 1, 3), (1, 4), True),),
                                              b"ctx"), 1, 2, 3, False))]
    rng = random.Random(24)
    for _ in range(3000):
        data = bytearray(rng.choice(pdus))
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.3:
            del data[rng.randrange(20, len(data)):]
        try:
            ax.decode(bytes(data))
        except AgentxParseError:
            pass


def test_encoding_refuses_values_that_do_not_fit() -> None:
    with pytest.raises(ValueError):
        ax.encode(Packet(ax.Response(varbinds=(VarBind((1,), ber.INTEGER, 1 << 31),))))
    with pytest.raises(ValueError):
        ax.encode(Packet(ax.Response(varbinds=(VarBind((1,), ber.OCTET_STRING, 5),))))
    with pytest.raises(ValueError):
        ax.encode(Packet(ax.Register(tuple(range(1, 131)))))


def test_stream_reader_splits_and_joins_pdus() -> None:
    one = ax.encode(Packet(ax.Ping(), 1, 0, 1))
    two = ax.encode(Packet(ax.Get((SearchRange((1, 3, 6, 1, 3, 117, 1)),), b"ab"), 1, 2, 2, False))
    three = ax.encode(Packet(ax.CommitSet(), 1, 2, 3))
    stream = one + two + three
    reader = PacketReader()
    seen = [p for octet in stream for p in reader.feed(bytes((octet,)))]
    assert [p.packet_id for p in seen] == [1, 2, 3] and reader.pending == 0
    assert [p.packet_id for p in PacketReader().feed(stream)] == [1, 2, 3]
    partial = PacketReader()
    assert partial.feed(stream[:-3]) and partial.pending == len(three) - 3
    assert [p.pdu for p in partial.feed(stream[-3:])] == [ax.CommitSet()]


# -- the session's protocol state ---------------------------------------------------------

def opened_session() -> SubagentSession:
    session = SubagentSession((1, 3, 6, 1, 3, 117, 3), b"test")
    ax.decode(session.open())
    events = session.receive(ax.encode(Packet(ax.Response(), 42, 0, 1)))
    assert events == [Opened(42)] and session.state is State.OPEN
    return session


def test_session_opens_registers_answers_and_closes() -> None:
    session = opened_session()
    packet_id, wire = session.send(ax.Register(INFINIBAND_MIB))
    sent = ax.decode(wire)
    assert sent.session_id == 42 and sent.packet_id == packet_id
    answer = ax.Response(error=ax.DUPLICATE_REGISTRATION)
    [event] = session.receive(ax.encode(Packet(answer, 42, 0, packet_id)))
    assert event == Answered(packet_id, ax.Register(INFINIBAND_MIB), answer)
    # A master request in little-endian order is answered in that order, with its ids.
    request = Packet(ax.Get((SearchRange((1, 3)),)), 42, 77, 5, big_endian=False)
    [event] = session.receive(ax.encode(request))
    assert event == MasterRequest(request)
    reply = ax.decode(session.respond(request, ax.Response()))
    assert (reply.session_id, reply.transaction_id, reply.packet_id, reply.big_endian) == \
        (42, 77, 5, False)
    [event] = session.receive(ax.encode(Packet(ax.Close(ax.REASON_SHUTDOWN), 42, 0, 9)))
    assert event == MasterClosed(ax.REASON_SHUTDOWN) and session.state is State.CLOSED
    with pytest.raises(SessionError):
        session.send(ax.Ping())


def test_session_ignores_strays_and_reports_a_refused_open() -> None:
    session = opened_session()
    [stray] = session.receive(ax.encode(Packet(ax.Response(), 42, 0, 999)))
    [foreign] = session.receive(ax.encode(Packet(ax.Get(()), 41, 0, 3)))
    assert isinstance(stray, Ignored) and isinstance(foreign, Ignored)
    with pytest.raises(SessionError):
        session.send(ax.Response())  # a subagent never sends one unasked
    refused = SubagentSession((1, 3), b"")
    refused.open()
    assert refused.receive(ax.encode(Packet(ax.Response(error=ax.OPEN_FAILED), 0, 0, 1))) == \
        [OpenRefused(ax.OPEN_FAILED)]
    assert refused.state is State.CLOSED


# -- answers from the served MIB ----------------------------------------------------------

SPEC = "fat-tree:spines=1,leaves=1,hosts=2"


@pytest.fixture(scope="module")
def served() -> tuple[Agent, MasterRequests]:
    agent = Agent(SPEC)
    regions = Subtrees((INFINIBAND_MIB,))
    return agent, MasterRequests(agent.mib, ContextDirectory(agent.contexts), lambda _c: regions)


def ask(requests: MasterRequests, message: ax.Pdu, transaction: int = 1) -> ax.Response:
    response = requests.answer(Packet(message, 1, transaction, 1))
    assert response is not None
    return response


def test_get_next_honours_include_end_and_regions(served: tuple[Agent, MasterRequests]) -> None:
    agent, requests = served
    target = agent.target()
    found = agent.mib.next_cell(target, INFINIBAND_MIB)
    assert found is not None
    first_oid, first = found
    found = agent.mib.next_cell(target, first_oid)
    assert found is not None
    second_oid, _ = found
    [included] = ask(requests, ax.GetNext((SearchRange(first_oid, (), True),))).varbinds
    [excluded] = ask(requests, ax.GetNext((SearchRange(first_oid),))).varbinds
    [bounded] = ask(requests, ax.GetNext((SearchRange(first_oid, second_oid),))).varbinds
    # Before the region: its first instance; IF-MIB (served, not registered) is skipped.
    [from_before] = ask(requests, ax.GetNext((SearchRange((1, 3, 6, 1, 2, 1, 2)),))).varbinds
    [past] = ask(requests, ax.GetNext((SearchRange((1, 3, 6, 1, 3, 118)),))).varbinds
    assert (included.name, included.type, included.value) == (first_oid, first.tag, first.value)
    assert excluded.name == second_oid
    assert (bounded.name, bounded.type) == (first_oid, ber.END_OF_MIB_VIEW)
    assert from_before.name == first_oid
    assert past.type == ber.END_OF_MIB_VIEW


def test_get_and_bulk_follow_rfc_2741(served: tuple[Agent, MasterRequests]) -> None:
    agent, requests = served
    target = agent.target()
    found = agent.mib.next_cell(target, INFINIBAND_MIB)
    assert found is not None
    first_oid, first = found
    got, outside, missing = ask(requests, ax.Get((
        SearchRange(first_oid), SearchRange((1, 3, 6, 1, 2, 1, 2, 1, 0)),
        SearchRange(first_oid[:-1] + (99,))))).varbinds
    assert (got.type, got.value) == (first.tag, first.value)
    assert outside.type == ber.NO_SUCH_OBJECT
    assert missing.type in (ber.NO_SUCH_OBJECT, ber.NO_SUCH_INSTANCE)
    # 1 non-repeater, then 2 repeaters x 3 repetitions, interleaved.
    walk = [first_oid]
    while len(walk) < 4:
        found = agent.mib.next_cell(target, walk[-1])
        assert found is not None
        walk.append(found[0])
    bulk = ask(requests, ax.GetBulk(1, 3, (SearchRange(INFINIBAND_MIB),
                                           SearchRange(INFINIBAND_MIB),
                                           SearchRange(walk[0])))).varbinds
    assert [v.name for v in bulk] == [walk[0], walk[0], walk[1], walk[1], walk[2],
                                      walk[2], walk[3]]
    end = ask(requests, ax.GetBulk(0, 5, (SearchRange((1, 3, 6, 1, 3, 118)),))).varbinds
    assert [v.type for v in end] == [ber.END_OF_MIB_VIEW]  # stops once every repeater ended


def test_set_phases_map_to_prepare_and_commit(tmp_path: Path) -> None:
    agent = Agent("fat-tree:spines=2,leaves=3,hosts=2,faults=0,lmc=1", path=tmp_path / "s.json")
    requests = MasterRequests(agent.mib, ContextDirectory(agent.contexts),
                              lambda _c: Subtrees((INFINIBAND_MIB,)))
    sweep = instance("ibSmConfigSweepInterval", agent.prefix)
    priority = instance("ibSmConfigPriority", agent.prefix)
    # wrongValue at the second varbind: AgentX's index counts from 1.
    refused = ask(requests, ax.TestSet((VarBind(sweep, ber.INTEGER, 12),
                                        VarBind(priority, ber.INTEGER, 99))), transaction=1)
    assert (refused.error, refused.index) == (ax.SNMP_ERRORS["wrongValue"], 2)
    wrong_type = ask(requests, ax.TestSet((VarBind(sweep, ber.OCTET_STRING, b"ten"),)), 2)
    assert (wrong_type.error, wrong_type.index) == (ax.SNMP_ERRORS["wrongType"], 1)
    assert requests.answer(Packet(ax.CleanupSet(), 1, 2, 1)) is None
    # A good SET: nothing changes at TestSet, everything at CommitSet.
    before = agent.get(sweep)
    assert ask(requests, ax.TestSet((VarBind(sweep, ber.INTEGER, before + 7),)), 3).error == 0
    assert agent.get(sweep) == before
    assert ask(requests, ax.CommitSet(), 3).error == 0
    assert agent.get(sweep) == before + 7
    assert agent.restarted().get(sweep) == before + 7  # durable
    undo = ask(requests, ax.UndoSet(), 3)
    assert undo.error == ax.SNMP_ERRORS["undoFailed"]  # a committed SET cannot be taken back
    assert requests.answer(Packet(ax.CleanupSet(), 1, 3, 1)) is None
    # CommitSet without a TestSet that passed: commitFailed.
    assert ask(requests, ax.CommitSet(), 4).error == ax.SNMP_ERRORS["commitFailed"]
    assert ask(requests, ax.Ping()) == ax.Response()  # a master's Ping is answered too
    agent.set((sweep, i(before)))


# -- packets from net-snmp's snmpd -------------------------------------------------------

def read_packet(sock: socket.socket) -> tuple[bytes, Packet]:
    data = b""
    while len(data) < ax.HEADER_SIZE:
        data += sock.recv(ax.HEADER_SIZE - len(data))
    length = ax.decode_header(data).payload_length
    while len(data) < ax.HEADER_SIZE + length:
        data += sock.recv(ax.HEADER_SIZE + length - len(data))
    return data, ax.decode(data)


@pytest.mark.parametrize("big", [True, False])
def test_packets_captured_from_net_snmp_master(tmp_path: Path, big: bool) -> None:
    wanted = (1, 3, 6, 1, 3, 117, 3, 1, 1, 1, 0)
    with SnmpdMaster(tmp_path) as master, socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(str(master.socket))
        sock.sendall(ax.encode(Packet(ax.Open(0, (1, 3, 6, 1, 3, 117, 3), b"capture"), 0, 0, 1,
                                      big)))
        wire, opened = read_packet(sock)
        assert isinstance(opened.pdu, ax.Response) and opened.pdu.error == 0
        assert opened.packet_id == 1 and opened.session_id != 0
        assert opened.big_endian == big  # net-snmp answers in the order the Open used
        assert ax.encode(opened) == wire  # read and written back octet for octet
        session = opened.session_id
        sock.sendall(ax.encode(Packet(ax.Register(INFINIBAND_MIB), session, 0, 2, big)))
        _, registered = read_packet(sock)
        assert registered.packet_id == 2 and isinstance(registered.pdu, ax.Response) \
            and registered.pdu.error == 0
        result: dict[str, subprocess.CompletedProcess[str]] = {}
        client = threading.Thread(target=lambda: result.update(
            get=master.snmp("snmpget", ".".join(map(str, wanted)))))
        client.start()
        wire, request = read_packet(sock)
        assert isinstance(request.pdu, ax.Get) and request.session_id == session
        assert request.pdu.ranges == (SearchRange(wanted, ()),) and request.pdu.context is None
        assert ax.encode(request) == wire
        sock.sendall(ax.encode(Packet(ax.Response(0, 0, 0, (
            VarBind(wanted, ber.OCTET_STRING, b"from the test"),)), session,
            request.transaction_id, request.packet_id, request.big_endian)))
        client.join(20)
        answer = result["get"]
        assert "from the test" in answer.stdout, answer
        sock.sendall(ax.encode(Packet(ax.Close(ax.REASON_SHUTDOWN), session, 0, 3, big)))
        _, closed = read_packet(sock)
        assert closed.packet_id == 3 and isinstance(closed.pdu, ax.Response) \
            and closed.pdu.error == 0

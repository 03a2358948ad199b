"""A subagent's side of one AgentX session (RFC 2741), without I/O.

In the manner of h11: `receive` takes the octets a read returned and says
what they mean (events); `open`, `send` and `respond` return the octets to
write. The caller owns the socket, the clock and the answers. One object
lives for one connection: after the master closes the session or the
connection drops, the caller starts a new one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Union

from . import pdu as ax
from .pdu import (HEADER_SIZE, AgentxParseError, Header, Oid, Packet, PacketReader, Pdu,
                  decode_header)

# PDUs a master sends that the subagent must answer (RFC 2741 7.2); RFC 2741
# has only subagents ping, but a master's Ping is answered all the same.
MASTER_REQUESTS = (ax.Get, ax.GetNext, ax.GetBulk, ax.TestSet, ax.CommitSet, ax.UndoSet,
                   ax.CleanupSet, ax.Ping)
# The master's requests a subagent may answer from their octets (`lone_request`).
READ_REQUESTS = frozenset({ax.GET, ax.GET_NEXT})
# What a subagent may send once the session is open.
SUBAGENT_PDUS = (ax.Close, ax.Register, ax.Unregister, ax.Notify, ax.Ping, ax.IndexAllocate,
                 ax.IndexDeallocate, ax.AddAgentCaps, ax.RemoveAgentCaps)


class SessionError(Exception):
    """The session cannot do that in its state (a caller's bug, or the
    master broke the protocol)."""


class State(enum.Enum):
    IDLE = "idle"  # nothing sent yet
    OPENING = "opening"  # Open sent, its Response not in
    OPEN = "open"
    CLOSED = "closed"  # by either side, or refused


@dataclass(frozen=True, slots=True)
class Opened:
    """The master accepted the Open: requests may come now."""

    session_id: int


@dataclass(frozen=True, slots=True)
class OpenRefused:
    error: int


@dataclass(frozen=True, slots=True)
class Answered:
    """The master's Response to a PDU this side sent (`packet_id` from `send`)."""

    packet_id: int
    request: Pdu
    response: ax.Response


@dataclass(frozen=True, slots=True)
class MasterRequest:
    """A Get, GetNext, GetBulk or SET phase to answer (CleanupSet takes no answer)."""

    packet: Packet


@dataclass(frozen=True, slots=True)
class MasterClosed:
    reason: int


@dataclass(frozen=True, slots=True)
class Ignored:
    """A PDU that means nothing here (a stray Response, a foreign session):
    `why` is for a debug log line."""

    packet: Packet
    why: str


Event = Union[Opened, OpenRefused, Answered, MasterRequest, MasterClosed, Ignored]


class SubagentSession:
    """The protocol state of one session; see the module documentation."""

    def __init__(self, ident: Oid, description: bytes, timeout: int = 0,
                 big_endian: bool = True) -> None:
        self.ident = ident
        self.description = description
        self.timeout = timeout  # default response timeout in seconds, 0: the master's
        self.big_endian = big_endian
        self.state = State.IDLE
        self.session_id = 0
        self.pending: dict[int, Pdu] = {}  # packet_id -> what was sent, its Response not in
        self._next_packet_id = 1
        self._reader = PacketReader()

    def _packet_id(self) -> int:
        packet_id = self._next_packet_id
        self._next_packet_id = packet_id % 0xFFFFFFFF + 1
        return packet_id

    def open(self) -> bytes:
        if self.state is not State.IDLE:
            raise SessionError(f"Open in state {self.state.value}")
        self.state = State.OPENING
        packet_id = self._packet_id()
        request = ax.Open(self.timeout, self.ident, self.description)
        self.pending[packet_id] = request
        return ax.encode(Packet(request, 0, 0, packet_id, self.big_endian))

    def send(self, pdu: Pdu) -> tuple[int, bytes]:
        """(packet_id, octets) of a subagent PDU in the open session."""
        if self.state is not State.OPEN:
            raise SessionError(f"{type(pdu).__name__} in state {self.state.value}")
        if not isinstance(pdu, SUBAGENT_PDUS):
            raise SessionError(f"a subagent does not send {type(pdu).__name__}")
        packet_id = self._packet_id()
        self.pending[packet_id] = pdu
        if isinstance(pdu, ax.Close):
            self.state = State.CLOSED
        return packet_id, ax.encode(Packet(pdu, self.session_id, 0, packet_id, self.big_endian))

    def respond(self, request: Packet, response: ax.Response) -> bytes:
        """The Response to a master's request: its identifiers, its byte order (7.2.1)."""
        return ax.encode(Packet(response, request.session_id, request.transaction_id,
                                request.packet_id, request.big_endian))

    def lone_request(self, data: bytes) -> Header | None:
        """The header of `data` when it is exactly one whole PDU from the master
        in this open session, of a type in READ_REQUESTS, with nothing buffered
        before it: a request the caller may answer from its octets alone, its
        Response written with that header's identifiers and byte order
        (pdu.encode_response). None for anything else: `receive` it."""
        if self.state is not State.OPEN or self._reader.pending or len(data) < HEADER_SIZE \
                or data[1] not in READ_REQUESTS:
            return None
        try:
            header = decode_header(data)
        except AgentxParseError:
            return None  # `receive` says why
        if len(data) != HEADER_SIZE + header.payload_length or \
                header.session_id != self.session_id:
            return None
        return header

    def receive(self, data: bytes) -> list[Event]:
        """The events `data` completes; AgentxParseError when the stream is not AgentX."""
        return [self._event(packet) for packet in self._reader.feed(data)]

    def _event(self, packet: Packet) -> Event:
        message = packet.pdu
        if isinstance(message, ax.Response):
            return self._response(packet, message)
        if self.state is not State.OPEN:
            return Ignored(packet, f"a {type(message).__name__} before the session is open")
        if packet.session_id != self.session_id:
            return Ignored(packet, f"session {packet.session_id} is not ours ({self.session_id})")
        if isinstance(message, ax.Close):
            self.state = State.CLOSED
            return MasterClosed(message.reason)
        if isinstance(message, MASTER_REQUESTS):
            return MasterRequest(packet)
        return Ignored(packet, f"a master does not send {type(message).__name__}")

    def _response(self, packet: Packet, response: ax.Response) -> Event:
        request = self.pending.pop(packet.packet_id, None)
        if request is None:
            return Ignored(packet, f"a Response to packet {packet.packet_id}, not asked")
        if isinstance(request, ax.Open):
            if response.error != ax.NO_AGENTX_ERROR:
                self.state = State.CLOSED
                return OpenRefused(response.error)
            self.state = State.OPEN
            self.session_id = packet.session_id
            return Opened(packet.session_id)
        return Answered(packet.packet_id, request, response)

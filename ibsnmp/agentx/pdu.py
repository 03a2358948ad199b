"""AgentX (RFC 2741) PDUs as bytes and back, without I/O.

Every PDU of RFC 2741 section 6 has a frozen dataclass here; `encode` writes one with its
header, `decode` reads one whole PDU, `PacketReader` splits a byte stream into PDUs by their
payload_length. Reading is strict: what RFC 2741 does not allow (an unknown version, PDU or
value type, a length that overruns the payload, a payload left over, an OID of more than 128
sub-identifiers) raises AgentxParseError, never IndexError or struct.error. Both byte orders
are read (the header's NETWORK_BYTE_ORDER flag); a response is written in its request's (7.2.1).
Value type codes (5.4) equal the BER tags of ibsnmp.wire.ber: a Cell's tag is a VarBind's type.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import ClassVar, Union

from ibsnmp.wire.ber import (
    COUNTER32,
    COUNTER64,
    END_OF_MIB_VIEW,
    GAUGE32,
    INTEGER,
    IP_ADDRESS,
    NO_SUCH_INSTANCE,
    NO_SUCH_OBJECT,
    NULL,
    OBJECT_IDENTIFIER,
    OCTET_STRING,
    OPAQUE,
    TIMETICKS,
)

Oid = tuple[int, ...]

VERSION = 1
HEADER_SIZE = 20
MAX_SUBIDS = 128  # RFC 2741 5.1: n_subid is at most 128
INTERNET: Oid = (1, 3, 6, 1)
# A whole PDU larger than this is refused rather than buffered (net-snmp's
# own limit is far below; a varbind list of 64 KiB strings still fits).
MAX_PAYLOAD = 1 << 24

# Header flags (6.1).
INSTANCE_REGISTRATION = 0x01
NEW_INDEX = 0x02
ANY_INDEX = 0x04
NON_DEFAULT_CONTEXT = 0x08
NETWORK_BYTE_ORDER = 0x10
KNOWN_FLAGS = 0x1F

# PDU types (6.1).
OPEN, CLOSE, REGISTER, UNREGISTER = 1, 2, 3, 4
GET, GET_NEXT, GET_BULK = 5, 6, 7
TEST_SET, COMMIT_SET, UNDO_SET, CLEANUP_SET = 8, 9, 10, 11
NOTIFY, PING, INDEX_ALLOCATE, INDEX_DEALLOCATE = 12, 13, 14, 15
ADD_AGENT_CAPS, REMOVE_AGENT_CAPS, RESPONSE = 16, 17, 18

# VarBind types (5.4) are the BER tags of the same SNMP types.
TIME_TICKS = TIMETICKS
_INT32_TYPES = frozenset({INTEGER, COUNTER32, GAUGE32, TIME_TICKS})
_OCTET_TYPES = frozenset({OCTET_STRING, IP_ADDRESS, OPAQUE})
_EMPTY_TYPES = frozenset({NULL, NO_SUCH_OBJECT, NO_SUCH_INSTANCE, END_OF_MIB_VIEW})

# Close reasons (6.2.2).
REASON_OTHER, REASON_PARSE_ERROR, REASON_PROTOCOL_ERROR = 1, 2, 3
REASON_TIMEOUTS, REASON_SHUTDOWN, REASON_BY_MANAGER = 4, 5, 6

# Response res.error values (6.2.16): the SNMP ones are RFC 3416's error-status.
NO_AGENTX_ERROR = 0
SNMP_ERRORS = {
    "noError": 0, "tooBig": 1, "noSuchName": 2, "badValue": 3, "readOnly": 4, "genErr": 5,
    "noAccess": 6, "wrongType": 7, "wrongLength": 8, "wrongEncoding": 9, "wrongValue": 10,
    "noCreation": 11, "inconsistentValue": 12, "resourceUnavailable": 13, "commitFailed": 14,
    "undoFailed": 15, "authorizationError": 16, "notWritable": 17, "inconsistentName": 18,
}
OPEN_FAILED, NOT_OPEN, INDEX_WRONG_TYPE, INDEX_ALREADY_ALLOCATED = 256, 257, 258, 259
INDEX_NONE_AVAILABLE, INDEX_NOT_ALLOCATED, UNSUPPORTED_CONTEXT = 260, 261, 262
DUPLICATE_REGISTRATION, UNKNOWN_REGISTRATION, UNKNOWN_AGENT_CAPS = 263, 264, 265
PARSE_ERROR, REQUEST_DENIED, PROCESSING_ERROR = 266, 267, 268
ERROR_NAMES = {code: name for name, code in SNMP_ERRORS.items()} | {
    OPEN_FAILED: "openFailed", NOT_OPEN: "notOpen", INDEX_WRONG_TYPE: "indexWrongType",
    INDEX_ALREADY_ALLOCATED: "indexAlreadyAllocated", INDEX_NONE_AVAILABLE: "indexNoneAvailable",
    INDEX_NOT_ALLOCATED: "indexNotAllocated", UNSUPPORTED_CONTEXT: "unsupportedContext",
    DUPLICATE_REGISTRATION: "duplicateRegistration",
    UNKNOWN_REGISTRATION: "unknownRegistration", UNKNOWN_AGENT_CAPS: "unknownAgentCaps",
    PARSE_ERROR: "parseError", REQUEST_DENIED: "requestDenied",
    PROCESSING_ERROR: "processingError",
}


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"error {code}")


class AgentxParseError(ValueError):
    """The octets are not an AgentX PDU RFC 2741 allows."""


# -- the parts of a PDU (5.1 - 5.4) ------------------------------------------------


@dataclass(frozen=True, slots=True)
class SearchRange:
    """GetNext/GetBulk: the first instance after `start` (or at it, when
    `include`) and before `end` (no bound when empty). For Get, `start`
    is the name asked and `end` is empty."""

    start: Oid
    end: Oid = ()
    include: bool = False


# A VarBind value: int for the integer types, bytes for the string types, a
# tuple of sub-identifiers for an OID, None for Null and the exceptions.
Value = Union[int, bytes, Oid, None]


@dataclass(frozen=True, slots=True)
class VarBind:
    name: Oid
    type: int
    value: Value = None


# -- the PDUs (6.2) -----------------------------------------------------------------
# `context` is the non-default context a PDU names (None: the default one).


@dataclass(frozen=True, slots=True)
class Open:
    TYPE: ClassVar[int] = OPEN
    timeout: int
    id: Oid
    description: bytes


@dataclass(frozen=True, slots=True)
class Close:
    TYPE: ClassVar[int] = CLOSE
    reason: int


@dataclass(frozen=True, slots=True)
class Register:
    """`range_subid` (1-based, 0: none) and `upper_bound` register a range
    of subtrees (6.2.3); `instance`: the INSTANCE_REGISTRATION flag."""

    TYPE: ClassVar[int] = REGISTER
    subtree: Oid
    priority: int = 127
    timeout: int = 0
    range_subid: int = 0
    upper_bound: int = 0
    context: bytes | None = None
    instance: bool = False


@dataclass(frozen=True, slots=True)
class Unregister:
    TYPE: ClassVar[int] = UNREGISTER
    subtree: Oid
    priority: int = 127
    range_subid: int = 0
    upper_bound: int = 0
    context: bytes | None = None


@dataclass(frozen=True, slots=True)
class Get:
    TYPE: ClassVar[int] = GET
    ranges: tuple[SearchRange, ...]
    context: bytes | None = None


@dataclass(frozen=True, slots=True)
class GetNext:
    TYPE: ClassVar[int] = GET_NEXT
    ranges: tuple[SearchRange, ...]
    context: bytes | None = None


@dataclass(frozen=True, slots=True)
class GetBulk:
    TYPE: ClassVar[int] = GET_BULK
    non_repeaters: int
    max_repetitions: int
    ranges: tuple[SearchRange, ...]
    context: bytes | None = None


@dataclass(frozen=True, slots=True)
class TestSet:
    TYPE: ClassVar[int] = TEST_SET
    varbinds: tuple[VarBind, ...]
    context: bytes | None = None


@dataclass(frozen=True, slots=True)
class CommitSet:
    TYPE: ClassVar[int] = COMMIT_SET


@dataclass(frozen=True, slots=True)
class UndoSet:
    TYPE: ClassVar[int] = UNDO_SET


@dataclass(frozen=True, slots=True)
class CleanupSet:
    TYPE: ClassVar[int] = CLEANUP_SET


@dataclass(frozen=True, slots=True)
class Notify:
    TYPE: ClassVar[int] = NOTIFY
    varbinds: tuple[VarBind, ...]
    context: bytes | None = None


@dataclass(frozen=True, slots=True)
class Ping:
    TYPE: ClassVar[int] = PING
    context: bytes | None = None


@dataclass(frozen=True, slots=True)
class IndexAllocate:
    TYPE: ClassVar[int] = INDEX_ALLOCATE
    varbinds: tuple[VarBind, ...]
    context: bytes | None = None
    new_index: bool = False
    any_index: bool = False


@dataclass(frozen=True, slots=True)
class IndexDeallocate:
    TYPE: ClassVar[int] = INDEX_DEALLOCATE
    varbinds: tuple[VarBind, ...]
    context: bytes | None = None


@dataclass(frozen=True, slots=True)
class AddAgentCaps:
    TYPE: ClassVar[int] = ADD_AGENT_CAPS
    id: Oid
    description: bytes
    context: bytes | None = None


@dataclass(frozen=True, slots=True)
class RemoveAgentCaps:
    TYPE: ClassVar[int] = REMOVE_AGENT_CAPS
    id: Oid
    context: bytes | None = None


@dataclass(frozen=True, slots=True)
class Response:
    TYPE: ClassVar[int] = RESPONSE
    sys_up_time: int = 0
    error: int = NO_AGENTX_ERROR
    index: int = 0
    varbinds: tuple[VarBind, ...] = ()


Pdu = Union[Open, Close, Register, Unregister, Get, GetNext, GetBulk, TestSet, CommitSet,
            UndoSet, CleanupSet, Notify, Ping, IndexAllocate, IndexDeallocate, AddAgentCaps,
            RemoveAgentCaps, Response]


@dataclass(frozen=True, slots=True)
class Packet:
    """One PDU with its header's identifiers and byte order."""

    pdu: Pdu
    session_id: int = 0
    transaction_id: int = 0
    packet_id: int = 0
    big_endian: bool = field(default=True)


# -- writing ------------------------------------------------------------------------


class _Structs(dict[str, struct.Struct]):
    """Compiled formats by text ('>4I'): a PDU per varbind of a walk is read
    and written, so formats are not parsed again each time."""

    def __missing__(self, fmt: str) -> struct.Struct:
        compiled = self[fmt] = struct.Struct(fmt)
        return compiled


_STRUCTS = _Structs()


class _Writer:
    __slots__ = ("parts", "order")

    def __init__(self, big_endian: bool) -> None:
        self.parts: list[bytes] = []
        self.order = ">" if big_endian else "<"

    def pack(self, fmt: str, *values: int) -> None:
        try:
            self.parts.append(_STRUCTS[self.order + fmt].pack(*values))
        except struct.error as exc:
            raise ValueError(f"AgentX field out of range: {exc}") from None

    def oid(self, oid: Oid, include: bool = False) -> None:
        oid = tuple(oid)
        prefix = 0
        # 5.1: 1.3.6.1.x.rest is written as prefix x and rest (x < 256).
        if len(oid) > 4 and oid[:4] == INTERNET and 0 < oid[4] < 256:
            prefix, oid = oid[4], oid[5:]
        if len(oid) > MAX_SUBIDS:
            raise ValueError(f"an OID of {len(oid)} sub-identifiers (at most {MAX_SUBIDS})")
        self.pack(f"4B{len(oid)}I", len(oid), prefix, int(include), 0, *oid)

    def octets(self, data: bytes) -> None:
        self.pack("I", len(data))
        self.parts.append(bytes(data) + b"\x00" * (-len(data) % 4))

    def context(self, context: bytes | None) -> None:
        if context is not None:
            self.octets(context)

    def varbinds(self, varbinds: tuple[VarBind, ...]) -> None:
        for varbind in varbinds:
            self.pack("HH", varbind.type, 0)
            self.oid(varbind.name)
            self.value(varbind)

    def value(self, varbind: VarBind) -> None:
        kind, value = varbind.type, varbind.value
        if kind in _INT32_TYPES:
            self.pack("i" if kind == INTEGER else "I", _integer(value))
        elif kind == COUNTER64:
            self.pack("Q", _integer(value))
        elif kind in _OCTET_TYPES:
            if not isinstance(value, bytes):
                raise ValueError(f"varbind type {kind} needs bytes")
            self.octets(value)
        elif kind == OBJECT_IDENTIFIER:
            if not isinstance(value, tuple):
                raise ValueError("an OBJECT IDENTIFIER varbind needs a tuple")
            self.oid(value)
        elif kind not in _EMPTY_TYPES:
            raise ValueError(f"unknown varbind type {kind}")

    def ranges(self, ranges: tuple[SearchRange, ...]) -> None:
        for search in ranges:
            self.oid(search.start, search.include)
            self.oid(search.end)


def _integer(value: Value) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError("an integer varbind needs an int")
    return value


def _flags(pdu: Pdu) -> int:
    flags = NON_DEFAULT_CONTEXT if getattr(pdu, "context", None) is not None else 0
    if isinstance(pdu, Register) and pdu.instance:
        flags |= INSTANCE_REGISTRATION
    if isinstance(pdu, IndexAllocate):
        flags |= (NEW_INDEX if pdu.new_index else 0) | (ANY_INDEX if pdu.any_index else 0)
    return flags


def _payload(pdu: Pdu, out: _Writer) -> None:
    if isinstance(pdu, Response):  # first: what a subagent writes most
        out.pack("IHH", pdu.sys_up_time, pdu.error, pdu.index)
        out.varbinds(pdu.varbinds)
    elif isinstance(pdu, Open):
        out.pack("B3x", pdu.timeout)
        out.oid(pdu.id)
        out.octets(pdu.description)
    elif isinstance(pdu, Close):
        out.pack("B3x", pdu.reason)
    elif isinstance(pdu, (Register, Unregister)):
        if pdu.range_subid > len(pdu.subtree):
            raise ValueError(f"range_subid {pdu.range_subid} beyond the subtree")
        out.context(pdu.context)
        out.pack("BBBB", pdu.timeout if isinstance(pdu, Register) else 0, pdu.priority,
                 pdu.range_subid, 0)
        out.oid(pdu.subtree)
        if pdu.range_subid:
            out.pack("I", pdu.upper_bound)
    elif isinstance(pdu, (Get, GetNext)):
        out.context(pdu.context)
        out.ranges(pdu.ranges)
    elif isinstance(pdu, GetBulk):
        out.context(pdu.context)
        out.pack("HH", pdu.non_repeaters, pdu.max_repetitions)
        out.ranges(pdu.ranges)
    elif isinstance(pdu, (TestSet, Notify, IndexAllocate, IndexDeallocate)):
        out.context(pdu.context)
        out.varbinds(pdu.varbinds)
    elif isinstance(pdu, Ping):
        out.context(pdu.context)
    elif isinstance(pdu, AddAgentCaps):
        out.context(pdu.context)
        out.oid(pdu.id)
        out.octets(pdu.description)
    elif isinstance(pdu, RemoveAgentCaps):
        out.context(pdu.context)
        out.oid(pdu.id)
    # CommitSet, UndoSet and CleanupSet are a header alone.


def encode(packet: Packet) -> bytes:
    """The octets of `packet`: header and payload (ValueError if a field does not fit)."""
    body = _Writer(packet.big_endian)
    _payload(packet.pdu, body)
    payload = b"".join(body.parts)
    flags = _flags(packet.pdu) | (NETWORK_BYTE_ORDER if packet.big_endian else 0)
    header = _Writer(packet.big_endian)
    header.pack("BBBB", VERSION, packet.pdu.TYPE, flags, 0)
    header.pack("IIII", packet.session_id, packet.transaction_id, packet.packet_id,
                len(payload))
    return b"".join(header.parts) + payload


def encode_varbinds(varbinds: tuple[VarBind, ...], big_endian: bool) -> bytes:
    """The octets of a varbind list alone, as a Response's payload ends with them."""
    out = _Writer(big_endian)
    out.varbinds(varbinds)
    return b"".join(out.parts)


_RESPONSE_HEAD = {True: struct.Struct(">BBBBIIIIIHH"), False: struct.Struct("<BBBBIIIIIHH")}


def encode_response(request: Header, sys_up_time: int, varbinds: bytes) -> bytes:
    """A Response with no error to the request whose header is `request`
    (its identifiers, its byte order), carrying `varbinds`' octets
    (`encode_varbinds` in that byte order): one pack, no objects."""
    big_endian = request.big_endian
    return _RESPONSE_HEAD[big_endian].pack(
        VERSION, RESPONSE, NETWORK_BYTE_ORDER if big_endian else 0, 0, request.session_id,
        request.transaction_id, request.packet_id, 8 + len(varbinds),
        sys_up_time & 0xFFFFFFFF, NO_AGENTX_ERROR, 0) + varbinds


# -- reading ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Header:
    pdu_type: int
    flags: int
    session_id: int
    transaction_id: int
    packet_id: int
    payload_length: int

    @property
    def big_endian(self) -> bool:
        return bool(self.flags & NETWORK_BYTE_ORDER)


def decode_header(data: bytes) -> Header:
    """The header at the start of `data` (at least HEADER_SIZE octets)."""
    if len(data) < HEADER_SIZE:
        raise AgentxParseError(f"a header has {HEADER_SIZE} octets, got {len(data)}")
    version, pdu_type, flags, _reserved = data[0], data[1], data[2], data[3]
    if version != VERSION:
        raise AgentxParseError(f"AgentX version {version} (only {VERSION} is known)")
    if not OPEN <= pdu_type <= RESPONSE:
        raise AgentxParseError(f"unknown PDU type {pdu_type}")
    if flags & ~KNOWN_FLAGS:
        raise AgentxParseError(f"unknown header flags 0x{flags:02x}")
    order = ">" if flags & NETWORK_BYTE_ORDER else "<"
    session_id, transaction_id, packet_id, length = _STRUCTS[order + "IIII"].unpack_from(data, 4)
    if length % 4:
        raise AgentxParseError(f"payload_length {length} is not a multiple of 4")
    if length > MAX_PAYLOAD:
        raise AgentxParseError(f"payload_length {length} is more than {MAX_PAYLOAD}")
    return Header(pdu_type, flags, session_id, transaction_id, packet_id, length)


class _Reader:
    __slots__ = ("data", "pos", "end", "order")

    def __init__(self, data: bytes, pos: int, end: int, big_endian: bool) -> None:
        self.data, self.pos, self.end = data, pos, end
        self.order = ">" if big_endian else "<"

    def unpack(self, fmt: str) -> tuple[int, ...]:
        compiled = _STRUCTS[self.order + fmt]
        size = compiled.size
        if self.pos + size > self.end:
            raise AgentxParseError("the payload ends inside a field")
        values = compiled.unpack_from(self.data, self.pos)
        self.pos += size
        return values

    def more(self) -> bool:
        return self.pos < self.end

    def oid(self) -> tuple[Oid, bool]:
        count, prefix, include, _reserved = self.unpack("BBBB")
        if count > MAX_SUBIDS:
            raise AgentxParseError(f"an OID of {count} sub-identifiers (at most {MAX_SUBIDS})")
        if include > 1:
            raise AgentxParseError(f"OID include field {include} (0 or 1)")
        arcs = self.unpack(f"{count}I") if count else ()
        if prefix:
            arcs = INTERNET + (prefix,) + arcs
            if len(arcs) > MAX_SUBIDS:
                raise AgentxParseError("a prefixed OID of more than 128 sub-identifiers")
        return arcs, bool(include)

    def plain_oid(self, what: str) -> Oid:
        oid, include = self.oid()
        if include:
            raise AgentxParseError(f"{what}: the include field must be 0")
        return oid

    def octets(self) -> bytes:
        (length,) = self.unpack("I")
        padded = length + (-length % 4)
        if self.pos + padded > self.end:
            raise AgentxParseError(f"an octet string of {length} octets overruns the payload")
        value = self.data[self.pos:self.pos + length]
        self.pos += padded
        return bytes(value)

    def context(self, flags: int) -> bytes | None:
        return self.octets() if flags & NON_DEFAULT_CONTEXT else None

    def varbinds(self) -> tuple[VarBind, ...]:
        varbinds = []
        while self.more():
            kind, _reserved = self.unpack("HH")
            name = self.plain_oid("varbind name")
            varbinds.append(VarBind(name, kind, self.value(kind)))
        return tuple(varbinds)

    def value(self, kind: int) -> Value:
        if kind in _INT32_TYPES:
            return self.unpack("i" if kind == INTEGER else "I")[0]
        if kind == COUNTER64:
            return self.unpack("Q")[0]
        if kind in _OCTET_TYPES:
            value = self.octets()
            if kind == IP_ADDRESS and len(value) != 4:
                raise AgentxParseError(f"an IpAddress of {len(value)} octets")
            return value
        if kind == OBJECT_IDENTIFIER:
            return self.plain_oid("OBJECT IDENTIFIER value")
        if kind in _EMPTY_TYPES:
            return None
        raise AgentxParseError(f"unknown varbind type {kind}")

    def ranges(self) -> tuple[SearchRange, ...]:
        ranges = []
        while self.more():
            start, include = self.oid()
            end = self.plain_oid("SearchRange end")
            ranges.append(SearchRange(start, end, include))
        return tuple(ranges)


def _read_payload(header: Header, read: _Reader) -> Pdu:
    kind, flags = header.pdu_type, header.flags
    if flags & NON_DEFAULT_CONTEXT and kind in _NO_CONTEXT:
        raise AgentxParseError(f"a PDU of type {kind} names no context")
    if kind == OPEN:
        (timeout,) = read.unpack("B3x")
        ident = read.plain_oid("Open id")
        return Open(timeout, ident, read.octets())
    if kind == CLOSE:
        return Close(read.unpack("B3x")[0])
    if kind in (REGISTER, UNREGISTER):
        context = read.context(flags)
        timeout, priority, range_subid, _reserved = read.unpack("BBBB")
        subtree = read.plain_oid("subtree")
        upper_bound = read.unpack("I")[0] if range_subid else 0
        if range_subid > len(subtree):
            raise AgentxParseError(f"range_subid {range_subid} beyond the subtree's "
                                   f"{len(subtree)} sub-identifiers")
        if kind == REGISTER:
            return Register(subtree, priority, timeout, range_subid, upper_bound, context,
                            bool(flags & INSTANCE_REGISTRATION))
        return Unregister(subtree, priority, range_subid, upper_bound, context)
    if kind in (GET, GET_NEXT):
        context = read.context(flags)
        ranges = read.ranges()
        return Get(ranges, context) if kind == GET else GetNext(ranges, context)
    if kind == GET_BULK:
        context = read.context(flags)
        non_repeaters, max_repetitions = read.unpack("HH")
        return GetBulk(non_repeaters, max_repetitions, read.ranges(), context)
    if kind in (TEST_SET, NOTIFY, INDEX_DEALLOCATE):
        context = read.context(flags)
        varbinds = read.varbinds()
        with_varbinds: dict[int, type[TestSet | Notify | IndexDeallocate]] = {
            TEST_SET: TestSet, NOTIFY: Notify, INDEX_DEALLOCATE: IndexDeallocate}
        return with_varbinds[kind](varbinds, context)
    if kind == INDEX_ALLOCATE:
        context = read.context(flags)
        return IndexAllocate(read.varbinds(), context, bool(flags & NEW_INDEX),
                             bool(flags & ANY_INDEX))
    if kind == PING:
        return Ping(read.context(flags))
    if kind == ADD_AGENT_CAPS:
        context = read.context(flags)
        ident = read.plain_oid("AgentCaps id")
        return AddAgentCaps(ident, read.octets(), context)
    if kind == REMOVE_AGENT_CAPS:
        context = read.context(flags)
        return RemoveAgentCaps(read.plain_oid("AgentCaps id"), context)
    if kind == RESPONSE:
        sys_up_time, error, index = read.unpack("IHH")
        return Response(sys_up_time, error, index, read.varbinds())
    bare: dict[int, type[CommitSet | UndoSet | CleanupSet]] = {
        COMMIT_SET: CommitSet, UNDO_SET: UndoSet, CLEANUP_SET: CleanupSet}
    return bare[kind]()


_NO_CONTEXT = frozenset({OPEN, CLOSE, COMMIT_SET, UNDO_SET, CLEANUP_SET, RESPONSE})


def decode(data: bytes) -> Packet:
    """The one PDU `data` holds, header to the last payload octet."""
    header = decode_header(data)
    end = HEADER_SIZE + header.payload_length
    if len(data) != end:
        raise AgentxParseError(f"payload_length says {end} octets in all, got {len(data)}")
    return decode_body(header, data)


def decode_body(header: Header, data: bytes, start: int = 0) -> Packet:
    """The PDU whose header (already read) starts at `start` of `data`."""
    pos = start + HEADER_SIZE
    read = _Reader(data, pos, pos + header.payload_length, header.big_endian)
    pdu = _read_payload(header, read)
    if read.more():
        raise AgentxParseError(f"{read.end - read.pos} octets left after a PDU of type "
                               f"{header.pdu_type}")
    return Packet(pdu, header.session_id, header.transaction_id, header.packet_id,
                  header.big_endian)


def read_context(header: Header, data: bytes) -> tuple[bytes | None, int]:
    """The context the Get or GetNext in `data` names (one whole PDU, `header`
    read from it) and where its SearchRange list starts (AgentxParseError as
    `decode`)."""
    read = _Reader(data, HEADER_SIZE, HEADER_SIZE + header.payload_length, header.big_endian)
    return read.context(header.flags), read.pos


def read_ranges(header: Header, data: bytes, start: int) -> tuple[SearchRange, ...]:
    """The SearchRange list of the Get or GetNext in `data`, from `start` (as
    `read_context` found it) to the payload's end (AgentxParseError as `decode`)."""
    return _Reader(data, start, HEADER_SIZE + header.payload_length, header.big_endian).ranges()


class PacketReader:
    """Splits a byte stream into PDUs: feed what a read returned, get every
    PDU completed by it (none while one is still partial)."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Packet]:
        self._buffer += data
        packets: list[Packet] = []
        view = self._buffer
        start = 0
        while len(view) - start >= HEADER_SIZE:
            header = decode_header(bytes(view[start:start + HEADER_SIZE]))
            end = start + HEADER_SIZE + header.payload_length
            if end > len(view):
                break
            packets.append(decode_body(header, bytes(view[start:end])))
            start = end
        del self._buffer[:start]
        return packets

    @property
    def pending(self) -> int:
        """Octets of a PDU not complete yet."""
        return len(self._buffer)

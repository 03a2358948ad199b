"""Reading an SNMP message's header straight from its BER octets.

Pure functions of bytes, no pyasn1: the version, the community (v1/v2c) or
the v3 header and USM user name, the PDU type and request-id, and how many
varbinds the PDU holds, counted TLV by TLV without decoding a value. It
costs microseconds where a full decode of a 64 KB message costs a large
fraction of a second, so it can run on every datagram before pysnmp does.

Only what RFC 3417 section 8 allows is accepted: definite lengths and
single-octet tags. Anything else raises HeaderError (a parse error).
"""

from __future__ import annotations

from dataclasses import dataclass

from .ber import HeaderError, element, read_element

SEQUENCE, INTEGER, OCTET_STRING = 0x30, 0x02, 0x04

# PDU tags (context-specific, constructed).
GET, GET_NEXT, RESPONSE, SET, TRAP_V1 = 0xA0, 0xA1, 0xA2, 0xA3, 0xA4
GET_BULK, INFORM, TRAP_V2, REPORT = 0xA5, 0xA6, 0xA7, 0xA8

V1, V2C, V3 = 0, 1, 3
PDU_TAGS = {V1: frozenset({GET, GET_NEXT, RESPONSE, SET, TRAP_V1}),
            V2C: frozenset({GET, GET_NEXT, RESPONSE, SET, GET_BULK, INFORM, TRAP_V2, REPORT})}
# PDUs with a request-id, two integers and a varbind list (all but the v1 Trap).
_STANDARD_PDUS = PDU_TAGS[V2C]

USM = 3  # msgSecurityModel of the User-based Security Model
FLAG_PRIV, FLAG_REPORTABLE = 0x02, 0x04
TOO_BIG = 1  # error-status
MAX_INTEGER_OCTETS = 5  # an INTEGER (-2^31..2^32-1) takes at most five octets


@dataclass(frozen=True, slots=True)
class Tlv:
    """One BER element: its tag and where its value lies in the message."""

    tag: int
    head: int  # the tag octet
    start: int  # first value octet
    end: int  # one past the last value octet


def read_tlv(data: bytes, pos: int, limit: int) -> Tlv:
    """The element at `pos`, which must end at or before `limit`."""
    tag, start, end = read_element(data, pos, limit)
    return Tlv(tag, pos, start, end)


CONSTRUCTED = 0x20  # the tag bit of SEQUENCE, PDUs and other constructed types
MAX_DEPTH = 16  # an SNMP message nests 5 deep; anything far deeper is not one


def check_structure(data: bytes, start: int, end: int, depth: int = 0) -> None:
    """Every element from `start` to `end` is whole, constructed ones recursively.

    What a request answered from its header alone must pass first: the
    octets the header reader skipped are then well formed too.
    """
    if depth > MAX_DEPTH:
        raise HeaderError("nested too deep")
    pos = start
    while pos < end:
        tlv = read_tlv(data, pos, end)
        if tlv.tag & CONSTRUCTED:
            check_structure(data, tlv.start, tlv.end, depth + 1)
        pos = tlv.end


def _expect(data: bytes, pos: int, limit: int, tag: int) -> Tlv:
    tlv = read_tlv(data, pos, limit)
    if tlv.tag != tag:
        raise HeaderError(f"expected tag 0x{tag:02x}, got 0x{tlv.tag:02x}")
    return tlv


def _integer(data: bytes, tlv: Tlv) -> int:
    if not 1 <= tlv.end - tlv.start <= MAX_INTEGER_OCTETS:
        raise HeaderError("bad INTEGER length")
    return int.from_bytes(data[tlv.start:tlv.end], "big", signed=True)


@dataclass(frozen=True, slots=True)
class PduHeader:
    """The PDU's type and request-id; its varbind list as an element."""

    tag: int
    request_id: Tlv | None  # the INTEGER element (absent in a v1 Trap)
    varbinds: Tlv | None

    def count_varbinds(self, data: bytes, stop_after: int) -> int:
        """Varbinds in the list, counting no further than `stop_after` + 1."""
        if self.varbinds is None:
            return 0
        pos, end, count = self.varbinds.start, self.varbinds.end, 0
        # read_tlv inlined: this loop runs once per varbind of every request.
        while pos < end and count <= stop_after:
            if data[pos] != SEQUENCE or pos + 2 > end:
                raise HeaderError("a varbind is not a SEQUENCE")
            length = data[pos + 1]
            pos += 2
            if length & 0x80:
                size = length & 0x7F
                if not 0 < size <= 4:
                    raise HeaderError("bad varbind length")
                length = int.from_bytes(data[pos:pos + size], "big")
                pos += size
            pos += length
            if pos > end:
                raise HeaderError("varbind longer than its list")
            count += 1
        return count


def read_pdu(data: bytes, pos: int, limit: int, allowed: frozenset[int]) -> PduHeader:
    pdu = read_tlv(data, pos, limit)
    if pdu.tag not in allowed:
        raise HeaderError(f"unknown PDU type 0x{pdu.tag:02x}")
    if pdu.tag not in _STANDARD_PDUS:
        return PduHeader(pdu.tag, None, None)
    request_id = _expect(data, pdu.start, pdu.end, INTEGER)
    _integer(data, request_id)
    status = _expect(data, request_id.end, pdu.end, INTEGER)
    _integer(data, status)
    index = _expect(data, status.end, pdu.end, INTEGER)
    _integer(data, index)
    varbinds = _expect(data, index.end, pdu.end, SEQUENCE)
    return PduHeader(pdu.tag, request_id, varbinds)


@dataclass(frozen=True, slots=True)
class CommunityMessage:
    """An SNMPv1 or SNMPv2c message's header."""

    version: int
    community: bytes
    community_tlv: Tlv
    pdu: PduHeader


@dataclass(frozen=True, slots=True)
class V3Message:
    """An SNMPv3 message's header; `user_name` is None for other security models."""

    message_id: int
    max_size: int
    flags: int
    security_model: int
    user_name: bytes | None
    pdu: PduHeader | None  # None when the scoped PDU is encrypted


@dataclass(frozen=True, slots=True)
class OtherVersion:
    """A well-framed message of a version this agent does not speak."""

    version: int


Header = CommunityMessage | V3Message | OtherVersion


def read_header(data: bytes) -> Header:
    """Parse a message's header; raise HeaderError if it is malformed."""
    message = _expect(data, 0, len(data), SEQUENCE)
    if message.end != len(data):
        raise HeaderError("octets after the message")  # pysnmp drops these too
    version_tlv = _expect(data, message.start, message.end, INTEGER)
    version = _integer(data, version_tlv)
    if version in PDU_TAGS:
        community = _expect(data, version_tlv.end, message.end, OCTET_STRING)
        pdu = read_pdu(data, community.end, message.end, PDU_TAGS[version])
        return CommunityMessage(version, data[community.start:community.end], community, pdu)
    if version == V3:
        return _read_v3(data, version_tlv.end, message.end)
    return OtherVersion(version)


def _read_v3(data: bytes, pos: int, end: int) -> V3Message:
    header = _expect(data, pos, end, SEQUENCE)
    msg_id = _expect(data, header.start, header.end, INTEGER)
    max_size = _expect(data, msg_id.end, header.end, INTEGER)
    flags = _expect(data, max_size.end, header.end, OCTET_STRING)
    if flags.end - flags.start != 1:
        raise HeaderError("msgFlags is not one octet")
    model_tlv = _expect(data, flags.end, header.end, INTEGER)
    model = _integer(data, model_tlv)
    params = _expect(data, header.end, end, OCTET_STRING)
    user_name = _usm_user_name(data, params) if model == USM else None
    flag_octet = data[flags.start]
    if flag_octet & FLAG_PRIV:
        _expect(data, params.end, end, OCTET_STRING)
        pdu = None
    else:
        scoped = _expect(data, params.end, end, SEQUENCE)
        context_engine = _expect(data, scoped.start, scoped.end, OCTET_STRING)
        context_name = _expect(data, context_engine.end, scoped.end, OCTET_STRING)
        pdu = read_pdu(data, context_name.end, scoped.end, PDU_TAGS[V2C])
    return V3Message(_integer(data, msg_id), _integer(data, max_size), flag_octet, model,
                     user_name, pdu)


def _usm_user_name(data: bytes, params: Tlv) -> bytes:
    usm = _expect(data, params.start, params.end, SEQUENCE)
    engine_id = _expect(data, usm.start, usm.end, OCTET_STRING)
    boots = _expect(data, engine_id.end, usm.end, INTEGER)
    engine_time = _expect(data, boots.end, usm.end, INTEGER)
    user = _expect(data, engine_time.end, usm.end, OCTET_STRING)
    return data[user.start:user.end]


# -- building an answer from a header -------------------------------------------------


def too_big_response(data: bytes, message: CommunityMessage) -> bytes:
    """The tooBig Response to a v1/v2c request, from its header alone.

    SNMPv2c answers with an empty varbind list (RFC 3416 4.2.1); SNMPv1
    with the request's own varbinds (RFC 1157 4.1.2), copied as octets.
    """
    pdu = message.pdu
    if pdu.request_id is None or pdu.varbinds is None:
        raise HeaderError("not a request")
    check_structure(data, pdu.varbinds.start, pdu.varbinds.end)
    request_id = data[pdu.request_id.head:pdu.request_id.end]
    varbinds = data[pdu.varbinds.start:pdu.varbinds.end] if message.version == V1 else b""
    body = (request_id + element(INTEGER, bytes((TOO_BIG,))) + element(INTEGER, b"\x00")
            + element(SEQUENCE, varbinds))
    community = data[message.community_tlv.start:message.community_tlv.end]
    return element(SEQUENCE, element(INTEGER, bytes((message.version,)))
                   + element(OCTET_STRING, community) + element(RESPONSE, body))


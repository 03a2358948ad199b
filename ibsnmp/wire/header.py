"""Reading an SNMP message straight from its BER octets: the one strict reader.

Pure functions of bytes, no pyasn1. `read_header` reads the version, the
community (v1/v2c) or the v3 header and USM parameters, and the PDU's
fixed fields (type, request-id, error-status, error-index, or a v1 Trap's
fields), each within its ASN.1 range, and checks that nothing follows the
PDU or the message; it walks no varbind, so it costs microseconds and
runs on every datagram. `PduHeader.read_varbinds` then reads the varbind
list: every name an OBJECT IDENTIFIER within RFC 2578's limits, every
value an SNMP type within its own (ibsnmp.wire.ber.read_value). Both run
before anything answers a datagram, pysnmp included: what fails is a
parse error, dropped and never answered.

Only what RFC 3417 section 8 allows is accepted: definite lengths,
single-octet tags, OCTET STRINGs and the application types primitive.
Anything else raises HeaderError.

Every check is bounded before any per-octet work: an INTEGER value is at
most 9 octets, an OBJECT IDENTIFIER at most 640 (read in one pass), so
reading a message is linear in its size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from .ber import (
    INT32_MAX,
    INT32_MIN,
    IP_ADDRESS,
    NULL,
    TIMETICKS,
    HeaderError,
    Oid,
    check_oid,
    element,
    has_bad_arc,
    read_element,
    read_integer,
    read_oid,
    read_value,
)

SEQUENCE, INTEGER, OCTET_STRING, OBJECT_IDENTIFIER = 0x30, 0x02, 0x04, 0x06

# PDU tags (context-specific, constructed).
GET, GET_NEXT, RESPONSE, SET, TRAP_V1 = 0xA0, 0xA1, 0xA2, 0xA3, 0xA4
GET_BULK, INFORM, TRAP_V2, REPORT = 0xA5, 0xA6, 0xA7, 0xA8

V1, V2C, V3 = 0, 1, 3
PDU_TAGS = {V1: frozenset({GET, GET_NEXT, RESPONSE, SET, TRAP_V1}),
            V2C: frozenset({GET, GET_NEXT, RESPONSE, SET, GET_BULK, INFORM, TRAP_V2, REPORT})}
# PDUs with a request-id, two integers and a varbind list (all but the v1 Trap).
_STANDARD_PDUS = PDU_TAGS[V2C]
# error-status and error-index: RFC 3416 bounds them (0..18, 0..max-bindings);
# RFC 1157 leaves them plain INTEGERs, and an SNMPv1 request's are ignored.
ERROR_FIELDS = {V1: ((INT32_MIN, INT32_MAX), (INT32_MIN, INT32_MAX)),
                V2C: ((0, 18), (0, INT32_MAX))}
MAX_GENERIC_TRAP = 6  # enterpriseSpecific (RFC 1157)

USM = 3  # msgSecurityModel of the User-based Security Model
FLAG_PRIV, FLAG_REPORTABLE = 0x02, 0x04
TOO_BIG = 1  # error-status
MAX_INTEGER_OCTETS = 5  # an INTEGER (-2^31..2^32-1) takes at most five octets
NULL_ELEMENT = b"\x05\x00"
MIN_MAX_SIZE = 484  # msgMaxSize (RFC 3412)
MAX_ENGINE_ID, MAX_USER_NAME = 32, 32  # SnmpEngineID, SnmpAdminString (RFC 3414)


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


def _expect(data: bytes, pos: int, limit: int, tag: int) -> Tlv:
    tlv = read_tlv(data, pos, limit)
    if tlv.tag != tag:
        raise HeaderError(f"expected tag 0x{tag:02x}, got 0x{tlv.tag:02x}")
    return tlv


def _integer(data: bytes, tlv: Tlv, low: int = INT32_MIN, high: int = INT32_MAX) -> int:
    return read_integer(data, tlv.start, tlv.end, low, high)


def _last(tlv: Tlv, end: int, what: str) -> Tlv:
    if tlv.end != end:
        raise HeaderError(f"octets after the {what}")
    return tlv


class Varbind(NamedTuple):
    """One varbind, read and checked: its name and where its parts lie.

    A tuple, not a dataclass: a 64 KB request holds 9,000 of them, and a
    tuple is built several times faster.
    """

    start: int  # the varbind's first value octet: its OID element starts here
    oid_start: int  # the OID's first value octet
    oid_end: int  # one past the OID element; the value element follows
    value_tag: int
    value_start: int
    value_end: int

    def oid(self, data: bytes) -> Oid:
        """The name's arcs: decoded only when a request is answered here."""
        return read_oid(data, self.oid_start, self.oid_end)


@dataclass(frozen=True, slots=True)
class PduHeader:
    """The PDU's type and fixed fields; its varbind list as an element."""

    tag: int
    version: int  # V1 or V2C (an SNMPv3 scoped PDU: V2C)
    request_id: Tlv | None  # the INTEGER element (absent in a v1 Trap)
    varbinds: Tlv

    def read_varbinds(self, data: bytes, stop_after: int | None = None,
                      read: tuple[Varbind, ...] = ()) -> tuple[Varbind, ...]:
        """The varbinds of the list, each name and value checked (see the module).

        With `stop_after`, no more than `stop_after` + 1 are read: a list
        longer than that is not read whole, and must not be answered or
        passed on unless `is_null_list` holds for it. `read`: the first
        varbinds, read before; reading goes on after them.
        """
        found: list[Varbind] = list(read)
        append = found.append
        pos = read[-1].value_end if read else self.varbinds.start
        end, version = self.varbinds.end, self.version
        most = len(data) if stop_after is None else stop_after + 1
        while pos < end and len(found) < most:
            tag, start, stop = read_element(data, pos, end)
            if tag != SEQUENCE:
                raise HeaderError("a varbind is not a SEQUENCE")
            # The usual name, a short OID of one-octet sub-identifiers, read inline.
            if stop - start > 2 and data[start] == OBJECT_IDENTIFIER and data[start + 1] < 0x80:
                ostart = start + 2
                oend = ostart + data[start + 1]
                if oend > stop:
                    raise HeaderError("element longer than its container")
                if oend == ostart or not data[ostart:oend].isascii():
                    check_oid(data, ostart, oend)
            else:
                otag, ostart, oend = read_element(data, start, stop)
                if otag != OBJECT_IDENTIFIER:
                    raise HeaderError("a varbind name is not an OBJECT IDENTIFIER")
                check_oid(data, ostart, oend)
            if data[oend:stop] == NULL_ELEMENT:  # a request's value: one comparison
                append(Varbind(start, ostart, oend, NULL, stop, stop))
            else:
                vtag, vstart, vend = read_element(data, oend, stop)
                if vend != stop:
                    raise HeaderError("octets after a varbind value")
                read_value(data, vtag, vstart, vend, version)
                append(Varbind(start, ostart, oend, vtag, vstart, vend))
            pos = stop
        return tuple(found)

    def is_null_list(self, data: bytes) -> bool:
        """Whether the list is whole and every varbind `{ OID, NULL }` in short
        form, each OID within RFC 2578's limits: what a manager's large GET
        holds, checked in C by two regular expressions (under 1 ms for 64 KB,
        where reading it varbind by varbind takes 10 ms).
        """
        start, end = self.varbinds.start, self.varbinds.end
        return (_NULL_VARBINDS.fullmatch(data, start, end) is not None
                and not has_bad_arc(data[start:end]))


# One alternative per OID length n (1..123): 30 <n+4> 06 <n> <n octets, the last
# ending a sub-identifier> 05 00. The lengths tell the alternatives apart, so the
# possessive repetition never backtracks.
_NULL_VARBINDS = re.compile(rb"(?:" + rb"|".join(
    re.escape(bytes((SEQUENCE, n + 4, OBJECT_IDENTIFIER, n))) + rb"[\x00-\xff]{%d}[\x00-\x7f]\x05\x00"
    % (n - 1) for n in range(1, 124)) + rb")*+")
# In such a list every octet outside the OIDs is under 0x80, so a sub-identifier
# starts after any such octet. Refused: one starting with 0x80 (not minimal),
# one of five octets whose first adds more than four bits (over 2^32-1; the
# first sub-identifier's 2^32..2^32+79 are refused too), one of six or more.
# has_bad_arc (ibsnmp.wire.ber) finds them all without trying every octet.


def read_pdu(data: bytes, pos: int, limit: int, version: int) -> PduHeader:
    """The PDU at `pos`, which must end exactly at `limit`; its fixed fields checked."""
    pdu = _last(read_tlv(data, pos, limit), limit, "PDU")
    if pdu.tag not in PDU_TAGS[version]:
        raise HeaderError(f"unknown PDU type 0x{pdu.tag:02x}")
    if pdu.tag == TRAP_V1:
        return PduHeader(pdu.tag, version, None, _read_trap_v1(data, pdu))
    request_id = _expect(data, pdu.start, pdu.end, INTEGER)
    _integer(data, request_id)
    first = _expect(data, request_id.end, pdu.end, INTEGER)
    second = _expect(data, first.end, pdu.end, INTEGER)
    if pdu.tag == GET_BULK:
        # non-repeaters, max-repetitions: negative ones count as 0 (RFC 3416 4.2.3).
        _integer(data, first)
        _integer(data, second)
    else:
        status_range, index_range = ERROR_FIELDS[version]
        _integer(data, first, *status_range)
        _integer(data, second, *index_range)
    varbinds = _last(_expect(data, second.end, pdu.end, SEQUENCE), pdu.end, "varbind list")
    return PduHeader(pdu.tag, version, request_id, varbinds)


def _read_trap_v1(data: bytes, pdu: Tlv) -> Tlv:
    enterprise = _expect(data, pdu.start, pdu.end, OBJECT_IDENTIFIER)
    check_oid(data, enterprise.start, enterprise.end)
    address = _expect(data, enterprise.end, pdu.end, IP_ADDRESS)
    read_value(data, IP_ADDRESS, address.start, address.end, V1)
    generic = _expect(data, address.end, pdu.end, INTEGER)
    _integer(data, generic, 0, MAX_GENERIC_TRAP)
    specific = _expect(data, generic.end, pdu.end, INTEGER)
    _integer(data, specific)
    stamp = _expect(data, specific.end, pdu.end, TIMETICKS)
    read_value(data, TIMETICKS, stamp.start, stamp.end, V1)
    return _last(_expect(data, stamp.end, pdu.end, SEQUENCE), pdu.end, "varbind list")


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
        pdu = read_pdu(data, community.end, message.end, version)
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
    model_tlv = _last(_expect(data, flags.end, header.end, INTEGER), header.end, "msgGlobalData")
    model = _integer(data, model_tlv, 1, INT32_MAX)
    params = _expect(data, header.end, end, OCTET_STRING)
    user_name = _usm_user_name(data, params) if model == USM else None
    flag_octet = data[flags.start]
    if flag_octet & FLAG_PRIV:
        _last(_expect(data, params.end, end, OCTET_STRING), end, "encrypted PDU")
        pdu = None
    else:
        scoped = _last(_expect(data, params.end, end, SEQUENCE), end, "scoped PDU")
        context_engine = _expect(data, scoped.start, scoped.end, OCTET_STRING)
        context_name = _expect(data, context_engine.end, scoped.end, OCTET_STRING)
        pdu = read_pdu(data, context_name.end, scoped.end, V2C)
    return V3Message(_integer(data, msg_id, 0, INT32_MAX),
                     _integer(data, max_size, MIN_MAX_SIZE, INT32_MAX), flag_octet, model,
                     user_name, pdu)


def _usm_user_name(data: bytes, params: Tlv) -> bytes:
    """The user name of USM security parameters, all of which are checked."""
    usm = _last(_expect(data, params.start, params.end, SEQUENCE), params.end, "USM parameters")
    engine_id = _expect(data, usm.start, usm.end, OCTET_STRING)
    if engine_id.end - engine_id.start > MAX_ENGINE_ID:
        raise HeaderError("msgAuthoritativeEngineID too long")
    boots = _expect(data, engine_id.end, usm.end, INTEGER)
    _integer(data, boots, 0, INT32_MAX)
    engine_time = _expect(data, boots.end, usm.end, INTEGER)
    _integer(data, engine_time, 0, INT32_MAX)
    user = _expect(data, engine_time.end, usm.end, OCTET_STRING)
    if user.end - user.start > MAX_USER_NAME:
        raise HeaderError("msgUserName too long")
    auth = _expect(data, user.end, usm.end, OCTET_STRING)
    _last(_expect(data, auth.end, usm.end, OCTET_STRING), usm.end, "USM parameters")
    return data[user.start:user.end]


# -- building an answer from a header -------------------------------------------------


def too_big_response(data: bytes, message: CommunityMessage,
                     varbinds: tuple[Varbind, ...] = (), null_list: bool | None = None) -> bytes:
    """The tooBig Response to a v1/v2c request read whole: `varbinds` is what
    `read_varbinds` returned, all of the list, or the list is all `{ OID, NULL }`
    (`PduHeader.is_null_list`, `null_list` if the caller has asked it already);
    HeaderError for any other.

    SNMPv2c answers with an empty varbind list (RFC 3416 4.2.1); SNMPv1
    with the request's own varbinds (RFC 1157 4.1.2), copied as octets.
    """
    pdu = message.pdu
    read_whole = bool(varbinds) and varbinds[-1].value_end == pdu.varbinds.end
    if not read_whole and null_list is None:
        null_list = pdu.is_null_list(data)
    if pdu.request_id is None or not (read_whole or null_list):
        raise HeaderError("not a request read whole")
    request_id = data[pdu.request_id.head:pdu.request_id.end]
    echoed = data[pdu.varbinds.start:pdu.varbinds.end] if message.version == V1 else b""
    body = (request_id + element(INTEGER, bytes((TOO_BIG,))) + element(INTEGER, b"\x00")
            + element(SEQUENCE, echoed))
    community = data[message.community_tlv.start:message.community_tlv.end]
    return element(SEQUENCE, element(INTEGER, bytes((message.version,)))
                   + element(OCTET_STRING, community) + element(RESPONSE, body))

"""Reading an SNMP message straight from its BER octets: the one strict reader.

Pure functions of bytes, no pyasn1. `read_header` reads the version, the community or the
v3 header with every USM security parameter, and the PDU's fixed fields, each within its
ASN.1 range, and checks that nothing follows the PDU or the message; it walks no varbind.
`PduHeader.read_varbinds` then reads the varbind list. Only what RFC 3417 section 8 allows is
accepted (definite lengths, single-octet tags, OCTET STRINGs and the application types
primitive); anything else raises HeaderError. Every check is bounded before any per-octet
work, so reading is linear in the message's size; it runs on every datagram, refused ones too.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .ber import (
    INT32_MAX,
    INT32_MIN,
    IP_ADDRESS,
    NULL,
    TIMETICKS,
    HeaderError,
    MAX_OID_ARCS,
    Oid,
    check_oid,
    check_oids,
    element,
    encode_length,
    has_bad_arc,
    read_element,
    read_oid,
    read_value,
)
from .constants import SecurityLevel, SecurityModel, Version

SEQUENCE, INTEGER, OCTET_STRING, OBJECT_IDENTIFIER = 0x30, 0x02, 0x04, 0x06

# PDU tags (context-specific, constructed).
GET, GET_NEXT, RESPONSE, SET, TRAP_V1 = 0xA0, 0xA1, 0xA2, 0xA3, 0xA4
GET_BULK, INFORM, TRAP_V2, REPORT = 0xA5, 0xA6, 0xA7, 0xA8

V1, V2C, V3 = Version.V1, Version.V2C, Version.V3
PDU_TAGS: dict[int, frozenset[int]] = {V1: frozenset({GET, GET_NEXT, RESPONSE, SET, TRAP_V1}),
            V2C: frozenset({GET, GET_NEXT, RESPONSE, SET, GET_BULK, INFORM, TRAP_V2, REPORT})}
# error-status and error-index: RFC 3416 bounds them (0..18, 0..max-bindings);
# RFC 1157 leaves them plain INTEGERs, and an SNMPv1 request's are ignored.
ERROR_FIELDS: dict[int, tuple[tuple[int, int], tuple[int, int]]] = {
    V1: ((INT32_MIN, INT32_MAX), (INT32_MIN, INT32_MAX)),
    V2C: ((0, 18), (0, INT32_MAX))}
MAX_GENERIC_TRAP = 6  # enterpriseSpecific (RFC 1157)

USM = SecurityModel.USM  # msgSecurityModel of the User-based Security Model
FLAG_AUTH, FLAG_PRIV, FLAG_REPORTABLE = 0x01, 0x02, 0x04
NO_AUTH_NO_PRIV, AUTH_NO_PRIV, AUTH_PRIV = SecurityLevel
TOO_BIG = 1  # error-status
MAX_INTEGER_OCTETS = 5  # an INTEGER (-2^31..2^32-1) takes at most five octets
NULL_ELEMENT = b"\x05\x00"
MIN_MAX_SIZE = 484  # msgMaxSize (RFC 3412)
MAX_ENGINE_ID, MAX_USER_NAME = 32, 32  # SnmpEngineID, SnmpAdminString (RFC 3414)


def _span(data: bytes, pos: int, limit: int, tag: int) -> tuple[int, int]:
    """(first value octet, end) of the element at `pos`, which must have `tag`."""
    if pos + 2 <= limit and data[pos] == tag and data[pos + 1] < 0x80:
        # The short length form, nearly every element of a request: no call.
        end = pos + 2 + data[pos + 1]
        if end <= limit:
            return pos + 2, end
    found, start, end = read_element(data, pos, limit)
    if found != tag:
        raise HeaderError(f"expected tag 0x{tag:02x}, got 0x{found:02x}")
    return start, end


def _spans(data: bytes, pos: int, limit: int, tags: bytes) -> list[int]:
    """The value spans [start, end, start, end, ...] of consecutive elements of
    `tags` from `pos`, the last ending exactly at `limit` (a SEQUENCE's fields)."""
    spans: list[int] = []
    for tag in tags:
        if pos + 2 <= limit and data[pos] == tag and data[pos + 1] < 0x80:
            start = pos + 2
            pos = start + data[pos + 1]
            if pos > limit:
                raise HeaderError("element longer than its container")
        else:
            found, start, pos = read_element(data, pos, limit)
            if found != tag:
                raise HeaderError(f"expected tag 0x{tag:02x}, got 0x{found:02x}")
        spans.append(start)
        spans.append(pos)
    if pos != limit:
        raise HeaderError("octets after the last field")
    return spans


def _integer(data: bytes, start: int, end: int, low: int = INT32_MIN,
             high: int = INT32_MAX) -> int:
    if end - start == 1:  # versions, flags, error fields, small ids: no slice
        value = data[start]
        if value > 0x7F:
            value -= 0x100
    elif not 1 <= end - start <= MAX_INTEGER_OCTETS:
        raise HeaderError("bad INTEGER length")
    else:
        value = int.from_bytes(data[start:end], "big", signed=True)
    if not low <= value <= high:
        raise HeaderError("INTEGER out of range")
    return value


class Varbind(NamedTuple):
    """One varbind, read and checked: its name and where its parts lie.

    A tuple, not a dataclass: a large request holds thousands of them, and a
    tuple is cheaper to build.
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


class PduHeader(NamedTuple):
    """The PDU's type and fixed fields, read and range-checked; its varbind list as an element.

    The fixed fields are the type, request-id, error-status and error-index, or
    a v1 Trap's fields. `fields` are the two INTEGERs after the request-id: error-status and
    error-index, or non-repeaters and max-repetitions for GETBULK (as sent).
    Spans are plain (start, end) offsets into the octets read: tuples are
    built for nothing, named tuples are not.
    """

    tag: int
    version: int  # V1 or V2C (an SNMPv3 scoped PDU: V2C)
    request_id: int  # 0 in a v1 Trap, which has none
    request_id_element: tuple[int, int] | None  # the INTEGER element, tag to end (no v1 Trap)
    fields: tuple[int, int]
    varbinds: tuple[int, int]  # the list's value octets

    def read_varbinds(self, data: bytes, stop_after: int | None = None,
                      read: tuple[Varbind, ...] = ()) -> tuple[Varbind, ...]:
        """The varbinds of the list, each name and value checked: every name an
        OBJECT IDENTIFIER within RFC 2578's limits, every value an SNMP type
        within its own (ibsnmp.wire.ber.read_value). It runs before anything
        answers a datagram, pysnmp included: what fails is a parse error,
        dropped and never answered.

        With `stop_after`, no more than `stop_after` + 1 are read: a list
        longer than that is not read whole, and must not be answered or
        passed on unless `is_null_list` holds for it. `read`: the first
        varbinds, read before; reading goes on after them.
        """
        end, version = self.varbinds[1], self.version
        most = len(data) if stop_after is None else stop_after + 1
        if not read and most > _NULL_LIST_SPLIT_MIN_VARBINDS:
            requested = self._null_varbinds(data, most)
            if requested is not None:
                return requested
        found: list[Varbind] = list(read)
        append = found.append
        pos = read[-1].value_end if read else self.varbinds[0]
        names: list[bytes] = []  # names of multi-octet sub-identifiers, checked together
        make = tuple.__new__  # the named tuple without its Python-level __new__
        while pos < end and len(found) < most:
            # The varbind's own header read inline where its length takes one
            # octet or, after 0x82, two (a long name's): a call less per varbind.
            if pos + 4 <= end and data[pos] == SEQUENCE and data[pos + 1] == 0x82:
                start = pos + 4
                stop = start + (data[pos + 2] << 8 | data[pos + 3])
            elif pos + 2 <= end and data[pos] == SEQUENCE and data[pos + 1] < 0x80:
                start = pos + 2
                stop = start + data[pos + 1]
            else:
                tag, start, stop = read_element(data, pos, end)
                if tag != SEQUENCE:
                    raise HeaderError("a varbind is not a SEQUENCE")
            if stop > end:
                raise HeaderError("element longer than its container")
            # The name's length read inline where it takes one octet (the usual
            # name) or, after 0x81 or 0x82, one or two more (the longest names
            # RFC 2578 allows, 640 octets, up to the end of the varbind).
            size = data[start + 1] if stop - start > 3 and data[start] == OBJECT_IDENTIFIER else 0x80
            if size < 0x80:
                ostart = start + 2
                oend = ostart + size
            elif size == 0x81:
                ostart = start + 3
                oend = ostart + data[start + 2]
            elif size == 0x82:
                ostart = start + 4
                oend = ostart + (data[start + 2] << 8 | data[start + 3])
            else:
                otag, ostart, oend = read_element(data, start, stop)
                if otag != OBJECT_IDENTIFIER:
                    raise HeaderError("a varbind name is not an OBJECT IDENTIFIER")
            if oend > stop:
                raise HeaderError("element longer than its container")
            name = data[ostart:oend]
            if not name.isascii() or len(name) >= MAX_OID_ARCS or not name:
                names.append(name)
            if data[oend:stop] == NULL_ELEMENT:  # a request's value: one comparison
                append(make(Varbind, (start, ostart, oend, NULL, stop, stop)))
            else:
                vtag, vstart, vend = read_element(data, oend, stop)
                if vend != stop:
                    raise HeaderError("octets after a varbind value")
                read_value(data, vtag, vstart, vend, version)
                append(make(Varbind, (start, ostart, oend, vtag, vstart, vend)))
            pos = stop
        if names:
            check_oids(names)
        return tuple(found)

    def framed_varbinds(self, data: bytes, most: int) -> int:
        """How many varbinds the list holds by its framing alone: SEQUENCEs of
        definite length back to back, ending with the list; more than `most`
        are not counted (`most` + 1 is returned). HeaderError otherwise.
        Nothing inside them is read: for a list answered without being read
        (a refused SET echoes it), far cheaper than `read_varbinds`."""
        pos, end = self.varbinds
        count = 0
        try:
            while pos < end and count <= most:
                if data[pos] != SEQUENCE:
                    raise HeaderError("a varbind is not a SEQUENCE")
                size = data[pos + 1]
                # The lengths a varbind takes, read inline; any other form as usual.
                if size < 0x80:
                    pos += 2 + size
                elif size == 0x81:
                    pos += 3 + data[pos + 2]
                elif size == 0x82:
                    pos += 4 + (data[pos + 2] << 8 | data[pos + 3])
                else:
                    pos = read_element(data, pos, end)[2]
                count += 1
        except IndexError:
            raise HeaderError("truncated element") from None
        if pos > end:
            raise HeaderError("element longer than its container")
        return count

    def _null_varbinds(self, data: bytes, most: int) -> tuple[Varbind, ...] | None:
        """A request's list, every varbind `{ OID, NULL }` in short form, split
        by one regular expression when `is_null_list` holds (what the loop of
        `read_varbinds` would read, in C rather than Python); None otherwise."""
        start, end = self.varbinds
        if not _NULL_LIST_SPLIT_MIN <= end - start <= _NULL_LIST_SPLIT_MAX \
                or not self.is_null_list(data):
            return None
        make = tuple.__new__  # the named tuple without its Python-level __new__
        found = tuple([make(Varbind, (at + 2, at + 4, stop - 2, NULL, stop, stop))
                       for at, stop in (match.span() for match in _NULL_VARBIND.finditer(data, start, end))])
        return found if len(found) <= most else found[:most]

    def is_null_list(self, data: bytes) -> bool:
        """Whether the list is whole and every varbind `{ OID, NULL }` in short
        form, each OID within RFC 2578's limits: what a manager's large GET
        holds, checked in C by two regular expressions rather than varbind by
        varbind in Python.
        """
        return self.null_prefix(data) == self.varbinds[1]

    def null_prefix(self, data: bytes) -> int:
        """Where the list's first varbind that is not `{ OID, NULL }` in short
        form (or not within RFC 2578's limits) starts, at the latest: the
        end of the list when `is_null_list` holds. One scan in C: a list
        that fails at its end is not read again to learn so."""
        start, end = self.varbinds
        prefix = _NULL_VARBINDS.match(data, start, end)
        assert prefix is not None  # the repetition matches the empty string
        stop = prefix.end()
        if has_bad_arc(data[start:stop]):
            return start
        return stop


# One alternative per OID length n (1..123): 30 <n+4> 06 <n> <n octets, the last
# ending a sub-identifier> 05 00. The lengths tell the alternatives apart, so the
# possessive repetition never backtracks.
_NULL_LIST_OID_MAX = 123
_NULL_VARBIND_PATTERN = rb"|".join(
    re.escape(bytes((SEQUENCE, n + 4, OBJECT_IDENTIFIER, n))) + rb"[\x00-\xff]{%d}[\x00-\x7f]\x05\x00"
    % (n - 1) for n in range(1, _NULL_LIST_OID_MAX + 1))
# The most octets one varbind of such a list takes: a list longer than n of
# them holds more than n varbinds.
MAX_NULL_VARBIND = 6 + _NULL_LIST_OID_MAX
_NULL_VARBINDS = re.compile(rb"(?:" + _NULL_VARBIND_PATTERN + rb")*+")
_NULL_VARBIND = re.compile(_NULL_VARBIND_PATTERN)  # one of them, to split a checked list
# Lists longer than this are not split here: over any varbind limit, they are
# checked whole (is_null_list) and read only as far as the limit asks. Short
# ones are read faster one by one (the expression tries 123 alternatives).
_NULL_LIST_SPLIT_MAX = 16384
_NULL_LIST_SPLIT_MIN = 256
_NULL_LIST_SPLIT_MIN_VARBINDS = 8  # fewer asked for: read one by one
# In such a list every octet outside the OIDs is under 0x80, so a sub-identifier
# starts after any such octet. Refused: one starting with 0x80 (not minimal),
# one of five octets whose first adds more than four bits (over 2^32-1; the
# first sub-identifier's 2^32..2^32+79 are refused too), one of six or more.
# has_bad_arc (ibsnmp.wire.ber) finds them all without trying every octet.


def read_pdu(data: bytes, pos: int, limit: int, version: int) -> PduHeader:
    """The PDU at `pos`, which must end exactly at `limit`; its fixed fields checked."""
    tag, start, end = read_element(data, pos, limit)
    if end != limit:
        raise HeaderError("octets after the PDU")
    if tag not in PDU_TAGS[version]:
        raise HeaderError(f"unknown PDU type 0x{tag:02x}")
    if tag == TRAP_V1:
        return PduHeader(tag, version, 0, None, (0, 0), _read_trap_v1(data, start, end))
    (id_start, id_end, first_start, first_end, second_start, second_end, list_start,
     list_end) = _spans(data, start, end, _PDU_FIELDS)
    request_id = _integer(data, id_start, id_end)
    if tag == GET_BULK:
        # non-repeaters, max-repetitions: negative ones count as 0 (RFC 3416 4.2.3).
        fields = (_integer(data, first_start, first_end),
                  _integer(data, second_start, second_end))
    else:
        status_range, index_range = ERROR_FIELDS[version]
        fields = (_integer(data, first_start, first_end, *status_range),
                  _integer(data, second_start, second_end, *index_range))
    return PduHeader(tag, version, request_id, (start, id_end), fields, (list_start, list_end))


_PDU_FIELDS = bytes((INTEGER, INTEGER, INTEGER, SEQUENCE))


def _read_trap_v1(data: bytes, pos: int, end: int) -> tuple[int, int]:
    start, stop = _span(data, pos, end, OBJECT_IDENTIFIER)
    check_oid(data, start, stop)
    start, stop = _span(data, stop, end, IP_ADDRESS)
    read_value(data, IP_ADDRESS, start, stop, V1)
    start, stop = _span(data, stop, end, INTEGER)
    _integer(data, start, stop, 0, MAX_GENERIC_TRAP)
    start, stop = _span(data, stop, end, INTEGER)
    _integer(data, start, stop)
    start, stop = _span(data, stop, end, TIMETICKS)
    read_value(data, TIMETICKS, start, stop, V1)
    list_start, list_end = _span(data, stop, end, SEQUENCE)
    if list_end != end:
        raise HeaderError("octets after the varbind list")
    return list_start, list_end


class CommunityMessage(NamedTuple):
    """An SNMPv1 or SNMPv2c message's header."""

    version: int
    community: bytes
    pdu: PduHeader
    pdu_at: int = -1  # where the PDU's tag lies in the octets read (-1: not known)


class V3Message(NamedTuple):
    """An SNMPv3 message: its header, the USM security parameters and the
    scoped PDU (read when in plaintext).

    For another security model only the global header is read (USM fields
    empty, `user_name` None). `data` is the ScopedPDU element as sent, or
    the ciphertext (an OCTET STRING's value) when the privacy flag is set;
    `pdu` and the context are then unknown until it is decrypted.
    """

    message_id: int
    max_size: int
    flags: int
    security_model: int
    user_name: bytes | None
    engine_id: bytes = b""
    boots: int = 0
    engine_time: int = 0
    auth_params: tuple[int, int] | None = None  # where the MAC lies in the datagram
    priv_params: bytes = b""
    data: bytes = b""
    context_engine_id: bytes = b""
    context_name: bytes = b""
    pdu: PduHeader | None = None  # None when the scoped PDU is encrypted

    @property
    def level(self) -> int:
        """NO_AUTH_NO_PRIV, AUTH_NO_PRIV or AUTH_PRIV; HeaderError for privacy
        without authentication (RFC 3412 7.2 step 5: snmpInvalidMsgs)."""
        flags = self.flags
        if flags & FLAG_PRIV and not flags & FLAG_AUTH:
            raise HeaderError("privacy without authentication")
        return 1 + (flags & FLAG_AUTH) + (flags & FLAG_PRIV) // FLAG_PRIV

    def without_mac(self, whole: bytes) -> bytes:
        """The datagram with msgAuthenticationParameters zeroed, as it was signed."""
        params = self.auth_params
        assert params is not None
        start, end = params
        return whole[:start] + bytes(end - start) + whole[end:]

    def mac(self, whole: bytes) -> bytes:
        params = self.auth_params
        assert params is not None
        return whole[params[0]:params[1]]


class OtherVersion(NamedTuple):
    """A well-framed message of a version this agent does not speak."""

    version: int


Header = CommunityMessage | V3Message | OtherVersion


def read_header(data: bytes) -> Header:
    """Parse a message's header; raise HeaderError if it is malformed.

    The message returned is all any later step needs: nothing reads the
    header again. An INTEGER value takes at most 9 octets, an OBJECT
    IDENTIFIER at most 640 (read in one pass); elements are read as spans
    (first value octet, end), not objects."""
    start, end = _span(data, 0, len(data), SEQUENCE)
    if end != len(data):
        raise HeaderError("octets after the message")  # pysnmp drops these too
    version_start, version_end = _span(data, start, end, INTEGER)
    version = _integer(data, version_start, version_end)
    if version in PDU_TAGS:
        community_start, community_end = _span(data, version_end, end, OCTET_STRING)
        pdu = read_pdu(data, community_end, end, version)
        return CommunityMessage(version, data[community_start:community_end], pdu, community_end)
    if version == V3:
        return _read_v3(data, version_end, end)
    return OtherVersion(version)


_GLOBAL_DATA = bytes((INTEGER, INTEGER, OCTET_STRING, INTEGER))
_USM_PARAMETERS = bytes((OCTET_STRING, INTEGER, INTEGER, OCTET_STRING, OCTET_STRING,
                         OCTET_STRING))


def _read_v3(data: bytes, pos: int, end: int) -> V3Message:
    header_start, header_end = _span(data, pos, end, SEQUENCE)
    (id_start, id_end, size_start, size_end, flags_start, flags_end, model_start,
     model_end) = _spans(data, header_start, header_end, _GLOBAL_DATA)
    if flags_end - flags_start != 1:
        raise HeaderError("msgFlags is not one octet")
    message_id = _integer(data, id_start, id_end, 0, INT32_MAX)
    max_size = _integer(data, size_start, size_end, MIN_MAX_SIZE, INT32_MAX)
    model = _integer(data, model_start, model_end, 1, INT32_MAX)
    flags = data[flags_start]
    params_start, params_end = _span(data, header_end, end, OCTET_STRING)
    if flags & FLAG_PRIV:
        data_start, data_end = _span(data, params_end, end, OCTET_STRING)
        body_start = data_start
    else:
        data_start, data_end = _span(data, params_end, end, SEQUENCE)
        body_start = params_end  # the ScopedPDU element, tag to end
    if data_end != end:
        raise HeaderError("octets after msgData")
    if model != USM:
        scoped = None if flags & FLAG_PRIV else _scoped_pdu(data, data_start, data_end)
        return V3Message(message_id, max_size, flags, model, None,
                         pdu=scoped[2] if scoped is not None else None)
    usm_start, usm_end = _span(data, params_start, params_end, SEQUENCE)
    if usm_end != params_end:
        raise HeaderError("octets after the USM parameters")
    (engine_start, engine_end, boots_start, boots_end, time_start, time_end, user_start,
     user_end, auth_start, auth_end, priv_start, priv_end) = _spans(
        data, usm_start, usm_end, _USM_PARAMETERS)
    if engine_end - engine_start > MAX_ENGINE_ID:
        raise HeaderError("msgAuthoritativeEngineID too long")
    if user_end - user_start > MAX_USER_NAME:
        raise HeaderError("msgUserName too long")
    boots = _integer(data, boots_start, boots_end, 0, INT32_MAX)
    engine_time = _integer(data, time_start, time_end, 0, INT32_MAX)
    context_engine_id = context_name = b""
    pdu = None
    if not flags & FLAG_PRIV:
        context_engine_id, context_name, pdu = _scoped_pdu(data, data_start, data_end)
    return V3Message(message_id, max_size, flags, model, data[user_start:user_end],
                     data[engine_start:engine_end], boots, engine_time,
                     (auth_start, auth_end),
                     data[priv_start:priv_end], data[body_start:data_end],
                     context_engine_id, context_name, pdu)


def _scoped_pdu(data: bytes, start: int, end: int) -> tuple[bytes, bytes, PduHeader]:
    """A ScopedPDU's value (contextEngineID, contextName, PDU) from `start` to `end`."""
    engine_start, engine_end = _span(data, start, end, OCTET_STRING)
    name_start, name_end = _span(data, engine_end, end, OCTET_STRING)
    pdu = read_pdu(data, name_end, end, V2C)
    return data[engine_start:engine_end], data[name_start:name_end], pdu


def read_scoped_pdu(plaintext: bytes) -> tuple[bytes, bytes, PduHeader]:
    """A decrypted ScopedPDU: (contextEngineID, contextName, the PDU's header,
    offsets into `plaintext`). Octets after it are ignored: a block cipher's
    padding may follow it (RFC 3414 8.1.1.2)."""
    start, end = _span(plaintext, 0, len(plaintext), SEQUENCE)
    return _scoped_pdu(plaintext, start, end)


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
    read_whole = bool(varbinds) and varbinds[-1].value_end == pdu.varbinds[1]
    if not read_whole and null_list is None:
        null_list = pdu.is_null_list(data)
    if pdu.request_id_element is None or not (read_whole or null_list):
        raise HeaderError("not a request read whole")
    echoed = data[pdu.varbinds[0]:pdu.varbinds[1]] if message.version == V1 else b""
    return _response(data, message, TOO_BIG, 0, echoed)


def error_response(data: bytes, message: CommunityMessage, status: int, index: int) -> bytes:
    """The Response to a v1/v2c request, read whole by `read_varbinds`, that
    fails with `status` at varbind `index`: the request's varbinds echoed as
    octets (RFC 3416 4.2.5, RFC 1157 4.1.5)."""
    pdu = message.pdu
    if pdu.request_id_element is None:
        raise HeaderError("not a request")
    at, fields = message.pdu_at, pdu.request_id_element[1]
    if (at >= 0 and status < 0x80 and index < 0x80 and data[fields:fields + 2] == _ONE_OCTET_INTEGER
            and data[fields + 3:fields + 5] == _ONE_OCTET_INTEGER):
        # The request's own octets but for its PDU type and the two error
        # fields, of one content octet each: no length changes, nothing to
        # join (the echoed list may be 64 KB).
        reply = bytearray(data)
        reply[at] = RESPONSE
        reply[fields + 2] = status
        reply[fields + 5] = index
        return bytes(reply)
    return _response(data, message, status, index, memoryview(data)[pdu.varbinds[0]:pdu.varbinds[1]])


_ONE_OCTET_INTEGER = bytes((INTEGER, 1))


def _response(data: bytes, message: CommunityMessage, status: int, index: int,
              varbinds: bytes | memoryview) -> bytes:
    """The Response message, its parts joined once (an echoed list may be 64 KB)."""
    pdu = message.pdu
    assert pdu.request_id_element is not None
    request_id = data[pdu.request_id_element[0]:pdu.request_id_element[1]]
    status_octets, index_octets = _small_integer(status), _small_integer(index)
    list_head = b"\x30" + encode_length(len(varbinds))
    body_size = (len(request_id) + 4 + len(status_octets) + len(index_octets) + len(list_head)
                 + len(varbinds))
    pdu_head = b"\xa2" + encode_length(body_size)
    community = message.community
    prefix = b"\x02\x01" + bytes((message.version,)) + b"\x04" + encode_length(len(community))
    size = len(prefix) + len(community) + len(pdu_head) + body_size
    return b"".join((b"\x30", encode_length(size), prefix, community, pdu_head, request_id,
                     b"\x02", bytes((len(status_octets),)), status_octets,
                     b"\x02", bytes((len(index_octets),)), index_octets, list_head, varbinds))


def _small_integer(value: int) -> bytes:
    """A non-negative INTEGER's content octets, minimal (error fields)."""
    return value.to_bytes(value.bit_length() // 8 + 1, "big")
"""SNMPv1/v2c read requests decoded, and their Response messages encoded.

`decode_request` takes a whole datagram and returns a `Request`: the
version, the community, the PDU type, the request-id, the two integers
(error-status and error-index, or non-repeaters and max-repetitions for
GETBULK) and the varbind OIDs. It accepts only what it can answer exactly
as pysnmp would: GetRequest, GetNextRequest and GetBulkRequest PDUs whose
every element is whole and fills its container, whose integers fit their
ASN.1 ranges, whose OIDs keep RFC 2578's limits and whose varbind values
are NULL. Anything else raises HeaderError: the caller leaves such a
datagram to pysnmp, which answers or drops it as it always has.

`read_community` gets the community alone, so an unknown community is
turned away before any varbind is decoded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .ber import (
    HeaderError,
    INT32_MAX,
    INT32_MIN,
    INTEGER,
    OBJECT_IDENTIFIER,
    OCTET_STRING,
    SEQUENCE,
    Oid,
    element,
    expect,
    integer_octets,
    length_octets,
    read_element,
    read_integer,
    read_oid,
)
from .header import GET, GET_BULK, GET_NEXT, RESPONSE, V1, V2C

READS = {V1: frozenset({GET, GET_NEXT}), V2C: frozenset({GET, GET_NEXT, GET_BULK})}
_NULL = b"\x05\x00"


@dataclass(frozen=True, slots=True)
class Request:
    """A v1/v2c GetRequest, GetNextRequest or GetBulkRequest."""

    version: int  # 0: SNMPv1, 1: SNMPv2c
    community: bytes
    pdu_type: int  # header.GET, GET_NEXT or GET_BULK
    request_id: int
    non_repeaters: int  # GETBULK only (0 otherwise): negative ones count as 0
    max_repetitions: int  # GETBULK only (0 otherwise): negative ones count as 0
    oids: tuple[Oid, ...]
    # Each OID's whole element as sent (tag, length, value): what walk steps are keyed by.
    oid_elements: tuple[bytes, ...]


def read_community(data: bytes) -> tuple[int, bytes, int]:
    """(version, community, offset of the PDU) of a v1/v2c message."""
    _, start, end = _message(data)
    vstart, vend = expect(data, start, end, INTEGER)
    version = read_integer(data, vstart, vend, V1, V2C)
    cstart, cend = expect(data, vend, end, OCTET_STRING)
    return version, data[cstart:cend], cend


def _message(data: bytes) -> tuple[int, int, int]:
    tag, start, end = read_element(data, 0, len(data))
    if tag != SEQUENCE or end != len(data):
        raise HeaderError("not one whole SEQUENCE")
    return tag, start, end


def decode_request(data: bytes) -> Request:
    """The read request in `data`; HeaderError if it is not one (see the module)."""
    version, community, pos = read_community(data)
    return decode_pdu(data, pos, len(data), version, community)


def decode_pdu(data: bytes, pos: int, end: int, version: int, community: bytes = b"") -> Request:
    """The read request PDU from `pos` to `end` (an SNMPv3 scoped PDU's too: V2C)."""
    pdu_type, start, pdu_end = read_element(data, pos, end)
    if pdu_type not in READS[version]:
        raise HeaderError(f"not a read request: PDU type 0x{pdu_type:02x}")
    if pdu_end != end:
        raise HeaderError("octets after the PDU")
    rstart, rend = expect(data, start, pdu_end, INTEGER)
    request_id = read_integer(data, rstart, rend, INT32_MIN, INT32_MAX)
    fstart, fend = expect(data, rend, pdu_end, INTEGER)
    sstart, send = expect(data, fend, pdu_end, INTEGER)
    if pdu_type == GET_BULK:
        non_repeaters = max(read_integer(data, fstart, fend, INT32_MIN, INT32_MAX), 0)
        max_repetitions = max(read_integer(data, sstart, send, INT32_MIN, INT32_MAX), 0)
    else:
        # A request's error fields mean nothing; answer only the plain zeros.
        read_integer(data, fstart, fend, 0, 0)
        read_integer(data, sstart, send, 0, 0)
        non_repeaters = max_repetitions = 0
    lstart, lend = expect(data, send, pdu_end, SEQUENCE)
    if lend != pdu_end:
        raise HeaderError("octets after the varbind list")
    oids: list[Oid] = []
    elements: list[bytes] = []
    pos = lstart
    while pos < lend:
        bstart, bend = expect(data, pos, lend, SEQUENCE)
        ostart, oend = expect(data, bstart, bend, OBJECT_IDENTIFIER)
        oids.append(read_oid(data, ostart, oend))
        elements.append(data[bstart:oend])
        if data[oend:bend] != _NULL:
            raise HeaderError("a varbind value is not NULL")
        pos = bend
    return Request(version, community, pdu_type, request_id, non_repeaters, max_repetitions,
                   tuple(oids), tuple(elements))


# -- the response -------------------------------------------------------------------


def varbind(encoded_oid: bytes, encoded_value: bytes) -> bytes:
    """One encoded varbind from its encoded OID and value elements."""
    return element(SEQUENCE, encoded_oid + encoded_value)


def null_varbinds(oids: tuple[Oid, ...], encode_oid: Callable[[Oid], bytes]) -> bytes:
    """The varbinds of a request as they came: each OID with a NULL value."""
    return b"".join(varbind(encode_oid(oid), _NULL) for oid in oids)


def encode_response_pdu(request_id: int, error_status: int, error_index: int,
                        varbinds: bytes) -> bytes:
    """A Response PDU element around `varbinds`, the concatenated varbind elements."""
    pdu = (element(INTEGER, integer_octets(request_id))
           + element(INTEGER, integer_octets(error_status))
           + element(INTEGER, integer_octets(error_index))
           + element(SEQUENCE, varbinds))
    return element(RESPONSE, pdu)


def encode_response(version: int, community: bytes, request_id: int, error_status: int,
                    error_index: int, varbinds: bytes) -> bytes:
    """A Response message around `varbinds`, the concatenated varbind elements."""
    return element(SEQUENCE, element(INTEGER, bytes((version,)))
                   + element(OCTET_STRING, community)
                   + encode_response_pdu(request_id, error_status, error_index, varbinds))


def response_size(version: int, community: bytes, request_id: int, varbinds_octets: int) -> int:
    """Octets of the Response message `encode_response` writes (error fields 0-127)."""
    pdu = (2 + len(integer_octets(request_id))) + 3 + 3 + _tlv(varbinds_octets)
    return _tlv(3 + _tlv(len(community)) + _tlv(pdu))


def _tlv(content: int) -> int:
    return 1 + length_octets(content) + content


def largest_content(limit: int, fixed: int) -> int:
    """How many octets may join `fixed` in a constructed element of at most `limit` octets."""
    content = limit - fixed - 1 - length_octets(limit)
    while content > 0 and 1 + length_octets(fixed + content) + fixed + content < limit:
        content += 1  # the length took fewer octets than assumed
    while content > 0 and 1 + length_octets(fixed + content) + fixed + content > limit:
        content -= 1
    return max(content, 0)


# error-status and error-index of a Response written here: 0..127, three octets each.
_ERROR_FIELDS_OCTETS = 6
_VERSION_OCTETS = 3  # the message's version element: INTEGER 0 or 1


def varbind_room(request_id: int, max_pdu_octets: int) -> int:
    """The varbind octets a Response PDU of at most `max_pdu_octets` octets can hold."""
    fixed = len(element(INTEGER, integer_octets(request_id))) + _ERROR_FIELDS_OCTETS
    varbind_list = largest_content(max_pdu_octets, fixed)  # the list element, whole
    return largest_content(varbind_list, 0)


def message_varbind_room(version: int, community: bytes, request_id: int, max_size: int) -> int:
    """The most varbind octets a v1/v2c Response of `max_size` octets holds (-1: none fit)."""
    pdu = largest_content(max_size, _VERSION_OCTETS + _tlv(len(community)))
    room = varbind_room(request_id, pdu)
    return room if response_size(version, community, request_id, room) <= max_size else -1

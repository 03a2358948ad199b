"""SNMPv1/v2c read requests decoded, and their Response messages encoded.

`decode_request` and `request_of` make a `Request` of a GetRequest, GetNextRequest or
GetBulkRequest PDU, accepting only what can be answered exactly as pysnmp would. They read
through the one strict reader (ibsnmp.wire.header), so what they refuse as malformed the
prefilter has dropped already; what they refuse as another kind of PDU (a SET, a Response)
goes to pysnmp. `encode_response` and the room functions write and size the Response.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .ber import (
    INTEGER,
    NULL,
    OCTET_STRING,
    SEQUENCE,
    HeaderError,
    Oid,
    LENGTHS,
    element,
    integer_element,
    integer_octets,
    length_octets,
    oid_of_element,
    tlv_size,
)
from .header import (
    GET,
    GET_BULK,
    GET_NEXT,
    RESPONSE,
    V1,
    V2C,
    CommunityMessage,
    PduHeader,
    Varbind,
    read_header,
)

READS: dict[int, frozenset[int]] = {V1: frozenset({GET, GET_NEXT}),
                                    V2C: frozenset({GET, GET_NEXT, GET_BULK})}
_NULL = b"\x05\x00"


@dataclass(frozen=True, slots=True)
class Request:
    """A v1/v2c GetRequest, GetNextRequest or GetBulkRequest: the version, the
    community, the PDU type, the request-id, the two integers (error-status and
    error-index, or non-repeaters and max-repetitions for GETBULK) and the
    varbind names. A read's varbind values mean nothing (RFC 3416 4.2): they
    are kept only where one is not NULL, for the SNMPv1 error that echoes them.

    The names are kept as their elements (what walk steps and answers are
    keyed by); their arcs are decoded only when a step needs them (`oid`),
    so a name the agent has answered before costs no decoding.
    """

    version: int  # 0: SNMPv1, 1: SNMPv2c
    community: bytes
    pdu_type: int  # header.GET, GET_NEXT or GET_BULK
    request_id: int
    non_repeaters: int  # GETBULK only (0 otherwise): negative ones count as 0
    max_repetitions: int  # GETBULK only (0 otherwise): negative ones count as 0
    # Each OID's whole element as sent (tag, length, value), checked by the strict reader.
    oid_elements: tuple[bytes, ...]
    # Each varbind's value element as sent where one is not NULL (None: all
    # are NULL, as managers send them).
    values: tuple[bytes, ...] | None = None

    @property
    def oids(self) -> tuple[Oid, ...]:
        return tuple(oid_of_element(element) for element in self.oid_elements)

    def echoed(self) -> bytes:
        """The varbinds as an SNMPv1 error Response echoes them (RFC 1157
        4.1.2, 4.1.3): each OID and value element as sent."""
        if self.values is None:
            return null_varbinds(self.oid_elements)
        return b"".join(map(varbind, self.oid_elements, self.values))


def decode_request(data: bytes) -> Request:
    """The read request in `data`; HeaderError if it is not one (see the module).
    The agent reads a datagram once (agent.prefilter) and makes its request
    with `request_of`; this reads a whole one, for tools and tests."""
    message = read_header(data)
    if not isinstance(message, CommunityMessage):
        raise HeaderError("not an SNMPv1 or SNMPv2c message")
    return request_of(data, message.pdu, message.pdu.read_varbinds(data), message.version,
                      message.community)


def request_of(data: bytes, pdu: PduHeader, varbinds: tuple[Varbind, ...], version: int,
               community: bytes) -> Request:
    """The read request of a PDU the strict reader (ibsnmp.wire.header) has read whole;
    HeaderError for another kind of PDU, or a GET or GETNEXT whose error fields are
    not zero (a request whose every element is whole, whose integers fit their
    ASN.1 ranges and whose OIDs keep RFC 2578's limits, the reader has checked)."""
    if pdu.tag not in READS[version] or pdu.request_id_element is None:
        raise HeaderError(f"not a read request: PDU type 0x{pdu.tag:02x}")
    first, second = pdu.fields
    if pdu.tag == GET_BULK:
        non_repeaters, max_repetitions = max(first, 0), max(second, 0)
    elif first or second:
        raise HeaderError("a request's error fields are not zero")  # they mean nothing
    else:
        non_repeaters = max_repetitions = 0
    values = None
    if any(found[3] != NULL for found in varbinds):  # value_tag: NULL has no value octets
        values = tuple([data[found.oid_end:found.value_end] for found in varbinds])
    return Request(version, community, pdu.tag, pdu.request_id, non_repeaters, max_repetitions,
                   tuple([data[found[0]:found[2]] for found in varbinds]), values)


# -- the response -------------------------------------------------------------------


def varbind(encoded_oid: bytes, encoded_value: bytes) -> bytes:
    """One encoded varbind from its encoded OID and value elements."""
    return element(SEQUENCE, encoded_oid + encoded_value)


def null_varbinds(oid_elements: tuple[bytes, ...]) -> bytes:
    """The varbinds of a request as they came: each OID with a NULL value."""
    return b"".join(varbind(element, _NULL) for element in oid_elements)


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
    return response_after(element(INTEGER, bytes((version,))) + element(OCTET_STRING, community),
                          request_id, error_status, error_index, varbinds)


_NO_ERROR = element(INTEGER, b"\x00") * 2  # error-status, error-index
_SEQUENCE, _RESPONSE = bytes((SEQUENCE,)), bytes((RESPONSE,))


def response_after(prefix: bytes, request_id: int, error_status: int, error_index: int,
                   varbinds: bytes) -> bytes:
    """SEQUENCE { `prefix`, Response PDU around `varbinds` }: a v1/v2c message
    (`prefix`: its version and community elements) or an SNMPv3 ScopedPDU (its
    contextEngineID and contextName). The lengths first, then one join: the
    varbinds (kilobytes, for a GETBULK) are copied once, not once per
    enclosing element."""
    request_id_octets = integer_octets(request_id)
    errors = _NO_ERROR if not (error_status or error_index) else (
        integer_element(INTEGER, error_status) + integer_element(INTEGER, error_index))
    list_length = LENGTHS[len(varbinds)]
    pdu = 3 + len(request_id_octets) + len(errors) + len(list_length) + len(varbinds)
    pdu_length = LENGTHS[pdu]
    return b"".join((_SEQUENCE, LENGTHS[len(prefix) + 1 + len(pdu_length) + pdu], prefix,
                     _RESPONSE, pdu_length, bytes((INTEGER, len(request_id_octets))),
                     request_id_octets, errors, _SEQUENCE, list_length, varbinds))


def response_size(version: int, community: bytes, request_id: int, varbinds_octets: int) -> int:
    """Octets of the Response message `encode_response` writes (error fields 0-127)."""
    pdu = (2 + len(integer_octets(request_id))) + 3 + 3 + tlv_size(varbinds_octets)
    return tlv_size(3 + tlv_size(len(community)) + tlv_size(pdu))


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
    return _varbind_room(_id_octets(request_id), max_pdu_octets)


def message_varbind_room(version: int, community: bytes, request_id: int, max_size: int) -> int:
    """The most varbind octets a v1/v2c Response of `max_size` octets holds (-1: none fit)."""
    return _message_varbind_room(version, len(community), _id_octets(request_id), max_size)


# The rooms depend on lengths only (of the community, of the request-id's
# encoding): computed once per combination, not for every request.


def _id_octets(request_id: int) -> int:
    return request_id.bit_length() // 8 + 1 if request_id >= 0 else len(integer_octets(request_id))


def _sample_id(octets: int) -> int:
    """A request-id whose encoding takes `octets` octets."""
    return 0 if octets == 1 else 1 << (8 * (octets - 1))


@functools.lru_cache(maxsize=64)
def _varbind_room(id_octets: int, max_pdu_octets: int) -> int:
    fixed = len(element(INTEGER, integer_octets(_sample_id(id_octets)))) + _ERROR_FIELDS_OCTETS
    varbind_list = largest_content(max_pdu_octets, fixed)  # the list element, whole
    return largest_content(varbind_list, 0)


@functools.lru_cache(maxsize=256)
def _message_varbind_room(version: int, community_octets: int, id_octets: int,
                          max_size: int) -> int:
    community, request_id = bytes(community_octets), _sample_id(id_octets)
    pdu = largest_content(max_size, _VERSION_OCTETS + tlv_size(community_octets))
    room = _varbind_room(id_octets, pdu)
    return room if response_size(version, community, request_id, room) <= max_size else -1

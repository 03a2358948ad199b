"""How many octets a Response-PDU takes on the wire, and how many it may take.

A response is only encoded once its responder has returned it (agent.handover), and a
message too big for the request's msgMaxSize (SNMPv3) or the engine's
snmpEngineMaxMessageSize could then only be dropped (snmpSilentDrops). RFC 3416 wants
tooBig instead (4.2.1, 4.2.2, 4.2.5) and, for GETBULK, fewer varbinds (4.2.3): the command
responders size the response before returning it. Sizes are those of BER as pyasn1 writes
it (definite lengths, minimal octets), computed without encoding.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pyasn1.codec.ber import encoder
from pyasn1.type import univ

from ibsnmp.wire.ber import integer_octets, length_octets, tlv_size
from ibsnmp.wire.constants import Version

V1_MODEL, V2C_MODEL = Version.V1, Version.V2C  # message processing models
# Room for a community-based message's header (version, community) around
# the PDU: pysnmp's own allowance (rfc2576 maxSizeResponseScopedPDU).
COMMUNITY_HEADER_ALLOWANCE = 128
# A Response-PDU without varbinds: request-id, error-status, error-index.
_INTEGER_MAX = 6  # an INTEGER of up to 32 bits: tag, length, 4 octets (+1 sign)


def oid_content(arcs: Sequence[int]) -> int:
    """Content octets of an OBJECT IDENTIFIER: 7 bits per octet, most arcs take one."""
    if len(arcs) < 2:
        return 1
    size = len(arcs) - 1
    first = arcs[0] * 40 + arcs[1]
    if first >= 0x80:
        size += (first.bit_length() + 6) // 7 - 1
    for arc in arcs[2:]:
        if arc >= 0x80:
            size += (arc.bit_length() + 6) // 7 - 1
    return size


def value_size(value: Any) -> int:
    """The whole TLV of a varbind value."""
    if isinstance(value, univ.Integer):  # Integer32, Counter32/64, Gauge32, TimeTicks...
        return tlv_size(len(integer_octets(int(value))))  # as pyasn1 writes it (-128: 2 octets)
    if isinstance(value, univ.OctetString):  # also IpAddress, Opaque, Bits
        return tlv_size(len(value))
    if isinstance(value, univ.ObjectIdentifier):
        return tlv_size(oid_content(value.asTuple()))
    if isinstance(value, univ.Null):  # also noSuchObject, noSuchInstance, endOfMibView
        return 2
    return len(encoder.encode(value))


def varbind_size(name: Any, value: Any) -> int:
    arcs = name if type(name) is tuple else name.asTuple()
    return tlv_size(tlv_size(oid_content(arcs)) + value_size(value))


def varbind_sizes(varbinds: Iterable[tuple[Any, Any]]) -> list[int]:
    return [varbind_size(name, value) for name, value in varbinds]


def response_pdu_size(varbinds_octets: int) -> int:
    """A Response-PDU around varbinds of `varbinds_octets` in all (an upper bound)."""
    return tlv_size(3 * _INTEGER_MAX + tlv_size(varbinds_octets))


def pdu_budget(message_processing_model: int, max_size_response_scoped_pdu: int,
               context_engine_id: Any, context_name: Any, engine_max_message_size: int) -> int:
    """Octets a Response-PDU may take so that its message is not too big.

    `max_size_response_scoped_pdu`: for SNMPv1/v2c what a message of the
    engine's maximum size leaves after COMMUNITY_HEADER_ALLOWANCE; for
    SNMPv3 the largest ScopedPDU the sealed response may carry, exactly
    (agent.fast_v3: the request's msgMaxSize and the engine's maximum less
    the header and security parameters), of which the scopedPDU's own
    header is taken off here.
    """
    budget = int(max_size_response_scoped_pdu)
    if message_processing_model in (V1_MODEL, V2C_MODEL):
        return min(budget, engine_max_message_size - COMMUNITY_HEADER_ALLOWANCE)
    scoped_header = (tlv_size(len(context_engine_id or b"")) + tlv_size(len(context_name or b""))
                     + 1 + length_octets(max(budget, 0)))
    return budget - scoped_header


def fitting_prefix(sizes: Sequence[int], budget: int) -> int:
    """How many leading varbinds of these sizes fit in a Response-PDU of `budget` octets."""
    total = 0
    for count, size in enumerate(sizes):
        if response_pdu_size(total + size) > budget:
            return count
        total += size
    return len(sizes)

"""Decode GETBULK requests whose non-repeaters or max-repetitions are negative.

RFC 3416 declares both fields INTEGER (0..max-bindings) but says, in 4.2.3,
that a value below zero is used as zero. pysnmp's PDU specs enforce the
range while decoding, so such a request would be refused as a parse error.
`relaxed_pdus` is pysnmp's PDU choice with the two fields plain INTEGERs
(agent.handover decodes the PDUs it hands to the responders with it); the
GETBULK responder clamps them to zero. Every other field keeps its checks.
"""

from __future__ import annotations

from typing import Any

from pyasn1.type import namedtype, univ
from pysnmp.proto import rfc1905

_RELAXED_FIELDS = ("non-repeaters", "max-repetitions")


def with_component(spec: Any, name: str, component: Any) -> Any:
    """A copy of the constructed spec `spec` whose component `name` is `component`."""
    named_types = [
        namedtype.NamedType(nt.name, component if nt.name == name else nt.asn1Object)
        for nt in spec.componentType.namedTypes
    ]
    return spec.clone(componentType=namedtype.NamedTypes(*named_types))


def relaxed_pdus() -> Any:
    """rfc1905.PDUs whose get-bulk-request takes any INTEGER in both counts."""
    bulk: Any = rfc1905.GetBulkRequestPDU()
    for field in _RELAXED_FIELDS:
        bulk = with_component(bulk, field, univ.Integer())
    return with_component(rfc1905.PDUs(), "get-bulk-request", bulk)

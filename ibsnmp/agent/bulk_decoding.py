"""Decode GETBULK requests whose non-repeaters or max-repetitions are negative.

RFC 3416 declares both fields INTEGER (0..max-bindings) but says, in 4.2.3,
that a value below zero is used as zero. pysnmp's message specs enforce the
range while decoding, so such a request was dropped as a parse error and
never answered. The v2c and v3 message processing models get copies of
their message specs in which the two fields are plain INTEGERs; the
GETBULK responder clamps them to zero. Every other field keeps its checks.
"""

from __future__ import annotations

from typing import Any

from pyasn1.type import namedtype, univ
from pysnmp.entity.engine import SnmpEngine
from pysnmp.proto import rfc1905

from ibsnmp.wire.constants import Version

V2C_MODEL, V3_MODEL = Version.V2C, Version.V3  # pysnmp's message processing models
_RELAXED_FIELDS = ("non-repeaters", "max-repetitions")


def _with_component(spec: Any, name: str, component: Any) -> Any:
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
        bulk = _with_component(bulk, field, univ.Integer())
    return _with_component(rfc1905.PDUs(), "get-bulk-request", bulk)


def relaxed_v2c_message(message_spec: Any) -> Any:
    return _with_component(message_spec, "data", relaxed_pdus())


def relaxed_v3_message(message_spec: Any) -> Any:
    scoped_pdu_data = message_spec.componentType["msgData"].asn1Object
    scoped_pdu = scoped_pdu_data.componentType["plaintext"].asn1Object
    scoped_pdu = _with_component(scoped_pdu, "data", relaxed_pdus())
    scoped_pdu_data = _with_component(scoped_pdu_data, "plaintext", scoped_pdu)
    return _with_component(message_spec, "msgData", scoped_pdu_data)


def relax_bulk_decoding(engine: SnmpEngine) -> None:
    """Swap the relaxed specs into the engine's v2c and v3 models.

    `_snmpMsgSpec` is the spec a model decodes incoming messages with (and
    fills outgoing ones in); the encrypted scoped PDU of SNMPv3 is decoded
    with the `plaintext` alternative of the same spec, so one swap covers
    every security level.
    """
    builders = {V2C_MODEL: relaxed_v2c_message, V3_MODEL: relaxed_v3_message}
    for model, build in builders.items():
        handler = engine.message_processing_subsystems.get(model)
        if handler is not None:
            handler._snmpMsgSpec = build(handler._snmpMsgSpec)

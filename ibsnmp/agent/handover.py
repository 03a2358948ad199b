"""Requests pysnmp's command responders answer, handed to them through RFC 3412's interface.

`Handover.answer` gives a decoded PDU to the responder registered for its type and
contextEngineID (RFC 3412 4: processPdu), with who asks published as pysnmp's dispatcher
publishes it, and takes the answer back through returnResponsePdu, which the agent's
dispatcher routes here for the requests handed over. `answer_community` writes a v1/v2c
Response around it; agent.fast_v3 seals an SNMPv3 one. pysnmp's message processing and
security models never see a request. The pipeline: docs/architecture.md, "What pysnmp's
command responders answer".
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pyasn1.codec.ber import decoder, encoder
from pyasn1.error import PyAsn1Error
from pyasn1.type import univ
from pysnmp.entity.engine import SnmpEngine
from pysnmp.proto import error, rfc1157, rfc1905

from ibsnmp.wire.ber import INTEGER, OCTET_STRING, SEQUENCE, element, encode_length, integer_element
from ibsnmp.wire.constants import SecurityLevel, SecurityModel, Version
from ibsnmp.wire.header import PduHeader

from .bulk_decoding import relaxed_pdus
from .pending_counts import BAD_COMMUNITY_USES, PARSE_ERROR, SILENT_DROP, Counter
from .prefilter import PassedRequest
from .response_size import COMMUNITY_HEADER_ALLOWANCE
from .statistics import response_counts

REQUEST_POINT = "rfc3412.receiveMessage:request"  # pysnmp's execution point before processPdu
V2C_PDU_VERSION = 1  # pysnmp's pduVersion of SNMPv2 PDUs (v2c and v3 messages)
VACM_ID = 3
_V1_PDUS = rfc1157.PDUs()
_V2_PDUS = relaxed_pdus()  # GETBULK counts below zero are taken as zero (RFC 3416 4.2.3)
_SET = rfc1905.SetRequestPDU.tagSet
_SNMPV2_MIB = "__SNMPv2-MIB"
_COMMUNITY_MODELS = {Version.V1: SecurityModel.V1, Version.V2C: SecurityModel.V2C}


class Handed(NamedTuple):
    """What a command responder answered: its Response-PDU (pyasn1), or the
    counter (OID, value) of the Report it asks for (an unknown context,
    RFC 3413 3.2); neither when it answered nothing. `counts`: what the
    answer counts besides what pysnmp counted itself."""

    pdu: Any | None
    report: tuple[tuple[int, ...], int] | None
    counts: dict[Counter, int]


class Requester(NamedTuple):
    """Who asks, in pysnmp's terms: the security model, name and level VACM decides by."""

    model: Version
    security_model: int
    security_name: bytes
    level: int


def pdu_element(data: bytes, pdu: PduHeader) -> bytes:
    """The PDU element of a request read by the strict reader (its length written minimally)."""
    assert pdu.request_id_element is not None  # an SNMPv1 Trap has none, and is no request
    content = data[pdu.request_id_element[0]:pdu.varbinds[1]]
    return bytes((pdu.tag,)) + encode_length(len(content)) + content


def decode_pdu(pdu: bytes, version: int) -> Any:
    """pysnmp's PDU object for a PDU element (PyAsn1Error if pyasn1 refuses it)."""
    spec = _V1_PDUS if version == Version.V1 else _V2_PDUS
    choice, _ = decoder.decode(pdu, asn1Spec=spec)
    return choice.getComponent()


def encode_pdu(pdu: Any) -> bytes:
    encoded: bytes = encoder.encode(pdu)
    return encoded


class Handover:
    """Hands requests to one engine's command responders and takes their answers back."""

    def __init__(self, engine: SnmpEngine) -> None:
        self._engine = engine
        builder = engine.get_mib_builder()
        engine_id, self._max_size = builder.import_symbols(
            "__SNMP-FRAMEWORK-MIB", "snmpEngineID", "snmpEngineMaxMessageSize")
        self._engine_id = bytes(engine_id.syntax)
        # Answers by the state reference each handed request was given (its own object,
        # never one of pysnmp's integers): None until the responder returns one.
        self._answers: dict[object, tuple[Any, Any] | None] = {}
        # The VACM security name of each community (agent.engine; never the community).
        self.community_names: dict[str, bytes] = {}

    def owns(self, state_reference: object) -> bool:
        return state_reference in self._answers

    def returned(self, state_reference: object, pdu: Any, status_information: Any) -> None:
        """A responder's returnResponsePdu for a request handed over here."""
        self._answers[state_reference] = (pdu, status_information)

    def answer(self, who: Requester, context_engine_id: bytes, context_name: bytes,
               pdu: Any, max_scoped_pdu: int) -> Handed | None:
        """The answer of the responder registered for `pdu`'s type in
        `context_engine_id`; None when there is none (snmpUnknownPDUHandlers)."""
        engine = self._engine
        respond = engine.message_dispatcher.get_registered_app(context_engine_id, pdu.tagSet)
        if respond is None:
            return None
        security_name, context = univ.OctetString(who.security_name), univ.OctetString(context_name)
        reference = object()
        self._answers[reference] = None
        # What pysnmp's dispatcher publishes before processPdu: the responders'
        # access checks read who asks from it.
        engine.observer.store_execution_context(engine, REQUEST_POINT, dict(
            messageProcessingModel=int(who.model), securityModel=who.security_model,
            securityName=security_name, securityLevel=who.level,
            contextEngineId=univ.OctetString(context_engine_id), contextName=context, pdu=pdu))
        try:
            respond(engine, int(who.model), who.security_model, security_name, who.level,
                    univ.OctetString(context_engine_id), context,
                    0 if who.model == Version.V1 else V2C_PDU_VERSION, pdu, max_scoped_pdu,
                    reference)
        finally:
            engine.observer.clear_execution_context(engine, REQUEST_POINT)
            returned = self._answers.pop(reference)
        if returned is None:
            return Handed(None, None, {})
        response, status = returned
        if status and "oid" in status:
            return Handed(None, (tuple(status["oid"]), int(status["val"])),
                          {(_SNMPV2_MIB, "snmpOutPkts"): 1})
        counted = response_counts(pdu.tagSet, response)
        return Handed(response, None, {(_SNMPV2_MIB, name): amount
                                       for name, amount in counted.items()})

    def answer_community(self, data: bytes, passed: PassedRequest
                         ) -> tuple[bytes | None, dict[Counter, int]]:
        """The Response to a v1/v2c request the prefilter passed (read whole,
        its community and context found), and what it counts."""
        message, _, community, context_name = passed
        version = Version(message.version)
        try:
            pdu = decode_pdu(pdu_element(data, message.pdu), version)
        except PyAsn1Error:
            return None, {PARSE_ERROR: 1}
        who = Requester(version, _COMMUNITY_MODELS[version], self.community_names[community.name],
                        SecurityLevel.NO_AUTH_NO_PRIV)
        counts: dict[Counter, int] = {}
        if pdu.tagSet == _SET and not self._may_write(who, context_name, pdu):
            counts[BAD_COMMUNITY_USES] = 1  # an operation the community may not do (RFC 3418)
        engine_max = int(self._max_size.syntax)
        handed = self.answer(who, self._engine_id, context_name, pdu,
                             engine_max - COMMUNITY_HEADER_ALLOWANCE)
        if handed is None or handed.pdu is None:
            return None, counts  # a community's context is known: no Report to ask for
        reply = element(SEQUENCE, integer_element(INTEGER, version)
                        + element(OCTET_STRING, message.community) + encode_pdu(handed.pdu))
        if len(reply) > engine_max:
            return None, {**counts, SILENT_DROP: 1}  # the responders size their answers
        return reply, {**counts, **handed.counts}

    def _may_write(self, who: Requester, context_name: bytes, pdu: Any) -> bool:
        """Whether VACM lets `who` write every object the SET names."""
        engine = self._engine
        vacm = engine.access_control_model[VACM_ID]
        for varbind in pdu.getComponentByPosition(3):
            try:
                verdict = vacm.is_access_allowed(
                    engine, who.security_model, univ.OctetString(who.security_name), who.level,
                    "write", univ.OctetString(context_name), varbind[0])
            except error.StatusInformation:
                return False
            if isinstance(verdict, error.StatusInformation):
                return False
        return True

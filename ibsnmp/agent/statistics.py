"""The SNMPv2-MIB snmp group counters pysnmp serves but never counts.

pysnmp counts only what its message processing sees (snmpInPkts, the parse, version and
community failures, snmpSilentDrops). The agent counts what it receives and answers itself
where it decides, an answer by `response_counts` (RFC 3418's definitions); `SnmpStatistics`
counts, from pysnmp's execution points, what its notification originator does. The
statistics modules pysnmp loads on their first event are loaded at start, so that their
counters read 0 rather than being absent. What is counted where: docs/architecture.md,
"Statistics".
"""

from __future__ import annotations

from typing import Any

from pysnmp.entity.engine import SnmpEngine
from pysnmp.proto import rfc1157, rfc1905

COUNTER_MODULES = ("__SNMP-MPD-MIB", "__SNMP-USER-BASED-SM-MIB", "__SNMP-TARGET-MIB")

_GET, _NEXT, _BULK, _SET = (rfc1905.GetRequestPDU.tagSet, rfc1905.GetNextRequestPDU.tagSet,
                            rfc1905.GetBulkRequestPDU.tagSet, rfc1905.SetRequestPDU.tagSet)
_RESPONSE = rfc1905.ResponsePDU.tagSet
_TRAPS = frozenset({rfc1905.SNMPv2TrapPDU.tagSet, rfc1157.TrapPDU.tagSet})
_READS = frozenset({_GET, _NEXT, _BULK})
# error-status values that have an snmpOut... counter (the same in v1 and v2c).
_OUT_ERROR_COUNTERS = {1: "snmpOutTooBigs", 2: "snmpOutNoSuchNames", 3: "snmpOutBadValues",
                       5: "snmpOutGenErrs"}
_EXCEPTION_VALUES = (rfc1905.NoSuchObject, rfc1905.NoSuchInstance, rfc1905.EndOfMibView)
COUNTED = ("snmpOutPkts", "snmpInGetResponses", "snmpOutTraps")

RESPONSE_IN_POINT = "rfc3412.receiveMessage:response"
SEND_POINT = "rfc3412.sendPdu"


def add_to_counter(instance: Any, amount: int) -> None:
    """Add `amount` to a Counter32 MibScalarInstance, wrapping at 2^32 as
    Counter32 does (its pyasn1 value is immutable: a new one each time)."""
    instance.syntax = instance.syntax.clone((int(instance.syntax) + amount) & 0xFFFFFFFF)


def response_counts(request_type: Any, pdu: Any) -> dict[str, int]:
    """What a response or report message to a request of `request_type` (a
    PDU tagSet) counts, by SNMPv2-MIB name: `pdu` is the PDU it carries
    (pyasn1; None or a Report-PDU for a report).

    snmpOutPkts; a Response-PDU also snmpOutGetResponses and, by its
    error-status, snmpOutTooBigs, snmpOutNoSuchNames, snmpOutBadValues,
    snmpOutGenErrs; a successful retrieval adds its values (not exceptions) to
    snmpInTotalReqVars, a successful SET its varbinds to snmpInTotalSetVars
    (RFC 1213 / RFC 3418 definitions)."""
    counts = {"snmpOutPkts": 1}
    if pdu is None or pdu.tagSet != _RESPONSE:
        return counts  # a Report-PDU
    counts["snmpOutGetResponses"] = 1
    status = int(pdu.getComponentByPosition(1))
    if status:
        counter = _OUT_ERROR_COUNTERS.get(status)
        if counter is not None:
            counts[counter] = 1
        return counts
    varbinds = pdu.getComponentByPosition(3)
    if request_type in _READS:
        counts["snmpInTotalReqVars"] = sum(
            1 for varbind in varbinds if not isinstance(varbind[1].getComponent(), _EXCEPTION_VALUES))
    elif request_type == _SET:
        counts["snmpInTotalSetVars"] = len(varbinds)
    return counts


class SnmpStatistics:
    """Counts one engine's notifications and the answers to its informs:
    snmpOutPkts for every notification sent, and snmpOutTraps for a trap;
    snmpInGetResponses for a response received (to an inform). Loads the
    statistics modules (SNMP-MPD-MIB, SNMP-USER-BASED-SM-MIB, SNMP-TARGET-MIB)."""

    def __init__(self, engine: SnmpEngine) -> None:
        builder = engine.get_mib_builder()
        builder.load_modules(*COUNTER_MODULES)
        self._counters = dict(zip(COUNTED, builder.import_symbols("__SNMPv2-MIB", *COUNTED)))
        engine.observer.register_observer(self._response_received, RESPONSE_IN_POINT)
        engine.observer.register_observer(self._pdu_sent, SEND_POINT)

    def add(self, name: str, amount: int = 1) -> None:
        add_to_counter(self._counters[name], amount)

    def _response_received(self, engine: Any, point: str, variables: dict[str, Any],
                           ctx: Any) -> None:
        self.add("snmpInGetResponses")

    def _pdu_sent(self, engine: Any, point: str, variables: dict[str, Any], ctx: Any) -> None:
        self.add("snmpOutPkts")
        pdu = variables.get("pdu")
        if pdu is not None and pdu.tagSet in _TRAPS:
            self.add("snmpOutTraps")

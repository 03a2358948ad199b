"""The SNMPv2-MIB snmp group counters pysnmp serves but never counts.

pysnmp counts snmpInPkts, the parse, version and community failures and
snmpSilentDrops; snmpOutPkts, the per-PDU-type counters and the
error-status ones stayed 0 forever. They are counted here from pysnmp's
execution points (its observer), so no pysnmp class is changed:

- a request handed to a command responder: snmpInGetRequests,
  snmpInGetNexts, snmpInSetRequests (GETBULK has no counter of its own;
  like snmpd, it counts nowhere but snmpInPkts);
- every response or report message prepared: snmpOutPkts; a Response-PDU
  also snmpOutGetResponses and, by its error-status, snmpOutTooBigs,
  snmpOutNoSuchNames, snmpOutBadValues, snmpOutGenErrs; a successful
  retrieval adds its values to snmpInTotalReqVars, a successful SET its
  varbinds to snmpInTotalSetVars (RFC 1213 / RFC 3418 definitions);
- every notification sent: snmpOutPkts, and snmpOutTraps for traps;
- a response received (to an inform): snmpInGetResponses;
- a SET from a community whose write view does not hold every varbind it
  names: snmpInBadCommunityUses (an operation the community may not do,
  RFC 3418; VACM decides, as in snmpd).

The statistics modules pysnmp loads on their first event (SNMP-MPD-MIB,
SNMP-USER-BASED-SM-MIB, SNMP-TARGET-MIB counters) are loaded at start so
they read 0 instead of being absent until something goes wrong.
"""

from __future__ import annotations

from typing import Any

from pysnmp.entity.engine import SnmpEngine
from pysnmp.proto import error, rfc1157, rfc1905

COUNTER_MODULES = ("__SNMP-MPD-MIB", "__SNMP-USER-BASED-SM-MIB", "__SNMP-TARGET-MIB")

_GET, _NEXT, _BULK, _SET = (rfc1905.GetRequestPDU.tagSet, rfc1905.GetNextRequestPDU.tagSet,
                            rfc1905.GetBulkRequestPDU.tagSet, rfc1905.SetRequestPDU.tagSet)
_RESPONSE = rfc1905.ResponsePDU.tagSet
_TRAPS = frozenset({rfc1905.SNMPv2TrapPDU.tagSet, rfc1157.TrapPDU.tagSet})
_IN_REQUEST_COUNTERS = {_GET: "snmpInGetRequests", _NEXT: "snmpInGetNexts",
                        _SET: "snmpInSetRequests"}
_READS = frozenset({_GET, _NEXT, _BULK})
# error-status values that have an snmpOut... counter (the same in v1 and v2c).
_OUT_ERROR_COUNTERS = {1: "snmpOutTooBigs", 2: "snmpOutNoSuchNames", 3: "snmpOutBadValues",
                       5: "snmpOutGenErrs"}
_EXCEPTION_VALUES = (rfc1905.NoSuchObject, rfc1905.NoSuchInstance, rfc1905.EndOfMibView)
COMMUNITY_MODELS = (1, 2)  # SNMPv1, SNMPv2c security models
VACM_ID = 3
COUNTED = ("snmpInBadCommunityUses", "snmpOutPkts", "snmpInGetRequests", "snmpInGetNexts", "snmpInSetRequests",
           "snmpInTotalReqVars", "snmpInTotalSetVars", "snmpInGetResponses",
           "snmpOutGetResponses", "snmpOutTooBigs", "snmpOutNoSuchNames", "snmpOutBadValues",
           "snmpOutGenErrs", "snmpOutTraps")

REQUEST_POINT = "rfc3412.receiveMessage:request"
RESPONSE_IN_POINT = "rfc3412.receiveMessage:response"
RESPONSE_OUT_POINTS = ("rfc2576.prepareResponseMessage", "rfc3412.prepareResponseMessage")
SEND_POINT = "rfc3412.sendPdu"


def add_to_counter(instance: Any, amount: int) -> None:
    """Add `amount` to a Counter32 MibScalarInstance, wrapping at 2^32 as
    Counter32 does (its pyasn1 value is immutable: a new one each time)."""
    instance.syntax = instance.syntax.clone((int(instance.syntax) + amount) & 0xFFFFFFFF)


class SnmpStatistics:
    """Counts one engine's traffic into its SNMPv2-MIB snmp group instances."""

    def __init__(self, engine: SnmpEngine) -> None:
        builder = engine.get_mib_builder()
        builder.load_modules(*COUNTER_MODULES)
        self._counters = dict(zip(COUNTED, builder.import_symbols("__SNMPv2-MIB", *COUNTED)))
        # The type of the request being answered: responses are sent while
        # pysnmp still handles the request, so the last one is the one.
        self._request_type: Any = None
        engine.observer.register_observer(self._request_received, REQUEST_POINT)
        engine.observer.register_observer(self._response_received, RESPONSE_IN_POINT)
        engine.observer.register_observer(self._response_prepared, *RESPONSE_OUT_POINTS)
        engine.observer.register_observer(self._pdu_sent, SEND_POINT)

    def add(self, name: str, amount: int = 1) -> None:
        add_to_counter(self._counters[name], amount)

    def _request_received(self, engine: Any, point: str, variables: dict, ctx: Any) -> None:
        pdu_type = variables["pdu"].tagSet
        self._request_type = pdu_type
        counter = _IN_REQUEST_COUNTERS.get(pdu_type)
        if counter is not None:
            self.add(counter)
        if (pdu_type == _SET and int(variables["securityModel"]) in COMMUNITY_MODELS
                and not self._may_write(engine, variables)):
            self.add("snmpInBadCommunityUses")

    @staticmethod
    def _may_write(engine: Any, variables: dict) -> bool:
        """Whether VACM lets this community write every object the SET names."""
        vacm = engine.access_control_model[VACM_ID]
        for varbind in variables["pdu"].getComponentByPosition(3):
            try:
                verdict = vacm.is_access_allowed(
                    engine, variables["securityModel"], variables["securityName"],
                    variables["securityLevel"], "write", variables["contextName"], varbind[0])
            except error.StatusInformation:
                return False
            if isinstance(verdict, error.StatusInformation):
                return False
        return True

    def _response_received(self, engine: Any, point: str, variables: dict, ctx: Any) -> None:
        self.add("snmpInGetResponses")

    def _response_prepared(self, engine: Any, point: str, variables: dict, ctx: Any) -> None:
        self.add("snmpOutPkts")
        pdu = variables.get("pdu")
        request_type, self._request_type = self._request_type, None
        if pdu is None or pdu.tagSet != _RESPONSE:
            return  # a Report-PDU
        self.add("snmpOutGetResponses")
        status = int(pdu.getComponentByPosition(1))
        if status:
            counter = _OUT_ERROR_COUNTERS.get(status)
            if counter is not None:
                self.add(counter)
            return
        varbinds = pdu.getComponentByPosition(3)
        if request_type in _READS:
            retrieved = sum(1 for varbind in varbinds
                            if not isinstance(varbind[1].getComponent(), _EXCEPTION_VALUES))
            self.add("snmpInTotalReqVars", retrieved)
        elif request_type == _SET:
            self.add("snmpInTotalSetVars", len(varbinds))

    def _pdu_sent(self, engine: Any, point: str, variables: dict, ctx: Any) -> None:
        self.add("snmpOutPkts")
        pdu = variables.get("pdu")
        if pdu is not None and pdu.tagSet in _TRAPS:
            self.add("snmpOutTraps")

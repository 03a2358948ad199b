"""Command responders that always answer within the message size allowed.

`SizedResponseMixin` goes in front of a pysnmp command responder: a response that would not
fit the request's msgMaxSize (SNMPv3) or the engine's maximum message size is replaced by
tooBig, since encoded it would be too big to send and dropped; GETBULK returns the varbinds
that fit instead (RFC 3416 4.2.3). It also makes sure a request never leaves its state
behind: a responder failing with anything but an SMI error (a bug) answers genErr, and the
request's state is released with the response.
"""

from __future__ import annotations

import logging
from typing import Any

from pysnmp.entity.rfc3413 import cmdrsp
from pysnmp.proto import rfc1905
from pysnmp.proto.api import v1, v2c

from .causes import current_exception_summary
from .instrum import is_end_of_mib_view
from .response_size import fitting_prefix, pdu_budget, response_pdu_size, varbind_sizes

log = logging.getLogger(__name__)

_SET_REQUEST = rfc1905.SetRequestPDU.tagSet
SNMPV1_PDU = 0  # pduVersion of an SNMPv1 request


class SizedResponseMixin:
    """Size-checked responses and a genErr answer for unexpected failures.

    A response too big is tooBig with no varbinds and error-index 0 (RFC 3416
    4.2.1, 4.2.2, 4.2.5). A SET is checked before anything is written: its
    response carries the request's varbinds."""

    def __init__(self, snmpEngine: Any, snmpContext: Any, cbCtx: Any = None) -> None:
        super().__init__(snmpEngine, snmpContext, cbCtx)  # type: ignore[call-arg]
        (self._engine_max_size,) = snmpEngine.get_mib_builder().import_symbols(
            "__SNMP-FRAMEWORK-MIB", "snmpEngineMaxMessageSize")
        self._budgets: dict[Any, int] = {}
        self._answered: set[Any] = set()
        self._failed_once = False

    def response_budget(self, stateReference: Any) -> int | None:
        """Octets the Response-PDU of this request may take (None: unknown)."""
        return self._budgets.get(stateReference)

    def fits(self, stateReference: Any, varBinds: Any) -> bool:
        budget = self.response_budget(stateReference)
        return budget is None or response_pdu_size(sum(varbind_sizes(varBinds))) <= budget

    def process_pdu(self, snmpEngine: Any, messageProcessingModel: Any, securityModel: Any,
                    securityName: Any, securityLevel: Any, contextEngineId: Any,
                    contextName: Any, pduVersion: Any, PDU: Any,
                    maxSizeResponseScopedPDU: Any, stateReference: Any) -> None:
        self._budgets[stateReference] = pdu_budget(
            int(messageProcessingModel), maxSizeResponseScopedPDU, contextEngineId,
            contextName, int(self._engine_max_size.syntax))
        if int(pduVersion) == SNMPV1_PDU:
            # A request's error-status and error-index mean nothing (RFC 1157
            # 4.1); pysnmp's SNMPv1 -> v2 conversion refuses negative ones.
            v1.apiPDU.set_error_status(PDU, 0)
            v1.apiPDU.set_error_index(PDU, 0)
        try:
            super().process_pdu(  # type: ignore[misc]
                snmpEngine, messageProcessingModel, securityModel, securityName, securityLevel,
                contextEngineId, contextName, pduVersion, PDU, maxSizeResponseScopedPDU,
                stateReference)
        except Exception:
            if not self._failed_once:
                self._failed_once = True
                log.error("a request failed unexpectedly (%s); answered genErr, further "
                          "ones only at debug level", current_exception_summary())
            log.debug("request failure", exc_info=True)
            if stateReference not in self._answered:
                try:
                    self.send_varbinds(snmpEngine, stateReference, "genErr", 0, [])
                except Exception:
                    log.debug("could not answer the failed request", exc_info=True)
        finally:
            self._budgets.pop(stateReference, None)
            self._answered.discard(stateReference)
            self.release_state_information(stateReference)  # type: ignore[attr-defined]

    def handle_management_operation(self, snmpEngine: Any, stateReference: Any,
                                    contextName: Any, PDU: Any) -> None:
        if PDU.tagSet == _SET_REQUEST and not self.fits(stateReference,
                                                        v2c.apiPDU.get_varbinds(PDU)):
            self.send_varbinds(snmpEngine, stateReference, "tooBig", 0, [])
            self.release_state_information(stateReference)  # type: ignore[attr-defined]
            return
        super().handle_management_operation(  # type: ignore[misc]
            snmpEngine, stateReference, contextName, PDU)

    def send_varbinds(self, snmpEngine: Any, stateReference: Any, errorStatus: Any,
                      errorIndex: Any, varBinds: Any, *, sized: bool = False) -> None:
        """Send the response, or tooBig instead (`sized`: the caller made it fit)."""
        if varBinds and not sized and not self.fits(stateReference, varBinds):
            errorStatus, errorIndex, varBinds = "tooBig", 0, []
        super().send_varbinds(  # type: ignore[misc]
            snmpEngine, stateReference, errorStatus, errorIndex, varBinds)
        self._answered.add(stateReference)


class GetResponder(SizedResponseMixin, cmdrsp.GetCommandResponder):
    pass


class NextResponder(SizedResponseMixin, cmdrsp.NextCommandResponder):
    pass


class BulkResponder(SizedResponseMixin, cmdrsp.BulkCommandResponder):
    """GETBULK within the response size, without re-walking finished repeaters.

    pysnmp re-walks the tree for every repetition past the end (tens of ms
    each). Here a repeater at the end stays there without a walk, and once
    every repeater is there the response ends (RFC 3416 4.2.3 allows it).
    At most `max_varbinds` repeater varbinds are returned (a local
    constraint, pysnmp's 64), and no more than fit the message: whole
    varbinds are cut from the end, even inside a repetition (4.2.3). An
    empty result is an empty response, not an error.
    """

    def handle_management_operation(self, snmpEngine: Any, stateReference: Any,
                                    contextName: Any, PDU: Any) -> None:
        # Negative counts are taken as zero (RFC 3416 4.2.3).
        non_repeaters = max(int(v2c.apiBulkPDU.get_non_repeaters(PDU)), 0)
        max_repetitions = max(int(v2c.apiBulkPDU.get_max_repetitions(PDU)), 0)
        req_varbinds = v2c.apiPDU.get_varbinds(PDU)
        n = min(non_repeaters, len(req_varbinds))
        budget = self.response_budget(stateReference)
        read_next = self.snmpContext.get_mib_instrum(contextName).read_next_variables
        context = dict(snmpEngine=snmpEngine, acFun=self.verify_access, cbCtx=self.cbCtx)
        rsp_varbinds = list(read_next(*req_varbinds[:n], **context)) if n else []
        sizes = varbind_sizes(rsp_varbinds)
        varbinds = req_varbinds[n:]
        room = self.max_varbinds  # repeater varbinds still allowed
        live = list(range(len(varbinds)))  # request values are never looked at
        m = max_repetitions
        while m and live and room > 0:
            if room < len(varbinds):  # the last repetition is cut short
                varbinds = varbinds[:room]
                live = [i for i in live if i < room]
            row = list(varbinds)
            for i, varbind in zip(live, read_next(*(varbinds[i] for i in live), **context)):
                row[i] = varbind
            rsp_varbinds.extend(row)
            sizes.extend(varbind_sizes(row))
            room -= len(row)
            if budget is not None and response_pdu_size(sum(sizes)) > budget:
                break
            varbinds = row
            # Only repeaters still inside the view are walked again.
            live = [i for i in live if not is_end_of_mib_view(row[i][1])]
            m -= 1
        if budget is not None:
            del rsp_varbinds[fitting_prefix(sizes, budget):]
        self.send_varbinds(snmpEngine, stateReference, 0, 0, rsp_varbinds,
                           sized=budget is not None)
        self.release_state_information(stateReference)

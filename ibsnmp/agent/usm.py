"""USM (RFC 3414) incoming processing as an authoritative agent answers it.

pysnmp 7.1's SnmpUSMSecurityModel is written for both sides of a
conversation; as a command responder it differs from RFC 3412/3414 (and
from net-snmp's snmpd) in four ways, fixed here around its
`process_incoming_message`:

1. A well-formed but foreign msgAuthoritativeEngineID is taken as a peer's
   ID (3.2 step 3a, the non-authoritative case), so a request to this agent
   with a wrong engine ID ends as usmStatsUnknownUserNames. A message with
   the reportable flag is a request to us, and we are its authoritative
   engine: step 3b, usmStatsUnknownEngineIDs. Messages without the flag
   (responses and reports to our informs) keep pysnmp's handling.
2. Step 5 refused a level lower than the user's protocols allow (authNoPriv
   for an auth+priv user) as usmStatsUnsupportedSecLevels, before checking
   the digest. A user with a privacy key can also do authNoPriv and
   noAuthNoPriv (step 5 is about what the user *cannot* do); whether that
   level may read is VACM's decision (authorizationError), and a wrong key
   is usmStatsWrongDigests.
3. Reports about a plaintext message carried request-id 0: the request-id
   could be read, so it is echoed (RFC 3412 7.1.3c); and noAuthNoPriv
   Reports after a failed check carried the reportable flag, which RFC 3412
   6.4 forbids on a Report; and a level the user has no keys for
   (authPriv for an auth-only user) got no answer at all instead of its
   usmStatsUnsupportedSecLevels report.
4. A plaintext message whose PDU is a Response, Report or Trap but carries
   the reportable flag breaks RFC 3412 6.4 (the flag MUST be zero for
   unconfirmed PDUs). pysnmp answered some with a Report and crashed on
   others; they are dropped before any state is kept and counted in
   snmpInvalidMsgs ("invalid or inconsistent components in the SNMP
   message", SNMP-MPD-MIB).

What this class answers is also the reference for the Reports that
agent.fast_v3 sends before pysnmp decodes anything (discovery, foreign
engine IDs, unknown users, levels without keys, wrong digests):
tests/test_v3_reject_cost.py compares the two octet for octet. Those
requests reach this class only when that shortcut is switched off.
"""

from __future__ import annotations

from typing import Any

from pyasn1.codec.ber import decoder, encoder
from pyasn1.error import PyAsn1Error
from pysnmp.proto import errind, error, rfc1905, rfc3411
from pysnmp.proto.secmod.rfc3414.auth import noauth
from pysnmp.proto.secmod.rfc3414.priv import nopriv
from pysnmp.proto.secmod.rfc3414.service import SnmpUSMSecurityModel, UsmSecurityParameters

from ibsnmp.wire.constants import SecurityLevel

from .statistics import add_to_counter

REPORTABLE_FLAG = 0x04
NO_AUTH_NO_PRIV, AUTH_NO_PRIV = SecurityLevel.NO_AUTH_NO_PRIV, SecurityLevel.AUTH_NO_PRIV
# RFC 3411 SnmpEngineID: 5 to 32 octets; anything else asks for discovery.
ENGINE_ID_LENGTHS = range(5, 33)


class AuthoritativeUsm(SnmpUSMSecurityModel):
    """USM answering requests as RFC 3414 3.2 and snmpd do (see the module doc)."""

    def __init__(self) -> None:
        super().__init__()
        self._incoming_level: int | None = None

    def process_incoming_message(self, snmpEngine: Any, messageProcessingModel: Any,
                                 maxMessageSize: Any, securityParameters: Any,
                                 securityModel: Any, securityLevel: Any, wholeMsg: Any,
                                 msg: Any) -> tuple[Any, ...]:
        flags = msg.getComponentByPosition(1).getComponentByPosition(2).asNumbers()
        reportable = bool(flags and flags[0] & REPORTABLE_FLAG)
        data = msg.getComponentByPosition(3)
        scoped = data.getComponent() if data.getName() == "plaintext" else None
        if scoped is not None and reportable and not _is_confirmed(scoped):
            _count(snmpEngine, "__SNMP-MPD-MIB", "snmpInvalidMsgs")
            raise error.StatusInformation(errorIndication=errind.invalidMsg)
        if reportable:
            self._check_engine_id(snmpEngine, securityParameters, maxMessageSize, scoped)
        self._incoming_level = int(securityLevel)
        try:
            return super().process_incoming_message(
                snmpEngine, messageProcessingModel, maxMessageSize, securityParameters,
                securityModel, securityLevel, wholeMsg, msg)
        except error.StatusInformation as exc:
            if "oid" not in exc:
                raise
            amended: dict[str, Any] = {}
            if scoped is not None and "scopedPDU" not in exc:
                # The request it is about, for its request-id.
                amended["scopedPDU"] = scoped
            if exc.get("errorIndication") == errind.unsupportedSecurityLevel:
                # The user has no key for the level asked: the report can
                # only go out unauthenticated (pysnmp tried that level and
                # gave up silently).
                amended["securityLevel"] = NO_AUTH_NO_PRIV
            if not amended:
                raise
            raise error.StatusInformation(**{**_items(exc), **amended}) from None
        finally:
            self._incoming_level = None

    def _check_engine_id(self, snmpEngine: Any, securityParameters: Any, maxMessageSize: Any,
                         scoped: Any) -> None:
        """RFC 3414 3.2 step 3b for a request naming another engine."""
        try:
            params, _ = decoder.decode(securityParameters, asn1Spec=UsmSecurityParameters())
            engine_id = bytes(params.getComponentByPosition(0))
            user = params.getComponentByPosition(3)
        except (PyAsn1Error, TypeError, ValueError):
            return  # pysnmp's own decoding reports it as a parse error
        (own_id,) = snmpEngine.get_mib_builder().import_symbols(
            "__SNMP-FRAMEWORK-MIB", "snmpEngineID")
        if engine_id == bytes(own_id.syntax) or len(engine_id) not in ENGINE_ID_LENGTHS:
            return  # ours, or discovery (pysnmp answers that one right)
        counter = _count(snmpEngine, "__SNMP-USER-BASED-SM-MIB", "usmStatsUnknownEngineIDs")
        details: dict[str, Any] = dict(
            errorIndication=errind.unknownEngineID,
            oid=counter.name,
            val=counter.syntax,
            # Keys localized to another engine cannot sign: the report is
            # noAuthNoPriv, as for discovery.
            securityStateReference=self._cache.push(msgUserName=user),
            securityLevel=NO_AUTH_NO_PRIV,
            contextEngineId=own_id.syntax,
            contextName=b"",
            msgUserName=user,
            maxSizeResponseScopedPDU=int(maxMessageSize) - len(securityParameters) - 48,
        )
        if scoped is not None:
            details["scopedPDU"] = scoped
        raise error.StatusInformation(**details)

    def generate_response_message(self, snmpEngine: Any, messageProcessingModel: Any,
                                  globalData: Any, maxMessageSize: Any, securityModel: Any,
                                  securityEngineID: Any, securityName: Any, securityLevel: Any,
                                  scopedPDU: Any, securityStateReference: Any,
                                  ctx: Any) -> tuple[Any, bytes]:
        params, whole = super().generate_response_message(
            snmpEngine, messageProcessingModel, globalData, maxMessageSize, securityModel,
            securityEngineID, securityName, securityLevel, scopedPDU, securityStateReference,
            ctx)
        header = globalData.getComponentByPosition(1)
        (flags,) = header.getComponentByPosition(2).asNumbers()
        pdu = scopedPDU.getComponentByPosition(2).getComponent()
        # After an authentication, user or decryption failure pysnmp sends
        # its noAuthNoPriv Report with msgFlags 04; RFC 3412 6.4 wants the
        # reportable flag clear on a Report. Unauthenticated, so re-encoding
        # changes nothing else.
        if flags == REPORTABLE_FLAG and pdu.tagSet == rfc1905.ReportPDU.tagSet:
            header.setComponentByPosition(2, b"\x00")
            whole = encoder.encode(globalData)
        return params, whole

    def _SnmpUSMSecurityModel__get_user_info(self, mibInstrumController: Any,
                                             securityEngineID: Any,
                                             userName: Any) -> tuple[Any, ...]:
        """pysnmp's user lookup, reduced to the level of the message being processed.

        Step 5 compares the message's level with the user's protocols; a
        user supports every level up to its own, so the protocols above the
        message's level are hidden from that check (they are not used at
        that level anyway).
        """
        info = SnmpUSMSecurityModel._SnmpUSMSecurityModel__get_user_info(
            mibInstrumController, securityEngineID, userName)
        level = self._incoming_level
        if level is None:
            return info
        name, security_name, auth, auth_key, priv, priv_key = info
        if level <= AUTH_NO_PRIV:
            priv = nopriv.NoPriv.SERVICE_ID
        if level == NO_AUTH_NO_PRIV:
            auth = noauth.NoAuth.SERVICE_ID
        return name, security_name, auth, auth_key, priv, priv_key


def _is_confirmed(scoped: Any) -> bool:
    try:
        pdu = scoped.getComponentByPosition(2).getComponent()
    except (PyAsn1Error, AttributeError):
        return True  # not a PDU we can classify: pysnmp's checks decide
    return pdu.tagSet in rfc3411.CONFIRMED_CLASS_PDUS


def _count(snmpEngine: Any, module: str, name: str) -> Any:
    (counter,) = snmpEngine.get_mib_builder().import_symbols(module, name)
    add_to_counter(counter, 1)
    return counter


def _items(status: error.StatusInformation) -> dict[str, Any]:
    return dict(status._StatusInformation__errorIndication)

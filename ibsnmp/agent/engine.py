"""Build the pysnmp SnmpEngine: security, VACM, system group, responders.

Transports are added separately (transport.open_transports) so sockets can
be bound, and failures reported, before the engine exists.
"""

from __future__ import annotations

import logging
import socket
from dataclasses import dataclass
from typing import Any

from pysnmp.entity import config as pc
from pysnmp.entity.engine import SnmpEngine
from pysnmp.entity.rfc3413 import cmdrsp
from pysnmp.proto.api import v2c
from pysnmp.proto.rfc3412 import MsgAndPduDispatcher
from pysnmp.smi import error as smi_error

from ibsnmp import __version__
from ibsnmp.mib.api import INFINIBAND_MIB, ContextResolver, VirtualMib

from .config import AgentSettings, User
from .bulk_decoding import relax_bulk_decoding
from .contexts import ContextDirectory, NodeContextVacm, NodeSnmpContext, install_context_hooks
from .responders import BulkResponder, GetResponder, NextResponder, SizedResponseMixin
from .statistics import SnmpStatistics
from .sysor import install_sys_or_table

log = logging.getLogger(__name__)

# SMA-MIB module identity: what this agent is.
SYS_OBJECT_ID = INFINIBAND_MIB + (3,)
# sysServices: applications (layer 7) + end-to-end (layer 4), like net-snmp.
SYS_SERVICES = 72

READ_VIEW = "ibsnmp-read"
WRITE_VIEW = "ibsnmp-write"
NO_VIEW = "ibsnmp-none"
GROUPS = {"read": "ibsnmp-ro", "write": "ibsnmp-rw"}

# Everything under internet (1.3.6.1) is readable, except the tables that
# hold the agent's own secrets or security set-up: community strings
# (SNMP-COMMUNITY-MIB) and pysnmp's USM key and pass-phrase tables.
VIEW_ROOT = (1, 3, 6, 1)
SECRET_SUBTREES = (
    (1, 3, 6, 1, 6, 3, 18),           # SNMP-COMMUNITY-MIB: community strings
    (1, 3, 6, 1, 4, 1, 20408, 3, 1),  # PYSNMP-USM-MIB: USM keys, pass phrases
)
# Writers may not rewrite the agent's security configuration over SNMP.
CONFIG_SUBTREES = ((1, 3, 6, 1, 6, 3), (1, 3, 6, 1, 4, 1, 20408))

AUTH = {
    "MD5": pc.USM_AUTH_HMAC96_MD5,
    "SHA": pc.USM_AUTH_HMAC96_SHA,
    "SHA224": pc.USM_AUTH_HMAC128_SHA224,
    "SHA256": pc.USM_AUTH_HMAC192_SHA256,
    "SHA384": pc.USM_AUTH_HMAC256_SHA384,
    "SHA512": pc.USM_AUTH_HMAC384_SHA512,
}
PRIV = {
    "DES": pc.USM_PRIV_CBC56_DES,
    "AES": pc.USM_PRIV_CFB128_AES,
    "AES192": pc.USM_PRIV_CFB192_AES_BLUMENTHAL,
    "AES256": pc.USM_PRIV_CFB256_AES_BLUMENTHAL,
    "AES192C": pc.USM_PRIV_CFB192_AES,
    "AES256C": pc.USM_PRIV_CFB256_AES,
}

NO_AUTH_NO_PRIV, AUTH_NO_PRIV, AUTH_PRIV = 1, 2, 3
SECURITY_LEVEL_NAMES = {NO_AUTH_NO_PRIV: "noAuthNoPriv", AUTH_NO_PRIV: "authNoPriv",
                        AUTH_PRIV: "authPriv"}
V1, V2C, USM = 1, 2, 3


class SetResponder(SizedResponseMixin, cmdrsp.SetCommandResponder):
    """SET with the right error-index.

    pysnmp 7.1's process_pdu resets the error-index to 1 whenever the PDU has
    more varbinds than the failing one's position (`if len(varBinds) >
    errorIndex: errorIndex = 1`), so a multi-varbind SET failing on its
    second varbind of three names the first. RFC 3416 4.2.5 wants the
    index of the varbind that failed: errors are answered here instead.
    Errors asking for a REPORT (unknown v3 context) still go to pysnmp.
    """

    def handle_management_operation(self, snmpEngine, stateReference, contextName, PDU):
        try:
            super().handle_management_operation(snmpEngine, stateReference, contextName, PDU)
        except smi_error.SmiError as exc:
            if not isinstance(exc, smi_error.MibOperationError) or "oid" in exc:
                raise
            varbinds = v2c.apiPDU.get_varbinds(PDU)
            status = self.SMI_ERROR_MAP.get(exc.__class__, "genErr")
            index = exc.get("idx") if isinstance(exc, smi_error.MibOperationError) else None
            index = index + 1 if isinstance(index, int) and 0 <= index < len(varbinds) else 1
            self.send_varbinds(snmpEngine, stateReference, status, index, varbinds)
            self.release_state_information(stateReference)


class GuardedDispatcher(MsgAndPduDispatcher):
    """Drops a datagram pysnmp cannot process instead of letting it escape.

    pysnmp 7.1 catches only some decoder errors: other malformed datagrams
    raise (e.g. TypeError deep in pyasn1) into the event loop, which logs a
    full traceback per packet, a log flood anyone can trigger remotely.
    They count as snmpInASNParseErrs; the first is logged with its cause.
    """

    dropped = 0

    def receive_message(self, snmpEngine, transportDomain, transportAddress, wholeMsg):
        try:
            return super().receive_message(snmpEngine, transportDomain, transportAddress,
                                           wholeMsg)
        except Exception:
            self.dropped += 1
            (parse_errors,) = self.mib_instrum_controller.get_mib_builder().import_symbols(
                "__SNMPv2-MIB", "snmpInASNParseErrs")
            parse_errors.syntax += 1
            if self.dropped == 1:
                log.warning("dropped a message pysnmp could not process (further ones are "
                            "only counted in snmpInASNParseErrs)", exc_info=True)
            else:
                log.debug("dropped an unprocessable message", exc_info=True)
            return b""


@dataclass(slots=True)
class AgentEngine:
    """The engine and the objects that must live as long as it does."""

    engine: SnmpEngine
    context: NodeSnmpContext
    vacm: NodeContextVacm
    directory: ContextDirectory
    responders: tuple[Any, ...]


def sys_descr(fabric_summary: str = "") -> str:
    text = f"ibsnmp {__version__} InfiniBand SNMP agent"
    if fabric_summary:
        text += f" ({fabric_summary})"
    return text[:255]


def build_engine(settings: AgentSettings, resolver: ContextResolver, mib: VirtualMib,
                 *, fabric_summary: str = "") -> AgentEngine:
    """A configured engine without transports."""
    # A configured engine ID stays the same across restarts: v3 trap
    # receivers know the sender by it (snmptrapd's createUser -e).
    engine_id = v2c.OctetString(settings.engine_id) if settings.engine_id else None
    engine = SnmpEngine(snmpEngineID=engine_id, msgAndPduDsp=GuardedDispatcher())
    directory = ContextDirectory(resolver)
    vacm = install_context_hooks(engine, directory)
    relax_bulk_decoding(engine)
    _configure_views(engine)
    for index, community in enumerate(settings.communities):
        # The securityName is an index, never the (secret) community string.
        security_name = f"community-{index}"
        pc.add_v1_system(engine, security_name, community.name, securityName=security_name)
        for model in (V1, V2C):
            pc.add_vacm_group(engine, GROUPS[community.access], model, security_name)
    for user in settings.users:
        _add_user(engine, vacm, user)
    _set_system_group(engine, settings, fabric_summary)
    install_sys_or_table(engine)
    SnmpStatistics(engine)  # kept alive by the engine's observer
    context = NodeSnmpContext(engine, directory, mib)
    responders = (
        GetResponder(engine, context),
        NextResponder(engine, context),
        BulkResponder(engine, context),
        SetResponder(engine, context),
    )
    return AgentEngine(engine, context, vacm, directory, responders)


def _configure_views(engine: SnmpEngine) -> None:
    pc.add_context(engine, b"")
    pc.add_vacm_view(engine, READ_VIEW, "included", VIEW_ROOT, b"")
    for subtree in SECRET_SUBTREES:
        pc.add_vacm_view(engine, READ_VIEW, "excluded", subtree, b"")
    pc.add_vacm_view(engine, WRITE_VIEW, "included", VIEW_ROOT, b"")
    for subtree in CONFIG_SUBTREES:
        pc.add_vacm_view(engine, WRITE_VIEW, "excluded", subtree, b"")
    # An explicit empty view: pysnmp treats a view with no entries as "all".
    pc.add_vacm_view(engine, NO_VIEW, "excluded", (1,), b"")
    for access, group in GROUPS.items():
        write_view = WRITE_VIEW if access == "write" else NO_VIEW
        for model, levels in ((V1, (NO_AUTH_NO_PRIV,)), (V2C, (NO_AUTH_NO_PRIV,)),
                              (USM, (AUTH_NO_PRIV, AUTH_PRIV))):
            # One entry per level so VACM's exact-match shortcut always hits.
            for level in levels:
                pc.add_vacm_access(engine, group, b"", model, level, "exact",
                                   READ_VIEW, write_view, READ_VIEW)


def _add_user(engine: SnmpEngine, vacm: NodeContextVacm, user: User) -> None:
    if user.priv is None:
        pc.add_v3_user(engine, user.name, AUTH[user.auth], user.auth_key)
        level = AUTH_NO_PRIV
    else:
        pc.add_v3_user(engine, user.name, AUTH[user.auth], user.auth_key,
                       PRIV[user.priv], user.priv_key)
        level = AUTH_PRIV
    pc.add_vacm_group(engine, GROUPS[user.access], USM, user.name)
    vacm.min_levels[(USM, user.name.encode("utf-8"))] = level


def _set_system_group(engine: SnmpEngine, settings: AgentSettings, fabric_summary: str) -> None:
    builder = engine.get_mib_builder()
    names = ("sysDescr", "sysObjectID", "sysContact", "sysName", "sysLocation", "sysServices")
    descr, object_id, contact, name, location, services = builder.import_symbols(
        "__SNMPv2-MIB", *names)
    system = settings.system
    values = (
        (descr, sys_descr(fabric_summary)),
        (object_id, SYS_OBJECT_ID),
        (contact, system.sys_contact),
        (name, system.sys_name if system.sys_name is not None else socket.gethostname()),
        (location, system.sys_location),
        (services, SYS_SERVICES),
    )
    for instance, value in values:
        instance.syntax = instance.syntax.clone(value)

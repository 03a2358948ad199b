"""Build the pysnmp SnmpEngine: security, VACM, system group, responders.

Transports are added separately (transport.open_transports) so sockets can
be bound, and failures reported, before the engine exists.
"""

from __future__ import annotations

import logging
import random
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pysnmp.entity import config as pc
from pysnmp.entity.engine import SnmpEngine
from pysnmp.entity.rfc3413 import cmdrsp
from pysnmp.proto import error as pysnmp_error
from pysnmp.proto.api import v2c
from pysnmp.proto.rfc3412 import MsgAndPduDispatcher
from pysnmp.smi import error as smi_error
from pysnmp.smi.instrum import MibInstrumController

from ibsnmp import __version__
from ibsnmp.mib.api import ContextResolver, VirtualMib
from ibsnmp.mib.builder_once import MibBuilderOnce
from ibsnmp.mib.node_identity import AGENT_OBJECT_ID
from ibsnmp.wire.constants import SecurityLevel, SecurityModel

from .config import AgentSettings, User
from .causes import current_exception_summary
from .context_hooks import ContextDirectory, NodeContextVacm, NodeSnmpContext, install_context_hooks
from .engine_state import apply_engine_identity
from .fast_reads import FastReads
from .fast_v3 import FastV3, responder_over
from .handover import Handover
from .node_system import install_node_system_group
from .pending_counts import IN_PKTS, NO_HANDLER, PARSE_ERROR, Counter, PendingCounts
from .decision import Decision
from .prefilter import Drop, InformAnswer, Prefilter, Reply, Verdict, is_notification_domain
from .read_view import VIEW_ROOT, excluded_subtrees
from .refusals import RefusalLog
from .responders import BulkResponder, GetResponder, NextResponder, SizedResponseMixin
from .statistics import SnmpStatistics
from .sysor import install_sys_or_table
from .system_defaults import AuthenTraps
from .views import VIEWS, View, default_view

log = logging.getLogger(__name__)

# sysServices: applications (layer 7) + end-to-end (layer 4), like net-snmp.
SYS_SERVICES = 72

READ_VIEW = "ibsnmp-read"  # without the IBA keys (views.KEY_OBJECTS)
KEYS_READ_VIEW = "ibsnmp-read-keys"
WRITE_VIEW = "ibsnmp-write"
NO_VIEW = "ibsnmp-none"
READ_VIEWS: dict[View, str] = {"no-keys": READ_VIEW, "with-keys": KEYS_READ_VIEW}

# Writers may not rewrite the agent's security configuration over SNMP.
CONFIG_SUBTREES = ((1, 3, 6, 1, 6, 3), (1, 3, 6, 1, 4, 1, 20408))
# Inside them, what a writer may still SET: SNMPv2-MIB's snmpSet group
# (snmpSetSerialNo, the TestAndIncr lock of RFC 3418 managers coordinate by).
WRITABLE_IN_CONFIG = ((1, 3, 6, 1, 6, 3, 1, 1, 6),)

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

NO_AUTH_NO_PRIV, AUTH_NO_PRIV, AUTH_PRIV = SecurityLevel
V1, V2C, USM = SecurityModel  # VACM groups are keyed by security model


class SetResponder(SizedResponseMixin, cmdrsp.SetCommandResponder):
    """SET with the right error-index.

    pysnmp 7.1's process_pdu resets the error-index to 1 whenever the PDU has
    more varbinds than the failing one's position (`if len(varBinds) >
    errorIndex: errorIndex = 1`), so a multi-varbind SET failing on its
    second varbind of three names the first. RFC 3416 4.2.5 wants the
    index of the varbind that failed: errors are answered here instead.
    Errors asking for a REPORT (unknown v3 context) still go to pysnmp.
    """

    def handle_management_operation(self, snmpEngine: Any, stateReference: Any,
                                    contextName: Any, PDU: Any) -> None:
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


@dataclass(frozen=True, slots=True)
class DispatchParts:
    """What the dispatcher answers with, built once the engine exists."""

    decision: Decision
    counts: PendingCounts  # what the agent counts itself
    handover: Handover  # requests handed to the command responders
    fast_reads: FastReads  # v1/v2c reads without pysnmp's per-varbind cost


class GuardedDispatcher(MsgAndPduDispatcher):
    """pysnmp's message dispatcher, around every datagram's one decision.

    `handle` applies what `Decision.decide` concludes: the counts, the reply
    or the command responders' (agent.handover); pysnmp's own message
    processing gets only answers to informs on the notification originator's
    sockets. A request that reaches it there (an encrypted SNMPv3 one, whose
    PDU type the header checks cannot see) is refused, counted in
    snmpUnknownPDUHandlers, its state released. pysnmp builds its engine
    around a dispatcher, so the parts come after it, once (`attach`).

    What fails unexpectedly on the way (pysnmp 7.1 lets some decoder
    errors escape as TypeError deep in pyasn1) is dropped and counted in
    snmpInASNParseErrs; the first is logged with its cause, never a
    traceback per packet that anyone could trigger remotely.
    """

    dropped = 0
    _parts: DispatchParts | None = None
    _on_notification_socket = False

    def attach(self, parts: DispatchParts) -> None:
        """Answer with `parts` from now on (once, by build_engine)."""
        if self._parts is not None:
            raise RuntimeError("the dispatcher's parts are attached once")
        self._parts = parts

    @property
    def parts(self) -> DispatchParts:
        if self._parts is None:
            raise RuntimeError("the dispatcher has no parts yet (build_engine attaches them)")
        return self._parts

    def receive_message(self, snmpEngine: Any, transportDomain: Any, transportAddress: Any,
                        wholeMsg: bytes) -> bytes:
        """pysnmp's entry (its own transports: the notification originator's sockets)."""
        reply = self.handle(snmpEngine, transportDomain, transportAddress, wholeMsg)
        if reply is not None:
            snmpEngine.transport_dispatcher.send_message(reply, transportDomain,
                                                         transportAddress)
        return b""

    def handle(self, snmpEngine: Any, transportDomain: Any, transportAddress: Any,
               wholeMsg: bytes) -> bytes | None:
        """The answer to a datagram, or None: dropped, or (an answer to an
        inform) left to pysnmp's message processing.

        What it counts is the datagram's (PendingCounts.begin_message),
        applied once (`_conclude`); a datagram left to pysnmp is counted by
        pysnmp alone.
        """
        parts = self.parts
        counts = parts.counts
        # Every datagram counts in snmpInPkts, first: a GET of it sees itself.
        counts.begin_message(IN_PKTS)
        to_pysnmp = False
        started = time.perf_counter()  # charged to the sender (agent.governor)
        prefilter = parts.decision.prefilter  # charged with what this datagram cost, below
        parts.fast_reads.arrived = started  # a GETBULK's fill time counts from here
        try:
            outcome = parts.decision.decide(transportDomain, transportAddress, wholeMsg)
            if not isinstance(outcome, InformAnswer):
                return self._conclude(outcome)
            # An answer to one of our informs (pysnmp matches it to the inform).
            to_pysnmp = True
            counts.drop_message()
            counts.flush()  # pysnmp may read the counters kept here
            self._on_notification_socket = is_notification_domain(transportDomain)
            super().receive_message(snmpEngine, transportDomain, transportAddress, wholeMsg)
        except Exception:
            self.dropped += 1
            if to_pysnmp:
                counts.add_now({PARSE_ERROR: 1})
            else:
                counts.end_message((PARSE_ERROR,))
            if self.dropped == 1:
                # Remote input: one line with the cause, never a traceback in the log.
                log.warning("dropped a message that could not be processed (%s); further ones "
                            "are only counted in snmpInASNParseErrs", current_exception_summary(),
                            exc_info=False)
            log.debug("dropped an unprocessable message", exc_info=True)
        finally:
            self._on_notification_socket = False
            parts.fast_reads.arrived = None
            prefilter.charge(transportDomain, transportAddress, time.perf_counter() - started)
        return None

    def _conclude(self, verdict: Verdict) -> bytes | None:
        """Apply the datagram's counts once, and answer as `verdict` says."""
        counts = self.parts.counts
        counts.end_message(verdict.counters)
        # isinstance, not match: a class pattern costs about twice as much per datagram.
        if isinstance(verdict, Drop):
            return None
        if isinstance(verdict, Reply):
            return verdict.datagram
        counts.flush()  # pysnmp's command responders read counters as they are
        reply, answer_counts = verdict.handing()
        counts.add_now(answer_counts)
        return reply

    def return_response_pdu(self, snmpEngine: Any, messageProcessingModel: Any,
                            securityModel: Any, securityName: Any, securityLevel: Any,
                            contextEngineId: Any, contextName: Any, pduVersion: Any, PDU: Any,
                            maxSizeResponseScopedPDU: Any, stateReference: Any,
                            statusInformation: Any) -> None:
        """A command responder's answer: to a request handed over (agent.handover),
        taken back; to one pysnmp received itself, pysnmp's to send."""
        if self._parts is not None and self._parts.handover.owns(stateReference):
            self._parts.handover.returned(stateReference, PDU, statusInformation)
            return
        super().return_response_pdu(snmpEngine, messageProcessingModel, securityModel,
                                    securityName, securityLevel, contextEngineId, contextName,
                                    pduVersion, PDU, maxSizeResponseScopedPDU, stateReference,
                                    statusInformation)

    def get_registered_app(self, contextEngineId: Any,
                           pduType: Any) -> Callable[..., Any] | None:
        if self._on_notification_socket:
            return self._refuse_request
        app: Callable[..., Any] | None = super().get_registered_app(contextEngineId, pduType)
        return app

    def _refuse_request(self, snmpEngine: Any, messageProcessingModel: Any, securityModel: Any,
                        securityName: Any, securityLevel: Any, contextEngineId: Any,
                        contextName: Any, pduVersion: Any, PDU: Any,
                        maxSizeResponseScopedPDU: Any, stateReference: Any) -> None:
        self._count(NO_HANDLER)
        mp = snmpEngine.message_processing_subsystems[int(messageProcessingModel)]
        try:
            # Nothing will answer: drop the MP's and the security model's state.
            state = mp._cache.pop_by_state_reference(stateReference)
            security = snmpEngine.security_models[int(state["securityModel"])]
            security.release_state_information(state["securityStateReference"])
        except (KeyError, AttributeError, pysnmp_error.ProtocolError):
            pass  # already released, or kept where this pysnmp release cannot reach it

    def _count(self, *counters: Counter) -> None:
        """Count now: pysnmp is handling a message, and its counters are read as they are."""
        self.parts.counts.add_now(dict.fromkeys(counters, 1))


@dataclass(slots=True)
class AgentEngine:
    """The engine and the objects that must live as long as it does."""

    engine: SnmpEngine
    context: NodeSnmpContext
    vacm: NodeContextVacm
    directory: ContextDirectory
    responders: tuple[Any, ...]
    settings: AgentSettings
    fast_v3: FastV3
    # Refused requests told to the operator: one log for the agent's life (reloads keep it).
    refusals: RefusalLog
    authen_traps: AuthenTraps  # snmpEnableAuthenTraps
    parts: DispatchParts  # what the dispatcher answers with

    def replace_principals(self, settings: AgentSettings) -> None:
        """Serve `settings`' communities, users and limits from now on (a reload).

        Listen addresses and the engine ID are not changed here; the VACM
        views and groups stay, only who belongs to them changes.
        """
        _remove_principals(self.engine, self.vacm, self.settings)
        _add_principals(self.engine, self.vacm, settings, self.parts.handover)
        decision = self.parts.decision
        decision.prefilter = _header_checks(settings, self.directory, self.refusals,
                                            decision.prefilter)
        decision.use_fast_reads = settings.limits.fast_path
        self.authen_traps.configure(settings.traps.authentication_failure)
        self.fast_v3.replace_users(settings.users)
        self.fast_v3.max_varbinds = settings.limits.max_varbinds
        self.fast_v3.answer_reads = settings.limits.fast_path
        if (settings.limits.reports_per_second_per_source,
                settings.limits.reports_per_second) != (
                self.settings.limits.reports_per_second_per_source,
                self.settings.limits.reports_per_second):
            self.fast_v3.set_report_limits(settings.limits.reports_per_second_per_source,
                                           settings.limits.reports_per_second)
        fast_reads = self.parts.fast_reads
        fast_reads.walks.resize(settings.limits.walk_cache)
        fast_reads.max_getbulk_varbinds = settings.limits.max_getbulk_varbinds
        fast_reads.getbulk_fill_ms = settings.limits.getbulk_fill_ms
        # Repeats were kept for the old principals, views and limits.
        fast_reads.repeats.clear()
        self.fast_v3.repeats.clear()
        self.settings = settings


def sys_descr(fabric_summary: str = "") -> str:
    text = f"ibsnmp {__version__} InfiniBand SNMP agent"
    if fabric_summary:
        text += f" ({fabric_summary})"
    return text[:255]


def build_engine(settings: AgentSettings, resolver: ContextResolver, mib: VirtualMib,
                 *, fabric_summary: str = "") -> AgentEngine:
    """A configured engine without transports."""
    # The engine ID and boots come from the state directory (or the config):
    # never from pysnmp's own file under /tmp (see engine_state).
    dispatcher = GuardedDispatcher(MibInstrumController(MibBuilderOnce()))
    engine = SnmpEngine(msgAndPduDsp=dispatcher)
    apply_engine_identity(engine, settings.engine_id, settings.engine_boots,
                          settings.engine_booted_at)
    handover = Handover(engine)
    directory = ContextDirectory(resolver)
    vacm = install_context_hooks(engine, directory)
    _configure_views(engine)
    refusals = RefusalLog()
    _add_principals(engine, vacm, settings, handover)
    _set_system_group(engine, settings, fabric_summary)
    authen_traps = AuthenTraps(engine, settings.traps.authentication_failure)
    install_node_system_group(engine)
    install_sys_or_table(engine)
    SnmpStatistics(engine)  # kept alive by the engine's observer
    context = NodeSnmpContext(engine, directory, mib)
    counts = PendingCounts(engine.get_mib_builder())
    fast_reads = FastReads(
        engine, directory, mib, counts, settings.limits.walk_cache,
        settings.limits.max_getbulk_varbinds, settings.limits.getbulk_fill_ms)
    fast_v3 = FastV3(engine, settings.users, responder_over(fast_reads, directory.resolve),
                     directory.is_known_node, counts, max_varbinds=settings.limits.max_varbinds,
                     handover=handover, refusals=refusals, answer_again=fast_reads.answer_again)
    fast_v3.answer_reads = settings.limits.fast_path
    fast_v3.set_report_limits(settings.limits.reports_per_second_per_source,
                              settings.limits.reports_per_second)
    decision = Decision(_header_checks(settings, directory, refusals), fast_v3, fast_reads,
                        handover, counts, use_fast_reads=settings.limits.fast_path)
    parts = DispatchParts(decision, counts, handover, fast_reads)
    dispatcher.attach(parts)
    responders = (
        GetResponder(engine, context),
        NextResponder(engine, context),
        BulkResponder(engine, context),
        SetResponder(engine, context),
    )
    return AgentEngine(engine, context, vacm, directory, responders, settings, fast_v3,
                       refusals, authen_traps, parts)


def _header_checks(settings: AgentSettings, directory: ContextDirectory, refusals: RefusalLog,
                   previous: Prefilter | None = None) -> Prefilter:
    """The header checks that know `settings`' communities and limits (telling
    `refusals`); on a reload, `previous`'s CPU account of each source is kept
    while the budget is the same."""
    governor = previous.governor if previous is not None else None
    if governor is not None and governor.budget != settings.limits.cpu_budget:
        governor = None
    return Prefilter(settings.communities, settings.limits, directory.is_known_node,
                     notification_communities=[t.community for t in settings.trap_targets
                                               if t.version != "3"],
                     refusals=refusals, governor=governor)


def _add_principals(engine: SnmpEngine, vacm: NodeContextVacm, settings: AgentSettings,
                    handover: Handover) -> None:
    """Communities and users: their security names, VACM groups and USM entries."""
    handover.community_names = {}
    for index, community in enumerate(settings.communities):
        # The securityName is an index, never the (secret) community string.
        security_name = _community_security_name(index)
        handover.community_names[community.name] = security_name.encode()
        pc.add_v1_system(engine, security_name, community.name, securityName=security_name)
        for model in (V1, V2C):
            pc.add_vacm_group(engine, group_name(community.access, community.view), model,
                              security_name)
    for user in settings.users:
        _add_user(engine, vacm, user)


def _remove_principals(engine: SnmpEngine, vacm: NodeContextVacm,
                       settings: AgentSettings) -> None:
    for index in range(len(settings.communities)):
        security_name = _community_security_name(index)
        pc.delete_v1_system(engine, security_name)
        for model in (V1, V2C):
            pc.delete_vacm_group(engine, model, security_name)
    for user in settings.users:
        pc.delete_v3_user(engine, user.name)
        pc.delete_vacm_group(engine, USM, user.name)
        vacm.min_levels.pop((USM, user.name.encode("utf-8")), None)


def _community_security_name(index: int) -> str:
    return f"community-{index}"


def group_name(access: str, view: View | None) -> str:
    """The VACM group of an access level and read view (None: the access's default)."""
    keys = (view or default_view(access)) == "with-keys"
    return f"ibsnmp-{'rw' if access == 'write' else 'ro'}{'-keys' if keys else ''}"


def _configure_views(engine: SnmpEngine) -> None:
    pc.add_context(engine, b"")
    for view, view_name in READ_VIEWS.items():
        pc.add_vacm_view(engine, view_name, "included", VIEW_ROOT, b"")
        for subtree in excluded_subtrees(view):
            pc.add_vacm_view(engine, view_name, "excluded", subtree, b"")
    pc.add_vacm_view(engine, WRITE_VIEW, "included", VIEW_ROOT, b"")
    for subtree in CONFIG_SUBTREES:
        pc.add_vacm_view(engine, WRITE_VIEW, "excluded", subtree, b"")
    for subtree in WRITABLE_IN_CONFIG:  # the longer subtree decides (RFC 3415 5.2)
        pc.add_vacm_view(engine, WRITE_VIEW, "included", subtree, b"")
    # An explicit empty view: pysnmp treats a view with no entries as "all".
    pc.add_vacm_view(engine, NO_VIEW, "excluded", (1,), b"")
    for access, view in ((access, view) for access in ("read", "write") for view in VIEWS):
        group = group_name(access, view)
        write_view = WRITE_VIEW if access == "write" else NO_VIEW
        for model, levels in ((V1, (NO_AUTH_NO_PRIV,)), (V2C, (NO_AUTH_NO_PRIV,)),
                              (USM, (AUTH_NO_PRIV, AUTH_PRIV))):
            # One entry per level so VACM's exact-match shortcut always hits.
            for level in levels:
                pc.add_vacm_access(engine, group, b"", model, level, "exact",
                                   READ_VIEWS[view], write_view, READ_VIEW)


def _add_user(engine: SnmpEngine, vacm: NodeContextVacm, user: User) -> None:
    if user.priv is None:
        pc.add_v3_user(engine, user.name, AUTH[user.auth], user.auth_key)
        level = AUTH_NO_PRIV
    else:
        pc.add_v3_user(engine, user.name, AUTH[user.auth], user.auth_key,
                       PRIV[user.priv], user.priv_key)
        level = AUTH_PRIV
    pc.add_vacm_group(engine, group_name(user.access, user.view), USM, user.name)
    vacm.min_levels[(USM, user.name.encode("utf-8"))] = level


def _set_system_group(engine: SnmpEngine, settings: AgentSettings, fabric_summary: str) -> None:
    builder = engine.get_mib_builder()
    names = ("sysDescr", "sysObjectID", "sysContact", "sysName", "sysLocation", "sysServices")
    descr, object_id, contact, name, location, services = builder.import_symbols(
        "__SNMPv2-MIB", *names)
    system = settings.system
    values = (
        (descr, sys_descr(fabric_summary)),
        (object_id, AGENT_OBJECT_ID),  # a node's context: node_system
        (contact, system.sys_contact or ""),
        (name, system.sys_name if system.sys_name is not None else socket.gethostname()),
        (location, system.sys_location or ""),
        (services, SYS_SERVICES),
    )
    for instance, value in values:
        instance.syntax = instance.syntax.clone(value)
    # SNMPv2-TC TestAndIncr: at re-initialisation a pseudo-random value (as
    # snmpd), so a manager's lock taken before a restart does not match.
    (serial,) = builder.import_symbols("__SNMPv2-MIB", "snmpSetSerialNo")
    serial.syntax = serial.syntax.clone(random.SystemRandom().randrange(2**31 - 1))

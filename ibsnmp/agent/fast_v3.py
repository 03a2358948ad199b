"""SNMPv3 requests through the project's USM: refused, reported, read, or handed to a responder.

`FastV3.handle` takes an SNMPv3 message the strict reader has read through the project's
USM (ibsnmp.wire.usm_inbound.process) and returns its Verdict: a refusal counted and, where
RFC 3414 3.2 and the Report limits allow, reported; a request refused from its header; a
read answered by the fast read responder; the rest handed to pysnmp's command responders
(agent.handover). Every answer is sealed here, so pysnmp's message processing and USM never
see a request. The engine's identity and clock are pysnmp's, read, not kept apart. The
pipeline: docs/architecture.md, "SNMPv3 through the project's USM".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from pyasn1.error import PyAsn1Error
from pysnmp.entity.engine import SnmpEngine

from ibsnmp.mib.api import ContextTarget
from ibsnmp.wire.ber import (OBJECT_IDENTIFIER, HeaderError, element, integer_octets,
                             length_octets, oid_octets)
from ibsnmp.wire.header import (FLAG_REPORTABLE, GET, GET_BULK, GET_NEXT, INFORM,
                                NO_AUTH_NO_PRIV, SET, USM, V2C, V3, V3Message, Varbind)
from ibsnmp.wire.request import Request, largest_content, request_of, varbind_room
from ibsnmp.wire.usm_inbound import (Accepted, Refusal, Refused, Sealer, UserEntry,
                                     localize_users, process)
from ibsnmp.wire.usm_message import ReportWriter, encode_scoped_pdu

from .handover import Handover, Requester, decode_pdu, encode_pdu, pdu_element
from .pending_counts import (NO_HANDLER, OUT_GET_RESPONSES, OUT_PKTS, OUT_TOO_BIG, SILENT_DROP,
                             UNKNOWN_CONTEXTS, Counter, PendingCounts)
from .prefilter import IN_REQUEST, REQUESTS, Drop, Reply, ToResponders, Verdict, source_address
from .ratelimit import RequestLimits
from .read_view import ReadView
from .repeats import MAX_REQUEST, KeptAnswer, Repeats
from .refusals import (DECRYPTION_ERROR, NO_WRITE_ACCESS, NOT_IN_TIME_WINDOW, UNKNOWN_CONTEXT,
                       UNKNOWN_USER, UNSUPPORTED_LEVEL, WRONG_DIGEST, Reason, RefusalLog)
from .views import View

log = logging.getLogger(__name__)

FRAMEWORK_MIB = "__SNMP-FRAMEWORK-MIB"
READS = frozenset({GET, GET_NEXT, GET_BULK})
CONFIRMED = REQUESTS | {INFORM}  # RFC 3411 2.8: the PDUs a reportable message may carry
INVALID_MESSAGE = Refusal.INVALID_MESSAGE.counter  # snmpInvalidMsgs
TOO_BIG, NO_ACCESS, AUTHORIZATION_ERROR = 1, 6, 16  # error-status
KEPT_PDU_LIMITS = 256  # max_pdu_octets's results (see there)
# The USM refusals told to the operator, by the counter they move (a tuple is
# hashed in C; the Refusal enum's hash is Python's). Discovery (an unknown
# engine ID) is every manager's first message; the rest is malformed input.
REFUSAL_REASONS: dict[tuple[str, str], Reason] = {
    Refusal.UNKNOWN_USER.counter: UNKNOWN_USER,
    Refusal.WRONG_DIGEST.counter: WRONG_DIGEST,
    Refusal.NOT_IN_TIME_WINDOW.counter: NOT_IN_TIME_WINDOW,
    Refusal.DECRYPTION_ERROR.counter: DECRYPTION_ERROR,
    Refusal.UNSUPPORTED_LEVEL.counter: UNSUPPORTED_LEVEL,
}


class PysnmpEngineClock:
    """snmpEngineBoots and snmpEngineTime as pysnmp's engine serves and checks them."""

    def __init__(self, engine: SnmpEngine) -> None:
        boots, engine_time = engine.get_mib_builder().import_symbols(
            FRAMEWORK_MIB, "snmpEngineBoots", "snmpEngineTime")
        # Both are set once, when the engine's identity is applied (engine_state),
        # and read for every SNMPv3 message: kept as plain numbers.
        self._boots = int(boots.syntax)
        # pysnmp's snmpEngineTime instance holds the engine's start time and
        # serves (now - start) seconds: the same sum here.
        self._started = int(engine_time.syntax)

    def boots(self) -> int:
        return self._boots

    def time(self) -> int:
        return int(time.time() - self._started)


@dataclass(frozen=True, slots=True)
class Principal:
    """Who reads: the access and read view that pick the VACM group (engine.group_name)."""

    access: str
    view: str | None


class Answer(NamedTuple):
    """A responder's answer to one read request (a named tuple: one per request);
    `kept`: where the walk cache keeps it, if it does (a repeat of the request
    is answered from there, agent.repeats)."""

    error_status: int
    error_index: int
    varbinds: bytes  # the concatenated varbind elements
    kept: KeptAnswer | None = None


class ReadResponder(Protocol):
    """Answers a decoded read PDU within `max_pdu_octets`; None leaves it to pysnmp."""

    def __call__(self, request: Request, context_name: bytes, principal: Principal,
                 max_pdu_octets: int) -> Answer | None: ...


class Reads(Protocol):
    """agent.fast_reads.FastReads, as this path uses it."""

    def read_view(self, access: str, view: View | None) -> ReadView: ...

    def read_keeping(self, request: Request, context_name: bytes, target: ContextTarget,
                     read_view: ReadView, room: int
                     ) -> tuple[int, int, bytes, KeptAnswer | None] | None: ...


def responder_over(reads: Reads, resolve: Callable[[bytes], ContextTarget | None]
                   ) -> ReadResponder:
    """The fast responder of v1/v2c reads, serving scoped PDUs (one responder, two models)."""

    def respond(request: Request, context_name: bytes, principal: Principal,
                max_pdu_octets: int) -> Answer | None:
        target = resolve(context_name)
        if target is None:
            return None
        found = reads.read_keeping(request, context_name, target,
                                   reads.read_view(principal.access, principal.view),  # type: ignore[arg-type]
                                   varbind_room(request.request_id, max_pdu_octets))
        return None if found is None else Answer(*found)

    return respond


# A repeated read's key: PDU type, the octets a Response writes its request-id
# in, max_pdu_octets, level, user, contextEngineID, contextName, and the PDU's
# octets after the request-id.
RepeatKey = tuple[int, int, int, int, bytes, bytes, bytes, bytes]
_KEY_NUMBERS_OCTETS = 64  # what a key's four numbers and its tuple take, about


class FastV3:
    """The SNMPv3 side of the agent without pysnmp (see the module doc).

    snmpEngineID, snmpEngineBoots, snmpEngineTime and snmpEngineMaxMessageSize
    are read from pysnmp's engine: there is one clock, not two. What is refused
    for who asks, and a read-only user's SET, are told to the refusal log."""

    def __init__(self, engine: SnmpEngine, users: Iterable[UserEntry], respond: ReadResponder,
                 is_known_context: Callable[[bytes], bool], counts: PendingCounts, *,
                 max_varbinds: int, handover: Handover,
                 refusals: RefusalLog | None = None,
                 answer_again: Callable[[KeptAnswer], bytes | None] | None = None) -> None:
        """`refusals`: where refused requests are told (None: a log of its own);
        `answer_again`: a kept answer's varbinds while it holds, its answer
        counted (FastReads.answer_again; None: repeats are not kept)."""
        self._refusals = refusals if refusals is not None else RefusalLog()
        builder = engine.get_mib_builder()
        engine_id, max_size = builder.import_symbols(
            FRAMEWORK_MIB, "snmpEngineID", "snmpEngineMaxMessageSize")
        self.engine_id = bytes(engine_id.syntax)
        self.clock = PysnmpEngineClock(engine)
        self.sealer = Sealer(self.engine_id, self.clock, int(max_size.syntax))
        self.reports = ReportWriter(self.engine_id, int(max_size.syntax))
        self.max_varbinds = max_varbinds
        # [limits] fast_path: reads answered here; off, pysnmp's command responders do.
        self.answer_reads = True
        self._answer_again = answer_again
        # Reads answered from kept answers, by their scoped PDUs (agent.repeats).
        self.repeats: Repeats[RepeatKey, KeptAnswer] = Repeats()
        self._counts = counts
        self._handover = handover  # what the fast read responder does not answer
        self._principals: dict[tuple[str, str | None], Principal] = {}
        # max_pdu_octets by what it depends on (see there).
        self._pdu_limits: dict[tuple[int, int, int, bytes, int, int], int] = {}
        self._counter_oids: dict[Counter, bytes] = {}  # the reported ones' OID elements
        for refusal in Refusal:
            if refusal.reported:
                (instance,) = builder.import_symbols(*refusal.counter)
                self._counter_oids[refusal.counter] = element(OBJECT_IDENTIFIER,
                                                              oid_octets(tuple(instance.name)))
        for counter in (NO_HANDLER, UNKNOWN_CONTEXTS):
            (instance,) = builder.import_symbols(*counter)
            self._counter_oids[counter] = element(OBJECT_IDENTIFIER, oid_octets(tuple(instance.name)))
        self.replace_users(users)
        self._respond = respond
        self._is_known_context = is_known_context
        self.report_limits: RequestLimits | None = None  # set_report_limits

    def set_report_limits(self, per_source: float | None, aggregate: float | None, *,
                          clock: Callable[[], float] = time.monotonic) -> None:
        """Reports to refused requests per second per source address and in all
        (None or 0: no limit), from now on (the buckets start full)."""
        limits = RequestLimits(per_source or None, aggregate or None, clock=clock)
        self.report_limits = limits if limits else None

    @property
    def reports_withheld(self) -> int:
        return self.report_limits.dropped if self.report_limits is not None else 0

    def replace_users(self, users: Iterable[UserEntry]) -> None:
        """A reload's users from now on (keys localized here, once)."""
        self.users = localize_users(tuple(users), self.engine_id)
        self._pdu_limits = {}  # kept by user name: a name may now have other protocols
        self.repeats.clear()  # the same: a name may now have another level or view

    def handle(self, message: V3Message, datagram: bytes,
               varbinds: tuple[Varbind, ...] | None = None, sender: Any = None) -> Verdict:
        """What happens to `message`, in this order: a USM refusal (`_refuse`);
        an authenticated Response, Report or Trap dropped (snmpInvalidMsgs when
        reportable, RFC 3412 6.4, else snmpUnknownPDUHandlers); more varbinds
        than `max_varbinds`, tooBig (`_too_big`); a request below the user's
        level, authorizationError (`_unauthorized`); what VACM could not grant,
        refused from the header (`_refuse_by_rights`); a read repeating one
        answered from a kept answer that still holds, from that (`_repeat`,
        agent.repeats); a read of this engine's contextEngineID in the default
        or a known node's context, the fast read responder's; everything else (a writer's SETs, reads the responder
        leaves, foreign contextEngineIDs, informs) pysnmp's command responders'.
        `varbinds`: the plaintext PDU's, as the strict reader has read them;
        `sender`: the transport address it came from (the Report limits' key)."""
        accepted = process(message, datagram, self.engine_id, self.users, self.clock)
        if isinstance(accepted, Refused):
            return self._refuse(accepted, sender)
        scoped = accepted.scoped
        pdu = scoped.pdu
        key = None  # the read's key among the repeats, made once (`_repeat_key`)
        if len(self.repeats) and pdu.tag in READS and self.answer_reads:
            key = self._repeat_key(accepted)
            repeated = None if key is None else self._repeat(accepted, key)
            if repeated is not None:
                return repeated
        if varbinds is None or scoped.octets is not datagram:
            try:
                varbinds = pdu.read_varbinds(scoped.octets, self.max_varbinds)
            except HeaderError:
                return Drop((Refusal.PARSE_ERROR.counter,))
        if pdu.tag not in CONFIRMED:
            # Responses, Reports and Traps: reportable, they break RFC 3412 6.4;
            # otherwise no application here takes them.
            return Drop((INVALID_MESSAGE if message.flags & FLAG_REPORTABLE else NO_HANDLER,))
        if len(varbinds) > self.max_varbinds:
            if pdu.tag not in REQUESTS:
                return Drop((SILENT_DROP,))
            return self._too_big(accepted)
        if pdu.tag in REQUESTS and accepted.level < accepted.user.level:
            return self._unauthorized(accepted, scoped.octets, sender)
        # Counted before reading: a GET of snmpInGetRequests sees itself.
        for counted in IN_REQUEST.get(pdu.tag, ()):
            self._counts.count(counted)
        if pdu.tag in REQUESTS and scoped.context_engine_id == self.engine_id:
            refused = self._refuse_by_rights(accepted, sender)
            if refused is not None:
                return refused
        if (pdu.tag in READS and self.answer_reads and scoped.context_engine_id == self.engine_id
                and (not scoped.context_name or self._is_known_context(scoped.context_name))):
            answer = self._read(accepted, varbinds)
            if answer is not None:
                if answer.kept is not None and self._answer_again is not None:
                    key = key or self._repeat_key(accepted)
                    if key is not None:
                        self.repeats.put(key, answer.kept, sum(map(len, key[4:]))
                                         + _KEY_NUMBERS_OCTETS + answer.kept.octets)
                return Reply(self.sealer.seal_response(accepted, answer.error_status,
                                                       answer.error_index, answer.varbinds))
        return ToResponders(lambda: self._hand_over(accepted, sender))

    def _refuse_by_rights(self, accepted: Accepted, sender: Any) -> Drop | Reply | None:
        """What VACM would refuse of a request in this engine's contexts, from
        its header alone (None: it may be granted): a context no node has gets
        the snmpUnknownContexts Report (RFC 3413 3.2), a read-only user's SET
        noAccess at its first varbind (its write view, engine.NO_VIEW, holds
        nothing), the varbinds echoed; both at the request's level. Neither is
        decoded further: a reader buys no more CPU with a SET than with a
        refused GET."""
        request, user, level, scoped = accepted
        if scoped.context_name and not self._is_known_context(scoped.context_name):
            self._refusals.refused(_host(sender), UNKNOWN_CONTEXT)
            self._counts.count(UNKNOWN_CONTEXTS)
            if not request.flags & FLAG_REPORTABLE:
                return Drop(())
            return Reply(self._report_at_level(accepted, UNKNOWN_CONTEXTS), (OUT_PKTS,))
        if scoped.pdu.tag != SET or user.access == "write":
            return None
        self._refusals.refused(_host(sender), NO_WRITE_ACCESS, user.name)
        pdu = scoped.pdu
        first, end = pdu.varbinds
        index = 1 if end > first else 0  # nothing asked, nothing refused
        sealed = self.sealer.seal_response(accepted, NO_ACCESS if index else 0, index,
                                           scoped.octets[first:end])
        return Reply(sealed, (OUT_PKTS, OUT_GET_RESPONSES))

    def _report_at_level(self, accepted: Accepted, counter: Counter) -> bytes:
        """A Report of `counter` (its value once counted) to an authenticated
        request, at the request's level, as snmpd answers it."""
        request, user, level, scoped = accepted
        report_pdu = ReportWriter.pdu(scoped.pdu.request_id, self._counter_oids[counter],
                                      self._counts.value(counter))
        return self.sealer.seal_as(request, user, level,
                                   encode_scoped_pdu(self.engine_id, b"", report_pdu))

    def _read(self, accepted: Accepted, varbinds: tuple[Varbind, ...]) -> Answer | None:
        """The fast read responder's answer (None: it leaves the request to pysnmp's
        command responders)."""
        scoped, user = accepted.scoped, accepted.user
        try:
            request = request_of(scoped.octets, scoped.pdu, varbinds, V2C, b"")
        except HeaderError:
            return None  # error fields not zero: pysnmp's to answer
        principal = self._principals.get((user.access, user.view))
        if principal is None:
            principal = self._principals[user.access, user.view] = Principal(user.access,
                                                                             user.view)
        return self._respond(request, scoped.context_name, principal,
                             self.max_pdu_octets(accepted))

    def _repeat_key(self, accepted: Accepted) -> RepeatKey | None:
        """The key `accepted`'s read is kept under for its repeats: what its
        answer depends on (the room its message leaves included) and its
        PDU's octets but the request-id's value; None when it is not kept."""
        request, user, level, scoped = accepted
        pdu = scoped.pdu
        element = pdu.request_id_element
        if element is None or pdu.varbinds[1] - element[1] > MAX_REQUEST:
            return None
        # The Response writes the request-id anew: its length there sets the room.
        return (pdu.tag, len(integer_octets(pdu.request_id)), self.max_pdu_octets(accepted),
                level, user.name, scoped.context_engine_id, scoped.context_name,
                scoped.octets[element[1]:pdu.varbinds[1]])

    def _repeat(self, accepted: Accepted, key: RepeatKey) -> Reply | None:
        """The answer to a repeat of a read kept in `repeats` under `key`, while
        its kept answer holds, the request counted; None otherwise. Its USM
        checks are done; the PDU after the request-id equals the kept one's,
        whose varbinds the strict reader checked, so none is read again."""
        kept = self.repeats.get(key)
        if kept is None:
            return None
        assert self._answer_again is not None  # kept: it was there
        varbinds = self._answer_again(kept)
        if varbinds is None:
            self.repeats.forget(key)
            return None
        for counted in IN_REQUEST[accepted.scoped.pdu.tag]:
            self._counts.count(counted)
        return Reply(self.sealer.seal_response(accepted, 0, 0, varbinds))

    def _hand_over(self, accepted: Accepted, sender: Any
                   ) -> tuple[bytes | None, dict[Counter, int]]:
        """pysnmp's command responders' answer to `accepted` (from `sender`),
        sealed here (agent.handover); a reportable request no responder takes
        gets the snmpUnknownPDUHandlers Report."""
        request, user, level, scoped = accepted
        try:
            pdu = decode_pdu(pdu_element(scoped.octets, scoped.pdu), V2C)
        except PyAsn1Error:
            return None, {Refusal.PARSE_ERROR.counter: 1}
        handed = self._handover.answer(Requester(V3, USM, user.name, level),
                                       scoped.context_engine_id, scoped.context_name, pdu,
                                       self.sealer.scoped_pdu_budget(accepted))
        reportable = bool(request.flags & FLAG_REPORTABLE)
        if handed is None:  # no responder for this PDU type in that contextEngineID
            if not reportable:
                return None, {NO_HANDLER: 1}
            count = self._counts.value(NO_HANDLER) + 1
            # As RFC 3412 7.1.3 d: unauthenticated, this engine's context.
            report = self.reports.write(request, self.clock.boots(), self.clock.time(), None,
                                        scoped.pdu.request_id, self._counter_oids[NO_HANDLER],
                                        count)
            return report, {NO_HANDLER: 1, OUT_PKTS: 1}
        if handed.report is not None:  # an unknown context (RFC 3413 3.2)
            self._refusals.refused(_host(sender), UNKNOWN_CONTEXT)
            if not reportable:
                return None, {}
            oid, value = handed.report
            report_pdu = ReportWriter.pdu(scoped.pdu.request_id,
                                          element(OBJECT_IDENTIFIER, oid_octets(oid)), value)
            # At the request's level: it was authenticated, as snmpd answers it.
            sealed = self.sealer.seal_as(request, user, level,
                                         encode_scoped_pdu(self.engine_id, b"", report_pdu))
            return sealed, handed.counts
        if handed.pdu is None:
            return None, {}
        sealed = self.sealer.seal_as(request, user, level, encode_scoped_pdu(
            scoped.context_engine_id, scoped.context_name, encode_pdu(handed.pdu)))
        if len(sealed) > min(request.max_size, self.sealer.max_size):
            return None, {SILENT_DROP: 1}  # the responders size their answers: not expected
        return sealed, handed.counts

    def _refuse(self, refused: Refused, sender: Any) -> Drop | Reply:
        """Count a USM refusal, tell the refusal log (not discovery: every
        manager's first message is one), and answer with its Report where RFC
        3414 3.2 says so and the Report limits leave room: discovery, a foreign
        engine ID, an unknown user, a level without keys, a wrong digest and a
        decryption error unauthenticated (what a sender without credentials
        buys is kept small), a message outside the time window authNoPriv.
        Invalid flags, an unknown security model and a ciphertext that decrypts
        to no ScopedPDU are counted and dropped."""
        counts, refusal = self._counts, refused.refusal
        counter = refusal.counter
        counts.count(counter)
        reason = REFUSAL_REASONS.get(counter)
        if reason is not None:
            # The user's name only when it is a configured one (never what a sender made up).
            self._refusals.refused(_host(sender), reason,
                                   refused.request.user_name if reason.names_user else None)
        if not (refused.report and refusal.reported):
            return Drop(())
        if not self._may_answer_refusal(sender):
            return Drop(())
        counts.count(OUT_PKTS)
        boots, now = self.clock.boots(), self.clock.time()
        oid, count = self._counter_oids[counter], counts.value(counter)
        # Outside the time window, the Report is authNoPriv: the manager can trust
        # the boots and time it resynchronizes from (RFC 3414 3.2 step 7b).
        signer = refused.signer.mac if refused.signer is not None else None
        return Reply(self.reports.write(refused.request, boots, now, refused.context,
                                        refused.request_id, oid, count, signer))

    def _may_answer_refusal(self, sender: Any) -> bool:
        """Whether the Report limits leave room for one more answer to `sender`
        (logged, once per burst, when they do not). A manager needs a Report or
        two per session; beyond the limits a flood of refusals costs mostly
        what reading it does."""
        limits = self.report_limits
        if limits is None:
            return True
        source = source_address(sender) if sender is not None else ""
        if limits.allow(source):
            return True
        if limits.starts_burst():
            log.warning("withholding SNMPv3 Reports (and authorizationErrors to requests "
                        "without credentials) beyond %s to %s (and maybe other sources); %d "
                        "withheld since start, every request counted",
                        limits.describe(), source or "?", limits.dropped)
        return False

    def _too_big(self, accepted: Accepted) -> Reply:
        """More varbinds than [limits] max_varbinds: tooBig with no varbinds
        (RFC 3416 4.2.1), sealed at the request's level."""
        pdu = accepted.scoped.pdu
        sealed = self.sealer.seal_response(accepted, TOO_BIG, 0, b"")
        counted = IN_REQUEST.get(pdu.tag, ())
        return Reply(sealed, (OUT_PKTS, OUT_GET_RESPONSES, OUT_TOO_BIG) + counted)

    def _unauthorized(self, accepted: Accepted, octets: bytes, sender: Any) -> Drop | Reply:
        """VACM has no access entry below the user's level: authorizationError,
        error-index 0, the request's varbinds echoed (RFC 3413 3.2, RFC 3416 4.1),
        at the level the request came in.
        To a request without credentials (a user's name alone), within the
        Report limits: it is as cheap to ask for as a Report."""
        pdu = accepted.scoped.pdu
        counted = IN_REQUEST.get(pdu.tag, ())
        if accepted.level == NO_AUTH_NO_PRIV and not self._may_answer_refusal(sender):
            return Drop(counted)
        sealed = self.sealer.seal_response(accepted, AUTHORIZATION_ERROR, 0,
                                           octets[pdu.varbinds[0]:pdu.varbinds[1]])
        return Reply(sealed, (OUT_PKTS, OUT_GET_RESPONSES) + counted)

    def max_pdu_octets(self, accepted: Accepted) -> int:
        """The largest Response PDU element the sealed response may carry."""
        request, user, level, scoped = accepted
        # What the message around the PDU takes depends on the request's
        # msgMaxSize, the user (name, protocols) and level, and the octets of
        # msgID, of msgAuthoritativeEngineTime (boots never change under this
        # clock) and of the context's names: kept by those, not computed again.
        key = (request.max_size, request.message_id.bit_length() >> 3,
               self.clock.time().bit_length() >> 3, user.name, level,
               len(scoped.context_engine_id) << 16 | len(scoped.context_name))
        limit = self._pdu_limits.get(key)
        if limit is None:
            engine_id, name = len(scoped.context_engine_id), len(scoped.context_name)
            names = 2 + length_octets(engine_id) + engine_id + length_octets(name) + name
            if len(self._pdu_limits) >= KEPT_PDU_LIMITS:
                self._pdu_limits.clear()  # managers' msgMaxSize values: kept few
            limit = self._pdu_limits[key] = largest_content(
                self.sealer.scoped_pdu_budget(accepted), names)
        return limit


def _host(sender: Any) -> Any:
    """The sender's host as the transport gives it ("" unknown): the refusal log's key."""
    return sender[0] if sender is not None else ""

"""SNMPv3 read requests answered without pysnmp: USM from ibsnmp.wire, varbinds from a responder.

`FastV3.answer(datagram)` returns the sealed Response to an authenticated
(and, at authPriv, decrypted) GetRequest, GetNextRequest or GetBulkRequest
of a configured user at the user's own security level, in the default
context or a known node's; None for everything else, which then goes to
pysnmp unchanged: unknown contexts, other PDUs, users whose privacy
protocol (DES) this path lacks.

`FastV3.report(datagram)` answers, before pysnmp decodes anything, the
requests RFC 3414 3.2 refuses without a key (discovery, a foreign engine
ID, an unknown user, a level the user has no key for) and those with a
wrong digest: the Report pysnmp's USM sends, octet for octet, and the same
counters, at a few percent of its cost (a credential-less sender could
otherwise buy a millisecond of CPU per ~100-octet datagram). Other USM
failures (time window, decryption) come after a valid digest and stay
with pysnmp.

snmpEngineID, snmpEngineBoots, snmpEngineTime and snmpEngineMaxMessageSize
are read from pysnmp's engine: there is one clock, not two.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from pysnmp.entity.engine import SnmpEngine

from ibsnmp.mib.api import ContextTarget

from ibsnmp.wire.ber import OBJECT_IDENTIFIER, OCTET_STRING, HeaderError, element, oid_octets
from ibsnmp.wire.header import V2C
from ibsnmp.wire.request import (
    Request,
    decode_pdu,
    encode_response_pdu,
    largest_content,
    varbind_room,
)
from ibsnmp.wire.usm_inbound import (Accepted, Refusal, Sealer, UserEntry, accept, localize_users,
                                     refuse_unauthenticated)
from ibsnmp.wire.usm_message import ReportWriter, encode_scoped_pdu

from .pending_counts import PendingCounts
from .prefilter import OUT_PKTS, Counter, Verdict
from .views import View

FRAMEWORK_MIB = "__SNMP-FRAMEWORK-MIB"
USM_MIB = "__SNMP-USER-BASED-SM-MIB"
REPORTED: dict[Refusal, Counter] = {
    refusal: (USM_MIB, refusal.value)
    for refusal in (Refusal.UNKNOWN_ENGINE_ID, Refusal.UNKNOWN_USER,
                    Refusal.UNSUPPORTED_LEVEL, Refusal.WRONG_DIGEST)
}


class PysnmpEngineClock:
    """snmpEngineBoots and snmpEngineTime as pysnmp's engine serves and checks them."""

    def __init__(self, engine: SnmpEngine) -> None:
        self._boots, self._time = engine.get_mib_builder().import_symbols(
            FRAMEWORK_MIB, "snmpEngineBoots", "snmpEngineTime")

    def boots(self) -> int:
        return int(self._boots.syntax)

    def time(self) -> int:
        # pysnmp's snmpEngineTime instance holds the engine's start time and
        # serves (now - start) seconds: the same sum here.
        return int(time.time() - int(self._time.syntax))


@dataclass(frozen=True, slots=True)
class Principal:
    """Who reads: the access and read view that pick the VACM group (engine.group_name)."""

    access: str
    view: str | None


@dataclass(frozen=True, slots=True)
class Answer:
    """A responder's answer to one read request."""

    error_status: int
    error_index: int
    varbinds: bytes  # the concatenated varbind elements


class ReadResponder(Protocol):
    """Answers a decoded read PDU within `max_pdu_octets`; None leaves it to pysnmp."""

    def __call__(self, request: Request, context_name: bytes, principal: Principal,
                 max_pdu_octets: int) -> Answer | None: ...


class Reads(Protocol):
    """agent.fast_reads.FastReads, as this path uses it."""

    def read(self, request: Request, target: ContextTarget, access: str, view: View | None,
             room: int) -> tuple[int, int, bytes] | None: ...


def responder_over(reads: Reads, resolve: Callable[[bytes], ContextTarget | None]
                   ) -> ReadResponder:
    """The fast responder of v1/v2c reads, serving scoped PDUs (one responder, two models)."""

    def respond(request: Request, context_name: bytes, principal: Principal,
                max_pdu_octets: int) -> Answer | None:
        target = resolve(context_name)
        if target is None:
            return None
        found = reads.read(request, target, principal.access, principal.view,  # type: ignore[arg-type]
                           varbind_room(request.request_id, max_pdu_octets))
        return None if found is None else Answer(*found)

    return respond


class FastV3:
    """The SNMPv3 side of the fast read path (see the module doc)."""

    def __init__(self, engine: SnmpEngine, users: Iterable[UserEntry], respond: ReadResponder,
                 is_known_context: Callable[[bytes], bool], *,
                 counts: PendingCounts | None = None) -> None:
        """`counts`: where Reports are counted (agent.fast_reads' pending counts,
        written into pysnmp's counters before anything reads them); None:
        written at once."""
        builder = engine.get_mib_builder()
        engine_id, max_size = builder.import_symbols(
            FRAMEWORK_MIB, "snmpEngineID", "snmpEngineMaxMessageSize")
        self.engine_id = bytes(engine_id.syntax)
        self.clock = PysnmpEngineClock(engine)
        self.sealer = Sealer(self.engine_id, self.clock, int(max_size.syntax))
        self.reports = ReportWriter(self.engine_id, int(max_size.syntax))
        # A pyasn1 counter addition costs as much as a third of the rest of
        # a rejection: Reports count as plain integers (agent.pending_counts).
        self._flush_at_once = counts is None
        self._counts = counts or PendingCounts({})
        self._counts.include({OUT_PKTS[1]: builder.import_symbols(*OUT_PKTS)[0]})
        self._counter_oids: dict[Refusal, bytes] = {}
        for refusal, (module, name) in REPORTED.items():
            (instance,) = builder.import_symbols(module, name)
            self._counts.include({name: instance})
            self._counter_oids[refusal] = element(OBJECT_IDENTIFIER,
                                                  oid_octets(tuple(instance.name)))
        self.replace_users(users)
        self._respond = respond
        self._is_known_context = is_known_context

    def replace_users(self, users: Iterable[UserEntry]) -> None:
        """A reload's users from now on (keys localized here, once)."""
        users = tuple(users)
        self.users = localize_users(users, self.engine_id)
        self.user_names = frozenset(user.name.encode("utf-8") for user in users)

    def report(self, datagram: bytes) -> Verdict | None:
        """The Report to a request refused without a key (see the module doc), or None."""
        refused = refuse_unauthenticated(datagram, self.engine_id, self.user_names, self.users)
        if refused is None:
            return None
        counts, name = self._counts, refused.refusal.value
        counts.add(name, 1)
        reply = None
        if refused.answered:
            counts.add(OUT_PKTS[1], 1)
            reply = self.reports.write(
                refused.request, self.clock.boots(), self.clock.time(), refused.context,
                refused.request_id, self._counter_oids[refused.refusal], counts.value(name))
        if self._flush_at_once:
            counts.flush()
        return Verdict((), reply)

    def answer(self, datagram: bytes) -> bytes | None:
        accepted = accept(datagram, self.engine_id, self.users, self.clock)
        if not isinstance(accepted, Accepted):
            return None
        scoped = accepted.scoped
        if scoped.context_engine_id != self.engine_id:
            return None  # pysnmp answers (or drops) a foreign contextEngineID
        if scoped.context_name and not self._is_known_context(scoped.context_name):
            return None  # snmpUnknownContexts, reported by pysnmp
        try:
            request = decode_pdu(scoped.pdu, 0, len(scoped.pdu), V2C)
        except HeaderError:
            return None
        user = accepted.user
        answer = self._respond(request, scoped.context_name, Principal(user.access, user.view),
                               self.max_pdu_octets(accepted))
        if answer is None:
            return None
        pdu = encode_response_pdu(request.request_id, answer.error_status, answer.error_index,
                                  answer.varbinds)
        return self.sealer.seal(accepted, encode_scoped_pdu(
            scoped.context_engine_id, scoped.context_name, pdu))

    def max_pdu_octets(self, accepted: Accepted) -> int:
        """The largest Response PDU element the sealed response may carry."""
        scoped_limit = self.sealer.scoped_pdu_budget(accepted)
        names = (len(element(OCTET_STRING, accepted.scoped.context_engine_id))
                 + len(element(OCTET_STRING, accepted.scoped.context_name)))
        return largest_content(scoped_limit, names)

"""What a datagram must be before pysnmp decodes it: every datagram's header checks.

`Prefilter.check` reads a datagram's header with the strict reader (ibsnmp.wire.header) and,
before any varbind is decoded, drops the excess over the request limits and the CPU budget,
what is malformed or of another version, a refused community and a PDU no application takes,
and holds a varbind list to `max_varbinds`; refused communities go to the refusal log. Its
only answers, built from the header, are tooBig and a read-only community's refused SET. It
returns a Drop or a Reply (with what to count), a v1/v2c request read whole, an SNMPv3
message for the USM, or an answer to an inform. No I/O. The pipeline: agent.decision.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ibsnmp.wire.ber import HeaderError
from ibsnmp.wire.header import (
    FLAG_REPORTABLE,
    GET,
    GET_BULK,
    GET_NEXT,
    MAX_NULL_VARBIND,
    REPORT,
    RESPONSE,
    SET,
    V1,
    CommunityMessage,
    OtherVersion,
    V3Message,
    Varbind,
    error_response,
    read_header,
    too_big_response,
)

from .config import Community, Limits
from .pending_counts import (
    BAD_COMMUNITY,
    BAD_COMMUNITY_USES,
    BAD_VERSION,
    IN_GET_NEXTS,
    IN_GET_REQUESTS,
    IN_SET_REQUESTS,
    NO_HANDLER,
    OUT_GET_RESPONSES,
    OUT_NO_SUCH_NAMES,
    OUT_PKTS,
    OUT_TOO_BIG,
    PARSE_ERROR,
    SILENT_DROP,
    Counter,
)
from .governor import CpuGovernor
from .ratelimit import BURST_GAP_S, RequestLimits
from .refusals import (COMMUNITY_SOURCE, NO_WRITE_ACCESS, UNKNOWN_COMMUNITY,
                       UNKNOWN_COMMUNITY_CONTEXT, Reason, RefusalLog)
from .transport import NOTIFICATION_DOMAINS

log = logging.getLogger(__name__)

# What a request counts on arrival (the responders count nothing).
IN_REQUEST: dict[int, tuple[Counter, ...]] = {
    GET: (IN_GET_REQUESTS,),
    GET_NEXT: (IN_GET_NEXTS,),
    SET: (IN_SET_REQUESTS,),
    GET_BULK: (),  # RFC 3418 has no GETBULK counter
}

REQUESTS = frozenset({GET, GET_NEXT, SET, GET_BULK})
ANSWERS = frozenset({RESPONSE, REPORT})
MAX_REPLY_SIZE = 65507  # the largest UDP/IPv4 payload, pysnmp's snmpEngineMaxMessageSize
NO_SUCH_NAME, NO_ACCESS = 2, 6  # error-status (RFC 1157, RFC 3416)


class PassedRequest(NamedTuple):
    """A v1/v2c request `Prefilter.check` passed on: read whole by the strict
    reader, and the community it was accepted for with the context its name
    selects (b"": the default one). What answers it reads none of it again."""

    message: CommunityMessage
    varbinds: tuple[Varbind, ...]
    community: Community
    context_name: bytes


# A request left to pysnmp's command responders (agent.handover): called once the
# datagram's counts are written (the responders read counters as they are), it
# returns the reply (None: nothing) and what the answer counts.
Handing = Callable[[], "tuple[bytes | None, dict[Counter, int]]"]


class Drop(NamedTuple):
    """A datagram dropped unanswered: what it counts (besides snmpInPkts,
    which every datagram counts)."""

    counters: tuple[Counter, ...]


class Reply(NamedTuple):
    """A datagram answered with `datagram`: what it counts besides snmpInPkts."""

    datagram: bytes
    counters: tuple[Counter, ...] = ()


class ToResponders(NamedTuple):
    """A request for pysnmp's command responders (`handing` answers it): what it
    counts besides snmpInPkts before they answer."""

    handing: Handing
    counters: tuple[Counter, ...] = ()


# What becomes of a datagram not left to pysnmp's message processing. Named
# tuples: the cheapest immutable kind to build, one per datagram.
Verdict = Drop | Reply | ToResponders


class V3Request(NamedTuple):
    """An SNMPv3 message on a listening socket past the header checks, for the
    project's USM (agent.fast_v3): its plaintext varbinds as read, None when
    encrypted."""

    message: V3Message
    varbinds: tuple[Varbind, ...] | None


class InformAnswer(NamedTuple):
    """On a notification socket, an answer to one of the agent's informs: for
    pysnmp's message processing, which matches it to the inform."""


INFORM_ANSWER = InformAnswer()

# What `Prefilter.check` finds a datagram to be.
Checked = Drop | Reply | PassedRequest | V3Request | InformAnswer


def is_notification_domain(domain: Sequence[int]) -> bool:
    return tuple(domain) in NOTIFICATION_DOMAINS


def source_address(transport_address: Any) -> str:
    """The sender's IP address (without an IPv6 %zone) from a pysnmp transport address."""
    return str(transport_address[0]).partition("%")[0]


class Prefilter:
    """Header checks for every datagram; see the module documentation."""

    def __init__(self, communities: Sequence[Community], limits: Limits,
                 is_known_node: Callable[[bytes], bool], *,
                 notification_communities: Sequence[str] = (),
                 clock: Callable[[], float] = time.monotonic,
                 refusals: RefusalLog | None = None,
                 governor: CpuGovernor | None = None) -> None:
        """`refusals`: where refused requests are told (the agent's one log,
        kept across reloads; None: a log of this prefilter's own); `governor`:
        the CPU account to go on with (a reload's, of the same budget; None:
        a new one when `limits` set a budget)."""
        self._refusals = refusals if refusals is not None else RefusalLog()
        self._communities = {c.name.encode("utf-8"): c for c in communities}
        self._notification_communities = frozenset(
            name.encode("utf-8") for name in notification_communities)
        self._max_varbinds = limits.max_varbinds
        self._is_known_node = is_known_node
        limiter = RequestLimits(limits.requests_per_second_per_source,
                                limits.requests_per_second, clock=clock)
        self.limiter = limiter if limiter else None
        # The CPU shared fairly among the sources (charged by agent.engine).
        self.governor = governor if governor is not None else (
            CpuGovernor(limits.cpu_budget) if limits.cpu_budget else None)
        self._governor_drop_at = float("-inf")

    @property
    def rate_limited(self) -> int:
        return self.limiter.dropped if self.limiter is not None else 0

    @property
    def governed(self) -> int:
        return self.governor.dropped if self.governor is not None else 0

    def check(self, domain: Sequence[int], address: Any, data: bytes) -> Checked:
        """What the datagram is: dropped (Drop) or answered from its header
        (Reply), a v1/v2c request to answer, read whole (PassedRequest), an
        SNMPv3 message for the project's USM (V3Request), or on a notification
        socket an answer to an inform (InformAnswer).

        The request limits (agent.ratelimit, counted in `rate_limited`) and the CPU
        governor (agent.governor, counted in `governed`) drop on the listening sockets
        only, each logged once per burst. Every datagram also counts in snmpInPkts
        (the caller counts it)."""
        notification = is_notification_domain(domain)
        if not notification:
            dropped = self.admit(address)
            if dropped is not None:
                return dropped
        return self.check_header(notification, address, data)

    def admit(self, address: Any) -> Drop | None:
        """A Drop when the request limits or the CPU governor refuse a
        datagram of `address` on a listening socket now, else None."""
        if self.limiter is not None and not self.limiter.allow(source_address(address)):
            self._log_rate_limited(address)
            return Drop(())
        if self.governor is not None and not self.governor.admit(address[0]):
            self._log_governed(address)
            return Drop(())
        return None

    def check_header(self, notification: bool, address: Any, data: bytes) -> Checked:
        """`check` of a datagram `admit` let in (on a notification socket, any)."""
        try:
            header = read_header(data)
            if isinstance(header, CommunityMessage):
                return self._check_community(header, notification, address, data)
            if isinstance(header, V3Message):
                return self._check_v3(header, notification, data)
        except HeaderError:
            return Drop((PARSE_ERROR,))
        assert isinstance(header, OtherVersion)
        return Drop((BAD_VERSION,))

    def _check_community(self, message: CommunityMessage, notification: bool, address: Any,
                         data: bytes) -> Drop | Reply | PassedRequest | InformAnswer:
        """A v1/v2c message. On a notification socket, only an answer to an inform
        of a notification community goes on. On a listening socket, an unknown
        community, `community@<node GUID>` of an unknown node or a community used
        from outside its `source` networks is snmpInBadCommunityNames (as net-snmp
        counts a community/source mismatch), and anything but a request
        snmpUnknownPDUHandlers. The varbind list is read by the strict reader up
        to `max_varbinds` + 1 varbinds (a failure: a parse error, `check`). A
        request over that gets tooBig from its header (snmpOutTooBigs) when read
        whole within twice the limit, or all `{ OID, NULL }`; any other is dropped
        (snmpSilentDrops). A GETBULK over it is answered for its first names."""
        if notification:
            if message.community not in self._notification_communities:
                return Drop((BAD_COMMUNITY,))
            if message.pdu.tag != RESPONSE:
                return Drop((NO_HANDLER,))
            if len(message.pdu.read_varbinds(data, self._max_varbinds)) > self._max_varbinds:
                return Drop((SILENT_DROP,))
            return INFORM_ANSWER
        found = self._context_or_reason(message.community)
        if isinstance(found, Reason):
            self._refusals.refused(address[0], found)
            return Drop((BAD_COMMUNITY,))
        if not allowed_from(found[0], address):
            self._refusals.refused(address[0], COMMUNITY_SOURCE)
            return Drop((BAD_COMMUNITY,))
        if message.pdu.tag not in REQUESTS:
            return Drop((NO_HANDLER,))
        if message.pdu.tag == SET and found[0].access != "write":
            self._refusals.refused(address[0], NO_WRITE_ACCESS)
            refused = self._refuse_set(message, data)
            if refused is not None:
                return refused
        start, end = message.pdu.varbinds
        null_list = None
        if end - start > self._max_varbinds * MAX_NULL_VARBIND:
            # More octets than the limit's varbinds take if all are { OID, NULL }:
            # checked in C first, such a list is over the limit without a
            # varbind read in Python, and so is
            # one that holds more than twice the limit of them before anything
            # else: read no further, as below (its end: one scan, not two).
            prefix = message.pdu.null_prefix(data)
            null_list = prefix == end
            if not null_list and prefix - start > 2 * self._max_varbinds * MAX_NULL_VARBIND:
                return Drop((SILENT_DROP,))
        varbinds: tuple[Varbind, ...] = ()
        if not null_list:
            varbinds = message.pdu.read_varbinds(data, self._max_varbinds)
            if len(varbinds) <= self._max_varbinds:
                return PassedRequest(message, varbinds, *found)
            # Over the limit: all { OID, NULL } (checked in C), or read whole in
            # Python if no longer than twice the limit (a bounded read).
            if null_list is None:
                null_list = message.pdu.is_null_list(data)
            if not null_list:
                varbinds = message.pdu.read_varbinds(data, 2 * self._max_varbinds, varbinds)
        if message.pdu.tag == GET_BULK:
            # Never tooBig (RFC 3416 4.2.3): over a limit, a GetBulk answer
            # holds fewer varbinds, the first ones of the complete answer (as
            # net-snmp's maxGetbulkResponses cuts one). So the first
            # max_varbinds names are answered once each, non-repeaters as
            # such: a second repetition would follow the first of the names
            # left out. A list not read whole is dropped, as any other.
            if not (null_list or varbinds and varbinds[-1].value_end == end):
                return Drop((SILENT_DROP,))
            first = varbinds[:self._max_varbinds] if varbinds else \
                message.pdu.read_varbinds(data, self._max_varbinds - 1)
            non_repeaters, repetitions = message.pdu.fields
            pdu = message.pdu._replace(fields=(non_repeaters, min(repetitions, 1)))
            return PassedRequest(message._replace(pdu=pdu), first, *found)
        try:
            reply = too_big_response(data, message, varbinds, null_list)
        except HeaderError:  # not read whole: answered by nothing
            return Drop((SILENT_DROP,))
        if len(reply) > MAX_REPLY_SIZE:  # an SNMPv1 answer echoes the varbinds
            return Drop((SILENT_DROP,))
        return Reply(reply, (OUT_TOO_BIG, OUT_PKTS, OUT_GET_RESPONSES)
                     + IN_REQUEST[message.pdu.tag])

    def _refuse_set(self, message: CommunityMessage, data: bytes) -> Drop | Reply | None:
        """A read-only community's SET, refused from its header: no object is
        in its write view (engine.NO_VIEW), so VACM's verdict on the first
        varbind is known without asking. noAccess (RFC 3416 4.2.5), in SNMPv1
        noSuchName (RFC 2576 4.3), at the first varbind; counted in
        snmpInBadCommunityUses (an operation the community may not do). The
        first varbind is read whole, the others by their framing only: they
        are echoed, and no value of them could change the answer. A list
        over the varbind limit goes on as any other (None: tooBig)."""
        pdu = message.pdu
        count = pdu.framed_varbinds(data, self._max_varbinds)
        if count > self._max_varbinds:
            return None
        pdu.read_varbinds(data, 0)  # the varbind the error-index names: checked whole
        status, index = (NO_SUCH_NAME if message.version == V1 else NO_ACCESS), 1
        if not count:
            status = index = 0  # nothing asked, nothing refused
        reply = error_response(data, message, status, index)
        if len(reply) > MAX_REPLY_SIZE:
            return Drop((SILENT_DROP, IN_SET_REQUESTS, BAD_COMMUNITY_USES))
        counted = (IN_SET_REQUESTS, BAD_COMMUNITY_USES, OUT_PKTS, OUT_GET_RESPONSES)
        return Reply(reply, counted + ((OUT_NO_SUCH_NAMES,) if status == NO_SUCH_NAME else ()))

    def community_context(self, name: bytes) -> tuple[Community, bytes] | None:
        """The configured community `name` stands for and the context it names
        (b"": the default one), also as `community@<node>`; None if unknown."""
        found = self._context_or_reason(name)
        return None if isinstance(found, Reason) else found

    def _context_or_reason(self, name: bytes) -> tuple[Community, bytes] | Reason:
        """`community_context`, or why `name` is refused."""
        community = self._communities.get(name)
        if community is not None:
            return community, b""
        base, sep, node = name.rpartition(b"@")
        if sep and base in self._communities:
            if self._is_known_node(node):
                return self._communities[base], node
            return UNKNOWN_COMMUNITY_CONTEXT
        return UNKNOWN_COMMUNITY

    def _check_v3(self, message: V3Message, notification: bool,
                  data: bytes) -> Drop | V3Request | InformAnswer:
        """An SNMPv3 message. On a notification socket, only an unreportable answer
        goes on (to pysnmp). On a listening socket, a plaintext one's varbinds are
        read up to `max_varbinds` + 1, read no further, and every message goes on
        to the project's USM (agent.fast_v3): USM decides before any tooBig."""
        pdu = message.pdu
        if notification:
            if message.flags & FLAG_REPORTABLE or pdu is not None and pdu.tag not in ANSWERS:
                # Only a request is reportable (RFC 3412 6.4): answers never are.
                return Drop((NO_HANDLER,))
            if pdu is not None and \
                    len(pdu.read_varbinds(data, self._max_varbinds)) > self._max_varbinds:
                return Drop((SILENT_DROP,))
            return INFORM_ANSWER
        varbinds = None
        if pdu is not None:  # encrypted: read once decrypted (agent.fast_v3)
            # Over the limit: read no further; USM decides, then tooBig (agent.fast_v3).
            varbinds = pdu.read_varbinds(data, self._max_varbinds)
        return V3Request(message, varbinds)

    def charge(self, domain: Sequence[int], address: Any, seconds: float) -> None:
        """What handling a datagram of `address` took (the CPU governor's account)."""
        if self.governor is not None and not is_notification_domain(domain):
            self.governor.charge(address[0], seconds)

    def _log_governed(self, address: Any) -> None:
        """One line per burst (drops BURST_GAP_S apart) of what the governor drops."""
        governor = self.governor
        assert governor is not None
        now = time.monotonic()
        if now - self._governor_drop_at > BURST_GAP_S:
            log.warning("over the CPU budget of %g of a core for requests: dropping the "
                        "datagrams of the sources that cost most, %s first (and maybe "
                        "others); %d dropped since start", governor.budget,
                        source_address(address), governor.dropped)
        self._governor_drop_at = now

    def _log_rate_limited(self, address: Any) -> None:
        assert self.limiter is not None
        if self.limiter.starts_burst():
            log.warning("dropping requests beyond %s from %s (and maybe other "
                        "sources); %d dropped since start", self.limiter.describe(),
                        source_address(address), self.limiter.dropped)


def allowed_from(community: Community, address: Any) -> bool:
    """Whether `community` may be used from `address` (its `source` networks)."""
    if not community.sources:
        return True
    try:
        source = ipaddress.ip_address(source_address(address))
    except ValueError:
        return False
    mapped = getattr(source, "ipv4_mapped", None)
    source = mapped or source
    return any(source in network for network in community.sources)

"""Every datagram's one decision: dropped, answered, or handed on.

`Decision.decide` takes a datagram to its Verdict, each with what to count: Drop, Reply, or
ToResponders (the command responders answer); or, on a notification socket, to InformAnswer
(pysnmp's message processing matches it to an inform). It reads top to bottom: the limits,
a repeated read (agent.repeats), the header checks (agent.prefilter), then SNMPv3 through the
project's USM (agent.fast_v3), then a v1/v2c request by the fast read path (agent.fast_reads)
or the command responders (agent.handover). No pysnmp class is subclassed here; the
datagram's counts, begun by the caller, are added to. The pipeline: docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ibsnmp.wire.header import SET, V3Message, Varbind

from .pending_counts import Counter
from .prefilter import (IN_REQUEST, Drop, InformAnswer, PassedRequest, Prefilter, Reply,
                        ToResponders, V3Request, Verdict, is_notification_domain)


class V3Requests(Protocol):
    """The project's USM (agent.fast_v3.FastV3)."""

    def handle(self, message: V3Message, datagram: bytes,
               varbinds: tuple[Varbind, ...] | None = None, sender: Any = None) -> Verdict: ...


class FastReader(Protocol):
    """The fast read path (agent.fast_reads.FastReads)."""

    def answer(self, data: bytes, passed: PassedRequest) -> bytes | None: ...

    def repeat(self, data: bytes, address: Any) -> bytes | None: ...


class CommandResponders(Protocol):
    """pysnmp's command responders, handed a request (agent.handover.Handover)."""

    def answer_community(self, data: bytes,
                         passed: PassedRequest) -> tuple[bytes | None, dict[Counter, int]]: ...


class RequestCounts(Protocol):
    """The datagram's counts (agent.pending_counts.PendingCounts)."""

    def count(self, counter: Counter) -> None: ...


class Decision:
    """The decision for the agent's listening and notification sockets.

    Built complete: the header checks, the USM, the fast read path and the
    command responders are given, and `use_fast_reads` says whether reads
    take the fast path ([limits] fast_path). A reload gives new header checks
    (`prefilter`) and a new `use_fast_reads`; nothing else changes."""

    def __init__(self, prefilter: Prefilter, v3: V3Requests, fast_reads: FastReader,
                 handover: CommandResponders, counts: RequestCounts, *,
                 use_fast_reads: bool) -> None:
        self.prefilter = prefilter
        self.use_fast_reads = use_fast_reads
        self._v3 = v3
        self._fast_reads = fast_reads
        self._handover = handover
        self._counts = counts

    def decide(self, domain: Sequence[int], address: Any,
               data: bytes) -> Verdict | InformAnswer:
        """What happens to `data`, received on `domain` from `address`."""
        prefilter = self.prefilter
        notification = is_notification_domain(domain)
        if not notification:
            dropped = prefilter.admit(address)
            if dropped is not None:
                return dropped
            if self.use_fast_reads:
                repeated = self._fast_reads.repeat(data, address)
                if repeated is not None:
                    return Reply(repeated)
        checked = prefilter.check_header(notification, address, data)
        if isinstance(checked, (Drop, Reply, InformAnswer)):
            return checked
        if isinstance(checked, V3Request):
            return self._v3.handle(checked.message, data, checked.varbinds, address)
        return self._answer_community(data, checked)

    def _answer_community(self, data: bytes, passed: PassedRequest) -> Reply | ToResponders:
        """A v1/v2c request: the fast read's answer, else the command responders'."""
        tag = passed.message.pdu.tag
        for counter in IN_REQUEST[tag]:
            self._counts.count(counter)  # before reading: a GET of snmpInGetRequests sees itself
        if self.use_fast_reads and tag != SET:
            reply = self._fast_reads.answer(data, passed)
            if reply is not None:
                return Reply(reply)
        handover = self._handover
        return ToResponders(lambda: handover.answer_community(data, passed))

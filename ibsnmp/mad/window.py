"""Many MADs in flight: a window of outstanding requests, each with its own
timeout and retries, so a sweep costs about its longest chain of answers
rather than the sum of round trips.

The loop is synchronous on purpose: under ibsim the port's descriptor is
emulated by the preloaded library and cannot join an event loop's epoll,
so callers from asyncio run `drain` in a worker thread.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ibsnmp.mad.umad import Address, UmadPort, reply_tid, with_transaction_id

# Called with the answer, or None when every try timed out.
ReplyHandler = Callable[[bytes | None], None]


@dataclass
class _Outstanding:
    request: bytes
    address: Address
    handler: ReplyHandler
    tries_left: int
    deadline: float = 0.0


@dataclass
class WindowStats:
    sent: int = 0
    answered: int = 0
    retried: int = 0
    timed_out: int = 0
    stray: int = 0  # answers to nothing outstanding (late duplicates of a retry)


@dataclass
class MadWindow:
    """Up to `size` requests in flight on `port`; handlers may submit more."""

    port: UmadPort
    size: int = 32
    timeout: float = 0.2
    retries: int = 2
    stats: WindowStats = field(default_factory=WindowStats)

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError("a window holds at least one MAD")
        self._waiting: deque[_Outstanding] = deque()
        self._in_flight: dict[int, _Outstanding] = {}
        # (deadline, TID) in sending order: with one timeout for all, deadlines
        # only grow, so the earliest live one is at the left.
        self._deadlines: deque[tuple[float, int]] = deque()

    def submit(self, mad: bytes, address: Address, handler: ReplyHandler) -> None:
        """Queue `mad`; `handler` runs from `drain` with its answer (or None)."""
        self._waiting.append(_Outstanding(mad, address, handler, self.retries))

    def drain(self) -> WindowStats:
        """Send and receive until nothing is queued or in flight."""
        while self._waiting or self._in_flight:
            self._fill()
            while self._deadlines[0][1] not in self._in_flight:
                self._deadlines.popleft()  # answered already
            answer = self.port.receive(max(self._deadlines[0][0] - time.monotonic(), 0.0))
            if answer is not None:
                self._deliver(answer)
            self._expire(time.monotonic())
        return self.stats

    def _fill(self) -> None:
        while self._waiting and len(self._in_flight) < self.size:
            self._send(self._waiting.popleft())

    def _send(self, item: _Outstanding) -> None:
        tid = self.port.new_transaction_id()
        item.request = with_transaction_id(item.request, tid)
        item.deadline = time.monotonic() + self.timeout
        self._in_flight[tid] = item
        self._deadlines.append((item.deadline, tid))
        self.port.send(item.request, item.address)
        self.stats.sent += 1

    def _deliver(self, answer: bytes) -> None:
        item = self._in_flight.pop(reply_tid(answer), None)
        if item is None:
            self.stats.stray += 1
            return
        self.stats.answered += 1
        item.handler(answer)

    def _expire(self, now: float) -> None:
        while self._deadlines and self._deadlines[0][0] <= now:
            _, tid = self._deadlines.popleft()
            item = self._in_flight.pop(tid, None)
            if item is None:
                continue  # answered in time
            if item.tries_left > 0:
                item.tries_left -= 1
                self.stats.retried += 1
                self._send(item)  # a new TID, so a late first answer counts as stray
            else:
                self.stats.timed_out += 1
                item.handler(None)

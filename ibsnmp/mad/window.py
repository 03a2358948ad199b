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


class _Outstanding:
    __slots__ = ("request", "address", "handler", "tries_left")

    def __init__(self, request: bytes, address: Address, handler: ReplyHandler,
                 tries_left: int) -> None:
        self.request = request
        self.address = address
        self.handler = handler
        self.tries_left = tries_left


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
        # One loop with its names bound locally: a sweep runs it once per MAD.
        waiting, in_flight, deadlines = self._waiting, self._in_flight, self._deadlines
        receive, stats, clock = self.port.receive, self.stats, time.monotonic
        while waiting or in_flight:
            while waiting and len(in_flight) < self.size:
                self._send(waiting.popleft())
            while deadlines[0][1] not in in_flight:
                deadlines.popleft()  # answered already
            answer = receive(max(deadlines[0][0] - clock(), 0.0))
            if answer is not None:
                item = in_flight.pop(reply_tid(answer), None)
                if item is None:
                    stats.stray += 1
                else:
                    stats.answered += 1
                    item.handler(answer)
            if deadlines and deadlines[0][0] <= clock():
                self._expire(clock())
        return stats

    def _send(self, item: _Outstanding) -> None:
        tid = self.port.new_transaction_id()
        item.request = with_transaction_id(item.request, tid)
        self._in_flight[tid] = item
        self._deadlines.append((time.monotonic() + self.timeout, tid))
        self.port.send(item.request, item.address)
        self.stats.sent += 1

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

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

from ibsnmp.mad.umad import TID_OURS_END, TID_OURS_START, Address, UmadPort

# Called with the answer, or None when every try timed out.
ReplyHandler = Callable[[bytes | None], None]

# A request: (MAD, address, handler, tries left). A tuple, not an object: a
# sweep queues thousands and reads them in one hot loop.
_Outstanding = tuple[bytes, Address, ReplyHandler, int]


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
    # The window is topped up to `size` once no more than this many are in
    # flight (None: three quarters of the size). Sending in bursts lets the
    # fabric's side answer in bursts too, rather than wake once per MAD.
    refill_at: int | None = None

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError("a window holds at least one MAD")
        self._refill_at = self.size * 3 // 4 if self.refill_at is None else self.refill_at
        if not 0 <= self._refill_at < self.size:
            raise ValueError(f"a window of {self.size} is refilled at 0..{self.size - 1} "
                             f"in flight, not {self.refill_at}")
        self._waiting: deque[_Outstanding] = deque()
        self._in_flight: dict[int, _Outstanding] = {}
        # (deadline, TID) in sending order: with one timeout for all, deadlines
        # only grow, so the earliest live one is at the left.
        self._deadlines: deque[tuple[float, int]] = deque()

    def submit(self, mad: bytes, address: Address, handler: ReplyHandler) -> None:
        """Queue `mad`; `handler` runs from `drain` with its answer (or None).
        The window writes each try's transaction ID as it sends it."""
        self._waiting.append((mad, address, handler, self.retries))

    def drain(self) -> WindowStats:
        """Send and receive until nothing is queued or in flight."""
        # One loop with its names bound locally: a sweep runs it once per MAD.
        waiting, in_flight, deadlines = self._waiting, self._in_flight, self._deadlines
        port, stats, clock, size = self.port, self.stats, time.monotonic, self.size
        receive, send, new_tid = port.receive, port.send, port.new_transaction_id
        next_waiting, from_bytes, refill_at = waiting.popleft, int.from_bytes, self._refill_at
        while waiting or in_flight:
            if waiting and len(in_flight) <= refill_at:
                deadline = clock() + self.timeout
                while waiting and len(in_flight) < size:
                    item = next_waiting()
                    tid = new_tid()
                    in_flight[tid] = item
                    deadlines.append((deadline, tid))
                    send(item[0], item[1], tid)
                    stats.sent += 1
            while deadlines[0][1] not in in_flight:
                deadlines.popleft()  # answered already
            answer = receive(max(deadlines[0][0] - clock(), 0.0))
            if answer is not None:
                asked = in_flight.pop(from_bytes(answer[TID_OURS_START:TID_OURS_END], "big"),
                                      None)
                if asked is None:
                    stats.stray += 1
                else:
                    stats.answered += 1
                    asked[2](answer)
            if deadlines and deadlines[0][0] <= clock():
                self._expire(clock())
        return stats

    def _send(self, item: _Outstanding) -> None:
        tid = self.port.new_transaction_id()
        self._in_flight[tid] = item
        self._deadlines.append((time.monotonic() + self.timeout, tid))
        self.port.send(item[0], item[1], tid)
        self.stats.sent += 1

    def _expire(self, now: float) -> None:
        while self._deadlines and self._deadlines[0][0] <= now:
            _, tid = self._deadlines.popleft()
            item = self._in_flight.pop(tid, None)
            if item is None:
                continue  # answered in time
            mad, address, handler, tries_left = item
            if tries_left > 0:
                self.stats.retried += 1
                # A new TID, so a late first answer counts as stray.
                self._send((mad, address, handler, tries_left - 1))
            else:
                self.stats.timed_out += 1
                handler(None)

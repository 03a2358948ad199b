"""Per-target buffering: a bounded queue that counts what it drops, a rate limiter.

A receiver that is slow or down must cost the agent bounded memory and no
waiting: `put` never blocks; when the queue is full the *oldest* waiting
notification is dropped (the receiver gets the newest state when it comes
back) and counted. Dropping is logged once when a burst of drops starts and
once, with the count, when the queue has drained again: never per message.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger("ibsnmp.traps")

T = TypeVar("T")


class DropQueue(Generic[T]):
    """FIFO of at most `size` items; `put` drops the oldest when full."""

    def __init__(self, size: int, label: str) -> None:
        if size < 1:
            raise ValueError("queue size must be at least 1")
        self.size = size
        self.label = label
        self.dropped = 0  # since start
        self._burst = 0  # drops since the queue last drained
        self._items: deque[T] = deque()
        self._ready = asyncio.Event()

    def __len__(self) -> int:
        return len(self._items)

    def put(self, item: T) -> None:
        """Never blocks; callable from any code running in the event loop."""
        if len(self._items) >= self.size:
            self._items.popleft()
            self.dropped += 1
            self._burst += 1
            if self._burst == 1:
                log.warning("trap target %s: queue full (%d waiting), dropping the oldest "
                            "notifications", self.label, self.size)
        self._items.append(item)
        self._ready.set()

    async def get(self) -> T:
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        item = self._items.popleft()
        if not self._items:
            self._end_burst()
        return item

    def drain(self) -> list[T]:
        """Take everything still waiting (at shutdown)."""
        items = list(self._items)
        self._items.clear()
        self._end_burst()
        return items

    def _end_burst(self) -> None:
        if self._burst:
            log.warning("trap target %s: dropped %d notifications (queue of %d full); "
                        "%d dropped since start", self.label, self._burst, self.size,
                        self.dropped)
            self._burst = 0


class RateLimiter:
    """Token bucket: at most `rate` per second on average, bursts of 50 ms worth."""

    BURST_SECONDS = 0.05

    def __init__(self, rate: float, clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.capacity = max(1.0, rate * self.BURST_SECONDS)
        self._tokens = self.capacity
        self._clock = clock
        self._last = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate)
        self._last = now

    async def acquire(self) -> None:
        self._refill()
        while self._tokens < 1.0:
            await asyncio.sleep((1.0 - self._tokens) / self.rate)
            self._refill()
        self._tokens -= 1.0

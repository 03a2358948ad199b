"""Requests per second per source address: token buckets in a bounded table.

Each source has a bucket of `rate` tokens per second holding at most one
second's worth (at least one), so a manager may burst as long as it keeps
to the rate on average. The table keeps the most recently seen sources
only (`max_sources`): a flood from many (spoofed) addresses evicts the
oldest buckets, which costs an evicted source nothing but a full bucket.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

DEFAULT_MAX_SOURCES = 4096


class SourceRateLimiter:
    """`allow(source)` says whether one more request from `source` fits its rate."""

    __slots__ = ("rate", "capacity", "max_sources", "dropped", "_buckets", "_clock")

    def __init__(self, rate: float, *, max_sources: int = DEFAULT_MAX_SOURCES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0 or max_sources < 1:
            raise ValueError("rate and max_sources must be positive")
        self.rate = rate
        self.capacity = max(1.0, rate)
        self.max_sources = max_sources
        self.dropped = 0
        # source -> [tokens, time of the last refill]
        self._buckets: OrderedDict[str, list[float]] = OrderedDict()
        self._clock = clock

    def __len__(self) -> int:
        return len(self._buckets)

    def allow(self, source: str) -> bool:
        now = self._clock()
        bucket = self._buckets.get(source)
        if bucket is None:
            if len(self._buckets) >= self.max_sources:
                self._buckets.popitem(last=False)
            bucket = self._buckets[source] = [self.capacity, now]
        else:
            self._buckets.move_to_end(source)
            bucket[0] = min(self.capacity, bucket[0] + (now - bucket[1]) * self.rate)
            bucket[1] = now
        if bucket[0] >= 1.0:
            bucket[0] -= 1.0
            return True
        self.dropped += 1
        return False

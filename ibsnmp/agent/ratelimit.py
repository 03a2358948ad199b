"""Requests per second: per source address, and over all sources together.

Each source has a bucket of `rate` tokens per second holding at most one
second's worth (at least one), so a manager may burst as long as it keeps
to the rate on average. The table keeps the most recently seen sources
only (`max_sources`): a flood from many (spoofed) addresses evicts the
oldest buckets, which costs an evicted source nothing but a full bucket.
That is why a per-source limit alone cannot bound the agent's work: the
aggregate bucket (`RequestLimits`) caps what all sources get together.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

DEFAULT_MAX_SOURCES = 4096
BURST_GAP_S = 10.0  # drops this far apart are separate bursts (logged again)


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


class AggregateRateLimiter:
    """One bucket for every source together: `allow()` for one more request of any."""

    __slots__ = ("rate", "capacity", "dropped", "_tokens", "_last", "_clock")

    def __init__(self, rate: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.capacity = max(1.0, rate)
        self.dropped = 0
        self._clock = clock
        self._tokens = self.capacity
        self._last = clock()

    def allow(self) -> bool:
        now = self._clock()
        self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        self.dropped += 1
        return False


class RequestLimits:
    """The per-source limit, then the aggregate one; `dropped` counts what either refused.

    A source over its own rate takes nothing from the aggregate bucket, so
    one flooding source cannot use up what the others share.
    """

    __slots__ = ("per_source", "aggregate", "_clock", "_last_drop")

    def __init__(self, per_source: float | None, aggregate: float | None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.per_source = SourceRateLimiter(per_source, clock=clock) if per_source else None
        self.aggregate = AggregateRateLimiter(aggregate, clock=clock) if aggregate else None
        self._clock = clock
        self._last_drop = float("-inf")

    def starts_burst(self) -> bool:
        """After a refusal of `allow`: whether it starts a burst (none in the
        BURST_GAP_S before it), which its caller logs once."""
        now = self._clock()
        starts, self._last_drop = now - self._last_drop > BURST_GAP_S, now
        return starts

    def __bool__(self) -> bool:
        return self.per_source is not None or self.aggregate is not None

    @property
    def dropped(self) -> int:
        return sum(limiter.dropped for limiter in (self.per_source, self.aggregate)
                   if limiter is not None)

    def allow(self, source: str) -> bool:
        if self.per_source is not None and not self.per_source.allow(source):
            return False
        return self.aggregate is None or self.aggregate.allow()

    def describe(self) -> str:
        """The limits in force, as the log names them."""
        parts = []
        if self.per_source is not None:
            parts.append(f"{self.per_source.rate:g} per second per source")
        if self.aggregate is not None:
            parts.append(f"{self.aggregate.rate:g} per second in all")
        return " and ".join(parts)

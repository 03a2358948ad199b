"""The agent's CPU, shared fairly among the sources that ask for it.

What each datagram costs to handle is charged to its source address. While the agent's
recent use stays within its budget (`budget` of one core), every source is served. Above it
a source is served only while its own recent use is within its max-min fair share, so under
a flood the sources that cost most are dropped first, and a manager asking for little is
never dropped; a request-count cap could only drop at random among everyone. It cannot stop
a flood from ever new (spoofed) addresses: a forgotten or new source starts from nothing,
and the per-datagram cost of refusing those is what bounds them.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable

DEFAULT_BUDGET = 0.8  # of one core, for requests: the rest is the provider's and the loop's
HALF_LIFE_S = 1.0
LEVEL_EVERY_S = 0.1
# Sums are decayed at most this often (charges within it are added as they
# come): a relative error below 1 - exp(-DECAY_STEP_S / tau), 0.7% at the
# default half-life, for one math.exp per source and step, not per datagram.
DECAY_STEP_S = 0.01
DEFAULT_MAX_SOURCES = 4096


class CpuGovernor:
    """`admit(source)` before a datagram is handled, `charge(source, seconds)`
    after; `dropped` counts the datagrams `admit` refused.

    Recent use is an exponentially decayed sum of the seconds charged
    (`half_life`), per source and in all: a steady use of r seconds per
    second sums to r * tau, tau = half_life / ln 2. The fair level is worked
    out again at most every LEVEL_EVERY_S while over budget, from the
    sources' sums. The table keeps the most recently charged sources
    (`max_sources`)."""

    __slots__ = ("budget", "dropped", "max_sources", "_tau", "_limit", "_sources", "_total",
                 "_total_at", "_level", "_level_at", "_clock")

    def __init__(self, budget: float = DEFAULT_BUDGET, *, half_life: float = HALF_LIFE_S,
                 max_sources: int = DEFAULT_MAX_SOURCES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not 0 < budget <= 1 or half_life <= 0 or max_sources < 1:
            raise ValueError("budget in (0, 1], half_life and max_sources positive")
        self.budget = budget
        self.dropped = 0
        self.max_sources = max_sources
        self._tau = half_life / math.log(2)
        self._limit = budget * self._tau  # the decayed sum a use of `budget` comes to
        # source -> [decayed seconds, when last decayed]
        self._sources: OrderedDict[str, list[float]] = OrderedDict()
        self._total = 0.0
        self._total_at = clock()
        self._level = math.inf  # the fair share, as a decayed sum (inf: not over budget)
        self._level_at = -math.inf
        self._clock = clock

    def admit(self, source: str) -> bool:
        """Whether to handle one more datagram of `source` now."""
        if self._total <= self._limit:
            return True  # within the budget before any decay: no clock read
        now = self._clock()
        if self._decayed_total(now) <= self._limit:
            return True
        if now - self._level_at >= LEVEL_EVERY_S:
            self._level, self._level_at = self._fair_level(now), now
        entry = self._sources.get(source)
        if entry is None or _decay(entry[0], now - entry[1], self._tau) <= self._level:
            return True
        self.dropped += 1
        return False

    def charge(self, source: str, seconds: float) -> None:
        """`seconds` of handling spent on a datagram of `source`."""
        now = self._clock()
        if now - self._total_at >= DECAY_STEP_S:
            self._decayed_total(now)
        self._total += seconds
        entry = self._sources.get(source)
        if entry is None:
            if len(self._sources) >= self.max_sources:
                self._sources.popitem(last=False)
            self._sources[source] = [seconds, now]
            return
        self._sources.move_to_end(source)
        if now - entry[1] >= DECAY_STEP_S:
            entry[0] = _decay(entry[0], now - entry[1], self._tau)
            entry[1] = now
        entry[0] += seconds

    def use(self) -> float:
        """The recent use, in seconds of CPU per second (1.0: a whole core)."""
        return self._decayed_total(self._clock()) / self._tau

    def _decayed_total(self, now: float) -> float:
        self._total = _decay(self._total, now - self._total_at, self._tau)
        self._total_at = now
        return self._total

    def _fair_level(self, now: float) -> float:
        """The max-min fair share of the budget (a decayed sum) among the
        sources' uses now: the lighter sources keep what they use, the rest
        split what is left evenly."""
        tau = self._tau
        uses = sorted(_decay(used, now - at, tau) for used, at in self._sources.values())
        left = self._limit
        for heavier, use in enumerate(uses):
            remaining = len(uses) - heavier
            if use * remaining > left:
                return left / remaining
            left -= use
        return math.inf


def _decay(value: float, elapsed: float, tau: float) -> float:
    return value * math.exp(-elapsed / tau) if elapsed > 0 else value

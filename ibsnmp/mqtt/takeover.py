"""Telling a client id used twice from a flaky network.

An MQTT broker keeps one session per client id: when a second client
connects with the id of one already connected, the broker closes the
first ("session taken over"), which reconnects and closes the second in
turn, over and over. From inside, each sees connections that end seconds
after they were made. `Takeovers` watches this client's connections and
says, once, when `count` of them in `period` seconds each lasted less than
`short` seconds: likely another client with the same id.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

SHORT_S = 10.0  # a connection that ends sooner than this, after CONNACK
# What to log when `Takeovers.lost` says so (the broker's label, the client id).
TAKEOVER = ("mqtt: the broker %s keeps closing this client's connections seconds after they are made: "
            "another client probably connects with the same client id %r (two publishers on one host, "
            "containers sharing a host name?); give each its own --client-id")
COUNT = 3
PERIOD_S = 300.0


class Takeovers:
    """`connected()` when a connection is made, `lost()` when it ends;
    `lost` returns True the one time the pattern is first seen (then the
    caller logs), and again only after a connection has lasted."""

    def __init__(self, *, short: float = SHORT_S, count: int = COUNT, period: float = PERIOD_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._short, self._count, self._period, self._clock = short, count, period, clock
        self._since: float | None = None
        self._short_ends: deque[float] = deque(maxlen=count)
        self._said = False

    def connected(self) -> None:
        self._since = self._clock()

    def lost(self) -> bool:
        since, self._since = self._since, None
        if since is None:
            return False  # never connected: an unreachable broker, not a takeover
        now = self._clock()
        if now - since >= self._short:
            self._short_ends.clear()  # a connection that lasted: whatever it was is over
            self._said = False
            return False
        self._short_ends.append(now)
        if self._said or len(self._short_ends) < self._count or now - self._short_ends[0] > self._period:
            return False
        self._said = True
        return True

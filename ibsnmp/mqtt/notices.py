"""Log lines about what remote clients send, at most one per key a minute.

A publisher, or anything else the broker lets in, decides how many bad or
refused messages it sends; the log must not grow with them. `Notices.say`
writes the first line of a key (a publisher, a node and a kind of
trouble), counts the next ones within `window` seconds, and adds that
count to the key's next line. At most `max_keys` keys are remembered (the
oldest is forgotten first): memory is bounded whatever the keys are.
The clock is injected; the module does no I/O but logging.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable

WINDOW_S = 60.0
MAX_KEYS = 1024


class Notices:
    """Rate-limited lines on `logger` (see the module doc)."""

    def __init__(self, logger: logging.Logger, *, window: float = WINDOW_S, max_keys: int = MAX_KEYS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._log = logger
        self._window = window
        self._max_keys = max_keys
        self._clock = clock
        self._open: dict[Hashable, list[float]] = {}  # key -> [window opened, lines held back]

    def say(self, key: Hashable, level: int, message: str, *args: object) -> bool:
        """Log `message % args` unless `key` has had a line within the window
        (then count it); True if a line was written."""
        now = self._clock()
        entry = self._open.get(key)
        if entry is not None and now - entry[0] < self._window:
            entry[1] += 1
            return False
        held = int(entry[1]) if entry is not None else 0
        self._open.pop(key, None)
        if len(self._open) >= self._max_keys:
            del self._open[next(iter(self._open))]
        self._open[key] = [now, 0]
        if held:
            message += f" ({held} more like it since the last such line)"
        self._log.log(level, message, *args)
        return True

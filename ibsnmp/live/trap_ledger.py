"""One notification per change when two sources tell of it.

In live mode a trap can come twice: the SM forwards the SMA's trap as a Report, and the
provider's own poll sees the same change (trap 128 from a port that crossed Down; 129/130 from
PortCounters a threshold watcher reads). Whichever comes first is sent; the other, if it comes
within `window` seconds (two polls: a poll may start just before the change), is dropped. An
entry covers one later arrival only, and one nobody matched expires after the window, so a
later change is sent again. Matched by (trap, node GUID, port): 128 names its switch only.
Reference: docs/mad-layer.md, 'Where each live-mode value comes from'.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ibsnmp.events import TrapEvent

__all__ = ["TrapLedger"]

Key = tuple[int, int, int | None]


def _key(event: TrapEvent) -> Key:
    return int(event.trap), event.node_guid, event.port


class TrapLedger:
    """`reported(event)` for a Report from the SM, `polled(event)` for a
    trap a poll found: True if it is to be sent."""

    def __init__(self, window: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.window = window
        self._clock = clock
        self._reported: dict[Key, float] = {}  # sent from a Report, at
        self._polled: dict[Key, float] = {}  # sent from a poll, at

    def reported(self, event: TrapEvent) -> bool:
        return self._take(event, first=self._polled, then=self._reported)

    def polled(self, event: TrapEvent) -> bool:
        return self._take(event, first=self._reported, then=self._polled)

    def _take(self, event: TrapEvent, first: dict[Key, float], then: dict[Key, float]) -> bool:
        now = self._clock()
        for entries in (first, then):
            for key in [k for k, at in entries.items() if now - at > self.window]:
                del entries[key]
        key = _key(event)
        if first.pop(key, None) is not None:
            return False  # the other source told of this change already
        then[key] = now
        return True

    def __len__(self) -> int:
        return len(self._reported) + len(self._polled)

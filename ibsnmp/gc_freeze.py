"""Long-lived objects out of the cyclic garbage collector's way.

A large fabric's snapshot is many objects that live for minutes or for the whole run, and
CPython's cyclic collector scans every tracked object at each full collection; on an agent
that takes many updates a second (an MQTT aggregator) those collections cost a sizeable share
of its CPU. Once a large structure is built, `settle` collects what is garbage, the frozen
objects included, and freezes the rest (gc.freeze): until the next settling the collector no
longer scans them. Reference counting still frees a frozen snapshot the moment nothing holds
it; a cycle frozen while alive waits for the next settling.
"""

from __future__ import annotations

import gc
import logging
import time

__all__ = ["settle", "note_replaced", "LARGE_CHANGE"]

log = logging.getLogger(__name__)

# Nodes replaced since the last settling (a swap of an unknown number
# counts as a large change) that make one worth doing.
LARGE_CHANGE = 256
# At most one settling in this many seconds: a full collection of a large
# heap holds the event loop for a moment.
_PERIOD_S = 60.0
_last = -_PERIOD_S
_pending = 0


def settle() -> None:
    """Collect all the garbage there is now, frozen or not, and freeze every
    object that survives.  Unfreezing first lets a full collection reach
    what an earlier settling froze: a cycle frozen while it was alive (a
    pending request, a task) is collected once it is garbage."""
    global _last, _pending
    started = time.perf_counter()
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    _last, _pending = time.monotonic(), 0
    log.debug("heap settled in %.3f s: %d objects frozen", time.perf_counter() - started,
              gc.get_freeze_count())


def note_replaced(replaced: int | None) -> None:
    """A snapshot replaced `replaced` nodes (None: an unknown number):
    `settle` once the nodes replaced since the last settling make a large
    change and none was settled lately.  An aggregator filling up over its
    first minute is settled whole, a few nodes at a time."""
    global _pending
    _pending += LARGE_CHANGE if replaced is None else replaced
    if _pending >= LARGE_CHANGE and time.monotonic() - _last >= _PERIOD_S:
        settle()

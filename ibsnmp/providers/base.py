"""What every data provider offers the agent."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Set
from typing import Protocol

from ibsnmp.events import TrapEvent
from ibsnmp.gc_freeze import note_replaced
from ibsnmp.fabric.model import Fabric
from ibsnmp.fabric.swap import Swap


EventListener = Callable[[TrapEvent], None]
SwapListener = Callable[[Swap], None]

log = logging.getLogger("ibsnmp.providers")


class Provider(Protocol):
    """Fills the fabric model. `snapshot` is swapped atomically, never mutated;
    `epoch` is the monotonic time that elapsed-time values count from."""

    @property
    def snapshot(self) -> Fabric: ...

    @property
    def epoch(self) -> float: ...

    def add_listener(self, listener: EventListener) -> None:
        """Call `listener` for every event from now on (synchronously, from
        the provider's task: a listener must not block)."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class ProviderCore:
    """What the providers share: the snapshot served now, the epoch that
    elapsed time counts from (monotonic seconds on `clock`, kept as `_now`),
    and the listeners events go to. A subclass sets `_fabric` before it is
    read and swaps it with one assignment, which tells the swap listeners
    (add_swap_listener) that any node may have changed; `_swap_in` tells
    them which did."""

    _served: Fabric
    _swap_listeners: tuple[SwapListener, ...] = ()

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._listeners: list[EventListener] = []
        # Not `_clock`: subclasses keep clocks of their own under that name.
        self._now = clock
        self._epoch = clock()

    @property
    def _fabric(self) -> Fabric:
        return self._served

    @_fabric.setter
    def _fabric(self, fabric: Fabric) -> None:
        self._swap_in(fabric, _changed_nodes(getattr(self, "_served", None), fabric))

    def _swap_in(self, fabric: Fabric, changed: Set[int] | None, valued: Set[int] | None = None) -> None:
        """Serve `fabric`; `changed`: the GUIDs of the nodes added, removed
        or replaced since the snapshot served before, `valued` those whose
        counter values changed (None: unknown)."""
        old = getattr(self, "_served", None)
        self._served = fabric
        if old is None:  # the first snapshot: nobody has seen one before (the agent settles it at start)
            return
        # A structure change built objects that will live (heap.note_replaced);
        # counter values alone are freed as they are replaced.
        structure_changed = fabric.lineage is not old.lineage
        note_replaced((None if changed is None else len(changed)) if structure_changed else 0)
        swap = Swap(old, fabric, changed, valued)
        for listener in self._swap_listeners:
            try:
                listener(swap)
            except Exception:  # a listener's bug must not stop the provider
                log.exception("snapshot listener failed")

    @property
    def snapshot(self) -> Fabric:
        return self._served

    def add_swap_listener(self, listener: SwapListener) -> None:
        """Call `listener` with every swap of the snapshot from now on
        (synchronously, from whatever swaps it: keep it quick, and look
        only at `swap.changed` when it is known)."""
        self._swap_listeners = (*self._swap_listeners, listener)

    @property
    def epoch(self) -> float:
        return self._epoch

    def elapsed(self) -> float:
        return self._now() - self._epoch

    def add_listener(self, listener: EventListener) -> None:
        self._listeners.append(listener)

    def _emit(self, event: TrapEvent) -> None:
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:  # a listener's bug must not stop the provider
                log.exception("event listener failed on %s", event.trap.name)


def _changed_nodes(old: Fabric | None, new: Fabric) -> Set[int] | None:
    """The nodes `new` changed from `old` as its lineage tells: none when it
    has the same structure, those its change touched when it follows `old`
    directly; None when that is not known."""
    if old is None:
        return None
    if new.lineage is old.lineage:
        return frozenset()
    if new.lineage.parent == old.lineage.serial:
        return new.lineage.nodes
    return None


async def cancel_and_wait(tasks: Iterable[asyncio.Task[None]]) -> None:
    """Cancel the provider's tasks and wait until each has ended."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task

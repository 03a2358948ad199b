"""What every data provider offers the agent."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from ibsnmp.events import TrapEvent
from ibsnmp.fabric.model import Fabric

EventListener = Callable[[TrapEvent], None]
SwapListener = Callable[[Fabric], None]

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
    elapsed time counts from, and the listeners events go to. A subclass
    sets `_fabric` before it is read and swaps it with one assignment,
    which tells the swap listeners (add_swap_listener)."""

    _served: Fabric
    _swap_listeners: tuple[SwapListener, ...] = ()

    def __init__(self) -> None:
        self._listeners: list[EventListener] = []
        self._epoch = time.monotonic()

    @property
    def _fabric(self) -> Fabric:
        return self._served

    @_fabric.setter
    def _fabric(self, fabric: Fabric) -> None:
        self._served = fabric
        for listener in self._swap_listeners:
            try:
                listener(fabric)
            except Exception:  # a listener's bug must not stop the provider
                log.exception("snapshot listener failed")

    @property
    def snapshot(self) -> Fabric:
        return self._served

    def add_swap_listener(self, listener: SwapListener) -> None:
        """Call `listener` with every snapshot swapped in from now on
        (synchronously, from whatever swaps it: keep it quick)."""
        self._swap_listeners = (*self._swap_listeners, listener)

    @property
    def epoch(self) -> float:
        return self._epoch

    def elapsed(self) -> float:
        return time.monotonic() - self._epoch

    def add_listener(self, listener: EventListener) -> None:
        self._listeners.append(listener)

    def _emit(self, event: TrapEvent) -> None:
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:  # a listener's bug must not stop the provider
                log.exception("event listener failed on %s", event.trap.name)


async def cancel_and_wait(tasks: Iterable[asyncio.Task[None]]) -> None:
    """Cancel the provider's tasks and wait until each has ended."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task

"""What every data provider offers the agent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ibsnmp.events import TrapEvent
from ibsnmp.fabric.model import Fabric

EventListener = Callable[[TrapEvent], None]


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

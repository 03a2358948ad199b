"""What every data provider offers the agent."""

from __future__ import annotations

from typing import Protocol

from ibsnmp.fabric.model import Fabric


class Provider(Protocol):
    """Fills the fabric model. `snapshot` is swapped atomically, never mutated;
    `epoch` is the monotonic time that elapsed-time values count from."""

    @property
    def snapshot(self) -> Fabric: ...

    @property
    def epoch(self) -> float: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

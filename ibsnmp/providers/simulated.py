"""The embedded default provider: a simulated fabric built from a spec and a seed.

Counters need no background task: the fabric model computes them from the
time elapsed since `epoch`.
"""

from __future__ import annotations

import time

from ibsnmp.events import TrapEvent
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.model import Fabric

from .base import EventListener

DEFAULT_SPEC = "fat-tree:spines=2,leaves=4,hosts=4"


class SimulatedProvider:
    def __init__(self, spec: str = DEFAULT_SPEC, seed: int = 1) -> None:
        self._fabric = build_fabric(spec, seed=seed)
        self._epoch = time.monotonic()
        self._listeners: list[EventListener] = []

    @property
    def snapshot(self) -> Fabric:
        return self._fabric

    @property
    def epoch(self) -> float:
        return self._epoch

    def add_listener(self, listener: EventListener) -> None:
        self._listeners.append(listener)

    def _emit(self, event: TrapEvent) -> None:
        for listener in self._listeners:
            listener(event)

    async def start(self) -> None:
        """Nothing to poll: the simulated fabric changes only with time."""

    async def stop(self) -> None:
        """Nothing to release."""

"""The embedded default provider: a simulated fabric built from a spec and a seed.

Counters need no background task: the fabric model computes them from the
time elapsed since `epoch`.
"""

from __future__ import annotations

import time

from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.model import Fabric

DEFAULT_SPEC = "fat-tree:spines=2,leaves=4,hosts=4"


class SimulatedProvider:
    def __init__(self, spec: str = DEFAULT_SPEC, seed: int = 1) -> None:
        self._fabric = build_fabric(spec, seed=seed)
        self._epoch = time.monotonic()

    @property
    def snapshot(self) -> Fabric:
        return self._fabric

    @property
    def epoch(self) -> float:
        return self._epoch

    async def start(self) -> None:
        """Nothing to poll: the simulated fabric changes only with time."""

    async def stop(self) -> None:
        """Nothing to release."""

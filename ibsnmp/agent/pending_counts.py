"""SNMPv2-MIB counters the fast responder adds to, applied when someone looks.

pysnmp keeps each counter as an immutable pyasn1 value: one increment
builds a new object (about 15 us), and a read request counts four or five.
The fast responder adds to plain integers instead and writes them into the
counters before anything can read them: before it reads the agent's own
objects itself, and before a message goes to pysnmp (agent.engine). Other
writers only add too, so the order of the additions does not matter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .statistics import add_to_counter


class PendingCounts:
    """Additions to counter instances (MibScalarInstance objects), by name."""

    __slots__ = ("_instances", "_pending")

    def __init__(self, instances: Mapping[str, Any]) -> None:
        self._instances = dict(instances)
        self._pending: dict[str, int] = {}

    def include(self, instances: Mapping[str, Any]) -> None:
        """Keep these counters here too (agent.fast_v3's USM statistics)."""
        self._instances.update(instances)

    def value(self, name: str) -> int:
        """The counter as a reader will see it, pending additions written."""
        return (int(self._instances[name].syntax) + self._pending.get(name, 0)) & 0xFFFFFFFF

    def add(self, name: str, amount: int) -> None:
        if name not in self._instances:
            raise KeyError(f"{name} is not a counter kept here")
        self._pending[name] = self._pending.get(name, 0) + amount

    def flush(self) -> None:
        """Write every pending addition into its counter (wrapping as Counter32 does)."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        for name, amount in pending.items():
            if amount:
                add_to_counter(self._instances[name], amount)

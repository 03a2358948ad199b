"""SNMP context names -> the fabric node they describe.

The default context ("") is the provider's designated local node. Every
node also answers under its node GUID as 16 lower-case hex digits.
IB-SM-MIB is answered in the default context when the provider knows a
fabric (its subnet managers, or links: a topology dump has no SM but is a
fabric; a lone sysfs host is neither) and in the contexts of nodes that run
an SM.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from ibsnmp.fabric.lineage import Aspect, Derived
from ibsnmp.fabric.model import Fabric
from ibsnmp.mib.api import ContextTarget
from ibsnmp.providers.base import Provider

GUID_CONTEXT = re.compile(rb"[0-9a-f]{16}")


def context_name(guid: int) -> str:
    return f"{guid:016x}"


def sm_node_guids(fabric: Fabric) -> frozenset[int]:
    return fabric.derive(_SM_NODES)


_SM_NODES = Derived("nodes running an SM", Aspect.SMS, lambda fabric: frozenset(sm.node_guid for sm in fabric.sms))


# Requests read the fabric in whole hundredths of a second, sysUpTime's
# TimeTicks: all requests of one tick read counters of one instant, so a
# model's arithmetic is done once for them, as for the names of one request
# (a flood of reads buys one computation a tick, not one a packet).
TICKS_PER_SECOND = 100


class FabricContexts:
    """A ContextResolver over whatever snapshot the provider holds right now."""

    def __init__(self, provider: Provider, clock: Callable[[], float] = time.monotonic) -> None:
        self._provider = provider
        self._clock = clock  # monotonic seconds, as the provider's epoch
        # The snapshot served last and when it was first read.
        self._seen: tuple[Fabric, float] | None = None
        # The last answer: requests of one tick on one snapshot in one context
        # (a walk's) share it rather than build an equal one each.
        self._last: tuple[bytes, Fabric, float, ContextTarget | None] | None = None

    def elapsed(self, fabric: Fabric) -> float:
        """The time a request reading `fabric` now reads it at: seconds since
        the provider's epoch, at the start of the current tick, but never
        before `fabric` was first read (so never before the change that made
        it: a port that went down in this tick has its down counted)."""
        now = self._clock() - self._provider.epoch
        seen = self._seen
        if seen is None or seen[0] is not fabric:
            seen = self._seen = (fabric, now)
        return max(int(now * TICKS_PER_SECOND) / TICKS_PER_SECOND, seen[1])

    def __call__(self, name: bytes) -> ContextTarget | None:
        fabric = self._provider.snapshot
        elapsed = self.elapsed(fabric)
        last = self._last
        if last is not None and last[2] == elapsed and last[1] is fabric and last[0] == name:
            return last[3]
        target = self._resolve(name, fabric, elapsed)
        self._last = (name, fabric, elapsed, target)
        return target

    def _resolve(self, name: bytes, fabric: Fabric, elapsed: float) -> ContextTarget | None:
        if not name:
            knows_fabric = bool(fabric.sms) or bool(fabric.links)
            # The default context speaks for the whole host.
            return ContextTarget(fabric, fabric.local_node, knows_fabric, elapsed,
                                 fabric.host_node_guids, default_context=True)
        if GUID_CONTEXT.fullmatch(name) is None:
            return None
        guid = int(name, 16)
        node = fabric.nodes.get(guid)
        if node is None:
            return None
        return ContextTarget(fabric, node, guid in sm_node_guids(fabric), elapsed)

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


class FabricContexts:
    """A ContextResolver over whatever snapshot the provider holds right now."""

    def __init__(self, provider: Provider) -> None:
        self._provider = provider

    def __call__(self, name: bytes) -> ContextTarget | None:
        fabric = self._provider.snapshot
        elapsed = time.monotonic() - self._provider.epoch
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

"""A node's own system group in its SNMP context.

In a node's context (its GUID as contextName, or `community@<guid>`) sysName, sysDescr and
sysObjectID describe that node (mib.node_identity), as a manager that discovers the fabric
node by node expects; the default context keeps the agent's own values (and sysUpTime,
sysContact, sysLocation are the agent's everywhere). pysnmp's three instances are replaced
by ones whose value depends on `context["contextTarget"]`, which ContextView puts into every
read of pysnmp's tree: the fast responder reads the same instances, so both paths agree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pysnmp.entity.engine import SnmpEngine

from ibsnmp.mib.api import ContextTarget
from ibsnmp.mib.node_identity import NODE_VALUES

NodeValue = Callable[[Any], Any]  # a fabric Node -> its value


def node_target(context: dict[str, Any]) -> ContextTarget | None:
    """The node context a read or write is for; None in the default context."""
    target: ContextTarget | None = context.get("contextTarget")
    if target is None or target.default_context:
        return None
    return target


def install_node_system_group(engine: SnmpEngine) -> None:
    """Replace pysnmp's sysName, sysDescr and sysObjectID instances by
    ones that answer the node's values in a node's context."""
    builder = engine.get_mib_builder()
    (instance_class,) = builder.import_symbols("SNMPv2-SMI", "MibScalarInstance")

    class NodeSystemInstance(instance_class):  # type: ignore[misc, valid-type]
        """The agent's value (`syntax`, which SETs and the configuration
        change) in the default context; the node's in a node's context."""

        def __init__(self, original: Any, node_value: NodeValue) -> None:
            super().__init__(original.typeName, original.instId, original.syntax)
            self._node_value = node_value

        def getValue(self, name: Any, **context: Any) -> Any:  # noqa: N802 - pysnmp's hook
            target = node_target(context)
            if target is None:
                return self.syntax.clone()
            return self.syntax.clone(self._node_value(target.node))

    for name, node_value in NODE_VALUES.items():
        (original,) = builder.import_symbols("__SNMPv2-MIB", name)
        builder.unexport_symbols("__SNMPv2-MIB", name)
        builder.export_symbols("__SNMPv2-MIB", **{name: NodeSystemInstance(original, node_value)})

"""The varbinds that name the node a notification speaks for.

An SNMPv1/v2c notification carries no context, and every node numbers its own ports: linkDown
ifIndex.1 of host007 and of leaf02 look alike at a receiver. So every notification from a node
ends with the node's SMA-MIB ibSmaNodeGuid.0 and, when it has a NodeDescription,
ibSmaNodeString.0, with the OID and value a GET of them reads in the context the notification
speaks for. They follow the varbinds the NOTIFICATION-TYPE defines, which keep their place and
order (RFC 3416 4.2.6 lets the originator add variables after them).
Reference: docs/notifications.md, 'Which node'.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from ibsnmp.fabric.iba import guid_bytes
from ibsnmp.fabric.model import Node
from ibsnmp.mib.api import Oid
from ibsnmp.mib.loader import ObjectDef, definitions
from ibsnmp.mib.sma import node_string

__all__ = ["VarBind", "instance_varbind", "node_varbinds"]

VarBind = tuple[Oid, Any]  # an OID and its value, typed by the compiled MIB
SCALAR = 0  # a scalar's instance


@cache
def _object(name: str) -> ObjectDef:
    return definitions().objects[name]


def instance_varbind(name: str, index: int, value: Any) -> VarBind:
    """`name`.`index` with `value` typed by the object's compiled syntax."""
    obj = _object(name)
    return obj.oid + (index,), obj.syntax.clone(value)


def node_varbinds(guid: int, node: Node | None) -> tuple[VarBind, ...]:
    """ibSmaNodeGuid.0 of the node `guid`, then ibSmaNodeString.0 when
    `node` (that node, None: not known here) has a description."""
    varbinds = [instance_varbind("ibSmaNodeGuid", SCALAR, guid_bytes(guid))]
    text = node_string(node) if node is not None else None
    if text is not None:
        varbinds.append(instance_varbind("ibSmaNodeString", SCALAR, text))
    return tuple(varbinds)

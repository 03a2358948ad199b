"""What a node's own SNMP context answers for sysName, sysDescr and sysObjectID.

The node's name and description (fabric.naming) and its kind; the default context answers the
agent's own values instead (agent.node_system puts these into pysnmp's system group).
sysObjectID per node kind, under the agent's own arc (ibSmaMIB, 1.3.6.1.3.117.3, is the
agent's sysObjectID): ibSmaMIB.4.<IBA NodeType>, i.e. .4.1 a channel adapter, .4.2 a switch,
.4.3 a router. NodeType numbers are IBA's (NodeInfo.NodeType), so the values never move; arcs
1-3 of ibSmaMIB are the module's own (objects, notifications, conformance).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ibsnmp.fabric.iba import NodeType
from ibsnmp.fabric.model import Node
from ibsnmp.fabric.naming import node_name, node_summary

from .api import INFINIBAND_MIB, Oid

# SMA-MIB module identity: what this agent is (the default context's sysObjectID).
AGENT_OBJECT_ID: Oid = INFINIBAND_MIB + (3,)
NODE_KINDS_ARC: Oid = AGENT_OBJECT_ID + (4,)
NODE_OBJECT_IDS: dict[NodeType, Oid] = {kind: NODE_KINDS_ARC + (int(kind),) for kind in NodeType}


def node_object_id(node: Node) -> Oid:
    return NODE_OBJECT_IDS[node.node_type]


# SNMPv2-MIB descriptor -> the node's value.
NODE_VALUES: dict[str, Callable[[Node], Any]] = {
    "sysName": node_name,
    "sysDescr": node_summary,
    "sysObjectID": node_object_id,
}

"""A complete TrapEvent from a simulated node, for `ibsnmp trap` (receiver testing).

Every field the notification needs gets a value taken from the fabric
(the node's LID, its first linked data port, its CapabilityMask and
SystemImageGUID, the node at the other end of that port as the packet's
second end) or, for the offending keys, a value the node does not use.
Explicit overrides win; fields the notification does not carry are kept
only if given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric.model import Fabric, Node, Port

from .mapping import MappingError, spec_of

# Traps only a switch raises (IBA 14.2.5.1): default to a switch node.
SWITCH_TRAPS = frozenset({IbaTrap.LINK_STATE_CHANGE, IbaTrap.FLOW_CONTROL_WATCHDOG,
                          IbaTrap.BAD_P_KEY_AT_SWITCH_PORT})
SUBN_SET = 0x02  # SMP method of the default bad-M_Key attempt
NO_M_KEY = 0  # the M_Key of an SMP sent without the subnet's key
PORT_INFO = 0x0015  # SMP attribute PortInfo
BAD_Q_KEY = 0x00000001  # not IPoIB's 0x0000000B
ALL_FIELDS_VALID = 0x00FF  # DataValid bits 0-7 (IBA Table 126)
DEFAULT_QP = 1  # QP1, the GSI: where a bad P_Key/Q_Key is typically seen


def pick_node(fabric: Fabric, trap: IbaTrap, node_guid: int | None) -> Node:
    """--node, else the local node, else (switch traps) the switch it is cabled to."""
    if node_guid is not None:
        node = fabric.nodes.get(node_guid)
        if node is None:
            raise MappingError(f"no node with GUID {node_guid:016x} in the simulated fabric "
                               f"{fabric.spec!r} (see `ibsnmp fabric show`)")
        return node
    node = fabric.local_node
    if trap in SWITCH_TRAPS and not node.is_switch:
        peer = _peer_node(fabric, node, node.management_port)
        if peer is not None and peer.is_switch:
            return peer
        switch = next((n for n in fabric.nodes.values() if n.is_switch), None)
        if switch is None:
            raise MappingError(f"IBA trap {int(trap)} is raised by a switch and the fabric "
                               f"{fabric.spec!r} has none")
        return switch
    return node


def default_event(fabric: Fabric, trap: IbaTrap, node_guid: int | None = None,
                  overrides: Mapping[str, int | None] | None = None) -> TrapEvent:
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    node = pick_node(fabric, trap, node_guid)
    mgmt = node.management_port
    port = _default_port(node, overrides.get("port"))
    peer_port = _peer_port(fabric, port) if port is not None else None
    peer_node = fabric.nodes.get(peer_port.node_guid) if peer_port is not None else None
    peer_lid = peer_node.management_port.info.lid if peer_node is not None else 0
    values: dict[str, int | None] = {  # None: the provider cannot tell
        "lid": mgmt.info.lid,
        "port": port.num if port is not None else 1,
        "capability_mask": mgmt.info.capability_mask,
        "system_image_guid": node.system_image_guid,
        "method": SUBN_SET,
        "attribute_id": PORT_INFO,
        "attribute_modifier": port.num if port is not None else 0,
        "lid2": peer_lid,
        "gid1": mgmt.gid() if mgmt.guids else 0,
        "gid2": peer_node.management_port.gid() if peer_node and peer_node.management_port.guids
        else 0,
        "qp1": DEFAULT_QP,
        "qp2": DEFAULT_QP,
        "sl": 0,
        "switch_lid": mgmt.info.lid if node.is_switch else peer_lid,
        "data_valid": ALL_FIELDS_VALID,
        "key": _bad_key(trap, port or mgmt),
    }
    needed = set(spec_of(trap).fields)
    # TrapEvent's keyword fields, the required lid among them.
    fields: dict[str, Any] = {name: value for name, value in values.items() if name in needed}
    fields.update({k: v for k, v in overrides.items() if k not in ("trap", "node_guid")})
    return TrapEvent(trap=trap, node_guid=node.guid, **fields)


def _default_port(node: Node, wanted: int | None) -> Port | None:
    if wanted is not None:
        return node.port(wanted)
    linked = [p for p in node.data_ports if p.remote is not None]
    if not node.is_switch:
        local = node.port(node.local_port_num)
        if local is not None and local.remote is not None:
            return local
    return linked[0] if linked else (node.data_ports[0] if node.data_ports else None)


def _peer_port(fabric: Fabric, port: Port) -> Port | None:
    return fabric.port(port.remote.guid, port.remote.port) if port.remote else None


def _peer_node(fabric: Fabric, node: Node, port: Port) -> Node | None:
    peer = _peer_port(fabric, port)
    return fabric.nodes.get(peer.node_guid) if peer is not None else None


def _bad_key(trap: IbaTrap, port: Port) -> int:
    """An offending key the port does not hold (so the trap is plausible)."""
    if trap is IbaTrap.BAD_M_KEY:
        # A requester that does not know the key sends none; a value derived
        # from the port's M_Key would hand the secret to every trap receiver.
        return NO_M_KEY if port.info.m_key != NO_M_KEY else NO_M_KEY + 1
    if trap is IbaTrap.BAD_Q_KEY:
        return BAD_Q_KEY
    held = {pkey & 0x7FFF for pkey in port.pkeys}
    number = next(n for n in range(1, 0x8000) if n not in held)
    return 0x8000 | number  # full member of a partition the port is not in

"""IF-MIB linkDown / linkUp (RFC 2863) for the ports of every snapshot a provider swaps in.

`PortStatusWatch` keeps each interface's ifOperStatus (fabric.interfaces.oper_status) and tells
which ports changed since the last snapshot; `link_notification` makes what a change raises:
linkDown when a port enters down, linkUp when it leaves down, neither for up <-> dormant, for a
port seen for the first time or for one gone with its node. Each speaks for the node whose port
changed, as its IBA traps do, with the port's row in that context and then the node's names
(node_names), which tell an SNMPv1/v2c receiver whose port it is.
Reference: docs/notifications.md, 'IF-MIB linkDown and linkUp'.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Set
from functools import cache
from typing import NamedTuple

from ibsnmp.fabric.interfaces import (
    IfOperStatus,
    admin_status,
    context_interfaces,
    if_index,
    interface_ports,
    oper_status,
)
from ibsnmp.fabric.model import Fabric, Node, Port
from ibsnmp.fabric.swap import Swap, nodes_to_compare
from ibsnmp.mib.api import Oid
from ibsnmp.mib.ifmib import if_alias, if_name
from ibsnmp.mib.loader import definitions

from .mapping import Notification, NotificationSpec
from .node_names import VarBind, instance_varbind, node_varbinds

# IF-MIB (RFC 2863) snmpTraps.3 and .4; their OBJECTS, in clause order.
LINK_DOWN: Oid = (1, 3, 6, 1, 6, 3, 1, 1, 5, 3)
LINK_UP: Oid = (1, 3, 6, 1, 6, 3, 1, 1, 5, 4)
LINK_OBJECTS = ("ifIndex", "ifAdminStatus", "ifOperStatus")
# The context of a node describes the node alone: its ifIndex is the port number.
OWN_CONTEXT_POSITION = 0


class LinkChange(NamedTuple):
    """A port of `node` whose IF-MIB oper status changed (the node and the
    port as they are now); `if_index` is its ifIndex in the context its
    notifications speak in, `if_alias` its ifAlias there now."""

    node: Node
    port: Port
    before: IfOperStatus
    after: IfOperStatus
    if_index: int
    if_alias: bytes

    @property
    def node_guid(self) -> int:
        return self.node.guid

    @property
    def notification_name(self) -> str | None:
        """linkDown, linkUp, or None when RFC 2863 asks for neither.

        linkDown when the status enters down from any other state but
        notPresent, linkUp when it leaves down for any other state but
        notPresent: a port that trains and waits for the subnet manager
        (down -> dormant) raises linkUp with ifOperStatus dormant(5), and an
        Active port that falls back to Initialize (up -> dormant) raises
        nothing."""
        absent = IfOperStatus.NOT_PRESENT
        if self.after is IfOperStatus.DOWN and self.before not in (IfOperStatus.DOWN, absent):
            return "linkDown"
        if self.before is IfOperStatus.DOWN and self.after not in (IfOperStatus.DOWN, absent):
            return "linkUp"
        return None


@cache
def link_specs() -> dict[str, NotificationSpec]:
    """linkDown and linkUp, their objects typed by the compiled IF-MIB."""
    mib = definitions()
    objects = tuple(mib.base_scalar("IF-MIB", name) for name in LINK_OBJECTS)
    return {name: NotificationSpec(None, name, oid, objects)
            for name, oid in (("linkDown", LINK_DOWN), ("linkUp", LINK_UP))}


def link_notification(change: LinkChange) -> Notification | None:
    """The notification `change` raises, or None: its OBJECTS ifIndex.<n>,
    ifAdminStatus.<n> and ifOperStatus.<n>, then ifName.<n> and ifAlias.<n>
    (`leaf02/3`, the far end's name), then the node's GUID and description,
    each with the value a GET in the node's context reads; n is
    `change.if_index` (`notification_if_index`)."""
    name = change.notification_name
    if name is None:
        return None
    spec = link_specs()[name]
    index = change.if_index
    values = (index, admin_status(change.port), change.after)
    objects = tuple((obj.oid + (index,), obj.syntax.clone(int(value)))
                    for obj, value in zip(spec.objects, values))
    return Notification(spec, change.node_guid,
                        objects + _port_names(change) + node_varbinds(change.node_guid, change.node))


def _port_names(change: LinkChange) -> tuple[VarBind, ...]:
    """ifName.<n> and ifAlias.<n> of the port, as its context reads them."""
    return (instance_varbind("ifName", change.if_index, if_name(change.node, change.port.num)),
            instance_varbind("ifAlias", change.if_index, change.if_alias))


_PortsSeen = dict[int, tuple[Port, IfOperStatus]]  # port number -> the port and its status


class PortStatusWatch:
    """The IF-MIB oper status of every interface of the last snapshot;
    `changes(fabric)` tells which ports changed since and remembers `fabric`."""

    def __init__(self, fabric: Fabric) -> None:
        self._objects: dict[int, Node] = dict(fabric.nodes)  # node GUID -> the Node object last compared
        self._ports: dict[int, _PortsSeen] = {guid: _seen(node) for guid, node in fabric.nodes.items()}
        self._node_map: Mapping[int, Node] = fabric.nodes

    def changes(self, fabric: Fabric, changed: Set[int] | None = None) -> list[LinkChange]:
        """`changed`: the GUIDs of the only nodes that may differ from the
        last snapshot (None: any). Only those are compared; without them a
        node whose object is the one seen before is skipped, and within a
        changed node so is a port whose object is unchanged."""
        if fabric.nodes is self._node_map:
            return []
        self._node_map = fabric.nodes
        found: list[LinkChange] = []
        objects, ports = self._objects, self._ports
        fresh, gone = nodes_to_compare(fabric.nodes, objects, changed)
        for guid in fresh:
            node = objects[guid] = fabric.nodes[guid]
            before = ports.get(guid)
            now = ports[guid] = _seen(node)
            if before is not None:
                found.extend(_port_changes(fabric, node, before, now))
        for guid in gone:
            del objects[guid], ports[guid]
        return found

    def changes_at(self, swap: Swap) -> list[LinkChange]:
        """The changes of a provider's swap: only its changed nodes are
        compared, if the snapshot it replaces is the one seen last."""
        return self.changes(swap.new, swap.changed_since(self._node_map))


def _seen(node: Node) -> _PortsSeen:
    return {port.num: (port, oper_status(port)) for port in interface_ports(node)}


def _port_changes(fabric: Fabric, node: Node, before: _PortsSeen, now: _PortsSeen) -> Iterator[LinkChange]:
    for num, (port, status) in now.items():
        old = before.get(num)
        if old is not None and old[0] is not port and old[1] is not status:
            yield LinkChange(node, port, old[1], status, notification_if_index(fabric, node, num),
                             if_alias(fabric, port))


def notification_if_index(fabric: Fabric, node: Node, port_num: int) -> int:
    """The port's ifIndex in the context the node's notifications speak in:
    its own (the port number), or the default context for the local node,
    which numbers the ports of every CA of the host (as ContextTargets do)."""
    if node.guid == fabric.local_node_guid and fabric.host_node_guids:
        for index, member, port in context_interfaces(fabric, node, fabric.host_node_guids):
            if member.guid == node.guid and port.num == port_num:
                return index
    return if_index(OWN_CONTEXT_POSITION, port_num)

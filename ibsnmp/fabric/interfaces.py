"""An InfiniBand port as an IF-MIB (RFC 2863) interface: its ifIndex, its
administrative and operational status and its speed.

Pure functions of the model, shared by the IF-MIB binding and the
linkDown/linkUp notifications, so both tell the same story.  ifIndex is
position * 256 + port number (`if_index`), stable across restarts for the
same hardware; only physical ports are interfaces (not a switch's port 0).
Reference: docs/mibs.md, 'Interfaces (IF-MIB)'.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum

from .iba import LinkSpeed, LinkSpeedExt, LinkWidth, NodeType, PortPhysState, PortState
from .model import Fabric, Node, Port
from .naming import display_text

PORTS_PER_POSITION = 256
IF_TYPE_INFINIBAND = 199  # IANAifType infiniband(199)


class IfAdminStatus(IntEnum):
    """IF-MIB ifAdminStatus."""

    UP = 1
    DOWN = 2
    TESTING = 3


class IfOperStatus(IntEnum):
    """IF-MIB ifOperStatus."""

    UP = 1
    DOWN = 2
    TESTING = 3
    UNKNOWN = 4
    DORMANT = 5
    NOT_PRESENT = 6
    LOWER_LAYER_DOWN = 7


def if_index(position: int, port_num: int) -> int:
    """The ifIndex of port `port_num` of the node at `position`: position * 256
    + port number.  `position` is the node's place among the nodes the SNMP
    context describes, ordered by node GUID: 0 in a context that describes
    one node (a switch's or a CA's own), where ifIndex is the port number.
    A host's default context with several CAs numbers the first CA's ports
    1..N, the second's 257..256+N, and so on."""
    return position * PORTS_PER_POSITION + port_num


def entity_nodes(nodes: Iterable[Node]) -> tuple[Node, ...]:
    """The nodes of a context in ifIndex position order (by node GUID)."""
    return tuple(sorted(nodes, key=lambda node: node.guid))


def context_interfaces(fabric: Fabric, node: Node,
                       entity_guids: tuple[int, ...] = ()) -> tuple[tuple[int, Node, Port], ...]:
    """(ifIndex, node, port) of every interface an SNMP context describes:
    `node`'s own, or with `entity_guids` (a host's default context) those
    of every node of the entity the snapshot holds, in ifIndex order."""
    if entity_guids:
        nodes = entity_nodes(found for found in map(fabric.nodes.get, entity_guids)
                             if found is not None)
    else:
        nodes = (node,)
    return tuple((if_index(position, port.num), member, port)
                 for position, member in enumerate(nodes)
                 for port in interface_ports(member))


def interface_name(node: Node, port_num: int) -> str:
    """ifName / ifDescr: the device the operating system names (`mlx5_0/1`,
    a sysfs host), else the node description (`leaf-1/3`), else the node
    GUID in 16 hex digits, then the port number; printable ASCII."""
    if node.device_name:
        base = node.device_name
    elif node.description is not None and node.description.strip():
        base = node.description.strip()
    else:
        base = f"{node.guid:016x}"
    return display_text(f"{base}/{port_num}")


def far_end_name(fabric: Fabric, port: Port) -> str:
    """ifAlias: the interface at the other end of the port's link, named as
    that node's context names it (`spine-1/7`); empty without a link."""
    remote = port.remote
    if remote is None:
        return ""
    peer = fabric.nodes.get(remote.guid)
    if peer is None:
        return f"{remote.guid:016x}/{remote.port}"
    return interface_name(peer, remote.port)


def interface_ports(node: Node) -> tuple[Port, ...]:
    """The ports of `node` that are interfaces: every physical port (a
    switch's port 0 is its management port, not an interface)."""
    if node.node_type is NodeType.SWITCH:
        return tuple(port for port in node.ports if port.num != 0)
    return node.ports


def admin_status(port: Port) -> IfAdminStatus:
    """Down when the port's physical layer was disabled (PortPhysicalState
    Disabled is what a manager sets to take a port out), else up."""
    if port.info.phys_state is PortPhysState.DISABLED:
        return IfAdminStatus.DOWN
    return IfAdminStatus.UP


def oper_status(port: Port) -> IfOperStatus:
    """Up when the port is Active; dormant while the link is up but the
    port is not yet Active (Initialize, Armed: waiting for the subnet
    manager, RFC 2863's "waiting for some external event"); down otherwise."""
    phys = port.info.phys_state
    if phys is not None and phys is not PortPhysState.LINK_UP:
        return IfOperStatus.DOWN
    state = port.info.port_state
    if state is PortState.ACTIVE:
        return IfOperStatus.UP
    if state in (PortState.INIT, PortState.ARMED):
        return IfOperStatus.DORMANT
    return IfOperStatus.DOWN


# Data rate of one lane in Mb/s: SDR..QDR carry 8b/10b payload at 2.5, 5 and
# 10 Gb/s; FDR and faster are named by their nominal lane rates, as vendors'
# ifHighSpeed reports them (4X FDR 56000, 4X EDR 100000, 4X NDR 400000).
_LANE_MBPS = {LinkSpeed.SDR: 2_500, LinkSpeed.DDR: 5_000, LinkSpeed.QDR: 10_000}
_LANE_MBPS_EXT = {LinkSpeedExt.FDR: 14_000, LinkSpeedExt.EDR: 25_000,
                  LinkSpeedExt.HDR: 50_000, LinkSpeedExt.NDR: 100_000}
FDR10_LANE_MBPS = 10_000  # a Mellanox speed: QDR's lane rate with 64b/66b coding


def speed_mbps(port: Port, fdr10: bool = False) -> int | None:
    """The active width times the active lane speed in Mb/s (ifHighSpeed),
    or None when either was not read or the link is not up."""
    info = port.info
    width = info.link_width_active
    if width is None or not width or info.phys_state not in (None, PortPhysState.LINK_UP):
        return None
    try:
        lanes = LinkWidth(width).lanes
    except (KeyError, ValueError):
        return None
    ext = info.link_speed_ext_active
    if ext:
        lane = _LANE_MBPS_EXT.get(LinkSpeedExt(ext))
    elif fdr10:
        lane = FDR10_LANE_MBPS
    else:
        speed = info.link_speed_active
        lane = _LANE_MBPS.get(LinkSpeed(speed)) if speed else None
    return None if lane is None else lanes * lane

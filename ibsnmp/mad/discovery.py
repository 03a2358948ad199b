"""A directed-route sweep of the subnet: every node's NodeInfo, NodeDescription
and PortInfo of each port, each switch's SwitchInfo and linear forwarding
table, and the links between them, as the SM and ibnetdiscover find them.

Routes grow one hop at a time from the local node out of every switch port
whose link is up (and out of the local node's own ports); channel adapters
elsewhere do not forward SMPs. A node met again by another route only adds
the link it was reached over. Every request goes through a `MadWindow`, so
the sweep keeps many SMPs in flight.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ibsnmp.mad.attributes import (
    LINEAR_FORWARDING_TABLE,
    NODE_DESCRIPTION,
    NODE_INFO,
    PORT_INFO,
    SWITCH_INFO,
    Attribute,
)
from ibsnmp.mad.layout import FieldValue
from ibsnmp.mad.packets import MAX_HOPS, MadError, decode_reply, directed_route_get
from ibsnmp.mad.umad import DIRECTED_ROUTE
from ibsnmp.mad.window import MadWindow

NODE_TYPE_SWITCH = 2
PORT_STATE_DOWN = 1
LFT_BLOCK = 64  # LIDs per LinearForwardingTable block
NO_PORT = 0xFF  # an LFT entry that forwards nowhere

Route = tuple[int, ...]
PortKey = tuple[int, int]  # (node GUID, port number)


@dataclass
class DiscoveredNode:
    """What the sweep read of one node; fields that went unanswered stay absent."""

    guid: int
    route: Route
    info: dict[str, FieldValue]
    description: str | None = None
    ports: dict[int, dict[str, FieldValue]] = field(default_factory=dict)
    switch_info: dict[str, FieldValue] | None = None
    # Egress port per LID up to LinearFDBTop, for the blocks that answered.
    lft: dict[int, int] = field(default_factory=dict)

    @property
    def is_switch(self) -> bool:
        return self.info["NodeType"] == NODE_TYPE_SWITCH

    @property
    def port_numbers(self) -> range:
        """Switches have a management port 0; channel adapters and routers start at 1."""
        count = int(self.info["NumPorts"])  # type: ignore[arg-type]
        return range(0, count + 1) if self.is_switch else range(1, count + 1)


@dataclass
class Subnet:
    nodes: dict[int, DiscoveredNode] = field(default_factory=dict)
    links: dict[PortKey, PortKey] = field(default_factory=dict)
    # Requests that got no usable answer: (attribute name, route, modifier, reason).
    unanswered: list[tuple[str, Route, int, str]] = field(default_factory=list)


class _Sweep:
    def __init__(self, window: MadWindow) -> None:
        self.window = window
        self.subnet = Subnet()

    def ask(self, attribute: Attribute, route: Route, modifier: int, then: object) -> None:
        def handle(answer: bytes | None) -> None:
            if answer is None:
                self.subnet.unanswered.append((attribute.name, route, modifier, "timeout"))
                return
            try:
                reply = decode_reply(answer, attribute)
            except MadError as exc:
                self.subnet.unanswered.append((attribute.name, route, modifier, str(exc)))
                return
            if reply.status:
                self.subnet.unanswered.append(
                    (attribute.name, route, modifier, f"status {reply.status:#x}"))
                return
            then(reply.attribute)  # type: ignore[operator]

        mad = directed_route_get(attribute, route, 0, modifier)
        self.window.submit(mad, DIRECTED_ROUTE, handle)

    def visit(self, route: Route, came_from: PortKey | None) -> None:
        self.ask(NODE_INFO, route, 0, lambda info: self.on_node_info(route, came_from, info))

    def on_node_info(self, route: Route, came_from: PortKey | None,
                     info: dict[str, FieldValue]) -> None:
        guid = int(info["NodeGUID"])  # type: ignore[arg-type]
        if came_from is not None:
            here = (guid, int(info["LocalPortNum"]))  # type: ignore[arg-type]
            self.subnet.links[came_from] = here
            self.subnet.links[here] = came_from
        if guid in self.subnet.nodes:
            return
        node = DiscoveredNode(guid, route, info)
        self.subnet.nodes[guid] = node
        self.ask(NODE_DESCRIPTION, route, 0,
                 lambda desc: setattr(node, "description", desc["NodeString"]))
        for port in node.port_numbers:
            self.ask(PORT_INFO, route, port,
                     lambda pinfo, port=port: self.on_port_info(node, port, pinfo))
        if node.is_switch:
            self.ask(SWITCH_INFO, route, 0, lambda sinfo: self.on_switch_info(node, sinfo))

    def on_switch_info(self, node: DiscoveredNode, info: dict[str, FieldValue]) -> None:
        node.switch_info = info
        top = int(info["LinearFDBTop"])  # type: ignore[arg-type]
        for block in range(top // LFT_BLOCK + 1):
            self.ask(LINEAR_FORWARDING_TABLE, node.route, block,
                     lambda table, block=block: self.on_lft_block(node, block, top, table))

    def on_lft_block(self, node: DiscoveredNode, block: int, top: int,
                     table: dict[str, FieldValue]) -> None:
        ports = table["PortBlock"]
        assert isinstance(ports, tuple)
        first = block * LFT_BLOCK
        node.lft.update((first + i, port) for i, port in enumerate(ports) if first + i <= top)

    def on_port_info(self, node: DiscoveredNode, port: int,
                     info: dict[str, FieldValue]) -> None:
        node.ports[port] = info
        forwards = node.is_switch or not node.route
        if (port == 0 or not forwards or info["PortState"] == PORT_STATE_DOWN
                or len(node.route) >= MAX_HOPS):
            return
        self.visit((*node.route, port), (node.guid, port))


def discover(window: MadWindow) -> Subnet:
    """Sweep the subnet from the window's port and return what answered."""
    sweep = _Sweep(window)
    sweep.visit((), None)
    window.drain()
    return sweep.subnet

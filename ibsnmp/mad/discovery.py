"""A directed-route sweep of the subnet: every node's NodeInfo, NodeDescription
and PortInfo of each port, and the links between them, as the SM and
ibnetdiscover find them.

Routes grow one hop at a time from the local node out of every switch port
whose link is up (and out of the local node's own ports); channel adapters
elsewhere do not forward SMPs. A node met again by another route only adds
the link it was reached over. Every request goes through a `MadWindow`, so
the sweep keeps many SMPs in flight.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ibsnmp.mad.attributes import NODE_DESCRIPTION, NODE_INFO, PORT_INFO, Attribute
from ibsnmp.mad.layout import FieldValue
from ibsnmp.mad.packets import MAX_HOPS, MadError, decode_reply, directed_route_get
from ibsnmp.mad.umad import DIRECTED_ROUTE
from ibsnmp.mad.window import MadWindow

NODE_TYPE_SWITCH = 2
PORT_STATE_DOWN = 1

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

"""A directed-route sweep of the subnet, as the SM and ibnetdiscover make it.

Every node's NodeInfo, NodeDescription and PortInfo of each port; each switch's SwitchInfo,
linear and multicast forwarding tables; each port's GUIDInfo, P_Key table, SL-to-VL table (a
switch output port's, one per input port), VL arbitration tables and LedInfo (where its
CapabilityMask has IsLEDInfoSupported); SMInfo of every port whose CapabilityMask has IsSM;
and the links between them. How routes grow is `_Sweep`'s; every request goes through a
`MadWindow`, so the sweep keeps many SMPs in flight.
Reference: docs/mad-layer.md, 'Where each live-mode value comes from'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

from ibsnmp.mad.attributes import (
    GUID_INFO,
    LED_INFO,
    LINEAR_FORWARDING_TABLE,
    MULTICAST_FORWARDING_TABLE,
    NODE_DESCRIPTION,
    NODE_INFO,
    P_KEY_TABLE,
    PORT_INFO,
    SL_TO_VL_MAPPING_TABLE,
    SM_INFO,
    SWITCH_INFO,
    VL_ARBITRATION_TABLE,
    AnyAttribute,
)
from ibsnmp.mad.layout import AnyRecord, FieldValue
from ibsnmp.mad.records_generated import (
    LedInfo,
    LinearForwardingTable,
    MulticastForwardingTable,
    NodeDescription,
    NodeInfo,
    PortInfo,
    SLtoVLMappingTable,
    SMInfo,
    SwitchInfo,
)
from ibsnmp.mad.packets import MAX_HOPS, MadError, directed_route_get, reply_attribute
from ibsnmp.mad.umad import DIRECTED_ROUTE
from ibsnmp.mad.window import MadWindow

NODE_TYPE_SWITCH = 2
PORT_STATE_DOWN = 1
LFT_BLOCK = 64  # LIDs per LinearForwardingTable block
NO_PORT = 0xFF  # an LFT entry that forwards nowhere
GUID_BLOCK = 8  # GUIDs per GUIDInfo block
P_KEY_BLOCK = 32  # P_Keys per P_KeyTable block
VL_ARB_BLOCK = 32  # entries per VLArbitrationTable block
MFT_BLOCK = 32  # MLIDs per MulticastForwardingTable block
MFT_POSITION_PORTS = 16  # ports per port mask of a block
MULTICAST_LID_BASE = 0xC000
# PortInfo CapabilityMask bits (IBA 14.2.5.6).
IS_SM = 1 << 1
IS_LED_INFO_SUPPORTED = 1 << 9
# VLArbitrationTable attribute modifier blocks (IBA 14.2.5.9).
VL_ARB_LOW_BLOCKS = (1, 2)
VL_ARB_HIGH_BLOCKS = (3, 4)

Route = tuple[int, ...]
PortKey = tuple[int, int]  # (node GUID, port number)


def _blocks(entries: int, per_block: int) -> int:
    return -(-entries // per_block)


@dataclass
class PortTables:
    """The tables read of one port, block by block; a table is known only
    when every block of it answered."""

    # The port's GUID as NodeInfo.PortGUID gave it when a route reached this port.
    port_guid: int | None = None
    led_on: bool | None = None
    sm_info: SMInfo | None = None
    # A switch output port's SL-to-VL table of each input port that answered,
    # port 0 included as either (IBA keeps one per input and output port pair;
    # SMA-MIB indexes them so).
    sl2vl_by_input: dict[int, tuple[int, ...]] = field(default_factory=dict)
    _expected: dict[str, int] = field(default_factory=dict)
    _blocks: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)

    def expect(self, name: str, count: int) -> None:
        self._expected[name] = count

    def store(self, name: str, index: int, entries: tuple[int, ...]) -> None:
        self._blocks[(name, index)] = entries

    def fill_from(self, older: PortTables) -> int:
        """Take from `older` (an earlier sweep's reading of this port) every
        table, SMInfo, LedInfo and SL-to-VL input this reading lacks; how many
        pieces were taken."""
        taken = 0
        for name in older._expected:
            if self.table(name) is None and older.table(name) is not None:
                self._expected[name] = older._expected[name]
                self._blocks.update((key, entries) for key, entries in older._blocks.items()
                                    if key[0] == name)
                taken += 1
        for into, entries in older.sl2vl_by_input.items():
            if into not in self.sl2vl_by_input:
                self.sl2vl_by_input[into] = entries
                taken += 1
        if self.sm_info is None and older.sm_info is not None:
            self.sm_info, taken = older.sm_info, taken + 1
        if self.led_on is None and older.led_on is not None:
            self.led_on, taken = older.led_on, taken + 1
        if self.port_guid is None:
            self.port_guid = older.port_guid
        return taken

    def table(self, name: str) -> tuple[int, ...] | None:
        """Every entry of `name` in order; None if it was not asked or a block is missing."""
        count = self._expected.get(name)
        if count is None or any((name, i) not in self._blocks for i in range(count)):
            return None
        return tuple(entry for i in range(count) for entry in self._blocks[(name, i)])


@dataclass
class DiscoveredNode:
    """What the sweep read of one node; fields that went unanswered stay absent."""

    guid: int
    route: Route
    info: NodeInfo
    description: str | None = None
    ports: dict[int, PortInfo] = field(default_factory=dict)
    switch_info: SwitchInfo | None = None
    # Egress port per LID up to LinearFDBTop, for the blocks that answered;
    # complete when no block is pending.
    lft: dict[int, int] = field(default_factory=dict)
    lft_pending: int = 0
    # MLID -> port mask of the multicast entries in use; complete when no block is pending.
    mft: dict[int, int] = field(default_factory=dict)
    mft_pending: int = 0
    tables: dict[int, PortTables] = field(default_factory=dict)

    @property
    def lft_complete(self) -> bool:
        return self.switch_info is not None and not self.lft_pending

    @property
    def mft_complete(self) -> bool:
        return self.switch_info is not None and not self.mft_pending

    @property
    def is_switch(self) -> bool:
        return self.info["NodeType"] == NODE_TYPE_SWITCH

    @property
    def port_numbers(self) -> range:
        """Switches have a management port 0; channel adapters and routers start at 1."""
        count = self.info["NumPorts"]
        return range(0, count + 1) if self.is_switch else range(1, count + 1)


@dataclass
class Subnet:
    nodes: dict[int, DiscoveredNode] = field(default_factory=dict)
    links: dict[PortKey, PortKey] = field(default_factory=dict)
    # Requests that got no usable answer: (attribute name, route, modifier, reason).
    unanswered: list[tuple[str, Route, int, str]] = field(default_factory=list)


class _Sweep:
    """One sweep. Routes grow one hop at a time from the local node out of
    every switch port whose link is up (and out of the local node's own
    ports); channel adapters elsewhere do not forward SMPs. A node met again
    by another route only adds the link it was reached over, except that a
    channel adapter's per-port tables are read through the port they belong
    to (a CA answers GUIDInfo, P_Key, SL-to-VL and SMInfo for the port the
    SMP came in on), so each CA port is read when a route first reaches it."""

    def __init__(self, window: MadWindow, tables: bool) -> None:
        self.window = window
        self.tables = tables
        self.subnet = Subnet()
        self.submit = window.submit
        # Bound once: `self.method` makes a new object at every use.
        self.answered = self._answered
        self.on_node_info = self._on_node_info
        self.on_port_info = self._on_port_info
        self.on_port_info_through = self._on_port_info_through
        self.on_switch_info = self._on_switch_info

    def ask(self, attribute: AnyAttribute, route: Route, modifier: int,
            then: Callable[..., object], *context: object) -> None:
        """Read `attribute`; `then(*context, values)` runs with the answer's record.
        (One partial per SMP, of methods bound once: cheaper to make and to call
        than a closure and a bound method each.)"""
        self.submit(directed_route_get(attribute, route, 0, modifier), DIRECTED_ROUTE,
                    partial(self.answered, attribute, route, modifier, then, *context))

    def _answered(self, attribute: AnyAttribute, route: Route, modifier: int,
                  then: Callable[..., object], *context_and_answer: object) -> None:
        answer = context_and_answer[-1]
        if answer is None:
            self.subnet.unanswered.append((attribute.name, route, modifier, "timeout"))
            return
        try:
            # `answer` is the MAD's bytes: None was taken above.
            values: AnyRecord = reply_attribute(answer, attribute)  # type: ignore[arg-type]
        except MadError as exc:
            self.subnet.unanswered.append((attribute.name, route, modifier, str(exc)))
            return
        then(*context_and_answer[:-1], values)

    def visit(self, route: Route, came_from: PortKey | None) -> None:
        self.ask(NODE_INFO, route, 0, self.on_node_info, route, came_from)

    def _on_node_info(self, route: Route, came_from: PortKey | None,
                     info: NodeInfo) -> None:
        guid = info["NodeGUID"]
        arrival = info["LocalPortNum"]
        if came_from is not None:
            here = (guid, arrival)
            self.subnet.links[came_from] = here
            self.subnet.links[here] = came_from
        node = self.subnet.nodes.get(guid)
        if node is None:
            node = DiscoveredNode(guid, route, info)
            self.subnet.nodes[guid] = node
            self.ask(NODE_DESCRIPTION, route, 0, self.on_description, node)
            for port in node.port_numbers:
                # With tables, a CA's arrival port is read below, through itself.
                if node.is_switch or port != arrival or not self.tables:
                    self.ask(PORT_INFO, route, port, self.on_port_info, node, port)
            if node.is_switch:
                self.ask(SWITCH_INFO, route, 0, self.on_switch_info, node)
        if self.tables and not node.is_switch and arrival not in node.tables:
            # The first route into this CA port: its tables are read through it.
            node.tables[arrival] = PortTables(info["PortGUID"])
            self.ask(PORT_INFO, route, arrival, self.on_port_info_through, node, arrival, route)

    @staticmethod
    def on_description(node: DiscoveredNode, values: NodeDescription) -> None:
        node.description = values["NodeString"]

    def _on_switch_info(self, node: DiscoveredNode, info: SwitchInfo) -> None:
        node.switch_info = info
        top = info["LinearFDBTop"]
        node.lft_pending = top // LFT_BLOCK + 1
        for block in range(node.lft_pending):
            self.ask(LINEAR_FORWARDING_TABLE, node.route, block, self.on_lft_block,
                     node, block, top)
        if not self.tables:
            return
        self.ask_multicast_table(node, info)
        # Data ports' partition enforcement tables are sized by SwitchInfo.
        enforcement = info["PartitionEnforcementCap"]
        for port in node.port_numbers[1:]:
            self.ask_table(node, port, "pkeys", P_KEY_TABLE, "P_KeyBlock", node.route,
                           [(port << 16) | block
                            for block in range(_blocks(enforcement, P_KEY_BLOCK))])

    def ask_multicast_table(self, node: DiscoveredNode, info: SwitchInfo) -> None:
        """Every MLID block up to MulticastFDBTop (or the capacity, when the SM
        leaves the top at 0), each in port masks of 16 ports, as ibroute -M reads."""
        cap = info["MulticastFDBCap"]
        top = info["MulticastFDBTop"]
        entries = min(top - MULTICAST_LID_BASE + 1 if top >= MULTICAST_LID_BASE else cap, cap)
        positions = _blocks(node.info["NumPorts"] + 1, MFT_POSITION_PORTS)
        blocks = _blocks(entries, MFT_BLOCK)
        node.mft_pending = blocks * positions
        for block in range(blocks):
            for position in range(positions):
                self.ask(MULTICAST_FORWARDING_TABLE, node.route, (position << 28) | block,
                         self.on_mft_block, node, block, position)

    @staticmethod
    def on_mft_block(node: DiscoveredNode, block: int, position: int,
                     table: MulticastForwardingTable) -> None:
        for i, mask in enumerate(table["PortMaskBlock"]):
            if mask:
                mlid = MULTICAST_LID_BASE + block * MFT_BLOCK + i
                node.mft[mlid] = node.mft.get(mlid, 0) | (mask << (MFT_POSITION_PORTS * position))
        node.mft_pending -= 1

    @staticmethod
    def on_lft_block(node: DiscoveredNode, block: int, top: int,
                     table: LinearForwardingTable) -> None:
        first = block * LFT_BLOCK
        node.lft.update((first + i, port) for i, port in enumerate(table["PortBlock"])
                        if first + i <= top)
        node.lft_pending -= 1

    def _on_port_info_through(self, node: DiscoveredNode, port: int, route: Route,
                             info: PortInfo) -> None:
        """PortInfo of a CA port read through `route`, the route into this very port."""
        self.on_port_info(node, port, info, route)

    def _on_port_info(self, node: DiscoveredNode, port: int, info: PortInfo,
                     route: Route | None = None) -> None:
        """`route`: the route into this very port of a CA, whose tables are read through it."""
        node.ports[port] = info
        if self.tables and node.is_switch:
            self.ask_port_tables(node, port, node.route, info)
        elif self.tables and route is not None:
            self.ask_port_tables(node, port, route, info)
        forwards = node.is_switch or not node.route
        if (port == 0 or not forwards or info["PortState"] == PORT_STATE_DOWN
                or len(node.route) >= MAX_HOPS or route is not None and route != node.route):
            return
        self.visit((*node.route, port), (node.guid, port))

    def ask_port_tables(self, node: DiscoveredNode, port: int, route: Route,
                        info: PortInfo) -> None:
        """GUIDInfo and P_Key (a CA port's, or switch port 0's), SL-to-VL, VL
        arbitration (not of switch port 0), LedInfo and SMInfo of one port.
        Switches name the port in the modifier where the attribute has one; a
        CA answers for the port the route came in on."""
        switch = node.is_switch
        tables = node.tables.setdefault(port, PortTables())
        capabilities = info["CapabilityMask"]
        if not switch or port == 0:
            self.ask_guid_info(node, port, route, info)
            partition_cap = node.info["PartitionCap"]
            self.ask_table(node, port, "pkeys", P_KEY_TABLE, "P_KeyBlock", route,
                           list(range(_blocks(partition_cap, P_KEY_BLOCK))))
        self.ask_sl2vl(node, port, route, tables)
        if not switch or port != 0:
            for name, cap, blocks in (
                    ("vl_arb_low", info["VLArbitrationLowCap"], VL_ARB_LOW_BLOCKS),
                    ("vl_arb_high", info["VLArbitrationHighCap"], VL_ARB_HIGH_BLOCKS)):
                count = _blocks(cap, VL_ARB_BLOCK)
                self.ask_table(node, port, name, VL_ARBITRATION_TABLE, "VLWeightBlock", route,
                               [(block << 16) | port for block in blocks[:count]])
        if capabilities & IS_LED_INFO_SUPPORTED:
            self.ask(LED_INFO, route, port if switch else 0, self.on_led_info, tables)
        if capabilities & IS_SM:
            self.ask(SM_INFO, route, 0, self.on_sm_info, tables)

    def ask_guid_info(self, node: DiscoveredNode, port: int, route: Route,
                      info: PortInfo) -> None:
        """Every GUIDInfo block up to the port's GUIDCap (PortInfo). The
        modifier is the block number, eight GUIDs a block, and names no port
        (IBA 14.2.5.5): a CA answers for the port the route came in on, a
        switch for its port 0 alone. A switch's external ports have no
        GUIDInfo, so only port 0 of a switch is asked."""
        if node.is_switch and port != 0:
            return
        guid_cap = info["GUIDCap"]
        self.ask_table(node, port, "guids", GUID_INFO, "GUIDBlock", route,
                       list(range(_blocks(guid_cap, GUID_BLOCK))))

    def ask_sl2vl(self, node: DiscoveredNode, port: int, route: Route,
                  tables: PortTables) -> None:
        """The SL-to-VL tables of output port `port` (IBA 14.2.5.8). A switch
        keeps one per (input port, output port) pair, named by the modifier's
        bits 15:8 and 7:0, for every port 0..NumPorts: port 0, the switch's
        management port, is an output and an input like the others, so each
        input's table of output port 0 is asked too (those the SMA does not
        answer are `unanswered`, not served). A CA's modifier is 0: its table
        is that of the port the route came in on."""
        if not node.is_switch:
            self.ask_table(node, port, "sl2vl", SL_TO_VL_MAPPING_TABLE, "SLtoVL", route, [0])
            return
        for into in node.port_numbers:
            self.ask(SL_TO_VL_MAPPING_TABLE, route, (into << 8) | port,
                     self.on_sl2vl_of_input, tables, into)

    @staticmethod
    def on_sl2vl_of_input(tables: PortTables, into: int, values: SLtoVLMappingTable) -> None:
        """A switch output port's SL-to-VL table of input port `into`, as read."""
        tables.sl2vl_by_input[into] = values["SLtoVL"]

    @staticmethod
    def on_led_info(tables: PortTables, values: LedInfo) -> None:
        tables.led_on = bool(values["LedMask"])

    @staticmethod
    def on_sm_info(tables: PortTables, values: SMInfo) -> None:
        tables.sm_info = values

    def ask_table(self, node: DiscoveredNode, port: int, name: str, attribute: AnyAttribute,
                  field_name: str, route: Route, modifiers: list[int]) -> None:
        tables = node.tables.setdefault(port, PortTables())
        tables.expect(name, len(modifiers))
        for index, modifier in enumerate(modifiers):
            self.ask(attribute, route, modifier, self.on_table_block, tables, name, field_name,
                     index)

    @staticmethod
    def on_table_block(tables: PortTables, name: str, field_name: str, index: int,
                       values: Mapping[str, FieldValue]) -> None:
        # GUIDInfo, P_KeyTable, SLtoVLMappingTable or VLArbitrationTable: its one array.
        entries = values[field_name]
        assert isinstance(entries, tuple)
        tables.store(name, index, entries)


def discover(window: MadWindow, *, tables: bool = False) -> Subnet:
    """Sweep the subnet from the window's port and return what answered: the
    nodes, ports, links, SwitchInfo and linear forwarding tables, as
    ibnetdiscover and ibroute read them; with `tables` also every port's
    tables, the multicast forwarding tables, LedInfo and SMInfo."""
    sweep = _Sweep(window, tables)
    sweep.visit((), None)
    window.drain()
    return sweep.subnet

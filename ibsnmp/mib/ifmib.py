"""IF-MIB (RFC 2863): every InfiniBand port a context describes, as an interface.

One ifTable / ifXTable row per physical port (fabric.interfaces: a switch's data ports, a CA's
ports; in a host's default context every port of every node of the host, numbered by
interfaces.if_index). Names, state, speed and 64-bit counts are served as the model holds them;
ifLastChange, ifCounterDiscontinuityTime and ifTableLastChange come from the agent's interface
history (0 without one, or without a change since start). What InfiniBand does not count has
no instance; ifStackTable, ifRcvAddressTable and ifTestTable have no rows; nothing is writable.
Reference: docs/mibs.md, 'Interfaces (IF-MIB)'.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..fabric.counters import InterfaceCounters
from ..fabric.traffic import interface_counters
from ..fabric.iba import PortPhysState, guid_bytes
from ..fabric.interfaces import (
    IF_TYPE_INFINIBAND,
    admin_status,
    context_interfaces,
    far_end_name,
    interface_name,
    oper_status,
    speed_mbps,
)
from ..fabric.lineage import Aspect, NodeDerived
from ..fabric.model import Fabric, Node, Port, PortRef
from .api import ContextTarget
from .binding import ModuleBinding, ScalarBinding, TableBinding, reads_time
from .facts import truth
from .loader import definitions, size_range

MAX_GAUGE32 = 4_294_967_295  # ifSpeed above this reads this (RFC 2863)
MASK32 = (1 << 32) - 1
MASK64 = (1 << 64) - 1
TICK_SLACK = 1e-6  # of a tick: far above a float's error, far below a tick
ENABLED, DISABLED = 1, 2  # ifLinkUpDownTrapEnable
_ALIAS_SIZE = size_range(definitions().objects["ifAlias"].syntax)
assert _ALIAS_SIZE is not None  # ifAlias is a DisplayString (SIZE(0..64))
ALIAS_OCTETS = _ALIAS_SIZE[1]  # 64


class InterfaceEvents(Protocol):
    """What the agent remembers of its interfaces (agent start = 0 s)."""

    def last_change(self, ref: PortRef) -> float | None:
        """When the port's ifOperStatus last changed, in seconds."""
        ...

    def discontinuity(self, ref: PortRef) -> float | None:
        """When a counter of the port last went backwards, in seconds."""
        ...

    @property
    def table_last_change(self) -> float | None:
        """When an interface last appeared or went, in seconds."""
        ...


def _ticks(seconds: float | None) -> int:
    """TimeTicks (centiseconds) of a moment after agent start; 0 for none."""
    # A time read from sysUpTime is whole ticks / 100, which a float may hold
    # a hair below (0.29 * 100 = 28.999...): never one tick less than it read.
    return 0 if seconds is None else int(seconds * 100 + TICK_SLACK) & MASK32


class _IfRow:
    """One interface: what does not move for a snapshot, computed once, and
    the port's counters at the last time asked (every counter column of
    one request reads them once)."""

    __slots__ = ("node", "port", "if_index", "name", "alias", "mbps", "_at", "_counters")

    def __init__(self, fabric: Any, node: Node, port: Port, if_index: int, fdr10: bool) -> None:
        self.node = node
        self.port = port
        self.if_index = if_index
        self.name = if_name(node, port.num)
        self.alias = if_alias(fabric, port)
        self.mbps = _speed(port, fdr10)
        self._at: tuple[float, Any] | None = None
        self._counters: InterfaceCounters | None = None

    def counters(self, target: ContextTarget) -> InterfaceCounters | None:
        """The counters at the request's moment, of the values its snapshot holds."""
        fabric = target.fabric
        at = (target.elapsed, fabric.counter_values)
        known = self._at
        if known is None or known[0] != at[0] or known[1] is not at[1]:
            self._counters = interface_counters(fabric, self.port, target.elapsed)
            self._at = at
        return self._counters


def if_name(node: Node, port_num: int) -> bytes:
    """ifName (and ifDescr) of the node's port, as every context names it."""
    return interface_name(node, port_num).encode("ascii")


def if_alias(fabric: Fabric, port: Port) -> bytes:
    """ifAlias of `port`: the far end's name, cut to the 64 octets ifAlias holds."""
    return _fit(far_end_name(fabric, port), ALIAS_OCTETS).encode("ascii")


def _fit(name: str, size: int) -> str:
    """`name` (`<node>/<port>`) in at most `size` characters: a long node
    part is cut, the port number kept."""
    if len(name) <= size:
        return name
    node, _, port = name.rpartition("/")
    return f"{node[: size - len(port) - 1]}/{port}"


def _speed(port: Port, fdr10: bool) -> int | None:
    """Mb/s: the active rate; 0 when the link is known to be down, None
    when the port's width or speed was not read."""
    mbps = speed_mbps(port, fdr10)
    if mbps is None and port.info.phys_state not in (None, PortPhysState.LINK_UP):
        return 0
    return mbps


def _rows(target: ContextTarget) -> list[tuple[tuple[int], _IfRow]]:
    """The context's interfaces, built once per structure and context and
    shared by ifTable and ifXTable (so they share the counter memo); kept
    while the nodes of the context are the same objects."""
    fabric: Fabric  # ContextTarget types it loosely
    fabric, node, entity = target.fabric, target.node, target.entity_guids
    members = tuple(map(fabric.nodes.get, entity)) if entity else (node,)
    kept = fabric.derive_for(_ROWS, node)
    found = kept.get(entity)
    if found is not None and len(found[0]) == len(members) and all(
            a is b for a, b in zip(found[0], members)):
        return found[1]
    fdr10 = fabric.fdr10_ports
    rows = [((index,), _IfRow(fabric, member, port, index, port.ref in fdr10))
            for index, member, port in context_interfaces(fabric, node, entity)]
    kept[entity] = (members, rows)
    return rows


# A context's interface rows, by its entity: names and far ends follow the
# nodes' names, the links and which nodes exist; the FDR10 ports are the
# topology file's.
_ROWS: NodeDerived[dict[tuple[int, ...], tuple[tuple[Any, ...], list[tuple[tuple[int], _IfRow]]]]] = NodeDerived(
    "IF-MIB rows", Aspect.DESCRIPTIONS | Aspect.NODE_SET | Aspect.IDENTITY, lambda fabric, node: {})


Getter = Callable[[_IfRow, ContextTarget], Any]


def _counter(field: str, mask: int) -> Getter:
    """A counter column: one InterfaceCounters field, wrapped to its width."""
    def getter(row: _IfRow, target: ContextTarget) -> int | None:
        counters = row.counters(target)
        value = None if counters is None else getattr(counters, field)
        return None if value is None else value & mask
    return reads_time(getter)


def _none(row: Any, target: ContextTarget) -> None:
    """A column nobody measures here: no instance."""
    return None


def _no_rows(target: ContextTarget) -> tuple[()]:
    return ()


def _empty_table(entry: str) -> TableBinding:
    """A table this agent has no rows in: every readable column, no instance."""
    mib = definitions()
    return TableBinding(entry=entry, rows=_no_rows, depends=Aspect(0),
                        columns={c.name: _none for c in mib.columns_of(entry)
                                 if mib.readable(c.name)})


def link_traps_on() -> bool:
    """linkDown and linkUp are sent (the default)."""
    return True


def if_mib_binding(history: InterfaceEvents | None = None,
                   link_traps: Callable[[], bool] = link_traps_on) -> ModuleBinding:
    """IF-MIB over the model; `history` gives the change times (without
    one they read 0), `link_traps()` whether linkDown/linkUp are sent (the
    agent's `[traps] if_mib`, asked at each read so a reload shows), what
    ifLinkUpDownTrapEnable shows."""

    def last_change(row: _IfRow, target: ContextTarget) -> int:
        return 0 if history is None else _ticks(history.last_change(row.port.ref))

    def discontinuity(row: _IfRow, target: ContextTarget) -> int:
        return 0 if history is None else _ticks(history.discontinuity(row.port.ref))

    def table_last_change(target: ContextTarget) -> int:
        return 0 if history is None else _ticks(history.table_last_change)

    def trap_enable(row: _IfRow, target: ContextTarget) -> int:
        return ENABLED if link_traps() else DISABLED
    return ModuleBinding(
        module="IF-MIB",
        scalars=(
            ScalarBinding("ifNumber", lambda target: len(_rows(target))),
            # The history changes between snapshots' requests: never kept.
            ScalarBinding("ifTableLastChange", reads_time(table_last_change)),
            ScalarBinding("ifStackLastChange", lambda target: 0),  # no stack, never changed
        ),
        tables=(
            TableBinding(
                entry="ifEntry",
                rows=_rows,
                depends=_ROWS.depends,
                columns={
                    "ifIndex": lambda row, target: row.if_index,
                    "ifDescr": lambda row, target: row.name,
                    "ifType": lambda row, target: IF_TYPE_INFINIBAND,
                    "ifMtu": lambda row, target: (
                        None if row.port.info.neighbor_mtu is None
                        else row.port.info.neighbor_mtu.octets),
                    "ifSpeed": lambda row, target: (
                        None if row.mbps is None else min(row.mbps * 1_000_000, MAX_GAUGE32)),
                    "ifPhysAddress": lambda row, target: (
                        None if row.port.guid is None else guid_bytes(row.port.guid)),
                    "ifAdminStatus": lambda row, target: int(admin_status(row.port)),
                    "ifOperStatus": lambda row, target: int(oper_status(row.port)),
                    "ifLastChange": reads_time(last_change),
                    "ifInOctets": _counter("in_octets", MASK32),
                    "ifInUcastPkts": _counter("in_ucast_pkts", MASK32),
                    "ifInNUcastPkts": _none,  # deprecated
                    "ifInDiscards": _none,
                    "ifInErrors": _none,
                    "ifInUnknownProtos": _none,
                    "ifOutOctets": _counter("out_octets", MASK32),
                    "ifOutUcastPkts": _counter("out_ucast_pkts", MASK32),
                    "ifOutNUcastPkts": _none,  # deprecated
                    "ifOutDiscards": _none,
                    "ifOutErrors": _none,
                    "ifOutQLen": _none,
                    "ifSpecific": _none,
                },
            ),
            TableBinding(
                entry="ifXEntry",
                rows=_rows,
                depends=_ROWS.depends,
                columns={
                    "ifName": lambda row, target: row.name,
                    "ifInMulticastPkts": _counter("in_mcast_pkts", MASK32),
                    "ifInBroadcastPkts": _none,
                    "ifOutMulticastPkts": _counter("out_mcast_pkts", MASK32),
                    "ifOutBroadcastPkts": _none,
                    "ifHCInOctets": _counter("in_octets", MASK64),
                    "ifHCInUcastPkts": _counter("in_ucast_pkts", MASK64),
                    "ifHCInMulticastPkts": _counter("in_mcast_pkts", MASK64),
                    "ifHCInBroadcastPkts": _none,
                    "ifHCOutOctets": _counter("out_octets", MASK64),
                    "ifHCOutUcastPkts": _counter("out_ucast_pkts", MASK64),
                    "ifHCOutMulticastPkts": _counter("out_mcast_pkts", MASK64),
                    "ifHCOutBroadcastPkts": _none,
                    # A reload may change it without a new snapshot: never kept.
                    "ifLinkUpDownTrapEnable": reads_time(trap_enable),
                    "ifHighSpeed": lambda row, target: row.mbps,
                    "ifPromiscuousMode": lambda row, target: truth(False),
                    "ifConnectorPresent": lambda row, target: truth(True),
                    "ifAlias": lambda row, target: row.alias,
                    "ifCounterDiscontinuityTime": reads_time(discontinuity),
                },
            ),
            _empty_table("ifStackEntry"),
            _empty_table("ifRcvAddressEntry"),
            _empty_table("ifTestEntry"),
        ),
    )


IF_MIB = if_mib_binding()

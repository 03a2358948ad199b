"""When each IF-MIB interface last changed: its oper status (ifLastChange), its counters' last
discontinuity (ifCounterDiscontinuityTime) and when one appeared or vanished (ifTableLastChange).

The model holds only the present, so the agent feeds every snapshot it serves to one
`InterfaceHistory`, which compares it with the one before. Times are seconds of the history's
clock: since it started, until `use_clock` hands it the agent's sysUpTime; None means nothing
happened since the start (the MIB's zero). Comparing follows the change, not the fabric: a
swap that names its changed nodes is compared on those alone. It holds the nodes of the last
snapshot and nothing of the nodes that left.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Set
from typing import NamedTuple, Protocol

from ibsnmp.fabric.swap import Swap, nodes_to_compare

from .counters import interface_sources_in
from .interfaces import IfOperStatus, interface_ports, oper_status
from .model import Fabric, Node, Port, PortHistory, PortRef

__all__ = ["InterfaceHistory"]

# PortCounters fields whose clear clears an IF-MIB counter (counters.extended_at).
_TRAFFIC_CLEARS = frozenset({"port_xmit_data", "port_rcv_data", "port_xmit_pkts", "port_rcv_pkts"})
_INF = float("inf")


class _PortSeen(NamedTuple):
    port: Port  # the object last compared: the same one again is unchanged
    status: IfOperStatus
    readings: tuple[int | None, ...] | None  # measured ports only: the IF-MIB counts' sources, as read
    values: Mapping[str, int] | None  # the measured values they were taken from


class SwappingProvider(Protocol):
    """What `follow` needs of a provider (providers.base.ProviderCore has it)."""

    @property
    def snapshot(self) -> Fabric: ...

    def elapsed(self) -> float: ...

    def add_swap_listener(self, listener: Callable[[Swap], None]) -> None: ...


class InterfaceHistory:
    """Fed every snapshot the agent serves; remembers per port (PortRef)
    when its IF-MIB oper status last changed and when a 64-bit counter last
    went backwards (cleared), in seconds of its clock: since it started,
    or the agent's sysUpTime once `use_clock` gave it that. A change is
    never dated after the observation that found it."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._start = clock()
        self._lock = threading.Lock()  # a provider may swap from a worker thread
        self._objects: dict[int, Node] = {}  # node GUID -> the Node object last compared
        self._nodes: dict[int, dict[int, _PortSeen]] = {}  # node GUID -> its interfaces by port number
        self._node_map: Mapping[int, Node] | None = None  # fabric.nodes last compared
        self._values: Mapping[int, Mapping[int, Mapping[str, int]]] = {}  # fabric.counter_values last compared
        self._port_history: Mapping[PortRef, PortHistory] | None = None
        self._changed: dict[PortRef, float] = {}
        self._discontinuity: dict[PortRef, float] = {}
        self._table_changed: float | None = None

    # -- what the MIB reads ----------------------------------------------------------

    def last_change(self, ref: PortRef) -> float | None:
        """Seconds since start when the port's oper status last changed (or
        it appeared); None: not since start (ifLastChange 0)."""
        return self._changed.get(ref)

    def discontinuity(self, ref: PortRef) -> float | None:
        """Seconds since start when a counter of the port last went
        backwards (or it appeared); None: not since start."""
        return self._discontinuity.get(ref)

    def __len__(self) -> int:
        """How many interfaces it remembers: those of the last snapshot."""
        return sum(len(ports) for ports in self._nodes.values())

    @property
    def table_last_change(self) -> float | None:
        """Seconds since start when an interface last appeared or vanished."""
        return self._table_changed

    # -- its clock -----------------------------------------------------------------------

    def use_clock(self, clock: Callable[[], float]) -> None:
        """Read time from `clock()` from now on, in seconds since its own
        zero (the agent's sysUpTime / 100); the times recorded so far move
        to it, and one that falls before its zero is forgotten (the MIB's
        zero: before the agent started).  A history made before the SNMP
        engine (as `ibsnmp run` makes it) needs this: else ifLastChange
        counts from an earlier zero than sysUpTime and reads later than the
        linkDown that reports the same change."""
        with self._lock:
            shift = clock() - (self._clock() - self._start)
            self._clock, self._start = clock, 0.0
            self._changed = _moved(self._changed, shift)
            self._discontinuity = _moved(self._discontinuity, shift)
            table = self._table_changed
            self._table_changed = None if table is None or table + shift < 0 else table + shift

    # -- feeding it ----------------------------------------------------------------------

    def follow(self, provider: SwappingProvider) -> None:
        """Observe `provider`'s snapshot now and every one it swaps in."""
        self.observe(provider.snapshot, provider.elapsed())
        provider.add_swap_listener(lambda swap: self.observe_swap(swap, provider.elapsed()))

    def observe(self, fabric: Fabric, elapsed: float, changed: Set[int] | None = None,
                valued: Set[int] | None = None) -> None:
        """A new snapshot, whose counters are read at `elapsed` seconds
        after the provider's epoch (which dates its port history);
        `changed`: the GUIDs of the only nodes that may differ from the
        snapshot observed before, `valued` of those whose counter values
        may (None: any).

        Only what may have changed is compared: a node whose object is the
        one seen before is skipped, and so is a port whose object is
        unchanged within a changed node.  Counters are compared for
        measured ports only, and only for the nodes whose values the
        snapshot replaced (a provider that read new values for some nodes
        keeps the others' mappings), whether their structure changed or
        not: simulated counters never go backwards but by a clear, which
        the snapshot's port history dates exactly, as it dates a
        scenario's link changes."""
        with self._lock:
            self._observe(fabric, elapsed, changed, valued)

    def observe_swap(self, swap: Swap, elapsed: float) -> None:
        """A provider's swap: only its changed nodes are compared, if the
        snapshot it replaces is the one observed last."""
        with self._lock:
            self._observe(swap.new, elapsed, swap.changed_since(self._node_map),
                          swap.valued_since(self._values))

    def _observe(self, fabric: Fabric, elapsed: float, changed: Set[int] | None,
                 valued: Set[int] | None) -> None:
        now = self._clock() - self._start
        baseline = self._node_map is None
        dated = self._dated_events(fabric, now - elapsed, baseline)
        if fabric.nodes is not self._node_map:
            self._compare_nodes(fabric, now, baseline, dated, None if baseline else changed)
            self._node_map = fabric.nodes
        if fabric.counter_values is not self._values:
            self._compare_values(fabric, now, valued)
            self._values = fabric.counter_values

    def _compare_nodes(self, fabric: Fabric, now: float, baseline: bool, dated: Mapping[PortRef, float],
                       changed: Set[int] | None) -> None:
        seen, objects = self._nodes, self._objects
        nodes = fabric.nodes
        fresh, gone = nodes_to_compare(nodes, objects, changed)
        for guid in fresh:
            node = objects[guid] = nodes[guid]
            before = seen.get(guid)
            if before is None:
                seen[guid] = self._first_sight(fabric, node, None if baseline else now)
            else:
                seen[guid] = self._compare_node(fabric, guid, before, node, now, dated)
        for guid in gone:
            del objects[guid]
            for num in seen.pop(guid):
                self._forget(PortRef(guid, num))
        if gone:
            self._table_changed = now

    def _compare_values(self, fabric: Fabric, now: float, valued: Set[int] | None) -> None:
        """The measured counters of the nodes whose values the snapshot
        replaced (of `valued` alone, when given): a count lower than before
        is a discontinuity."""
        before, current = self._values, fabric.counter_values
        guids = current if valued is None else [guid for guid in valued if guid in current]
        for guid in guids:
            values = current[guid]
            ports = self._nodes.get(guid)
            if ports is None or before.get(guid) is values:
                continue
            for num, old in list(ports.items()):
                layout = old.port.counter_layout
                if layout is None:
                    continue
                port_values = values.get(num)
                if port_values is None or port_values is old.values:
                    continue
                readings = _traffic_readings(port_values, layout.wide)
                ports[num] = old._replace(readings=readings, values=port_values)
                if _went_backwards(old.readings, readings):
                    self._discontinuity[PortRef(guid, num)] = now

    def _first_sight(self, fabric: Fabric, node: Node, now: float | None) -> dict[int, _PortSeen]:
        """A node seen for the first time: at start, a baseline; later, its
        interfaces are new (changed and discontinuous now)."""
        ports = {port.num: self._port_seen(fabric, port) for port in interface_ports(node)}
        if now is not None:
            for num in ports:
                ref = PortRef(node.guid, num)
                self._changed[ref] = self._discontinuity[ref] = now
            self._table_changed = now
        return ports

    def _compare_node(self, fabric: Fabric, guid: int, old_ports: dict[int, _PortSeen], node: Node,
                      now: float, dated: Mapping[PortRef, float]) -> dict[int, _PortSeen]:
        """The node's interfaces now, each compared with what was seen of it."""
        ports: dict[int, _PortSeen] = {}
        for port in interface_ports(node):
            old = old_ports.get(port.num)
            if old is not None and old.port is port:
                ports[port.num] = old  # its values are compared apart (_compare_values)
                continue
            seen = ports[port.num] = self._port_seen(fabric, port)
            ref = PortRef(guid, port.num)
            if old is None:
                self._changed[ref] = self._discontinuity[ref] = now
                self._table_changed = now
                continue
            if seen.status is not old.status:
                # A scenario dates its link changes (a newer one than the
                # last seen: Down -> Init is not dated); a sample is dated now.
                when = dated.get(ref)
                if when is None or when <= self._changed.get(ref, 0.0):
                    when = now
                # A scenario's date is never later than this sight of it: a
                # linkDown sent for it carries a sysUpTime read after now.
                self._changed[ref] = min(when, now)
            if _went_backwards(old.readings, seen.readings):
                self._discontinuity[ref] = now
        if len(ports) != len(old_ports) or any(num not in ports for num in old_ports):
            for num in old_ports:
                if num not in ports:
                    self._forget(PortRef(guid, num))
            self._table_changed = now
        return ports

    @staticmethod
    def _port_seen(fabric: Fabric, port: Port) -> _PortSeen:
        measured = fabric.measured(port)
        if measured is None:
            return _PortSeen(port, oper_status(port), None, None)
        return _PortSeen(port, oper_status(port), _traffic_readings(measured.values, measured.wide),
                         measured.values)

    def _forget(self, ref: PortRef) -> None:
        self._changed.pop(ref, None)
        self._discontinuity.pop(ref, None)

    def _dated_events(self, fabric: Fabric, epoch: float, baseline: bool) -> dict[PortRef, float]:
        """The latest link change of each port whose port history changed
        since the last snapshot, in history time (`epoch`: the provider's
        epoch in history time), where it falls after the start; clears of
        the traffic counters are recorded here, as no port object changes
        with them."""
        history = fabric.port_history
        before = self._port_history
        self._port_history = history
        if history is before or not history:
            return {}
        before = before or {}
        dated: dict[PortRef, float] = {}
        for ref, entry in history.items():
            if before.get(ref) is entry:
                continue
            link = [*entry.downs, *(t for interval in entry.up or () for t in interval if t != _INF)]
            if link and (when := max(link) + epoch) > 0:
                dated[ref] = when
            clears = [when for name, when in entry.clears if name in _TRAFFIC_CLEARS]
            if clears and not baseline and (when := max(clears) + epoch) > 0:
                if self._is_interface(ref) and when > self._discontinuity.get(ref, 0.0):
                    self._discontinuity[ref] = when
        return dated

    def _is_interface(self, ref: PortRef) -> bool:
        ports = self._nodes.get(ref.guid)
        return ports is not None and ref.port in ports


def _moved(times: dict[PortRef, float], shift: float) -> dict[PortRef, float]:
    """`times` moved by `shift`; those that fall before zero are dropped."""
    return {ref: when + shift for ref, when in times.items() if when + shift >= 0}


def _traffic_readings(values: Mapping[str, int], wide: frozenset[str]) -> tuple[int | None, ...] | None:
    """The readings the port's IF-MIB counters are counted from (None: it has
    none).  Raw, not scaled: a reading that went down is a clear, where a
    count scaled to octets could also have wrapped."""
    names = interface_sources_in(wide)
    return tuple(map(values.get, names)) if names else None


def _went_backwards(before: tuple[int | None, ...] | None, after: tuple[int | None, ...] | None) -> bool:
    """A reading lower than before: the counter was cleared (a 64-bit
    counter wrapping is centuries away at any link's rate)."""
    if before is None or after is None or before == after:
        return False
    return any(a is not None and b is not None and b < a for a, b in zip(before, after))

"""What a snapshot's derived data depends on, and how much of it a new snapshot keeps.

A snapshot (model.Fabric) is structure (nodes, links, LIDs, SMs, the SA's records ...) and
measurements (counter values). Derived data (sorted index keys, routing, traffic profiles, MIB
row indexes) depends on parts of the structure only and declares them in its type: `Derived`
(one value a snapshot) and `NodeDerived` (one a node, from its fields and the aspects it names).
It lives in the snapshot's `Lineage`: snapshots that differ in values alone share one, and
`Lineage.successor` keeps what a structural change did not touch (aspects, nodes). A `Fabric`
made any other way starts afresh: a forgotten dependency costs a recomputation, never staleness.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["Aspect", "STRUCTURE", "Derived", "NodeDerived", "Lineage"]

T = TypeVar("T")


class Aspect(enum.Flag):
    """The parts of a snapshot's structure that change independently."""

    NODE_SET = enum.auto()  # which nodes exist, their types and port numbers
    NODES = enum.auto()  # what any node holds (NodeInfo, PortInfo, tables, counter layouts)
    DESCRIPTIONS = enum.auto()  # node descriptions and device names (other nodes' rows name peers by them)
    LINKS = enum.auto()  # Fabric.links, each port's peer and whether it is Active
    LIDS = enum.auto()  # Fabric.lid_map, and so every port's LID and LMC
    SMS = enum.auto()  # the subnet managers
    SM_CONFIG = enum.auto()
    SA = enum.auto()  # partitions, multicast groups, services
    HISTORY = enum.auto()  # what a scenario did to ports (Fabric.port_history)
    CONNECTIONS = enum.auto()
    FORWARDING = enum.auto()  # forwarding tables read from the switches
    IDENTITY = enum.auto()  # subnet prefix, local node, seed, host nodes, routing source


STRUCTURE = Aspect(sum(a.value for a in Aspect))
ANCESTRY = 32  # changes a lineage remembers (Lineage.changes_since)
_SINGLE = tuple(Aspect)
_serials = itertools.count(1)


@dataclass(frozen=True, eq=False)
class Derived(Generic[T]):
    """One value computed from a snapshot's structure, kept while none of
    `depends` changes."""

    name: str
    depends: Aspect
    build: Callable[[Any], T]


@dataclass(frozen=True, eq=False)
class NodeDerived(Generic[T]):
    """One value per node, computed from the snapshot and the node; kept for
    a node whose fields did not change while none of `depends` changes
    (HISTORY in `depends`: for a node whose ports' history did not change,
    whatever other nodes' did)."""

    name: str
    depends: Aspect
    build: Callable[[Any, Any], T]


class Lineage:
    """The derived data of every snapshot with one structure; see the module."""

    __slots__ = ("serial", "parent", "changed", "nodes", "ancestry", "_tokens", "_whole", "_per_node")

    def __init__(self) -> None:
        self.serial = next(_serials)
        self.parent = 0  # the serial of the lineage this one succeeds (0: none)
        self.changed = STRUCTURE  # what changed since the parent
        self.nodes: frozenset[int] | None = None  # the nodes that changed (None: any)
        # (serial, changed, nodes) of this lineage and its nearest ancestors,
        # newest last, at most ANCESTRY of them: what a reader that saw an
        # older one must forget (see changes_since). Plain values, so no old
        # lineage (and none of its derived data) is kept alive.
        self.ancestry: tuple[tuple[int, Aspect, frozenset[int] | None], ...] = (
            (self.serial, STRUCTURE, None),)
        # The serial at which each aspect last changed.
        self._tokens: dict[Aspect, int] = {aspect: self.serial for aspect in _SINGLE}
        self._whole: dict[Derived[Any], Any] = {}
        self._per_node: dict[NodeDerived[Any], dict[int, Any]] = {}

    def token(self, aspects: Aspect) -> tuple[int, ...]:
        """A value equal in two lineages exactly when none of `aspects` changed between them."""
        tokens = self._tokens
        return tuple(tokens[aspect] for aspect in _SINGLE if aspect & aspects)

    def get(self, derived: Derived[T], fabric: Any) -> T:
        whole = self._whole
        value: T  # what `derived` builds: the map holds every Derived's own type
        try:
            value = whole[derived]
        except KeyError:
            # setdefault keeps the first value if two threads raced.
            value = whole.setdefault(derived, derived.build(fabric))
        return value

    def get_for(self, derived: NodeDerived[T], fabric: Any, node: Any) -> T:
        values = self._per_node.get(derived)
        if values is None:
            values = self._per_node.setdefault(derived, {})
        value: T
        try:
            value = values[node.guid]
        except KeyError:
            value = values.setdefault(node.guid, derived.build(fabric, node))
        return value

    def successor(self, changed: Aspect, nodes: Iterable[int] | None = None) -> Lineage:
        """The lineage of a snapshot whose structure differs from this one's
        in `changed`. `nodes`: the nodes the change touched (with NODES, the
        nodes whose fields changed; with HISTORY, those whose ports' history
        did); None: any may have."""
        after = Lineage()
        after.parent, after.changed = self.serial, changed
        after.nodes = None if nodes is None else frozenset(nodes)
        after.ancestry = (self.ancestry + ((after.serial, changed, after.nodes),))[-ANCESTRY:]
        after._tokens = {aspect: (after.serial if aspect & changed else token)
                         for aspect, token in self._tokens.items()}
        after._whole = {d: v for d, v in self._whole.items() if not d.depends & changed}
        for derived, values in self._per_node.items():
            if derived.depends & changed & ~Aspect.HISTORY:
                continue
            if changed & Aspect.NODES or derived.depends & changed & Aspect.HISTORY:
                if after.nodes is None:
                    continue
                after._per_node[derived] = {g: v for g, v in values.items() if g not in after.nodes}
            else:
                after._per_node[derived] = dict(values)
        return after

    def changes_since(self, serial: int) -> tuple[Aspect, frozenset[int] | None] | None:
        """What changed from the lineage `serial` (an ancestor) to this one:
        the aspects and the nodes touched (None: any); None when `serial`
        is not among the ancestors this one remembers."""
        if serial == self.serial:
            return Aspect(0), frozenset()
        serials = [entry[0] for entry in self.ancestry]
        if serial not in serials:
            return None
        changed, any_node = Aspect(0), False
        nodes: set[int] = set()
        for _, aspects, touched in self.ancestry[serials.index(serial) + 1:]:
            changed |= aspects
            if touched is None:
                any_node = True
            else:
                nodes.update(touched)
        return changed, None if any_node else frozenset(nodes)

    def __repr__(self) -> str:
        return f"Lineage({self.serial}, parent {self.parent}, changed {self.changed!r})"

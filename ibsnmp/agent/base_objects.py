"""The agent's own objects outside the served subtrees, read as cells.

The system and snmp groups, sysORTable, snmpSetSerialNo, snmpEngine, the SNMP-MPD-MIB,
SNMP-TARGET-MIB and USM statistics live in pysnmp's MIB tree, whose instrumentation makes an
access check and a tree descent per object and boxes values in pyasn1. They are few and
fixed once the engine is built: `BaseObjects` lists their instances once and reads them
straight from the instance objects, a GET by one dictionary lookup, a GETNEXT by one bisect.
What no principal may read (agent.read_view.SECRET_SUBTREES) is never listed.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from pyasn1.type import univ
from pysnmp.proto import rfc1905
from pysnmp.smi.instrum import MibInstrumController

from ibsnmp.mib.api import (COUNTER32, NO_SUCH_INSTANCE, NO_SUCH_OBJECT, Cell, ContextTarget,
                            Missing, Oid)
from ibsnmp.mib.subtrees import Subtrees

from .pysnmp_cells import cell_of
from .pending_counts import PendingCounts
from .read_view import SECRET_SUBTREES, VIEW_ROOT

# What ticks with the clock: read on every request.
TICKING = frozenset({
    (1, 3, 6, 1, 2, 1, 1, 3, 0),  # sysUpTime.0
    (1, 3, 6, 1, 6, 3, 10, 2, 1, 3, 0),  # snmpEngineTime.0
})
_NULL = univ.Null("")
READABLE = frozenset({"read-only", "read-write", "read-create"})


class BaseObjects:
    """Every readable instance of pysnmp's tree outside `subtrees`, sorted."""

    def __init__(self, base: MibInstrumController, subtrees: Subtrees,
                 counts: PendingCounts) -> None:
        self._counts = counts
        instances: dict[Oid, Any] = {}
        objects: set[Oid] = set()
        builder = base.get_mib_builder()
        instance_class, tree = builder.import_symbols("SNMPv2-SMI", "MibScalarInstance", "iso")
        oid: Oid = VIEW_ROOT
        while True:
            # pysnmp's own GETNEXT, once per instance at start: what it serves.
            ((name, value),) = base.read_next_variables((oid, _NULL))
            oid = tuple(name)
            if isinstance(value, rfc1905.EndOfMibView) or oid[:len(VIEW_ROOT)] != VIEW_ROOT:
                break
            if subtrees.holds(oid) or any(oid[:len(s)] == s for s in SECRET_SUBTREES):
                continue
            instance = tree.getNode(oid)
            if not isinstance(instance, instance_class):
                continue
            parent = oid[:len(oid) - len(instance.instId)]
            objects.add(parent)
            # accessible-for-notify (snmpTrapOID.0) and not-accessible are never read.
            if getattr(tree.getNode(parent), "maxAccess", "") in READABLE:
                instances[oid] = instance
        self._instances = instances
        self._oids = sorted(instances)
        self._objects = frozenset(objects)
        self._object_lengths = sorted({len(obj) for obj in objects})
        # What may be kept as a cell: all but what ticks, and in the default
        # context only for the objects a node's context answers otherwise
        # (agent.node_system overrides their getValue).
        plain = instance_class.getValue
        self._keepable = frozenset(oid for oid in instances if oid not in TICKING)
        self._per_node = frozenset(oid for oid, instance in instances.items()
                                   if type(instance).getValue is not plain)
        # oid -> (the value object it was made from, its cell)
        self._kept: dict[Oid, tuple[Any, Cell]] = {}

    def __contains__(self, oid: Oid) -> bool:
        return oid in self._instances

    @property
    def oids(self) -> list[Oid]:
        """Every instance, in OID order."""
        return list(self._oids)

    def get(self, target: ContextTarget | None, oid: Oid) -> Cell | Missing:
        """The instance's cell; noSuchInstance at or under an object, else noSuchObject."""
        instance = self._instances.get(oid)
        if instance is None:
            for length in self._object_lengths:
                if length <= len(oid) and oid[:length] in self._objects:
                    return NO_SUCH_INSTANCE
            return NO_SUCH_OBJECT
        return self._cell(instance, oid, target)

    def next(self, target: ContextTarget | None, oid: Oid) -> tuple[Oid, Cell] | None:
        """The first instance after `oid`, or None."""
        position = bisect_right(self._oids, oid)
        if position == len(self._oids):
            return None
        found = self._oids[position]
        return found, self._cell(self._instances[found], found, target)

    def _cell(self, instance: Any, oid: Oid, target: ContextTarget | None) -> Cell:
        """The instance's value (`getValue`, which node contexts and the ticking
        sysUpTime and snmpEngineTime override) as a cell. Values that cannot
        change but by a SET (or a reload) are kept, checked against the
        instance's value object; a counter reads with what agent.pending_counts
        still has to add to it."""
        syntax = instance.syntax
        pending = self._counts.pending(instance)
        if pending:  # a counter with additions not written yet
            return Cell(COUNTER32, (int(syntax) + pending) & 0xFFFFFFFF)
        default = target is None or target.default_context or oid not in self._per_node
        kept = self._kept.get(oid) if default else None
        if kept is not None and kept[0] is syntax:
            return kept[1]  # a SET or a flushed count replaces the value object
        cell = cell_of(instance.getValue(oid, contextTarget=target))
        if default and oid in self._keepable:
            self._kept[oid] = (syntax, cell)
        return cell

"""Read object definitions (OIDs, syntaxes, access, indexes) from compiled_mibs/.

The compiled modules are loaded into a private MibBuilder: the agent takes
types and ranges from them and never re-types an object by hand.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pysnmp.smi import builder
from pyasn1.type import constraint

from ibsnmp.mib_compiler.paths import COMPILED_MIB_DIR

from .api import Oid
from .builder_once import MibBuilderOnce

SERVED_MODULES = ("SMA-MIB", "IB-SM-MIB", "IB-CA-MIB", "PMA-MIB", "IBCONNECTION-MIB", "IF-MIB")
READABLE = frozenset({"read-only", "read-write", "read-create"})


@dataclass(frozen=True, slots=True)
class IndexPart:
    name: str
    syntax: Any
    implied: bool


@dataclass(frozen=True, slots=True)
class ObjectDef:
    module: str
    name: str
    oid: Oid
    kind: str  # "scalar", "column", "table", "entry"
    syntax: Any = None
    access: str = ""


@dataclass(frozen=True, slots=True)
class NotificationDef:
    """A NOTIFICATION-TYPE: its OID and OBJECTS (descriptors, in clause order)."""

    module: str
    name: str
    oid: Oid
    objects: tuple[str, ...]


class MibDefinitions:
    """Every object of the served modules, by descriptor."""

    def __init__(self, compiled_dir: Path = COMPILED_MIB_DIR) -> None:
        mib_builder = MibBuilderOnce()
        mib_builder.add_mib_sources(builder.DirMibSource(str(compiled_dir)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            mib_builder.load_modules(*SERVED_MODULES)
        self._builder = mib_builder
        self._classes = {
            name: mib_builder.import_symbols("SNMPv2-SMI", name)[0]
            for name in ("MibScalar", "MibTableColumn", "MibTable", "MibTableRow",
                         "NotificationType")
        }
        self.objects: dict[str, ObjectDef] = {}
        self.notifications: dict[str, NotificationDef] = {}
        self.indexes: dict[str, tuple[IndexPart, ...]] = {}
        self._index_names: dict[str, tuple[tuple[int, str, str], ...]] = {}
        for module in SERVED_MODULES:
            for name, symbol in mib_builder.mibSymbols[module].items():
                self._add(module, name, symbol)

    def _add(self, module: str, name: str, symbol: Any) -> None:
        classes = self._classes
        if isinstance(symbol, classes["MibTableColumn"]):
            kind = "column"
        elif isinstance(symbol, classes["MibScalar"]):
            kind = "scalar"
        elif isinstance(symbol, classes["MibTableRow"]):
            kind = "entry"
        elif isinstance(symbol, classes["MibTable"]):
            kind = "table"
        elif isinstance(symbol, classes["NotificationType"]):
            objects = tuple(descriptor for _module, descriptor in symbol.getObjects())
            self.notifications[name] = NotificationDef(module, name, tuple(symbol.getName()),
                                                       objects)
            return
        else:
            return
        syntax = getattr(symbol, "syntax", None) if kind in ("scalar", "column") else None
        access = symbol.getMaxAccess() if kind in ("scalar", "column") else ""
        self.objects[name] = ObjectDef(module, name, tuple(symbol.getName()), kind, syntax, access)
        if kind == "entry":
            self._index_names[name] = tuple(symbol.getIndexNames())

    def module_identity(self, module: str) -> Oid:
        """The OID of a served module's MODULE-IDENTITY (what sysORID names)."""
        (identity,) = self._builder.import_symbols("SNMPv2-SMI", "ModuleIdentity")
        for symbol in self._builder.mibSymbols[module].values():
            if isinstance(symbol, identity):
                return tuple(symbol.getName())
        raise KeyError(f"{module} has no MODULE-IDENTITY")

    def index_of(self, entry: str) -> tuple[IndexPart, ...]:
        """The INDEX clause of a table entry, with each part's syntax."""
        if entry not in self.indexes:
            parts = []
            for implied, module, column in self._index_names[entry]:
                (symbol,) = self._builder.import_symbols(module, column)
                parts.append(IndexPart(column, symbol.syntax, bool(implied)))
            self.indexes[entry] = tuple(parts)
        return self.indexes[entry]

    def columns_of(self, entry: str) -> list[ObjectDef]:
        """The entry's columns in OID order."""
        prefix = self.objects[entry].oid
        return sorted(
            (o for o in self.objects.values()
             if o.kind == "column" and o.oid[:-1] == prefix),
            key=lambda o: o.oid,
        )

    def readable(self, name: str) -> bool:
        return self.objects[name].access in READABLE

    def textual_convention(self, module: str, name: str) -> Any:
        """A type the compiled modules import (e.g. SNMPv2-TC TruthValue), as
        a syntax object."""
        (symbol,) = self._builder.import_symbols(module, name)
        return symbol()

    def base_scalar(self, module: str, name: str) -> ObjectDef:
        """A scalar of a module pysnmp ships (e.g. SNMPv2-MIB sysContact),
        described like the served ones."""
        (symbol,) = self._builder.import_symbols(module, name)
        return ObjectDef(module, name, tuple(symbol.getName()), "scalar", symbol.syntax,
                         symbol.getMaxAccess())


def size_range(syntax: Any) -> tuple[int, int] | None:
    """The (min, max) octet count an OCTET STRING syntax allows, if constrained."""
    def visit(spec: Any) -> tuple[int, int] | None:
        if isinstance(spec, constraint.ValueSizeConstraint):
            return spec.start, spec.stop
        if isinstance(spec, constraint.ConstraintsUnion):
            bounds = [b for b in (visit(s) for s in spec) if b]
            if bounds:
                return min(b[0] for b in bounds), max(b[1] for b in bounds)
        if isinstance(spec, constraint.ConstraintsIntersection):
            bounds = [b for b in (visit(s) for s in spec) if b]
            if bounds:
                return max(b[0] for b in bounds), min(b[1] for b in bounds)
        return None

    return visit(syntax.subtypeSpec)


@cache
def definitions() -> MibDefinitions:
    """The one shared set of definitions, loaded on first use."""
    return MibDefinitions()

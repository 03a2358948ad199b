"""Plain values as the compiled MIB types them: a BER tag and a checked value.

A binding's getter returns an int, bytes or str (or a tuple for an OBJECT IDENTIFIER).
`CellType.of(syntax)` reads, once per object, what the compiled module says of it (the BER tag
of its SNMP type, value ranges and enumerations, size ranges of strings), and
`CellType.cell(value)` turns a getter's value into a `Cell`, refusing what the syntax does not
allow exactly where pysnmp's own check would. A responder encodes cells directly; the pysnmp
path boxes them (`CellType.box`) into the same syntax objects, so both answer from one
conversion.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pyasn1.type import constraint, univ

from .api import Cell

Intervals = tuple[tuple[int, int], ...] | None  # None: nothing constrains the value


class CellValueError(ValueError):
    """A getter returned a value the object's MIB syntax does not allow."""


def ber_tag(syntax: Any) -> int:
    """The identifier octet a syntax is encoded with (its outermost tag)."""
    tag = syntax.tagSet.superTags[-1]
    if tag.tagId > 30:
        raise ValueError(f"{type(syntax).__name__}: multi-octet tag {tag.tagId} is not an SNMP type")
    octet: int = tag.tagClass | tag.tagFormat | tag.tagId  # pyasn1 is untyped
    return octet


def value_intervals(spec: Any) -> Intervals:
    """The integers a subtype constraint admits, as sorted disjoint (lo, hi)
    intervals; size constraints are ignored (they bound strings)."""
    if isinstance(spec, constraint.ValueSizeConstraint):  # a ValueRangeConstraint subclass
        return None
    if isinstance(spec, constraint.ValueRangeConstraint):
        return ((spec.start, spec.stop),)
    if isinstance(spec, constraint.SingleValueConstraint):
        return _merged((v, v) for v in spec)
    if isinstance(spec, constraint.ConstraintsIntersection):
        return _intersect_all(value_intervals(s) for s in spec)
    if isinstance(spec, constraint.ConstraintsUnion):
        return _union_all(value_intervals(s) for s in spec)
    raise TypeError(f"unsupported constraint {type(spec).__name__}")


def size_intervals(spec: Any) -> Intervals:
    """The octet counts a subtype constraint admits (value constraints ignored)."""
    if isinstance(spec, constraint.ValueSizeConstraint):
        return ((spec.start, spec.stop),)
    if isinstance(spec, constraint.ConstraintsIntersection):
        return _intersect_all(size_intervals(s) for s in spec)
    if isinstance(spec, constraint.ConstraintsUnion):
        return _union_all(size_intervals(s) for s in spec)
    if isinstance(spec, (constraint.ValueRangeConstraint, constraint.SingleValueConstraint)):
        return None
    raise TypeError(f"unsupported constraint {type(spec).__name__}")


def _merged(intervals: Any) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def _intersect_all(parts: Any) -> Intervals:
    result: Intervals = None
    for part in parts:
        if part is None:
            continue
        if result is None:
            result = part
            continue
        result = _merged((max(a, c), min(b, d)) for a, b in result for c, d in part
                         if max(a, c) <= min(b, d))
    return result


def _union_all(parts: Any) -> Intervals:
    collected: list[tuple[int, int]] = []
    for part in parts:
        if part is None:
            return None
        collected.extend(part)
    return _merged(collected)


def _admits(intervals: Intervals, number: int) -> bool:
    if intervals is None:
        return True
    for lo, hi in intervals:
        if lo <= number <= hi:
            return True
    return False


@dataclass(frozen=True, slots=True)
class CellType:
    """What one MIB object's compiled syntax says its values are."""

    name: str
    syntax: Any  # the pysnmp syntax object, for boxing
    tag: int
    kind: str  # "int", "octets" or "oid"
    values: Intervals  # integers admitted (enumerations and ranges), "int" only
    sizes: Intervals  # octet counts admitted, "octets" only
    encoding: str  # how a str getter value becomes octets (the syntax's own)

    @classmethod
    def of(cls, name: str, syntax: Any) -> CellType:
        if isinstance(syntax, univ.Integer):
            kind = "int"
        elif isinstance(syntax, univ.OctetString):
            kind = "octets"
        elif isinstance(syntax, univ.ObjectIdentifier):
            kind = "oid"
        else:
            raise TypeError(f"{name}: unsupported syntax {type(syntax).__name__}")
        spec = syntax.subtypeSpec
        return cls(
            name=name, syntax=syntax, tag=ber_tag(syntax), kind=kind,
            values=value_intervals(spec) if kind == "int" else None,
            sizes=size_intervals(spec) if kind == "octets" else None,
            encoding=getattr(syntax, "encoding", "iso-8859-1"),
        )

    @property
    def named_values(self) -> dict[str, int]:
        """The enumeration's labels (empty when the syntax has none)."""
        named = getattr(self.syntax, "namedValues", None)
        return dict(named.items()) if named is not None else {}

    def cell(self, value: Any) -> Cell:
        """The cell of a getter's plain value; CellValueError when the
        syntax does not admit it."""
        kind = self.kind
        if kind == "int":
            number = value if type(value) is int else _integer(self.name, value)
            values = self.values
            if values is not None and not (
                values[0][0] <= number <= values[0][1] if len(values) == 1
                else _admits(values, number)
            ):
                raise CellValueError(f"{self.name}: {number} is outside {list(values)}")
            return Cell(self.tag, number)
        if kind == "octets":
            octets = value if type(value) is bytes else self._octets(value)
            if not _admits(self.sizes, len(octets)):
                raise CellValueError(f"{self.name}: {len(octets)} octets, the syntax allows "
                                     f"{list(self.sizes or ())}")
            return Cell(self.tag, octets)
        return Cell(self.tag, _oid(self.name, value))

    def box(self, cell: Cell) -> Any:
        """The pysnmp syntax object of a cell (the value the pysnmp path serves)."""
        return self.syntax.clone(cell.value)

    def _octets(self, value: Any) -> bytes:
        if isinstance(value, str):
            return value.encode(self.encoding)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        raise CellValueError(f"{self.name}: an OCTET STRING value, got {type(value).__name__}")


def converter(ctype: CellType) -> Callable[[Any], Cell]:
    """`ctype.cell`, with the common case first: an int inside the one range
    of its object, or bytes of an admitted size, costs two comparisons."""
    tag, full = ctype.tag, ctype.cell
    # tuple.__new__ makes the named tuple without its Python-level __new__
    # (cheaper, and this runs once per value served).
    make = tuple.__new__
    if ctype.kind == "int" and ctype.values is not None and len(ctype.values) == 1:
        (low, high), = ctype.values

        def integer(value: Any) -> Cell:
            if type(value) is int and low <= value <= high:
                return make(Cell, (tag, value))
            return full(value)
        return integer
    if ctype.kind == "octets" and ctype.sizes is not None and len(ctype.sizes) == 1:
        (shortest, longest), = ctype.sizes

        def octets(value: Any) -> Cell:
            if type(value) is bytes and shortest <= len(value) <= longest:
                return make(Cell, (tag, value))
            return full(value)
        return octets
    return full


def _integer(name: str, value: Any) -> int:
    if isinstance(value, (bytes, str, float)):
        raise CellValueError(f"{name}: an integer value, got {type(value).__name__}")
    try:
        return operator.index(value)
    except TypeError:
        raise CellValueError(f"{name}: an integer value, got {type(value).__name__}") from None


def _oid(name: str, value: Any) -> tuple[int, ...]:
    if isinstance(value, str):
        parts: Sequence[Any] = [p for p in value.split(".") if p]
    elif isinstance(value, (tuple, list)):
        parts = value
    else:
        raise CellValueError(f"{name}: an OBJECT IDENTIFIER value, got {type(value).__name__}")
    try:
        arcs = tuple(int(p) for p in parts)
    except ValueError:
        raise CellValueError(f"{name}: {value!r} is not an OBJECT IDENTIFIER") from None
    if len(arcs) < 2 or any(a < 0 for a in arcs):
        raise CellValueError(f"{name}: {value!r} is not an OBJECT IDENTIFIER")
    return arcs

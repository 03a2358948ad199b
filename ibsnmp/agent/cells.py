"""Plain cells from the VirtualMib's pysnmp values: the fast responder's view of the MIB.

A cell is what a varbind value is on the wire: its BER tag and a plain
value (an int, octets or OID arcs), with no pysnmp object. `CellMib`
offers `get_cell` / `next_cell` over any VirtualMib by unboxing the
pysnmp syntax objects its `get` / `get_next` return; a VirtualMib that
serves cells natively (the same two methods) is used as it is.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from pyasn1.type import univ

from ibsnmp.mib.api import ContextTarget, Missing, Oid, VirtualMib


class Cell(NamedTuple):
    """A value as BER carries it: the tag and the plain value."""

    tag: int
    value: int | bytes | Oid


class CellSource(Protocol):
    """Read access in cells for one context target (what the fast responder needs)."""

    subtree: Oid

    def get_cell(self, target: ContextTarget, oid: Oid) -> Cell | Missing: ...

    def next_cell(self, target: ContextTarget, oid: Oid) -> tuple[Oid, Cell] | None: ...


_TAGS: dict[Any, int] = {}  # pyasn1 TagSet -> the BER tag octet


def tag_of(value: Any) -> int:
    """The BER tag octet a pysnmp value is written with (its outermost tag)."""
    tag_set = value.tagSet
    octet = _TAGS.get(tag_set)
    if octet is None:
        tag = tag_set[-1]
        octet = _TAGS[tag_set] = tag.tagClass | tag.tagFormat | tag.tagId
    return octet


def cell_of(value: Any) -> Cell:
    """A pysnmp syntax object (or exception value) as a cell."""
    if isinstance(value, univ.Integer):
        return Cell(tag_of(value), int(value))
    if isinstance(value, univ.OctetString):
        return Cell(tag_of(value), value.asOctets())
    if isinstance(value, univ.ObjectIdentifier):
        return Cell(tag_of(value), tuple(value))
    if isinstance(value, univ.Null):
        return Cell(tag_of(value), b"")
    raise TypeError(f"no plain form for {type(value).__name__}")


class CellMib:
    """`get_cell` / `next_cell` over a VirtualMib that speaks pysnmp values."""

    __slots__ = ("_mib", "subtree")

    def __init__(self, mib: VirtualMib) -> None:
        self._mib = mib
        self.subtree = tuple(mib.subtree)

    def get_cell(self, target: ContextTarget, oid: Oid) -> Cell | Missing:
        value = self._mib.get(target, oid)
        return value if isinstance(value, Missing) else cell_of(value)

    def next_cell(self, target: ContextTarget, oid: Oid) -> tuple[Oid, Cell] | None:
        found = self._mib.get_next(target, oid)
        if found is None:
            return None
        next_oid, value = found
        return next_oid, cell_of(value)


def cell_source(mib: VirtualMib) -> CellSource:
    """The MIB itself when it serves cells, else the unboxing adapter."""
    if hasattr(mib, "get_cell") and hasattr(mib, "next_cell"):
        return mib  # type: ignore[return-value]
    return CellMib(mib)

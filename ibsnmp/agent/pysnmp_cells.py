"""Cells from pysnmp values: how the fast responder reads the objects pysnmp
itself serves (the system and snmp groups, sysORTable, SNMP-FRAMEWORK-MIB...).

The InfiniBand subtree is read as cells natively (`VirtualMib.get_cell` /
`next_cell`); the agent's few base objects live in pysnmp's MIB tree, so
their values are unboxed here into the same `Cell` (BER tag, plain value).
"""

from __future__ import annotations

from typing import Any

from pyasn1.type import univ

from ibsnmp.mib.api import Cell

__all__ = ["Cell", "tag_of", "cell_of"]

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

"""SMIv2 INDEX encoding (RFC 2578 section 7.7) without pysnmp objects.

Integers are one sub-identifier; a fixed-size OCTET STRING is its octets
with no length; a variable-size one is length then octets, unless IMPLIED;
an IpAddress is four octets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyasn1.type import univ

from .api import Oid
from .loader import IndexPart, size_range


MAX_OID_ARCS = 128  # RFC 2578 3.5: no instance is longer


class IndexCodec:
    """Encodes and decodes one table's index values."""

    def __init__(self, parts: Sequence[IndexPart]) -> None:
        self._kinds: list[tuple[str, int | None, bool]] = []
        most = 0
        for part in parts:
            kind = _kind_of(part)
            self._kinds.append(kind)
            if kind[0] == "int":
                most += 1
            elif kind[1] is not None:
                most += kind[1]
            else:
                bounds = size_range(part.syntax)
                most += (0 if kind[2] else 1) + (bounds[1] if bounds else MAX_OID_ARCS)
        # The most arcs an instance suffix of this index can have.
        self.most_arcs = min(most, MAX_OID_ARCS)

    def encode(self, values: Sequence[Any]) -> Oid:
        if len(values) != len(self._kinds):
            raise ValueError(f"index has {len(self._kinds)} parts, got {len(values)} values")
        return self.encode_prefix(values)

    def encode_prefix(self, values: Sequence[Any]) -> Oid:
        """The sub-identifiers of the first len(values) index parts."""
        out: list[int] = []
        for (kind, fixed, implied), value in zip(self._kinds, values):
            if kind == "int":
                out.append(int(value))
                continue
            octets = value.encode("latin-1") if isinstance(value, str) else bytes(value)
            if fixed is None and not implied:
                out.append(len(octets))
            out.extend(octets)
        return tuple(out)

    def decode(self, suffix: Oid) -> tuple[Any, ...] | None:
        """The index values an instance suffix encodes (ints, and bytes for
        OCTET STRINGs), or None when the suffix is not a valid encoding
        (wrong length, an octet above 255, an integer out of range)."""
        values: list[Any] = []
        at = 0
        last = len(self._kinds) - 1
        for position, (kind, fixed, implied) in enumerate(self._kinds):
            if kind == "int":
                if at >= len(suffix) or not 0 <= suffix[at] <= 0xFFFFFFFF:
                    return None
                values.append(suffix[at])
                at += 1
                continue
            if fixed is not None:
                length = fixed
            elif implied and position == last:
                length = len(suffix) - at
            else:
                if at >= len(suffix):
                    return None
                length = suffix[at]
                at += 1
            octets = suffix[at : at + length]
            if len(octets) != length or any(not 0 <= o <= 255 for o in octets):
                return None
            values.append(bytes(octets))
            at += length
        if at != len(suffix):
            return None
        return tuple(values)


def _kind_of(part: IndexPart) -> tuple[str, int | None, bool]:
    syntax = part.syntax
    if isinstance(syntax, univ.OctetString):
        if type(syntax).__name__ == "IpAddress":
            return ("octets", 4, part.implied)
        bounds = size_range(syntax)
        fixed = bounds[0] if bounds and bounds[0] == bounds[1] else None
        return ("octets", fixed, part.implied)
    if isinstance(syntax, univ.Integer):
        return ("int", None, False)
    raise TypeError(f"index {part.name}: unsupported syntax {type(syntax).__name__}")

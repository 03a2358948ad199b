"""Declarative bit layouts of MAD headers and attributes.

A layout is a table of fields, each named with its bit offset and width as
the InfiniBand Architecture specification draws them: offsets count from
the most significant bit of the first octet, and every multi-octet value is
big-endian on the wire. Encoding and decoding are generic, so each
attribute is described once, as data, and never hand-packed.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

FieldValue = int | bytes | str | tuple[int, ...]


class LayoutError(ValueError):
    """A layout, a buffer or a value does not fit."""


def get_bits(data: bytes | bytearray, offset: int, width: int) -> int:
    """The unsigned value of `width` bits starting `offset` bits into `data`."""
    if offset < 0 or width <= 0 or offset + width > len(data) * 8:
        raise LayoutError(f"bits {offset}+{width} lie outside {len(data)} octets")
    first = offset // 8
    last = (offset + width - 1) // 8
    chunk = int.from_bytes(data[first:last + 1], "big")
    if not offset % 8 and not width % 8:
        return chunk
    trailing = (last + 1) * 8 - (offset + width)
    return (chunk >> trailing) & ((1 << width) - 1)


def set_bits(data: bytearray, offset: int, width: int, value: int) -> None:
    """Store `value` in `width` bits starting `offset` bits into `data`."""
    if offset < 0 or width <= 0 or offset + width > len(data) * 8:
        raise LayoutError(f"bits {offset}+{width} lie outside {len(data)} octets")
    if not 0 <= value < (1 << width):
        raise LayoutError(f"{value} does not fit in {width} bits")
    first = offset // 8
    last = (offset + width - 1) // 8
    span = last + 1 - first
    trailing = (last + 1) * 8 - (offset + width)
    mask = ((1 << width) - 1) << trailing
    chunk = int.from_bytes(data[first:last + 1], "big")
    chunk = (chunk & ~mask) | (value << trailing)
    data[first:last + 1] = chunk.to_bytes(span, "big")


@dataclass(frozen=True)
class Field:
    """An unsigned integer of `width` bits."""

    name: str
    offset: int
    width: int

    @property
    def end(self) -> int:
        return self.offset + self.width

    def decode(self, data: bytes | bytearray) -> FieldValue:
        return get_bits(data, self.offset, self.width)

    def encode(self, data: bytearray, value: FieldValue) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise LayoutError(f"{self.name} takes an integer, not {value!r}")
        set_bits(data, self.offset, self.width, value)


@dataclass(frozen=True)
class OctetsField(Field):
    """Raw octets (GIDs, paths, opaque blocks); offset and width are octet-aligned."""

    def __post_init__(self) -> None:
        if self.offset % 8 or self.width % 8:
            raise LayoutError(f"{self.name} must be octet-aligned")

    def decode(self, data: bytes | bytearray) -> FieldValue:
        if self.end > len(data) * 8:
            raise LayoutError(f"{self.name} lies outside {len(data)} octets")
        return bytes(data[self.offset // 8:self.end // 8])

    def encode(self, data: bytearray, value: FieldValue) -> None:
        if not isinstance(value, (bytes, bytearray)) or len(value) > self.width // 8:
            raise LayoutError(f"{self.name} takes at most {self.width // 8} octets")
        data[self.offset // 8:self.end // 8] = bytes(value).ljust(self.width // 8, b"\0")


@dataclass(frozen=True)
class TextField(OctetsField):
    """A NUL-padded string (NodeDescription is UTF-8 by the specification)."""

    def decode(self, data: bytes | bytearray) -> FieldValue:
        raw = super().decode(data)
        assert isinstance(raw, bytes)
        return raw.split(b"\0", 1)[0].decode("utf-8", errors="replace")

    def encode(self, data: bytearray, value: FieldValue) -> None:
        if not isinstance(value, str):
            raise LayoutError(f"{self.name} takes a string")
        super().encode(data, value.encode("utf-8"))


@dataclass(frozen=True)
class ArrayField(Field):
    """`count` unsigned elements of `element_width` bits each, packed from `offset`.

    `width` is the element pitch times the count; an element sits in the
    low-order `element_width` bits of its `pitch` (VLArbitration entries
    carry 4 reserved bits before the VL, for example).
    """

    count: int = 1
    element_width: int = 8
    _struct: struct.Struct | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def pitch(self) -> int:
        return self.width // self.count

    def __post_init__(self) -> None:
        if self.count <= 0 or self.width % self.count or self.element_width > self.pitch:
            raise LayoutError(f"{self.name}: {self.count} elements do not fit {self.width} bits")
        # Whole octet-aligned elements (ports, P_Keys, GUIDs) unpack in one call:
        # paths and tables are in every reply of a sweep.
        codes = {8: "B", 16: "H", 32: "I", 64: "Q"}
        whole = self.element_width == self.pitch and not self.offset % 8
        code = codes.get(self.element_width) if whole else None
        object.__setattr__(self, "_struct",
                           struct.Struct(f">{self.count}{code}") if code else None)

    def decode(self, data: bytes | bytearray) -> FieldValue:
        packed = self._struct
        if packed is not None:
            if self.end > len(data) * 8:
                raise LayoutError(f"{self.name} lies outside {len(data)} octets")
            return packed.unpack_from(data, self.offset // 8)
        skip = self.pitch - self.element_width
        return tuple(get_bits(data, self.offset + i * self.pitch + skip, self.element_width)
                     for i in range(self.count))

    def encode(self, data: bytearray, value: FieldValue) -> None:
        if not isinstance(value, (tuple, list)) or len(value) != self.count:
            raise LayoutError(f"{self.name} takes {self.count} elements")
        packed = self._struct
        if packed is not None:
            try:
                packed.pack_into(data, self.offset // 8, *value)
            except struct.error as exc:
                raise LayoutError(f"{self.name}: {exc}") from exc
            return
        skip = self.pitch - self.element_width
        for i, element in enumerate(value):
            set_bits(data, self.offset + i * self.pitch + skip, self.element_width, element)


class Layout:
    """The fields of one header or attribute, within `size` octets."""

    def __init__(self, name: str, size: int, fields: Sequence[Field]) -> None:
        self.name = name
        self.size = size
        self.fields = tuple(fields)
        self.by_name = {f.name: f for f in self.fields}
        if len(self.by_name) != len(self.fields):
            raise LayoutError(f"{name}: a field name repeats")
        taken = sorted(self.fields, key=lambda f: f.offset)
        for before, after in zip(taken, taken[1:]):
            if before.end > after.offset:
                raise LayoutError(f"{name}: {before.name} overlaps {after.name}")
        if taken and taken[-1].end > size * 8:
            raise LayoutError(f"{name}: {taken[-1].name} runs past {size} octets")
        # Integer fields are cut from the whole layout read as one big integer:
        # a sweep decodes thousands of replies and per-field slicing dominated it.
        self._integers = {f.name: (size * 8 - f.end, (1 << f.width) - 1)
                          for f in self.fields if type(f) is Field}

    def decode(self, data: bytes | bytearray) -> dict[str, FieldValue]:
        """Every field of the layout, read from the first `size` octets of `data`."""
        if len(data) < self.size:
            raise LayoutError(f"{self.name} needs {self.size} octets, got {len(data)}")
        whole = int.from_bytes(data[:self.size], "big")
        values: dict[str, FieldValue] = {}
        for f in self.fields:
            cut = self._integers.get(f.name)
            values[f.name] = (whole >> cut[0]) & cut[1] if cut else f.decode(data)
        return values

    def encode(self, values: Mapping[str, FieldValue], into: bytearray | None = None) -> bytearray:
        """`size` octets (or `into`, modified in place) with the named fields set."""
        unknown = set(values) - set(self.by_name)
        if unknown:
            raise LayoutError(f"{self.name} has no field {sorted(unknown)}")
        data = into if into is not None else bytearray(self.size)
        if len(data) < self.size:
            raise LayoutError(f"{self.name} needs {self.size} octets, got {len(data)}")
        whole = int.from_bytes(data[:self.size], "big")
        for name, value in values.items():
            cut = self._integers.get(name)
            if cut is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= cut[1]:
                raise LayoutError(f"{name} takes an integer of {cut[1].bit_length()} bits, "
                                  f"not {value!r}")
            whole = (whole & ~(cut[1] << cut[0])) | (value << cut[0])
        data[:self.size] = whole.to_bytes(self.size, "big")
        for name, value in values.items():
            if name not in self._integers:
                self.by_name[name].encode(data, value)
        return data

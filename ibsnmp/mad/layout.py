"""Declarative bit layouts of MAD headers and attributes.

A layout is a table of fields, each named with its bit offset and width as
the InfiniBand Architecture specification draws them: offsets count from
the most significant bit of the first octet, and every multi-octet value is
big-endian on the wire. Encoding and decoding are generic, so each
attribute is described once, as data, and never hand-packed. A layout is
typed by its record, the TypedDict ibsnmp.mad.records_generated declares
for it (`Layout[NodeInfo]`): `decode` returns that.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar, cast, overload

FieldValue = int | bytes | str | tuple[int, ...]
# Any layout's record, seen without its own type. A TypedDict is a Mapping[str,
# object] but no Mapping[str, FieldValue]: a subtype of it may add keys of any type.
AnyRecord = Mapping[str, object]
# A layout's record type; covariant, so a Layout[NodeInfo] is a Layout[AnyRecord].
RecordT = TypeVar("RecordT", bound=AnyRecord, covariant=True)
Decoder = Callable[[bytes | bytearray], dict[str, FieldValue]]
Packer = Callable[..., bytearray]
Reader = Callable[[bytes | bytearray], tuple[FieldValue, ...]]


def field_int(value: FieldValue) -> int:
    """`int(value)` of an integer field's value, typed: only a tuple (an array
    field) is refused, as int() refuses it."""
    if isinstance(value, tuple):
        raise TypeError(f"an array field has no int value: {value!r}")
    return int(value)


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


class Layout(Generic[RecordT]):
    """The fields of one header or attribute, within `size` octets; `RecordT`
    is the TypedDict of a decoded record (declared by annotating the layout's
    variable, so a new layout imports before its record is generated)."""

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
        self._decoders: dict[tuple[str, ...] | None, Decoder] = {}
        self._packers: dict[tuple[tuple[str, ...], tuple[tuple[str, FieldValue], ...]],
                            Packer] = {}
        self._readers: dict[tuple[str, ...], Reader] = {}
        # `decode(data)`: every field of the layout, read from the first `size`
        # octets of `data`. The compiled decoder itself rather than a method
        # that calls it: a sweep decodes one reply per SMP. The cast types it
        # as the record (a test holds the records to what decode returns).
        self.decode = cast("Callable[[bytes | bytearray], RecordT]", self.decoder())

    def decoder(self, names: Iterable[str] | None = None) -> Decoder:
        """A compiled reader of the named fields (all when None: the same
        function as `decode`): equal to `decode_generic` on those fields, and
        faster. Typed loosely, as a subset of a record or any layout's is."""
        key = None if names is None else tuple(names)
        found = self._decoders.get(key)
        if found is None:
            wanted = self.fields if key is None else tuple(self._field(n) for n in key)
            found = self._decoders[key] = compile_decoder(self, wanted)
        return found

    def reader(self, names: Sequence[str]) -> Reader:
        """A compiled reader of the named fields' values, as a tuple in that order:
        for hot paths that check a few fields and build no dictionary."""
        key = tuple(names)
        found = self._readers.get(key)
        if found is None:
            wanted = tuple(self._field(n) for n in key)
            found = self._readers[key] = compile_decoder(self, wanted, as_tuple=True)
        return found

    def packer(self, names: Sequence[str], fixed: Mapping[str, FieldValue] | None = None) -> Packer:
        """A compiled writer: `packer(names, fixed)(*values)` is
        `encode({**fixed, **dict(zip(names, values))})`; the fixed values are
        checked once, here, and folded into the generated code."""
        constants = dict(fixed or {})
        key = (tuple(names), tuple(sorted(constants.items())))
        found = self._packers.get(key)
        if found is None:
            if set(constants) & set(key[0]):
                raise LayoutError(f"{self.name}: a field is both fixed and given")
            self.encode(constants)  # refuses what does not fit, as encode would
            found = self._packers[key] = compile_packer(
                self, [self._field(n) for n in key[0]],
                {self._field(n).name: v for n, v in constants.items()})
        return found

    def _field(self, name: str) -> Field:
        try:
            return self.by_name[name]
        except KeyError:
            raise LayoutError(f"{self.name} has no field {name!r}") from None

    def decode_generic(self, data: bytes | bytearray) -> dict[str, FieldValue]:
        """`decode` field by field: the reference the compiled codecs are checked against."""
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


# Compiled codecs. A sweep decodes and encodes thousands of MADs, and reading
# a field table field by field is slow for each of them, so each
# layout (or a subset of its fields) is turned, once, into one struct.Struct
# for its scalar fields and a generated function that cuts every field from
# one unpack. The field table stays the only source: nothing here knows an
# attribute.

_STRUCT_CODES = {1: "B", 2: "H", 4: "I", 8: "Q"}
# A decoder of up to this many fields returns a dictionary display.
_LITERAL_FIELDS = 16


@dataclass
class _Span:
    """Octets [start, end) read as one struct item, and the fields cut from them."""

    start: int
    end: int
    fields: list[Field]

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def octets(self) -> bool:
        return isinstance(self.fields[0], OctetsField)

    @property
    def code(self) -> str:
        code = None if self.octets else _STRUCT_CODES.get(self.size)
        return code or f"{self.size}s"

    def cut(self, f: Field) -> tuple[int, int]:
        """(shift, mask) of integer field `f` within this span's value."""
        return self.end * 8 - f.end, (1 << f.width) - 1


@dataclass
class _Plan:
    """How a set of fields is read: scalar spans through one struct, octet-aligned
    arrays through their own, bit-packed arrays field by field."""

    spans: list[_Span]
    arrays: list[ArrayField]
    loose: list[ArrayField]
    struct: struct.Struct


def _plan(fields: Sequence[Field]) -> _Plan:
    spans: list[_Span] = []
    arrays: list[ArrayField] = []
    loose: list[ArrayField] = []
    for f in sorted(fields, key=lambda f: f.offset):
        start, end = f.offset // 8, (f.end + 7) // 8
        if isinstance(f, ArrayField):
            (arrays if f._struct is not None else loose).append(f)
        elif (spans and not isinstance(f, OctetsField) and not spans[-1].octets
              and start < spans[-1].end):
            spans[-1].end = max(spans[-1].end, end)  # bit fields sharing octets
            spans[-1].fields.append(f)
        else:
            spans.append(_Span(start, end, [f]))
    codes, at = [">"], 0
    for span in spans:
        if span.start > at:
            codes.append(f"{span.start - at}x")
        codes.append(span.code)
        at = span.end
    return _Plan(spans, arrays, loose, struct.Struct("".join(codes)))


def _generated(source: list[str], namespace: dict[str, object], name: str) -> Callable[..., object]:
    # The source is built above from a field table alone, never from input.
    exec("\n".join(source), namespace)
    return cast(Callable[..., object], namespace[name])  # the function the source defines


@overload
def compile_decoder(layout: Layout[AnyRecord], fields: Sequence[Field],
                    as_tuple: Literal[False] = False) -> Decoder: ...
@overload
def compile_decoder(layout: Layout[AnyRecord], fields: Sequence[Field],
                    as_tuple: Literal[True]) -> Reader: ...
def compile_decoder(layout: Layout[AnyRecord], fields: Sequence[Field],
                    as_tuple: bool = False) -> Decoder | Reader:
    """A function equal to `layout.decode_generic` restricted to `fields` (or to
    the tuple of its values, `as_tuple`)."""
    plan = _plan(fields)
    namespace: dict[str, object] = {"unpack_from": plan.struct.unpack_from,
                                    "from_bytes": int.from_bytes, "LayoutError": LayoutError}
    lines = ["def decode(data):",
             f"    if len(data) < {layout.size}:",
             f"        raise LayoutError(f'{layout.name} needs {layout.size} octets, "
             "got {len(data)}')"]
    if plan.spans:
        lines.append(f"    {''.join(f'v{i}, ' for i in range(len(plan.spans)))}= unpack_from(data)")
    values: dict[str, str] = {}
    for number, span in enumerate(plan.spans):
        item = f"v{number}"
        if span.octets:
            values[span.fields[0].name] = (
                f"{item}.split(b'\\0', 1)[0].decode('utf-8', 'replace')"
                if isinstance(span.fields[0], TextField) else item)
            continue
        if span.code.endswith("s"):
            lines.append(f"    {item} = from_bytes({item}, 'big')")
        for f in span.fields:
            shift, mask = span.cut(f)
            if not shift and f.width == span.size * 8:
                values[f.name] = item
            else:
                shifted = f"({item} >> {shift})" if shift else item
                values[f.name] = f"{shifted} & {mask:#x}"
    for number, f in enumerate(plan.arrays):
        assert f._struct is not None
        namespace[f"array{number}"] = f._struct.unpack_from
        values[f.name] = f"array{number}(data, {f.offset // 8})"
    for number, f in enumerate(plan.loose):
        namespace[f"loose{number}"] = f.decode
        values[f.name] = f"loose{number}(data)"
    # Fields in the order asked, as `decode_generic` lists the table's.
    if as_tuple:
        lines.append(f"    return ({''.join(f'{values[f.name]}, ' for f in fields)})")
    elif len(fields) > _LITERAL_FIELDS:
        # CPython builds a dictionary display of more than 16 items in pieces
        # and merges them; a copy of one with the keys in place, then filled,
        # does not grow or merge (PortInfo: 51 fields, one per port swept).
        namespace["blank"] = dict.fromkeys(f.name for f in fields).copy
        lines.append("    values = blank()")
        lines += [f"    values[{f.name!r}] = {values[f.name]}" for f in fields]
        lines.append("    return values")
    else:
        lines.append(f"    return {{{', '.join(f'{f.name!r}: {values[f.name]}' for f in fields)}}}")
    return cast("Decoder | Reader", _generated(lines, namespace, "decode"))


def _checked_int(name: str, value: object, mask: int) -> int:
    """`value` as a plain int (an IntEnum member is one), or a LayoutError."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= mask:
        raise LayoutError(f"{name} takes an integer of {mask.bit_length()} bits, "
                          f"not {value!r}")
    return int(value)


def _checked_octets(name: str, value: object, size: int, text: bool) -> bytes:
    if text:
        if not isinstance(value, str):
            raise LayoutError(f"{name} takes a string")
        value = value.encode("utf-8")
    if not isinstance(value, (bytes, bytearray)) or len(value) > size:
        raise LayoutError(f"{name} takes at most {size} octets")
    return bytes(value)


def _checked_array(name: str, value: object, count: int) -> Sequence[int]:
    if not isinstance(value, (tuple, list)) or len(value) != count:
        raise LayoutError(f"{name} takes {count} elements")
    return value


def compile_packer(layout: Layout[AnyRecord], fields: Sequence[Field],
                   fixed: Mapping[str, FieldValue] | None = None) -> Packer:
    """A function of the values of `fields`, in that order, equal to `layout.encode`
    of them and of the `fixed` values (already checked) into a fresh buffer,
    every other field zero."""
    constants = dict(fixed or {})
    plan = _plan([*fields, *(layout.by_name[n] for n in constants)])
    argument = {f.name: f"a{i}" for i, f in enumerate(fields)}
    for number, (name, value) in enumerate(constants.items()):
        argument[name] = f"fixed{number}"
    namespace: dict[str, object] = {
        "pack_into": plan.struct.pack_into, "LayoutError": LayoutError,
        "struct_error": struct.error, "checked_int": _checked_int,
        "checked_octets": _checked_octets, "checked_array": _checked_array}
    for number, value in enumerate(constants.values()):
        namespace[f"fixed{number}"] = value.encode("utf-8") if isinstance(value, str) else value
    items: list[str] = []
    checks: list[str] = []
    for span in plan.spans:
        first = span.fields[0]
        if span.octets:
            text = isinstance(first, TextField)
            items.append(argument[first.name] if first.name in constants else
                         f"checked_octets({first.name!r}, {argument[first.name]}, "
                         f"{span.size}, {text})")
            continue
        parts = []
        folded = 0
        for f in span.fields:
            shift, mask = span.cut(f)
            if f.name in constants:
                folded |= field_int(constants[f.name]) << shift
                continue
            a = argument[f.name]
            # The common case (a plain int in range) costs one test, no call.
            checks.append(f"    if type({a}) is not int or not 0 <= {a} <= {mask:#x}:")
            checks.append(f"        {a} = checked_int({f.name!r}, {a}, {mask:#x})")
            parts.append(f"({a} << {shift})" if shift else a)
        if folded or not parts:
            parts.append(f"{folded:#x}")
        whole = " | ".join(parts)
        items.append(f"({whole}).to_bytes({span.size}, 'big')" if span.code.endswith("s")
                     else whole)
    lines = [f"def pack({', '.join(argument[f.name] for f in fields)}):", *checks,
             f"    data = bytearray({layout.size})",
             "    try:"]
    if items:
        lines.append(f"        pack_into(data, 0, {', '.join(items)})")
    for number, f in enumerate(plan.arrays):
        assert f._struct is not None
        namespace[f"array{number}"] = f._struct.pack_into
        elements = (argument[f.name] if f.name in constants
                    else f"checked_array({f.name!r}, {argument[f.name]}, {f.count})")
        lines.append(f"        array{number}(data, {f.offset // 8}, *{elements})")
    if lines[-1] == "    try:":
        lines.append("        pass")  # bit-packed arrays only
    lines += ["    except struct_error as exc:",
              f"        raise LayoutError(f'{layout.name}: {{exc}}') from exc"]
    for number, f in enumerate(plan.loose):
        namespace[f"loose{number}"] = f.encode
        lines.append(f"    loose{number}(data, {argument[f.name]})")
    lines.append("    return data")
    return cast(Packer, _generated(lines, namespace, "pack"))

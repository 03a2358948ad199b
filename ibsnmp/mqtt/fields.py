"""Field-by-field JSON conversion of the model's record types, derived from their type hints so
a field added to the model is carried without a second list to keep in step.

A field whose value is None (the provider could not tell) is left out of the JSON; a missing
key decodes to None, so absent stays absent and is never replaced by a default. 64-bit
identifiers and keys are 16 hex digits (JSON numbers lose precision past 2^53 in many
readers); enumerations and bit sets are their IBA integer codes. A string is Unicode text (no
unpaired surrogate) of at most STRING_LIMITS (else MAX_STRING) characters.
"""

from __future__ import annotations

import enum
import math
import re
import types
import typing
from collections.abc import Callable
from typing import Any

from ibsnmp.documents import JSON, DocumentError, boolean, check_keys, expect, hex_digits, integer, number, text

__all__ = ["PayloadError", "StructCodec", "HEX64_FIELDS", "STRING_LIMITS", "MAX_STRING", "hex64", "hex128",
           "parse_hex64", "parse_hex128"]

# Fields holding 64-bit GUIDs, keys or prefixes, in any record type.
HEX64_FIELDS = frozenset({"guid", "node_guid", "system_image_guid", "m_key", "sm_key", "gid_prefix", "key"})
# 128-bit GIDs: 32 hex digits.
HEX128_FIELDS = frozenset({"gid1", "gid2"})
_HEX64 = re.compile(r"[0-9a-f]{16}")
_HEX128 = re.compile(r"[0-9a-f]{32}")
_MAX_INT = (1 << 64) - 1
# The longest a string field may be, in characters.  IBA's NodeDescription
# is 64 octets, which no decoding makes more than 64 characters (a
# provider's replacement character stands for at least one octet).  Other
# names (the model, the OS's device name, a firmware version: 64-octet
# buffers in Linux) may have 128, as an MQTT client id or fabric id may.
STRING_LIMITS = {"description": 64}
MAX_STRING = 128
_SURROGATE = re.compile("[\ud800-\udfff]")


class PayloadError(DocumentError):
    """A message that cannot be taken: the text says where and why."""


# The decoders below run for every value of every message, hundreds of
# thousands for a large fabric: each takes a good value with an inline
# check, cheaper than a call into ibsnmp.documents, and leaves the refusal
# (and its wording) to the shared check.

def hex64(value: int) -> str:
    return f"{value:016x}"


def parse_hex64(value: object, where: str) -> int:
    if type(value) is str and _HEX64.fullmatch(value) is not None:
        return int(value, 16)
    return hex_digits(value, where, 16, PayloadError.at, syntax=JSON)


def hex128(value: int) -> str:
    return f"{value:032x}"


def parse_hex128(value: object, where: str) -> int:
    if type(value) is str and _HEX128.fullmatch(value) is not None:
        return int(value, 16)
    return hex_digits(value, where, 32, PayloadError.at, syntax=JSON)


def _expect_int(value: object, where: str) -> int:
    if type(value) is int and 0 <= value <= _MAX_INT:
        return value
    return integer(value, where, PayloadError.at, low=0, high=_MAX_INT, syntax=JSON)


def _expect_bool(value: object, where: str) -> bool:
    if type(value) is bool:
        return value
    return boolean(value, where, PayloadError.at, syntax=JSON)


def _text_decoder(limit: int) -> Callable[[object, str], str]:
    """Strings of at most `limit` characters, without an unpaired surrogate
    (JSON's \\ud800 escape makes one; a UTF-8 log line cannot hold it)."""

    def decode(value: object, where: str) -> str:
        if type(value) is str and len(value) <= limit and (value.isascii() or _SURROGATE.search(value) is None):
            return value
        checked = text(value, where, PayloadError.at, syntax=JSON)
        if len(checked) > limit:
            raise PayloadError(f"longer than {limit} characters", where)
        raise PayloadError("not Unicode text (an unpaired surrogate)", where)

    return decode


def _expect_float(value: object, where: str) -> float:
    if (type(value) is float or type(value) is int) and math.isfinite(value):
        return float(value)
    return number(value, where, PayloadError.at, syntax=JSON)


class _EnumDecoder:
    """An enumeration's decoder: members by value, filled as values are seen
    (a flag type has many combinations), at most _MEMBERS_KEPT: a big fabric
    decodes hundreds of thousands of them."""

    def __init__(self, cls: type[enum.Enum]) -> None:
        self.cls = cls
        self.members: dict[object, Any] = {}

    def __call__(self, value: object, where: str) -> Any:
        member = self.members.get(value) if type(value) is int else None
        if member is not None:
            return member
        code = _expect_int(value, where)
        try:
            member = self.cls(code)
        except ValueError:
            raise PayloadError(f"{code} is not a {self.cls.__name__} code", where) from None
        if len(self.members) < _MEMBERS_KEPT:  # a publisher's odd flag sets do not grow it
            self.members[code] = member
        return member


_MEMBERS_KEPT = 4096


_Encoder = Callable[[Any], Any]
_Decoder = Callable[[object, str], Any]


HEX64_SCHEMA = {"type": "string", "pattern": "^[0-9a-f]{16}$"}
HEX128_SCHEMA = {"type": "string", "pattern": "^[0-9a-f]{32}$"}
UINT64_SCHEMA = {"type": "integer", "minimum": 0, "maximum": _MAX_INT}


def _schema(name: str, hint: Any) -> dict[str, Any]:
    """The JSON Schema of one field (for schema/*.json)."""
    if hint is bool:
        return {"type": "boolean"}
    if hint is str:
        return {"type": "string"}
    if isinstance(hint, type) and issubclass(hint, enum.Flag):
        return {"type": "integer", "minimum": 0, "description": f"{hint.__name__} bits"}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": sorted(int(m.value) for m in hint), "description": hint.__name__}
    if hint is int:
        if name in HEX64_FIELDS:
            return dict(HEX64_SCHEMA)
        if name in HEX128_FIELDS:
            return dict(HEX128_SCHEMA)
        return dict(UINT64_SCHEMA)
    return {"type": "number"}


def _converters(name: str, hint: Any) -> tuple[_Encoder, _Decoder, bool, dict[str, Any]]:
    """(encode, decode, optional, JSON Schema) for one field's type hint
    (`_inline_check` knows these decoders by identity)."""
    optional = False
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        if len(args) != 1:
            raise TypeError(f"{name}: unsupported union {hint}")
        hint = args[0]
    schema = _schema(name, hint)
    if hint is bool:
        return bool, _expect_bool, optional, schema
    if hint is str:
        return str, _text_decoder(STRING_LIMITS.get(name, MAX_STRING)), optional, schema
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return int, _EnumDecoder(hint), optional, schema
    if hint is int:
        if name in HEX64_FIELDS:
            return hex64, parse_hex64, optional, schema
        if name in HEX128_FIELDS:
            return hex128, parse_hex128, optional, schema
        return int, _expect_int, optional, schema
    if hint is float:
        return float, _expect_float, optional, schema
    raise TypeError(f"{name}: unsupported type {hint}")


_GoodReader = Callable[[dict[str, Any]], "dict[str, Any] | None"]


def _good_reader(type_name: str, fields: tuple[tuple[str, _Encoder, _Decoder, bool, dict[str, Any]], ...]
                 ) -> _GoodReader:
    """A function reading an object of known keys whose every field is good:
    each field's usual case tested inline (an int, a bool, 16 hex digits,
    a known enum code), any other value through its decoder; None at the
    first field that is not good (StructCodec._read then says why). One
    call per record instead of one per field: a large fabric's states hold
    millions of fields."""
    scope: dict[str, Any] = {"_MAX_INT": _MAX_INT, "_HEX64": _HEX64.fullmatch, "PayloadError": PayloadError}
    lines = [f"def read_good_{type_name}(table):"]
    for number, (name, _encode, decode, optional, _schema) in enumerate(fields):
        value, decoder = f"v{number}", f"d{number}"
        scope[decoder] = decode
        lines.append(f"    {value} = table.get({name!r})")
        lines.append(f"    if {value} is None:")
        lines.append(f"        if {name!r} in table: return None" if optional else "        return None")
        check = _inline_check(decode, number, scope)
        if check is not None:
            lines.append(f"    elif {check[0]}:")
            lines.append(f"        {value} = {check[1]}")
        lines.append("    else:")
        lines.append(f"        try: {value} = {decoder}({value}, '')")
        lines.append("        except PayloadError: return None")
    pairs = ", ".join(f"{name!r}: v{number}" for number, (name, *_rest) in enumerate(fields))
    lines.append(f"    return {{{pairs}}}")
    reader: _GoodReader = _compiled(lines, scope)
    return reader


def _encoder(type_name: str, fields: tuple[tuple[str, _Encoder, _Decoder, bool, dict[str, Any]], ...]
              ) -> Callable[[Any], dict[str, Any]]:
    """A function writing a record's fields that are not None, each through
    its encoder, in one call (see `_good_reader`)."""
    scope: dict[str, Any] = {}
    lines = [f"def encode_{type_name}(record):", "    out = {}"]
    for number, (name, encode, _decode, _optional, _schema) in enumerate(fields):
        scope[f"e{number}"] = encode
        lines.append(f"    v = record.{name}")
        lines.append(f"    if v is not None: out[{name!r}] = e{number}(v)")
    lines.append("    return out")
    encoder: Callable[[Any], dict[str, Any]] = _compiled(lines, scope)
    return encoder


def _compiled(lines: list[str], scope: dict[str, Any]) -> Any:
    """The function the source `lines` define (their first line names it),
    its globals `scope`."""
    exec("\n".join(lines), scope)  # noqa: S102 - the text is made here, of field names
    return scope[lines[0].removeprefix("def ").partition("(")[0]]


def _inline_check(decode: _Decoder, number: int, scope: dict[str, Any]) -> tuple[str, str] | None:
    """(the test that field `number`'s value `v<number>` is good as is or as
    converted, the value) for the decoders whose usual case is a type test or
    a lookup (what the test needs is put in `scope`); None for the others."""
    value = f"v{number}"
    if isinstance(decode, _EnumDecoder):  # a code seen before: its member
        scope[f"m{number}"] = decode.members
        return f"type({value}) is int and (m := m{number}.get({value})) is not None", "m"
    if decode is _expect_int:
        return f"type({value}) is int and 0 <= {value} <= _MAX_INT", value
    if decode is _expect_bool:
        return f"type({value}) is bool", value
    if decode is parse_hex64:
        return f"type({value}) is str and _HEX64({value}) is not None", f"int({value}, 16)"
    return None


class StructCodec:
    """JSON object <-> one NamedTuple or dataclass type.  `skip` names fields
    the caller converts itself (nested records)."""

    def __init__(self, cls: type, skip: frozenset[str] = frozenset()) -> None:
        self.cls = cls
        hints = typing.get_type_hints(cls)
        if hasattr(cls, "_fields"):
            names = list(cls._fields)
        else:
            fields = cls.__dataclass_fields__  # type: ignore[attr-defined]  # a dataclass then
            names = [n for n in fields if not n.startswith("_")]
        self.fields = tuple((n, *_converters(n, hints[n])) for n in names if n not in skip)
        self.order = tuple(n for n, *_ in self.fields)  # as the record lists them, for messages
        self.names = frozenset(self.order)
        self._read_good = _good_reader(cls.__name__, self.fields)
        self._encode = _encoder(cls.__name__, self.fields)

    def encode(self, record: Any) -> dict[str, Any]:
        """The JSON object of `record`: every field that is not None, in order."""
        return self._encode(record)

    def decode(self, data: object, where: str, **extra: Any) -> Any:
        """The record of the JSON object `data` (`where`: its path, for a
        refusal); `extra`: the fields the caller converted itself."""
        values = self.read(data, where)
        return self.cls(**({**extra, **values} if extra else values))

    def read(self, data: object, where: str) -> dict[str, Any]:
        """The values of `decode`'s fields, by name (PayloadError as there)."""
        if type(data) is dict and self.names.issuperset(data):
            values = self._read_good(data)
            if values is not None:
                return values
        return self._read(data, where)

    def _read(self, data: object, where: str) -> dict[str, Any]:
        """The fields' values, each checked by its decoder: the refusal says
        which field and why."""
        table = data if type(data) is dict else expect(data, dict, where, PayloadError.at, syntax=JSON)
        if not self.names.issuperset(table):
            check_keys(table, self.order, where, PayloadError.at)
        values: dict[str, Any] = {}
        for name, _encode, decode, optional, _schema in self.fields:
            value = table.get(name)
            if value is None:
                if name in table:
                    raise PayloadError("null; a value that is not known is left out", f"{where}.{name}")
                if not optional:
                    raise PayloadError(f"{name} is missing", where)
                values[name] = None
            else:
                try:
                    values[name] = decode(value, "")
                except PayloadError as exc:  # the path is only built for a refusal
                    raise PayloadError(exc.problem, f"{where}.{name}") from None
        return values

    def schema(self, **extra: dict[str, Any]) -> dict[str, Any]:
        """The JSON Schema of an encoded record; `extra`: the caller's own fields."""
        properties = {name: schema for name, _e, _d, _o, schema in self.fields}
        properties.update(extra)
        required = [name for name, _e, _d, optional, _s in self.fields if not optional]
        return {"type": "object", "properties": properties, "required": required,
                "additionalProperties": False}

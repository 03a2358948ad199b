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


def _enum_decoder(cls: type[enum.Enum]) -> Callable[[object, str], Any]:
    # Members by value, filled as values are seen (a flag type has many
    # combinations): a big fabric decodes hundreds of thousands of them.
    members: dict[object, Any] = {}

    def decode(value: object, where: str) -> Any:
        member = members.get(value) if type(value) is int else None
        if member is not None:
            return member
        code = _expect_int(value, where)
        try:
            member = members[code] = cls(code)
        except ValueError:
            raise PayloadError(f"{code} is not a {cls.__name__} code", where) from None
        return member

    return decode


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
    """(encode, decode, optional, JSON Schema) for one field's type hint."""
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
        return int, _enum_decoder(hint), optional, schema
    if hint is int:
        if name in HEX64_FIELDS:
            return hex64, parse_hex64, optional, schema
        if name in HEX128_FIELDS:
            return hex128, parse_hex128, optional, schema
        return int, _expect_int, optional, schema
    if hint is float:
        return float, _expect_float, optional, schema
    raise TypeError(f"{name}: unsupported type {hint}")


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

    def encode(self, record: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, encode, _decode, _optional, _schema in self.fields:
            value = getattr(record, name)
            if value is not None:
                out[name] = encode(value)
        return out

    def decode(self, data: object, where: str, **extra: Any) -> Any:
        table = data if type(data) is dict else expect(data, dict, where, PayloadError.at, syntax=JSON)
        if not self.names.issuperset(table):
            check_keys(table, self.order, where, PayloadError.at)
        values: dict[str, Any] = dict(extra)
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
        return self.cls(**values)

    def schema(self, **extra: dict[str, Any]) -> dict[str, Any]:
        """The JSON Schema of an encoded record; `extra`: the caller's own fields."""
        properties = {name: schema for name, _e, _d, _o, schema in self.fields}
        properties.update(extra)
        required = [name for name, _e, _d, optional, _s in self.fields if not optional]
        return {"type": "object", "properties": properties, "required": required,
                "additionalProperties": False}

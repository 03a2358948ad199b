"""Checks shared by the documents ibsnmp reads: the TOML configuration, the
JSON state file, scenario files and MQTT payloads.

Each check takes the value, `where` it is (a key path such as
`limits.max_varbinds` or `ports[0].info.lid`) and a `fail` that makes the
document's own error from (where, problem); it returns the value when it
passes. Problems name types and bounds and quote a refused number, never
a refused string: a configuration's secrets (community strings, USM keys)
must not reach a log because one was written under the wrong key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Self, TypeVar

__all__ = [
    "Fail", "DocumentError", "Syntax", "TOML", "JSON", "type_name", "expect", "check_keys", "integer",
    "number", "text", "boolean", "choice", "lookup", "hex_number", "hex_digits",
]

T = TypeVar("T")
S = TypeVar("S", bound=str)

# (where, problem) -> the error to raise.
Fail = Callable[[str, str], Exception]


class DocumentError(ValueError):
    """A document that cannot be taken. `problem` says what is wrong,
    `where` the key path of the value at fault ("" for the document as a
    whole), `document` which one (a file name, "command line"; "" when
    the reader names none)."""

    def __init__(self, problem: str, where: str = "", document: str = "") -> None:
        super().__init__(": ".join(part for part in (document, where, problem) if part))
        self.problem = problem
        self.where = where
        self.document = document

    @classmethod
    def at(cls, where: str, problem: str) -> Self:
        """The error in a check's `fail` order: `PayloadError.at` is a Fail."""
        return cls(problem, where)


@dataclass(frozen=True, slots=True)
class Syntax:
    """How a document's language names a table of keys in messages."""

    table: str


TOML = Syntax("a table")
JSON = Syntax("an object")

_EXPECTED = {str: "a string", list: "an array", int: "an integer", bool: "true or false", float: "a number"}
# bool before int: True is an int to isinstance.
_KINDS = ((bool, "a boolean"), (str, "a string"), (int, "an integer"), (float, "a float"),
          (list, "an array"))


def type_name(value: object, syntax: Syntax = TOML) -> str:
    """What `value` is, in the words of the document's language."""
    if isinstance(value, dict):
        return syntax.table
    if value is None:
        return "null"
    for kind, name in _KINDS:
        if isinstance(value, kind):
            return name
    return type(value).__name__


def expect(value: object, kind: type[T], where: str, fail: Fail = DocumentError.at, *,
           syntax: Syntax = TOML) -> T:
    """`value` if it is a `kind` (a bool is not an int)."""
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    expected = syntax.table if kind is dict else _EXPECTED.get(kind, kind.__name__)
    raise fail(where, f"expected {expected}, got {type_name(value, syntax)}")


def _key_path(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def check_keys(table: Mapping[str, object], allowed: Collection[str], where: str,
               fail: Fail = DocumentError.at) -> None:
    """Refuse the first key of `table` (at `where`) that is not `allowed`."""
    for key in table:
        if key not in allowed:
            raise fail(_key_path(where, key), f"unknown key (expected one of: {', '.join(allowed)})")


def _shown(amount: float) -> str:
    if isinstance(amount, int):
        # The top of a wide bit field (0xffffffff) reads better in hex, as specifications give it.
        return f"{amount:#x}" if amount > 0xFFFF and (amount + 1) & amount == 0 else str(amount)
    return f"{amount:g}"


def _within(value: float, where: str, fail: Fail, low: float | None, high: float | None,
            above: float | None) -> None:
    # A number is never a secret: a refused one may be quoted.
    if low is not None and high is not None and not low <= value <= high:
        raise fail(where, f"{_shown(value)} is out of range {_shown(low)}..{_shown(high)}")
    if low is not None and value < low:
        raise fail(where, "must not be negative" if low == 0 else f"must be at least {_shown(low)}")
    if above is not None and value <= above:
        raise fail(where, f"must be more than {_shown(above)}")
    if high is not None and value > high:
        raise fail(where, f"must be at most {_shown(high)}")


def integer(value: object, where: str, fail: Fail = DocumentError.at, *, low: int | None = None,
            high: int | None = None, syntax: Syntax = TOML) -> int:
    """An integer (not a bool) from `low` to `high`, each bound optional."""
    checked = expect(value, int, where, fail, syntax=syntax)
    _within(checked, where, fail, low, high, None)
    return checked


def number(value: object, where: str, fail: Fail = DocumentError.at, *, low: float | None = None,
           high: float | None = None, above: float | None = None, syntax: Syntax = TOML) -> float:
    """A finite integer or float (not a bool), at least `low`, more than
    `above` and at most `high` where given."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(where, f"expected a number, got {type_name(value, syntax)}")
    if not math.isfinite(value):
        raise fail(where, f"expected a finite number, got {value}")
    _within(value, where, fail, low, high, above)
    return float(value)


def text(value: object, where: str, fail: Fail = DocumentError.at, *, max_octets: int | None = None,
         printable: bool = False, syntax: Syntax = TOML) -> str:
    """A string of at most `max_octets` UTF-8 octets; `printable`: without control characters."""
    checked = expect(value, str, where, fail, syntax=syntax)
    if max_octets is not None and len(checked.encode("utf-8")) > max_octets:
        raise fail(where, f"longer than {max_octets} octets")
    if printable and not checked.isprintable():
        raise fail(where, "contains control characters")
    return checked


def boolean(value: object, where: str, fail: Fail = DocumentError.at, *, syntax: Syntax = TOML) -> bool:
    """true or false (not 0 or 1)."""
    return expect(value, bool, where, fail, syntax=syntax)


def choice(value: object, where: str, choices: Collection[S], fail: Fail = DocumentError.at) -> S:
    """One of the strings `choices` (typed as they are: a tuple of Literals gives a Literal)."""
    for name in choices:
        if value == name:
            return name
    quoted = [f'"{name}"' for name in choices]
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    raise fail(where, f"expected {listed}")


def lookup(value: object, where: str, table: Mapping[str, T], fail: Fail = DocumentError.at) -> T:
    """What `table` holds for `value`, one of its keys (a spelling and its meaning)."""
    return table[choice(value, where, tuple(table), fail)]


def hex_number(value: object, where: str, bits: int, fail: Fail = DocumentError.at, *,
               syntax: Syntax = TOML) -> int:
    """A string of hex digits (`0x` optional, either case) of at most `bits` bits."""
    if not isinstance(value, str):
        raise fail(where, f"expected a hexadecimal number, got {type_name(value, syntax)}")
    if len(value) > 2 + (bits + 3) // 4:  # before int() reads a long string
        raise fail(where, f"more than {bits} bits")
    try:
        result = int(value, 16)
    except ValueError:
        raise fail(where, "expected a hexadecimal number") from None
    if result < 0:
        raise fail(where, "expected a hexadecimal number")
    if result >= 1 << bits:
        raise fail(where, f"more than {bits} bits")
    return result


@cache
def _exact_hex(digits: int) -> re.Pattern[str]:
    return re.compile(f"[0-9a-f]{{{digits}}}")


def hex_digits(value: object, where: str, digits: int, fail: Fail = DocumentError.at, *,
               syntax: Syntax = TOML) -> int:
    """Exactly `digits` lower-case hex digits, no prefix: an identifier's one spelling."""
    if isinstance(value, str) and _exact_hex(digits).fullmatch(value) is not None:
        return int(value, 16)
    got = "" if isinstance(value, str) else f", got {type_name(value, syntax)}"
    raise fail(where, f"expected {digits} lower-case hex digits{got}")

"""What the compiled MIB modules say about an object, as plain numbers for
the bindings: enumeration labels, the top and bottom of a range, TruthValue.

Bindings name the object and the label instead of retyping the number the
MIB gives (`named_value("ibSmaPKeyMembership", "full")` rather than 3), so
a value served cannot disagree with the module that types it. Each lookup
runs once, when a binding module is imported. Numbers the MIB does not
state (IBA field widths behind an unbounded INTEGER) stay in the bindings,
each marked as an IBA fact.
"""

from __future__ import annotations

from collections.abc import Callable

from .cells import value_intervals
from .loader import definitions


def named_value(name: str, label: str) -> int:
    """The number of enumeration `label` of object `name`'s syntax; KeyError
    when the MIB has no such label."""
    return int(definitions().objects[name].syntax.namedValues[label])


def value_range(name: str) -> tuple[int, int]:
    """The lowest and highest integer object `name` admits."""
    intervals = value_intervals(definitions().objects[name].syntax.subtypeSpec)
    if intervals is None:
        raise ValueError(f"{name} states no range")
    return intervals[0][0], intervals[-1][1]


def highest(name: str) -> int:
    return value_range(name)[1]


def clamp_to(name: str) -> Callable[[int], int]:
    """Bounds a value to object `name`'s range: IBA fields wider than the
    MIB's object read as its nearest end instead of failing the request."""
    low, high = value_range(name)
    return lambda value: low if value < low else high if value > high else value


def convention_value(module: str, convention: str, label: str) -> int:
    """The number of `label` in a textual convention the compiled modules
    import (e.g. SNMPv2-TC RowStatus "active")."""
    syntax = definitions().textual_convention(module, convention)
    return int(syntax.namedValues[label])


TRUE = convention_value("SNMPv2-TC", "TruthValue", "true")
FALSE = convention_value("SNMPv2-TC", "TruthValue", "false")


def truth(flag: object) -> int:
    """A TruthValue (SNMPv2-TC): true for a true flag, else false."""
    return TRUE if flag else FALSE

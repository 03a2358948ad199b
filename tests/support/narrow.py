"""Narrowing for the type checker where a test relies on a value being there."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def present(value: T | None) -> T:
    """`value`, asserted not None (the test fails here rather than on an attribute of None)."""
    assert value is not None
    return value

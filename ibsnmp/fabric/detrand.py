"""Stable hashing for the simulation: the same inputs give the same draws on
every run and platform (unlike hash()), and no state is carried around."""

from __future__ import annotations

_MASK64 = (1 << 64) - 1


def mix(*values: int) -> int:
    """splitmix64 folded over the values."""
    state = 0x9E3779B97F4A7C15
    for value in values:
        state = (state ^ (value & _MASK64)) * 0xBF58476D1CE4E5B9 & _MASK64
        state = (state ^ (state >> 27)) * 0x94D049BB133111EB & _MASK64
        state ^= state >> 31
    return state


def unit(*values: int) -> float:
    """A draw in [0, 1) determined by the values."""
    return mix(*values) / 2.0**64

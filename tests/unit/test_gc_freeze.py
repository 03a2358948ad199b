"""gc_freeze: settling after large structure changes, and what a settling frees."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from types import ModuleType

import pytest

from ibsnmp import gc_freeze


class _Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def fresh_heap(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """A gc_freeze module that has never settled, and a gc left unfrozen after."""
    monkeypatch.setattr(gc_freeze, "_last", -gc_freeze._PERIOD_S)
    monkeypatch.setattr(gc_freeze, "_pending", 0)
    gc.unfreeze()  # what an agent started in this process froze
    yield gc_freeze
    gc.unfreeze()


def test_small_changes_add_up_to_a_settling(fresh_heap: ModuleType) -> None:
    for _ in range(gc_freeze.LARGE_CHANGE - 1):
        gc_freeze.note_replaced(1)
    assert gc.get_freeze_count() == 0
    gc_freeze.note_replaced(1)
    assert gc.get_freeze_count() > 0
    assert gc_freeze._pending == 0


def test_an_unknown_change_is_large(fresh_heap: ModuleType) -> None:
    gc_freeze.note_replaced(None)
    assert gc.get_freeze_count() > 0


def test_settles_at_most_once_a_period(fresh_heap: ModuleType,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    gc_freeze.note_replaced(None)
    gc.unfreeze()
    gc_freeze.note_replaced(None)  # within the period: pending, not settled
    assert gc.get_freeze_count() == 0
    assert gc_freeze._pending == gc_freeze.LARGE_CHANGE
    monkeypatch.setattr(gc_freeze, "_last", gc_freeze._last - gc_freeze._PERIOD_S)
    gc_freeze.note_replaced(0)  # any later swap settles what is pending
    assert gc.get_freeze_count() > 0
    assert gc_freeze._pending == 0


def test_a_cycle_frozen_alive_is_freed_at_the_next_settling(fresh_heap: ModuleType) -> None:
    cycle = _Cycle()
    gone = weakref.ref(cycle)
    gc_freeze.settle()
    del cycle
    gc.collect()
    assert gone() is not None  # frozen: out of the collector's reach
    gc_freeze.settle()
    assert gone() is None

"""Declarative bindings: MIB scalars and virtual tables over the fabric model.

A binding module (sma.py, pma.py, ...) declares, per MIB object descriptor,
a getter on the model. Getters return plain Python values (int, bytes, str)
or None where the object has no instance; the MIB layer turns them into the
types the compiled modules declare.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .api import ContextTarget

Applies = Callable[[ContextTarget], bool]
GetterT = TypeVar("GetterT", bound=Callable[..., Any])


def reads_time(getter: GetterT) -> GetterT:
    """Mark a getter whose value depends on `target.elapsed` (counters that
    grow with time): its cells change between requests on one snapshot, so
    no reader may keep them (agent.walk_cache keeps every other cell)."""
    getter.reads_time = True  # type: ignore[attr-defined]
    return getter


def is_timed(getter: Callable[..., Any]) -> bool:
    return getattr(getter, "reads_time", False)


def always(target: ContextTarget) -> bool:
    return True


@dataclass(frozen=True)
class ScalarBinding:
    name: str
    getter: Callable[[ContextTarget], Any]


@dataclass(frozen=True)
class TableBinding:
    """One conceptual table.

    `rows(target)` yields (index values in INDEX order, row object); order
    does not matter. `columns` maps each readable column descriptor to a
    getter `(row, target) -> value`. `per_node` says whether the rows depend on the
    context's node (SMA, PMA...) or only on the fabric (IB-SM-MIB), which
    decides how built row indexes are shared between contexts.
    """

    entry: str
    rows: Callable[[ContextTarget], Iterable[tuple[tuple[Any, ...], Any]]]
    columns: Mapping[str, Callable[[Any, ContextTarget], Any]]
    per_node: bool = True
    # For tables too large to index whole (a fabric's switch SL-to-VL
    # matrix): `shards(target)` yields (leading index values, rows of that
    # shard) with the rows as a zero-argument function, so each shard is
    # built only when a request reaches it. `rows` is not used then.
    shards: Callable[[ContextTarget], Iterable[tuple[tuple[Any, ...], Shard]]] | None = None
    # For rows that change without a new snapshot (request sessions kept by
    # the agent): the built row index is reused only while `stamp(target)`
    # returns the same value.
    stamp: Callable[[ContextTarget], Any] | None = None


Shard = Callable[[], Iterable[tuple[tuple[Any, ...], Any]]]


@dataclass(frozen=True)
class WriterBinding:
    """Writable objects of one table (or one group of scalars) and how a SET
    of them is planned.

    `objects` are the descriptors the writer accepts (read-write or
    read-create columns or scalars; anything else is notWritable).
    `plan(target, requests, txn)` gets every varbind of one SET that names
    one of them, as mib.write.WriteRequest (already checked against the
    MIB's syntax, index decoded), checks them together (RowStatus rules,
    consistency) raising api.SetError, and records the change in `txn`,
    the transaction of the write store the MIB was built with. Nothing may
    change outside `txn`: the SET is all or nothing.
    """

    name: str
    objects: frozenset[str]
    plan: Callable[[ContextTarget, Sequence[Any], Any], None]


@dataclass(frozen=True)
class ModuleBinding:
    """Everything one MIB module serves, and in which contexts."""

    module: str
    scalars: tuple[ScalarBinding, ...] = ()
    tables: tuple[TableBinding, ...] = ()
    applies: Applies = field(default=always)
    writers: tuple[WriterBinding, ...] = ()

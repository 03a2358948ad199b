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

from ..fabric.lineage import STRUCTURE, Aspect
from .api import ContextTarget

Applies = Callable[[ContextTarget], bool]
GetterT = TypeVar("GetterT", bound=Callable[..., Any])


def reads_time(getter: GetterT) -> GetterT:
    """Mark a getter whose value depends on `target.elapsed` (counters that
    grow with time): its cells change between requests on one snapshot, so
    no reader may keep them (agent.walk_cache keeps every other cell)."""
    getter.reads_time = True  # type: ignore[attr-defined]  # a mark on the function
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

    `depends`: what of the snapshot the rows (which exist, and the row
    objects) are made of, besides the context's node for a per-node table
    (fabric.lineage.Aspect): a built index is kept while none of it
    changes. The default, everything, is always right; a narrower one lets
    an index outlive changes it cannot see. Values the getters read at
    request time (counters) need not be named.

    `owned`: a table of the whole fabric whose rows are grouped by node:
    its INDEX starts with the subnet prefix and the node GUID (IB-SM-MIB's
    node, port, link ... tables), and a node's rows are made of that node
    alone (with what `depends` names besides Aspect.NODES). A change of a
    few nodes then alters only the answers around their rows.

    `view(node)`: everything of a node the rows (and their getters) read,
    comparable: a node that changed without changing its view leaves the
    table's answers as they were (a port going down changes PortInfo, not
    the SL-to-VL tables). None: any change of the node may alter them.
    For a per-node table, of the context's node; for an owned table, of
    each node that owns rows.
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
    depends: Aspect = STRUCTURE
    owned: bool = False
    view: Callable[[Any], Any] | None = None


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

    `alters_only_stamped`: what it writes reaches the bound objects' reads
    only through tables whose `stamp` changes with each of its commits
    (request sessions), or not at all (the system group, read outside the
    bound subtrees). Its commits then alter no other answer, and kept
    answers of other tables stay.
    """

    name: str
    objects: frozenset[str]
    plan: Callable[[ContextTarget, Sequence[Any], Any], None]
    alters_only_stamped: bool = False


@dataclass(frozen=True)
class ModuleBinding:
    """Everything one MIB module serves, and in which contexts."""

    module: str
    scalars: tuple[ScalarBinding, ...] = ()
    tables: tuple[TableBinding, ...] = ()
    applies: Applies = field(default=always)
    writers: tuple[WriterBinding, ...] = ()

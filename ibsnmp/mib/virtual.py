"""The served MIB objects as one virtual tree: GET by lookup, GETNEXT by bisect.

One sorted list spans the objects of every served subtree (mib.subtrees: the InfiniBand drafts'
and IF-MIB's), so GETNEXT crosses from one subtree to the next without a seam. No Python object
exists per cell: a table's sorted instance suffixes are built on first use and cached
(mib.table_index). Reads answer with plain `Cell`s typed by the compiled module (`get_cell`,
`next_cell`); `get` / `get_next`, the pysnmp path, box the very same cells into syntax objects.
SETs (`prepare_write`) check each varbind against its compiled syntax and hand it to the
writers the bindings declare, which plan into one transaction of the write store.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from ..fabric.lineage import STRUCTURE, Aspect
from .api import (
    Cell,
    NO_SUCH_INSTANCE,
    NO_SUCH_OBJECT,
    ContextTarget,
    Missing,
    Oid,
    SetError,
)
from .binding import (
    Applies,
    ModuleBinding,
    TableBinding,
    WriterBinding,
    always,
    is_timed,
)
from .cells import CellType, converter
from .index import IndexCodec
from .loader import MibDefinitions, ObjectDef, definitions
from .subtrees import SERVED_SUBTREES, Subtrees
from .table_index import (ABSENT, RowIndex, TableIndex, by_frequency, column_of, first_from,
                          octet_position)
from ..wire.ber import OBJECT_IDENTIFIER, oid_octets
from ..wire.ber import element as ber_element
from .write import WRITABLE, WriteRequest, WriteStore, checked_value



class BindingError(ValueError):
    """A binding names an object the compiled modules do not have, or misses one."""


class ElementPlacer:
    """`InfinibandMib.origin_of_element` in one context for one request:
    each column's row index is looked up once (a request's names mostly
    lie under a few columns, and an attacker's 64 long ones cost a
    fraction of what looking it up for each would)."""

    __slots__ = ("_mib", "_target", "_columns", "_lengths", "_indexes")

    def __init__(self, mib: InfinibandMib, target: ContextTarget) -> None:
        self._mib = mib
        self._target = target
        self._columns = mib._column_octets
        self._lengths = mib._column_octet_lengths
        # Column value octets -> its row index's (suffix octets, longest of
        # them); () where the octets cannot tell (InfinibandMib.octet_index).
        self._indexes: dict[bytes, tuple[list[bytes], int] | tuple[()]] = {}

    def origin(self, element: bytes, start: int) -> bytes | None:
        """`InfinibandMib.origin_of_element(target, element, start)`."""
        column = column_of(self._columns, self._lengths, element, start)
        if column is None:
            return None
        rows = self._indexes.get(column)
        if rows is None:
            rows = self._indexes[column] = self._rows_of(column)
        if not rows:
            return None
        suffix_start = start + len(column)
        if suffix_start == len(element):
            return None  # it names the column
        octets, longest = rows
        at = octet_position(octets, longest, element, suffix_start)
        if at == 0:  # before every row: its column's OID
            return ber_element(OBJECT_IDENTIFIER, column)
        row = octets[at - 1]
        if len(element) - suffix_start == len(row) and element.endswith(row):
            return None  # it names that row
        return ber_element(OBJECT_IDENTIFIER, column + row)

    def _rows_of(self, column: bytes) -> tuple[list[bytes], int] | tuple[()]:
        index = self._mib.octet_index(self._target, self._columns[column])
        octets = None if index is None else index.octets()
        if index is None or octets is None:
            return ()
        return octets, index.longest_octets


class _Handler:
    """A scalar or one table column: the leaf object under which instances live."""

    __slots__ = ("oid", "ctype", "cell", "applies", "getter", "table", "static", "owned")

    def __init__(self, oid: Oid, ctype: CellType, applies: Applies, getter: Any,
                 table: TableIndex | None):
        self.oid = oid
        self.ctype = ctype
        self.cell = converter(ctype)
        self.applies = applies
        self.getter = getter
        self.table = table
        # Whether its cells stay as they are for one `InfinibandMib.version`.
        self.static = not is_timed(getter)
        # Whether its instances are grouped by node (TableBinding.owned).
        self.owned = table is not None and table.binding.owned

    def get(self, target: ContextTarget, suffix: Oid) -> Cell | Missing:
        if self.table is None:
            if suffix != (0,):
                return NO_SUCH_INSTANCE
            value = self.getter(target)
        else:
            row = self.table.lookup(target, suffix)
            if row is ABSENT:
                return NO_SUCH_INSTANCE
            value = self.getter(row, target)
        return NO_SUCH_INSTANCE if value is None else self.cell(value)

    def next(self, target: ContextTarget, suffix: Oid | None) -> tuple[Oid, Cell] | None:
        if self.table is None:
            if suffix is not None and suffix >= (0,):
                return None
            value = self.getter(target)
            return None if value is None else ((0,), self.cell(value))
        found = self.table.first_value(target, suffix, self.getter)
        return None if found is None else (found[0], self.cell(found[1]))




def _viewed(binding: TableBinding | None, guids: Any, before: Any, after: Any) -> bool:
    """Whether any of the nodes `guids` changed what `binding` reads of it."""
    view = binding.view if binding is not None else None
    for guid in guids:
        old, new = before.nodes.get(guid), after.nodes.get(guid)
        if old is new:
            continue
        if view is None or old is None or new is None or view(old) != view(new):
            return True
    return False

# The arcs of a node-owned table's instance suffix that hold the node GUID:
# after the subnet prefix (TableBinding.owned). A GUID is a fixed-size
# OCTET STRING index: 8 arcs, no length.
_OWNER = slice(8, 16)


def _owner_key(guid: int) -> tuple[int, ...]:
    """A node GUID as the arcs `_OWNER` takes of a suffix (they sort alike)."""
    return tuple(guid.to_bytes(8, "big"))


# What a kept answer depends on: (the handler the asked name falls in or
# before, the handler of the answer, the owner arcs of the asked name and
# of the answer in a node-owned table, () elsewhere). See Invalidation.
StepTag = tuple[int, int, tuple[int, ...], tuple[int, ...]]


class Invalidation(NamedTuple):
    """Which kept answers of one context a structural change alters
    (InfinibandMib.invalidation). `whole[h]`: every answer that consulted
    handler h; `owned[h]`: for a node-owned table of the whole fabric, the
    owner arcs of the nodes that changed: an answer in h between those
    owners' rows (its asked name's owner <= a changed owner <= its
    answer's) is altered, others stay."""

    whole: bytearray
    owned: dict[int, frozenset[tuple[int, ...]]]

    @property
    def nothing(self) -> bool:
        return not self.owned and not any(self.whole)

    @property
    def touched(self) -> bytearray:
        """Per handler: whether anything of it may be altered."""
        touched = bytearray(self.whole)
        for position in self.owned:
            touched[position] = 1
        return touched

    def alters(self, tag: StepTag) -> bool:
        first, last, after, owner = tag
        whole, owned = self.whole, self.owned
        if first == last:
            if whole[first]:
                return True
            changed = owned.get(first)
            return changed is not None and any(after <= key <= owner for key in changed)
        # Across handlers: any change on the way alters it.
        return any(whole[first:last + 1]) or any(position in owned for position in range(first, last + 1))


class _WriteTarget:
    """A scalar or column as a SET sees it: every object of a served module,
    readable or not, with the writer that accepts it (None: notWritable)."""

    __slots__ = ("oid", "obj", "applies", "writer", "codec")

    def __init__(self, oid: Oid, obj: ObjectDef, applies: Applies, writer: WriterBinding | None,
                 codec: IndexCodec | None) -> None:
        self.oid = oid
        self.obj = obj
        self.applies = applies
        self.writer = writer
        self.codec = codec


class _Prepared:
    __slots__ = ("_store", "_txn", "_committed")

    def __init__(self, store: WriteStore | None, txn: Any,
                 committed: Callable[[], None]) -> None:
        self._store = store
        self._txn = txn
        self._committed = committed  # called after every commit that may change a read

    def commit(self) -> None:
        if self._store is None:
            return
        try:
            self._store.commit(self._txn)
        except OSError as exc:
            raise SetError("commitFailed", 0, f"cannot save the state: {exc}") from None
        finally:
            self._committed()


def _no_count() -> None:
    """A commit whose every change shows in a stamp: `_commits` stays."""


class InfinibandMib:
    """Implements api.VirtualMib (and api.WritableMib) over a set of module
    bindings. `store` holds what writers change (see mib.write.WriteStore);
    without one, every object is notWritable."""

    def __init__(self, modules: Iterable[ModuleBinding], mib: MibDefinitions | None = None,
                 store: WriteStore | None = None,
                 outside: Iterable[tuple[ObjectDef, WriterBinding | None]] = (),
                 subtrees: Subtrees = SERVED_SUBTREES):
        """`outside`: scalars outside the subtrees that SETs write through the
        same store (the system group), each with its writer (None:
        notWritable). Every bound object must lie in one of `subtrees`."""
        self.subtrees = subtrees
        self._mib = mib or definitions()
        self._store = store
        modules = tuple(modules)
        handlers: list[_Handler] = []
        for module in modules:
            handlers.extend(self._handlers_of(module))
        handlers.sort(key=lambda h: h.oid)
        self._handlers = handlers
        self._oids = [h.oid for h in handlers]
        # (table, first handler, last handler) of every table (None: a scalar).
        spans: dict[int, tuple[TableIndex | None, int, int]] = {}
        for position, handler in enumerate(handlers):
            key = id(handler.table) if handler.table is not None else -1 - position
            first = spans.get(key, (handler.table, position, position))[1]
            spans[key] = (handler.table, first, position)
        self._spans = tuple(spans.values())
        for before, after in zip(self._oids, self._oids[1:]):
            if after[: len(before)] == before:
                raise BindingError(f"{'.'.join(map(str, before))} is bound and has objects below it")
        for oid in self._oids:
            if not subtrees.holds(oid):
                raise BindingError(f"{'.'.join(map(str, oid))} is outside the served {subtrees}")
        self._hint = 0  # see _position
        # The columns that read the time, by OID, tried by length (the most
        # common first): a name under one is placed by a few dictionary
        # lookups, not a bisection of every bound object (timed_next).
        self._timed_columns = {handler.oid: position for position, handler in enumerate(handlers)
                               if handler.table is not None and not handler.static}
        self._timed_lengths = by_frequency(len(oid) for oid in self._timed_columns)
        # The same by their OBJECT IDENTIFIER value octets, and every table
        # column's: a name is placed among their rows without decoding it
        # (timed_next_of_element, origin_of_element).
        self._timed_column_octets = {oid_octets(oid): position
                                     for oid, position in self._timed_columns.items()}
        self._timed_octet_lengths = by_frequency(map(len, self._timed_column_octets))
        self._column_octets = {oid_octets(handler.oid): position
                               for position, handler in enumerate(handlers)
                               if handler.table is not None}
        self._column_octet_lengths = by_frequency(map(len, self._column_octets))
        targets = [t for module in modules for t in self._write_targets_of(module)]
        if outside and store is None:
            raise BindingError("writers need a write store")
        self._outside = tuple(_WriteTarget(obj.oid, obj, always, writer, None)
                              for obj, writer in outside)
        targets.extend(self._outside)
        targets.sort(key=lambda t: t.oid)
        self._write_targets = targets
        self._write_oids = [t.oid for t in targets]
        self._commits = 0
        # Every row cache's stamp, once each: together with the commits they
        # say when a snapshot's cells may have changed (see `version`).
        self._stamps: list[Any] = []
        for module in modules:
            for table in module.tables:
                if table.stamp is not None and table.stamp not in self._stamps:
                    self._stamps.append(table.stamp)
        # Per stamp, the handlers of the tables whose rows follow it (version_change).
        self._stamped_handlers: list[bytes] = []
        for stamp in self._stamps:
            handlers_of = bytearray(len(handlers))
            for spanned, first, last in self._spans:
                if spanned is not None and spanned.binding.stamp == stamp:
                    handlers_of[first:last + 1] = b"\x01" * (last + 1 - first)
            self._stamped_handlers.append(bytes(handlers_of))

    def version(self, target: ContextTarget) -> tuple[Any, ...]:
        """What the cells of `target`'s snapshot are valid for, but for the
        timed ones (`next_step`): equal versions, equal cells. It changes
        with every SET commit and every row-cache stamp (request sessions
        that open, settle or expire); the commit count leaves out SETs
        whose writers all alter only stamped tables
        (WriterBinding.alters_only_stamped), whose changes the stamps show."""
        return (self._commits, *(stamp(target) for stamp in self._stamps))

    def version_change(self, before: tuple[Any, ...],
                       after: tuple[Any, ...]) -> Invalidation | None:
        """Which answers the move from `version` `before` to `after` can
        alter (in every context): those of the tables whose stamp changed,
        when no commit that may change other answers came between; None
        when one did (any answer may be altered)."""
        if before[0] != after[0] or len(before) != len(after):
            return None
        whole = bytearray(len(self._handlers))
        for stamped, old, new in zip(self._stamped_handlers, before[1:], after[1:]):
            if old != new:
                whole = bytearray(a | b for a, b in zip(whole, stamped))
        return Invalidation(whole, {})

    def _count_commit(self) -> None:
        self._commits += 1

    def _write_targets_of(self, module: ModuleBinding) -> list[_WriteTarget]:
        mib = self._mib
        by_name: dict[str, WriterBinding] = {}
        for writer in module.writers:
            for name in writer.objects:
                obj = mib.objects.get(name)
                if obj is None or obj.module != module.module or obj.access not in WRITABLE:
                    raise BindingError(f"{module.module}: {name} is not a writable object "
                                       f"of this module")
                if self._store is None:
                    raise BindingError(f"{module.module}: writers need a write store")
                by_name[name] = writer
        codecs: dict[str, IndexCodec] = {}
        entries = {o.oid: o.name for o in mib.objects.values()
                   if o.kind == "entry" and o.module == module.module}
        out = []
        for obj in mib.objects.values():
            if obj.module != module.module or obj.kind not in ("scalar", "column"):
                continue
            codec = None
            if obj.kind == "column":
                entry = entries[obj.oid[:-1]]
                codec = codecs.get(entry)
                if codec is None:
                    codec = codecs[entry] = IndexCodec(mib.index_of(entry))
            out.append(_WriteTarget(obj.oid, obj, module.applies, by_name.get(obj.name), codec))
        return out

    def _handlers_of(self, module: ModuleBinding) -> list[_Handler]:
        mib = self._mib
        out: list[_Handler] = []
        for scalar in module.scalars:
            obj = self._object(scalar.name, "scalar", module.module)
            out.append(_Handler(obj.oid, CellType.of(obj.name, obj.syntax), module.applies,
                                scalar.getter, None))
        for table_binding in module.tables:
            entry = self._object(table_binding.entry, "entry", module.module)
            table = TableIndex(table_binding, IndexCodec(mib.index_of(entry.name)))
            readable = {c.name for c in mib.columns_of(entry.name) if mib.readable(c.name)}
            unknown = set(table_binding.columns) - readable
            missing = readable - set(table_binding.columns)
            if unknown or missing:
                raise BindingError(
                    f"{entry.name}: columns not readable in the MIB {sorted(unknown)}, "
                    f"readable columns without a getter {sorted(missing)}"
                )
            for name, getter in table_binding.columns.items():
                column = mib.objects[name]
                out.append(_Handler(column.oid, CellType.of(name, column.syntax), module.applies,
                                getter, table))
        return out

    def _object(self, name: str, kind: str, module: str) -> ObjectDef:
        obj = self._mib.objects.get(name)
        if obj is None or obj.kind != kind or obj.module != module:
            raise BindingError(f"{module}: {name} is not a {kind} of this module")
        return obj

    @property
    def timed_entries(self) -> list[Oid]:
        """The entries of the tables with a column that reads the time: the
        only places `timed_next` answers from."""
        return sorted({handler.oid[:-1] for handler in self._handlers
                       if handler.table is not None and not handler.static})

    @property
    def object_oids(self) -> list[Oid]:
        """Every bound scalar and column, in OID order."""
        return list(self._oids)

    def cell_type(self, name: str) -> CellType:
        """What the compiled module says the values of a bound object are."""
        for handler in self._handlers:
            if handler.ctype.name == name:
                return handler.ctype
        raise KeyError(f"{name} is not a bound object")

    def _position(self, oid: Oid) -> int:
        """bisect_right(object OIDs, oid) - 1. No bound object's OID is a
        prefix of another's, so when `oid` lies under the object found last
        time (as it does all along a walk), that object is the answer."""
        hint = self._hint
        if hint < len(self._oids):
            prefix = self._oids[hint]
            if oid[: len(prefix)] == prefix:
                return hint
        position = bisect_right(self._oids, oid) - 1
        if position >= 0:
            self._hint = position
        return position

    def _leaf(self, target: ContextTarget, oid: Oid) -> tuple[_Handler, Oid] | Missing:
        position = self._position(oid)
        if position < 0:
            return NO_SUCH_OBJECT
        handler = self._handlers[position]
        prefix = handler.oid
        if oid[: len(prefix)] != prefix or not handler.applies(target):
            return NO_SUCH_OBJECT
        return handler, oid[len(prefix):]

    def get_cell(self, target: ContextTarget, oid: Oid) -> Cell | Missing:
        leaf = self._leaf(target, oid)
        if isinstance(leaf, Missing):
            return leaf
        return leaf[0].get(target, leaf[1])

    def instance_arcs(self, target: ContextTarget, oid: Oid) -> int:
        """The most arcs of an instance of the object `oid` lies under (0: it
        lies under none): arcs of a name past these cannot change where it
        falls among the instances, so a reader need not decode them."""
        position = self._position(oid)
        if position < 0:
            return 0
        handler = self._handlers[position]
        if oid[:len(handler.oid)] != handler.oid or not handler.applies(target):
            return 0
        if handler.table is None:
            return len(handler.oid) + 1
        return len(handler.oid) + handler.table.longest_suffix(target)

    def get_step(self, target: ContextTarget, oid: Oid) -> tuple[Cell | Missing, bool, StepTag | None]:
        """`get_cell`, whether that answer holds while the snapshot and
        `version(target)` stay the same (false where the value moves with
        time), and what it depends on (see `StepTag`; None: outside every
        bound object)."""
        leaf = self._leaf(target, oid)
        if isinstance(leaf, Missing):
            return leaf, True, None
        handler, suffix = leaf
        position = self._hint
        owner = suffix[_OWNER] if handler.owned else ()
        return handler.get(target, suffix), handler.static, (position, position, owner, owner)

    def step_origin(self, target: ContextTarget, oid: Oid) -> Oid | None:
        """An OID whose `next_step` answers as `oid`'s does, tag included, and
        that names a row or an object, not a gap between them (as a walk's
        names do): `oid` itself (the same object) when it names a row,
        its object or a scalar's instance; else the row before it in its
        table, its object's OID before the first row, its scalar's instance
        after it, or the next object's OID between objects. Names that fall
        in one gap share it, so an answer kept for it serves them all (where
        the answer reads the time, the instance it names). None past the last
        object and between a sharded table's shards."""
        position = self._position(oid)
        prefix = self._oids[position] if position >= 0 else ()
        inside = position >= 0 and oid[: len(prefix)] == prefix
        if not inside:
            position = bisect_left(self._oids, oid)
            if position == len(self._oids):
                return None
        handler = self._handlers[position]
        if not inside:
            return handler.oid
        suffix = oid[len(prefix):]
        table = handler.table
        if not suffix:
            return oid
        if table is None:
            return oid if suffix == (0,) else prefix + (0,)
        if not handler.applies(target):
            return prefix  # skipped whole, as from anywhere in it
        row = table.floor(target, suffix)
        if row is None:
            return None
        return oid if row == suffix else prefix + row

    def timed_next(self, target: ContextTarget, oid: Oid) -> tuple[Oid, Cell, Oid] | None:
        """`next_cell` where `oid` lies under a table column that reads the
        time and the answer lies in the same table (under that column or
        the next ones, when they read the time too); None elsewhere (ask
        `next_step`). Such an answer is never kept, so it needs none of a
        step's bookkeeping: a row lookup and a value. The third item is the
        OID of the column answered."""
        columns = self._timed_columns
        for length in self._timed_lengths:
            position = columns.get(oid[:length], -1)
            if position >= 0:
                break
        else:
            return None
        handler = self._handlers[position]
        if handler.applies(target):
            found = handler.next(target, oid[len(handler.oid):])
            if found is not None:
                return handler.oid + found[0], found[1], handler.oid
        return self._timed_after(target, position)

    def _timed_after(self, target: ContextTarget, position: int) -> tuple[Oid, Cell, Oid] | None:
        """`timed_next` from the first row of the columns after the one at
        `position`, while they read the time and lie in its table."""
        handlers = self._handlers
        table = handlers[position].table
        for at in range(position + 1, len(handlers)):  # by index: a slice copies the rest
            handler = handlers[at]
            if handler.static or handler.table is not table:
                return None
            if handler.applies(target):
                found = handler.next(target, None)
                if found is not None:
                    return handler.oid + found[0], found[1], handler.oid
        return None

    def timed_next_of_element(self, target: ContextTarget, element: bytes,
                              start: int) -> tuple[Oid, Cell, Oid] | tuple[()] | None:
        """`timed_next` of the OBJECT IDENTIFIER element `element` (its value
        octets from `start` on), read from its octets: no arc decoded. ()
        where `timed_next` answers None; None where the octets cannot tell
        (`_placed`): decode the name and ask `timed_next`."""
        placed = self._placed(target, self._timed_column_octets, self._timed_octet_lengths,
                              element, start)
        if placed is None:
            return None
        position, _, index, _, at = placed
        handler = self._handlers[position]
        found = first_from(index, at, handler.getter, target)
        if found is not None:
            return handler.oid + found[0], handler.cell(found[1]), handler.oid
        return self._timed_after(target, position) or ()

    def origin_of_element(self, target: ContextTarget, element: bytes, start: int) -> bytes | None:
        """The element of `step_origin` of the OBJECT IDENTIFIER element
        `element` (its value octets from `start` on) under a table column,
        read from its octets: no arc decoded, no row decoded. None where the
        octets cannot tell (`_placed`) or the origin is the name itself."""
        return self.element_placer(target).origin(element, start)

    def element_placer(self, target: ContextTarget) -> ElementPlacer:
        """`origin_of_element` for `target`'s context, for one request."""
        return ElementPlacer(self, target)

    def _placed(self, target: ContextTarget, columns: dict[bytes, int], lengths: tuple[int, ...],
                element: bytes, start: int) -> tuple[int, int, RowIndex, list[bytes], int] | None:
        """Where the name `element` lies among the rows of one of `columns`
        (value octets -> handler position; tried by octet length, `lengths`):
        (the column's handler position, where its suffix starts in
        `element`, the row index (`octet_index`), its suffixes' octets and
        bisect_right of them for the name's suffix, `octet_position`).
        None under none of them, under one that does not apply to `target`,
        or where octets do not sort as arcs."""
        column = column_of(columns, lengths, element, start)
        if column is None:
            return None
        position = columns[column]
        index = self.octet_index(target, position)
        if index is None:
            return None
        octets = index.octets()
        assert octets is not None  # octet_index says so
        suffix_start = start + len(column)
        return (position, suffix_start, index, octets,
                octet_position(octets, index.longest_octets, element, suffix_start))

    def octet_index(self, target: ContextTarget, position: int) -> RowIndex | None:
        """The row index of the table column at handler `position` in
        `target`'s context, where its rows' octets sort as their arcs
        (TableIndex.by_octets); None where they do not, or the column is no
        table's or does not apply to `target`."""
        handler = self._handlers[position]
        table = handler.table
        if table is None or not handler.applies(target):
            return None
        return table.by_octets(target)

    def next_cell(self, target: ContextTarget, oid: Oid) -> tuple[Oid, Cell] | None:
        found = self._next(target, oid)
        return None if found is None else (found[1], found[2])

    def next_step(self, target: ContextTarget, oid: Oid) -> tuple[Oid, Cell, bool, StepTag] | None:
        """`next_cell`, whether the answer holds for as long as
        `version(target)` and the snapshot do (false when an object that
        reads the time was consulted on the way), and what it depends on
        (see `StepTag`)."""
        found = self._next(target, oid)
        return None if found is None else (found[1], found[2], found[3], found[4])

    def _next(self, target: ContextTarget, oid: Oid) -> tuple[_Handler, Oid, Cell, bool, StepTag] | None:
        handlers = self._handlers
        position = self._position(oid)
        suffix: Oid | None = None
        if position >= 0 and oid[: len(self._oids[position])] == self._oids[position]:
            suffix = oid[len(self._oids[position]) :]
        else:
            position = bisect_left(self._oids, oid)
        first = position
        after = suffix[_OWNER] if suffix is not None and handlers[position].owned else ()
        static = True
        while position < len(handlers):
            handler = handlers[position]
            if handler.applies(target):
                static = static and handler.static
                found = handler.next(target, suffix)
                if found is not None:
                    owner = found[0][_OWNER] if handler.owned else ()
                    return (handler, handler.oid + found[0], found[1], static,
                            (first, position, after, owner))
            suffix = None
            position += 1
        return None

    # -- what a structural change leaves of what was read --------------------------

    def invalidation(self, node: int | None, entity: tuple[int, ...], changed: Aspect,
                     nodes: frozenset[int] | None, before: Any, after: Any) -> Invalidation:
        """Which answers the change from snapshot `before` to `after` (of
        `changed`, touching `nodes`; None: any) can alter in the context of
        node `node` (its `entity`): see `Invalidation`. Tables whose rows do
        not depend on what changed (TableBinding.depends), or read nothing
        that changed of the changed nodes (TableBinding.view), keep every
        answer; a node-owned table of the whole fabric loses only the
        answers around the rows of the nodes whose view changed."""
        whole = bytearray(len(self._handlers))
        owned: dict[int, frozenset[tuple[int, ...]]] = {}
        nodes_changed = bool(changed & Aspect.NODES)
        members = (node, *entity) if node is not None else entity
        mine = [guid for guid in members if nodes is None or guid in nodes] if nodes_changed else []
        for table, first, last in self._spans:
            binding = table.binding if table is not None else None
            depends = binding.depends if binding is not None else STRUCTURE
            hit = depends & changed
            if binding is None or binding.per_node:
                # The context's own node (its entity's) is what a per-node table reads.
                if hit & ~Aspect.NODES or (mine and _viewed(binding, mine, before, after)):
                    whole[first:last + 1] = b"\x01" * (last + 1 - first)
                continue
            if not hit:
                continue
            if hit == Aspect.NODES and binding.owned and nodes is not None:
                keys = frozenset(_owner_key(guid) for guid in nodes
                                 if _viewed(binding, (guid,), before, after))
                if keys:
                    for position in range(first, last + 1):
                        owned[position] = keys
                continue
            whole[first:last + 1] = b"\x01" * (last + 1 - first)
        return Invalidation(whole, owned)

    # The pysnmp path: the same cells, boxed as the compiled syntax objects.

    def get(self, target: ContextTarget, oid: Oid) -> Any | Missing:
        leaf = self._leaf(target, oid)
        if isinstance(leaf, Missing):
            return leaf
        handler, suffix = leaf
        cell = handler.get(target, suffix)
        return cell if isinstance(cell, Missing) else handler.ctype.box(cell)

    def get_next(self, target: ContextTarget, oid: Oid) -> tuple[Oid, Any] | None:
        found = self._next(target, oid)
        if found is None:
            return None
        handler, at, cell = found[:3]
        return at, handler.ctype.box(cell)

    # -- SET ---------------------------------------------------------------------

    def writes_outside(self, oid: Oid) -> bool:
        """Whether `oid` names an instance (or would-be instance) of a scalar
        outside the subtrees that this MIB's SETs write."""
        return any(oid[: len(t.oid)] == t.oid and len(oid) > len(t.oid) for t in self._outside)

    def prepare_write(self, target: ContextTarget, varbinds: Any) -> _Prepared:
        """RFC 3416 4.2.5's test phase for every varbind; SetError for the
        first that fails. Each varbind's object is found among every scalar
        and column of the served modules, its value checked against the
        compiled syntax (mib.write) and its instance's index decoded; the
        writers plan into one transaction of the write store. The returned
        object commits them all at once: committing is the only change."""
        by_writer: dict[int, tuple[WriterBinding, list[WriteRequest]]] = {}
        for index, (oid, value) in enumerate(varbinds):
            found = self._write_target(tuple(oid))
            if found is None or not found.applies(target) or found.writer is None:
                raise SetError("notWritable", index, "no writable object of that name here")
            suffix = tuple(oid)[len(found.oid):]
            # noCreation before the value's checks (RFC 3416 4.2.5 order).
            if found.codec is None:
                if suffix != (0,):
                    raise SetError("noCreation", index, "a scalar's instance is .0")
                instance: tuple[Any, ...] = ()
            else:
                decoded = found.codec.decode(suffix)
                if decoded is None:
                    raise SetError("noCreation", index, "not a valid instance of the table")
                instance = decoded
            plain = checked_value(found.obj, value, index)
            request = WriteRequest(index, found.obj.name, instance, plain)
            by_writer.setdefault(id(found.writer), (found.writer, []))[1].append(request)
        txn = self._store.begin() if self._store is not None else None
        # Writers in the order of their first varbind, so errors come in
        # PDU order as far as the checks allow.
        for writer, requests in by_writer.values():
            writer.plan(target, requests, txn)
        # A commit of such writers alone shows in their tables' stamps, or
        # nowhere (version_change).
        stamped = all(writer.alters_only_stamped for writer, _ in by_writer.values())
        return _Prepared(self._store, txn, _no_count if stamped else self._count_commit)

    def _write_target(self, oid: Oid) -> _WriteTarget | None:
        position = bisect_right(self._write_oids, oid) - 1
        if position < 0:
            return None
        found = self._write_targets[position]
        if oid[: len(found.oid)] != found.oid or len(oid) == len(found.oid):
            return None
        return found

"""A table's instances, indexed per context: built on first use, kept in a bounded cache.

`TableIndex` serves a binding's rows as sorted instance suffixes (a whole table, or a shard
per switch when the binding shards it): lookup, floor, the first value at or after a suffix,
and the rows' octets for a GETNEXT placed by its element. No Python object exists per cell;
the cache keeps `ROW_INDEX_CACHE_SIZE` contexts and `ROW_INDEX_CACHE_ROWS` rows in all, least
recently used first, and a row index holds while its anchor (the snapshot's structure) does.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

from ..fabric.lineage import Aspect
from .api import (
    ContextTarget,
    Oid,
)
from .binding import (
    Shard,
    TableBinding,
)
from .index import IndexCodec
from ..wire.ber import short_arcs_octets, sort_key_among_short_arcs

ABSENT = object()  # what `TableIndex.lookup` returns for a row that is not there
ROW_INDEX_CACHE_SIZE = 512  # contexts whose row index a table keeps
ROW_INDEX_CACHE_ROWS = 250_000  # and at most this many rows in all of them


class RowIndex:
    __slots__ = ("key", "anchor", "suffixes", "rows", "stamp", "longest", "longest_octets",
                 "_octets", "_octets_built")

    def __init__(self, key: Any, anchor: Any, rows: dict[Oid, Any], stamp: Any = None) -> None:
        self.key = key  # the scope it was built for (see TableIndex._scope)
        self.anchor = anchor  # the context's node for a per-node table, kept so a recycled id() never matches
        self.suffixes = sorted(rows)
        self.rows = rows
        self.stamp = stamp
        self.longest = max(map(len, rows), default=0)  # arcs of the longest suffix
        self.longest_octets = 0  # octets of the longest of `octets`, once built
        self._octets: list[bytes] | None = None
        self._octets_built = False

    def octets(self) -> list[bytes] | None:
        """Each suffix's sub-identifier octets, in the order of `suffixes`,
        built on first use; None when an arc is 2^14 or more (only below it do
        octets sort as arcs do: ber.short_arcs_octets)."""
        if not self._octets_built:
            found = [short_arcs_octets(suffix) for suffix in self.suffixes]
            encoded = [octets for octets in found if octets is not None]
            if len(encoded) == len(found):
                self._octets = encoded
                self.longest_octets = max(map(len, encoded), default=0)
            self._octets_built = True
        return self._octets


class _ShardIndex:
    """The sorted leading-index prefixes of a sharded table, and their builders."""

    __slots__ = ("key", "anchor", "prefixes", "builders")

    def __init__(self, key: Any, anchor: Any, shards: dict[Oid, Shard]) -> None:
        self.key = key
        self.anchor = anchor
        self.prefixes = sorted(shards)
        self.builders = shards


class _BoundedCache:
    """Row indexes by key, least recently used first out, bounded in rows too:
    large per-node tables must not pile up when a manager walks every node."""

    def __init__(self) -> None:
        self._entries: OrderedDict[Any, RowIndex] = OrderedDict()
        self._rows = 0
        self._tokens: Any = None  # the lineage tokens of the newest entries

    def get(self, key: Any, anchor: Any, stamp: Any = None) -> RowIndex | None:
        found = self._entries.get(key)
        if found is None or found.anchor is not anchor or found.stamp != stamp:
            return None
        self._entries.move_to_end(key)
        return found

    def put(self, key: Any, built: RowIndex) -> None:
        tokens = key[0]
        if tokens != self._tokens:
            # What the table depends on changed: indexes built before it are
            # never read again (but by a reader of an older snapshot), and
            # each would keep old nodes alive.
            for old_key in [k for k in self._entries if k[0] != tokens]:
                self._rows -= len(self._entries.pop(old_key).rows)
            self._tokens = tokens
        old = self._entries.pop(key, None)
        if old is not None:
            self._rows -= len(old.rows)
        self._entries[key] = built
        self._rows += len(built.rows)
        while len(self._entries) > 1 and (
            len(self._entries) > ROW_INDEX_CACHE_SIZE or self._rows > ROW_INDEX_CACHE_ROWS
        ):
            _, evicted = self._entries.popitem(last=False)
            self._rows -= len(evicted.rows)


class TableIndex:
    """One table's rows for a context: looked up by suffix, walked in order.

    The sorted instance suffixes are built on first use and kept in a small
    cache, so GETNEXT costs O(log n). They are kept while what the table
    declares it depends on stays the same (TableBinding.depends, compared by
    the snapshot lineage's tokens) and, for a per-node table, while the node
    is the same object: a poll that moved counters keeps every index, a node
    that changed rebuilds its own."""

    def __init__(self, binding: TableBinding, codec: IndexCodec) -> None:
        self.binding = binding
        self.codec = codec
        self._rows = _BoundedCache()
        # The last index used and the lineage it was used at, checked by
        # identity before the keyed caches.
        self._last: tuple[Any, Any, tuple[int, ...], RowIndex] | None = None
        self._last_shards: tuple[Any, Any, tuple[int, ...], _ShardIndex] | None = None
        self._last_shard: tuple[_ShardIndex, Oid, RowIndex] | None = None
        self._shards: OrderedDict[Any, _ShardIndex] = OrderedDict()

    def _scope(self, target: ContextTarget) -> tuple[Any, ...]:
        """What an index of this table is valid for: the lineage tokens of
        what the table depends on, and for a per-node table the context's
        node and entity. The node is named by its GUID, not its object: a node
        that changed is another object (the anchor, checked on every lookup,
        tells), and its new index must replace the old one, not sit beside it
        keeping the old node alive until the cache is full."""
        depends = self.binding.depends
        if not self.binding.per_node:
            return (target.fabric.lineage.token(depends), None, ())
        if target.entity_guids:
            depends |= Aspect.NODES | Aspect.NODE_SET  # the entity's other nodes too
        return (target.fabric.lineage.token(depends), target.node.guid, target.entity_guids)

    def _anchor(self, target: ContextTarget) -> Any:
        return target.node if self.binding.per_node else None

    def _build(self, key: Any, anchor: Any, rows: Iterable[tuple[tuple[Any, ...], Any]],
               stamp: Any = None) -> RowIndex:
        encode = self.codec.encode
        return RowIndex(key, anchor, {encode(values): row for values, row in rows}, stamp)

    def _whole(self, target: ContextTarget) -> RowIndex:
        stamp = self.binding.stamp(target) if self.binding.stamp is not None else None
        lineage = target.fabric.lineage
        # A walk asks for the same context's rows again and again: the last
        # index used is checked first, by identity, before the keyed cache.
        last = self._last
        if (last is not None and last[0] is lineage and last[3].stamp == stamp
                and (not self.binding.per_node
                     or (last[1] is target.node and last[2] == target.entity_guids))):
            return last[3]
        key = self._scope(target)
        anchor = self._anchor(target)
        found = self._rows.get(key, anchor, stamp)
        if found is None:
            found = self._build(key, anchor, self.binding.rows(target), stamp)
            self._rows.put(key, found)
        self._last = (lineage, target.node, target.entity_guids, found)
        return found

    def _shard_index(self, target: ContextTarget) -> _ShardIndex:
        lineage = target.fabric.lineage
        last = self._last_shards
        if (last is not None and last[0] is lineage
                and (not self.binding.per_node
                     or (last[1] is target.node and last[2] == target.entity_guids))):
            return last[3]
        key = self._scope(target)
        anchor = self._anchor(target)
        found = self._shards.get(key)
        if found is None or found.anchor is not anchor:
            assert self.binding.shards is not None
            encode = self.codec.encode_prefix
            shards = {encode(values): build for values, build in self.binding.shards(target)}
            found = _ShardIndex(key, anchor, shards)
            if self._shards and next(reversed(self._shards.values())).key[0] != key[0]:
                self._shards.clear()  # built on what changed since: see _BoundedCache.put
            self._shards[key] = found
            if len(self._shards) > ROW_INDEX_CACHE_SIZE:
                self._shards.popitem(last=False)
        self._last_shards = (lineage, target.node, target.entity_guids, found)
        return found

    def _shard(self, target: ContextTarget, index: _ShardIndex, prefix: Oid) -> RowIndex:
        last = self._last_shard
        if last is not None and last[0] is index and last[1] == prefix:
            return last[2]
        key = index.key + (prefix,)
        found = self._rows.get(key, index.anchor)
        if found is None:
            found = self._build(key, index.anchor, index.builders[prefix]())
            self._rows.put(key, found)
        self._last_shard = (index, prefix, found)
        return found

    def longest_suffix(self, target: ContextTarget) -> int:
        """The most arcs an instance suffix of this table has in `target`'s
        context: those of its longest row (a sharded table: its index's most)."""
        if self.binding.shards is None:
            return self._whole(target).longest
        return self.codec.most_arcs

    def lookup(self, target: ContextTarget, suffix: Oid) -> Any:
        if self.binding.shards is None:
            return self._whole(target).rows.get(suffix, ABSENT)
        index = self._shard_index(target)
        position = bisect_right(index.prefixes, suffix) - 1
        if position < 0:
            return ABSENT
        prefix = index.prefixes[position]
        if suffix[: len(prefix)] != prefix:
            return ABSENT
        return self._shard(target, index, prefix).rows.get(suffix, ABSENT)

    def by_octets(self, target: ContextTarget) -> RowIndex | None:
        """The row index of `target`'s context where its suffixes' octets
        (`RowIndex.octets`) sort as their arcs do, so a suffix is placed
        among them without decoding it; None where they do not (an arc of
        2^14 or more) or the table is sharded."""
        if self.binding.shards is not None:
            return None
        index = self._whole(target)
        return None if index.octets() is None else index

    def floor(self, target: ContextTarget, suffix: Oid) -> Oid | None:
        """The last row's suffix at or before `suffix`; () when every row
        follows it. None where a sharded table cannot tell without reading
        another shard: `suffix` between shards, or before its shard's rows."""
        if self.binding.shards is None:
            suffixes = self._whole(target).suffixes
        else:
            index = self._shard_index(target)
            position = bisect_right(index.prefixes, suffix) - 1
            if position < 0:
                return ()  # rows start with a prefix, and every prefix follows it
            prefix = index.prefixes[position]
            if suffix[: len(prefix)] != prefix:
                return None
            suffixes = self._shard(target, index, prefix).suffixes
            if not suffixes or suffix < suffixes[0]:
                return None
        at = bisect_right(suffixes, suffix)
        return suffixes[at - 1] if at else ()

    def first_value(self, target: ContextTarget, suffix: Oid | None,
                    getter: Any) -> tuple[Oid, Any] | None:
        """The first row after `suffix` (from the start when None) for which
        `getter` has a value (not None), with that value."""
        # The common cases without generators: one bisect, then rows in order.
        if self.binding.shards is None:
            rows = self._whole(target)
            return first_from(rows, 0 if suffix is None else bisect_right(rows.suffixes, suffix),
                               getter, target)
        if suffix is not None:
            index = self._shard_index(target)
            position = bisect_right(index.prefixes, suffix) - 1
            if position >= 0:
                prefix = index.prefixes[position]
                if suffix[: len(prefix)] == prefix:  # inside that shard
                    shard = self._shard(target, index, prefix)
                    hit = first_from(shard, bisect_right(shard.suffixes, suffix), getter, target)
                    if hit is not None:
                        return hit
        for found, row in self.after(target, suffix):
            value = getter(row, target)
            if value is not None:
                return found, value
        return None

    def after(self, target: ContextTarget, suffix: Oid | None) -> Iterator[tuple[Oid, Any]]:
        """Rows whose suffix follows `suffix` (all rows when None), in order."""
        if self.binding.shards is None:
            yield from rows_after(self._whole(target), suffix)
            return
        index = self._shard_index(target)
        prefixes = index.prefixes
        position = 0
        if suffix is not None:
            position = max(bisect_right(prefixes, suffix) - 1, 0)
        for prefix in prefixes[position:]:
            if suffix is not None and prefix < suffix[: len(prefix)]:
                continue
            yield from rows_after(self._shard(target, index, prefix), suffix)


def by_frequency(lengths: Iterable[int]) -> tuple[int, ...]:
    """Distinct lengths, the most common first: the order to try them in."""
    counted = Counter(lengths)
    return tuple(sorted(counted, key=lambda length: -counted[length]))


def first_from(index: RowIndex, position: int, getter: Any,
                target: ContextTarget) -> tuple[Oid, Any] | None:
    """The first row from `position` on with a value (`first_value`)."""
    suffixes, rows = index.suffixes, index.rows
    for at in range(position, len(suffixes)):
        found = suffixes[at]
        value = getter(rows[found], target)
        if value is not None:
            return found, value
    return None


def rows_after(index: RowIndex, suffix: Oid | None) -> Iterator[tuple[Oid, Any]]:
    suffixes = index.suffixes
    rows = index.rows
    position = 0 if suffix is None else bisect_right(suffixes, suffix)
    # By index, not a slice: a slice would copy the rest of the table on
    # every GETNEXT.
    for at in range(position, len(suffixes)):
        found = suffixes[at]
        yield found, rows[found]


def column_of(columns: dict[bytes, int], lengths: tuple[int, ...], element: bytes,
               start: int) -> bytes | None:
    """The value octets of the column of `columns` (tried by octet length,
    `lengths`) that `element`'s value octets from `start` on begin with."""
    for length in lengths:
        column = element[start:start + length]  # shorter where the name is
        if column in columns:
            return column
    return None


def octet_position(octets: list[bytes], longest: int, element: bytes, start: int) -> int:
    """bisect_right of a row index's suffix octets (`octets`, the longest of
    `longest` octets) for the suffix of `element` from `start` on. Only as
    many of its octets as the longest row's, and one more, are read: past
    them it is longer than every row, whatever follows (a name of 600
    octets costs what a row's does)."""
    suffix = element[start:start + longest + 1]
    if not suffix.isascii():  # one-octet arcs sort as they are
        suffix = sort_key_among_short_arcs(suffix)
    return bisect_right(octets, suffix)

"""snmpd.conf lines that make net-snmp's table helper serve a recorded table.

`table NAME` instantiates one of snmpd's internal data tables from the MIB
definition snmpd has loaded, and `add_row NAME INDEX... VALUE...` adds a row
with one value for every accessible column, in column order (snmpd.conf(5),
"Internal Data tables"). The rows sit in one sorted list, so a large table
loads in a fraction of a second where one `override` line per varbind takes
quadratic time (a GETNEXT then scans that list: linear in the rows).

`add_row` cannot leave a cell out ("All columns must be specified"). Where
the recorded walk has no instance (a column the agent hides, a cell it does
not know), the row is given the type's zero and a VACM view excludes that
column or those cells: snmpd then serves exactly the recorded OIDs. snmpd
checks every varbind against every entry of the view, so the lacking cells
of a column are covered by as few masked entries (wildcard sub-identifiers)
as match them and no recorded cell.

Index and column types come from the compiled MIB modules, the same
definitions the agent serves from; the recorded BER types are checked
against them, since snmpd serves each column with the type its MIB gives.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ibsnmp.mib.index import IndexCodec
from ibsnmp.mib.loader import MibDefinitions, definitions

Oid = tuple[int, ...]
Varbind = tuple[Oid, int, Any]  # (OID, BER tag of the value, int | bytes | Oid)

INTEGER, OCTET_STRING, OBJECT_IDENTIFIER = 0x02, 0x04, 0x06
IP_ADDRESS, COUNTER32, GAUGE32, TIMETICKS, COUNTER64 = 0x40, 0x41, 0x42, 0x43, 0x46
_UNSIGNED = frozenset({COUNTER32, GAUGE32, TIMETICKS, COUNTER64})
# read_config_read_memory() reads hex strings into a buffer of 1024 octets, NUL included.
MAX_OCTETS = 1023
INT32_MAX = 2**31 - 1


class TableConfigError(ValueError):
    """The recorded walk holds something `table`/`add_row` cannot serve as recorded."""


@dataclass(frozen=True, slots=True)
class Column:
    subid: int
    name: str
    tag: int  # the BER type snmpd serves it with, from the MIB's syntax


@dataclass(frozen=True)
class TableShape:
    """What snmpd's `table` directive builds from the MIB: index types and columns."""

    name: str
    oid: Oid
    index: IndexCodec
    index_tags: tuple[int, ...]
    columns: tuple[Column, ...]  # every readable column, in OID order

    @property
    def entry(self) -> Oid:
        return self.oid + (1,)


@dataclass(frozen=True, slots=True)
class Hidden:
    """A subtree a VACM view excludes; sub-identifiers at `wildcards`
    (positions in `oid`) match any value, as the view's mask says."""

    oid: Oid
    wildcards: frozenset[int] = frozenset()

    def mask(self) -> str:
        """The view mask: one bit per sub-identifier, 1 = must match (snmpd.conf(5))."""
        octets = bytearray((len(self.oid) + 7) // 8)
        for position in range(len(self.oid)):
            if position not in self.wildcards:
                octets[position // 8] |= 0x80 >> position % 8
        return ":".join(f"{octet:02x}" for octet in octets)

    def matches(self, oid: Oid) -> bool:
        """Whether the view entry covers `oid` (a prefix match outside the wildcards)."""
        return len(oid) >= len(self.oid) and all(
            oid[i] == sub for i, sub in enumerate(self.oid) if i not in self.wildcards)


@dataclass
class TableConfig:
    lines: list[str] = field(default_factory=list)  # `table`, then one `add_row` per row
    hidden: list[Hidden] = field(default_factory=list)  # what the view excludes
    rows: int = 0
    cells: int = 0


def ber_tag(syntax: Any) -> int:
    """The identifier byte a pyasn1 syntax is sent with (IpAddress 0x40, Counter64 0x46...)."""
    tag = syntax.tagSet[-1]
    return int(tag.tagClass) | int(tag.tagFormat) | int(tag.tagId)


def oid_text(oid: Sequence[int]) -> str:
    return "." + ".".join(map(str, oid))


def table_shape(table: str, mib: MibDefinitions | None = None) -> TableShape:
    """The shape of a served table (by descriptor), as snmpd instantiates it.

    snmpd's `table` adds every column that is read-only, read-write or
    read-create, the same set the agent serves; the index parts are typed
    by their own objects' syntaxes (a fixed-size OCTET STRING is implied).
    """
    mib = mib or definitions()
    table_def = mib.objects[table]
    entry = next(o for o in mib.objects.values()
                 if o.kind == "entry" and o.oid == table_def.oid + (1,))
    parts = mib.index_of(entry.name)
    columns = tuple(Column(o.oid[-1], o.name, ber_tag(o.syntax))
                    for o in mib.columns_of(entry.name) if mib.readable(o.name))
    return TableShape(table, table_def.oid, IndexCodec(parts),
                      tuple(ber_tag(p.syntax) for p in parts), columns)


def config_value(tag: int, value: Any, where: str) -> str:
    """One value as read_config_read_memory() reads it back for BER type `tag`."""
    if tag == INTEGER:
        if not -INT32_MAX - 1 <= int(value) <= INT32_MAX:
            raise TableConfigError(f"{where}: INTEGER {value} is outside what atoi() reads")
        return str(int(value))
    if tag in _UNSIGNED:
        return str(int(value))
    if tag == OCTET_STRING:
        octets = bytes(value)
        if len(octets) > MAX_OCTETS:
            raise TableConfigError(f"{where}: {len(octets)} octets, add_row reads at most "
                                   f"{MAX_OCTETS}")
        # Hex, so that blanks, quotes and binary octets need no escaping.
        return "0x" + octets.hex() if octets else '""'
    if tag == IP_ADDRESS:
        return ".".join(str(octet) for octet in bytes(value))
    if tag == OBJECT_IDENTIFIER:
        return oid_text(value)
    raise TableConfigError(f"{where}: add_row cannot read BER type 0x{tag:02x}")


_ZERO = {INTEGER: 0, COUNTER32: 0, GAUGE32: 0, TIMETICKS: 0, COUNTER64: 0,
         OCTET_STRING: b"", IP_ADDRESS: b"\0\0\0\0", OBJECT_IDENTIFIER: (0, 0)}


def table_config(shape: TableShape, varbinds: Iterable[Varbind]) -> TableConfig:
    """`table` and `add_row` lines for the varbinds under the table's entry
    (others are ignored), and what a view must exclude for snmpd to serve
    exactly these OIDs: whole columns with no instance, then the cells rows
    lack, as few masked entries as cover them (snmpd checks every varbind
    against every entry of the view)."""
    entry = shape.entry
    depth = len(entry)
    columns = {c.subid: c for c in shape.columns}
    rows: dict[Oid, dict[int, tuple[int, Any]]] = {}
    cells = 0
    for oid, tag, value in varbinds:
        if oid[:depth] != entry or len(oid) == depth:
            continue
        column = columns.get(oid[depth])
        if column is None:
            raise TableConfigError(f"{oid_text(oid)}: column {oid[depth]} is not a readable "
                                   f"column of {shape.name} in the MIB")
        if tag != column.tag:
            raise TableConfigError(f"{oid_text(oid)}: recorded as BER type 0x{tag:02x}, but "
                                   f"{column.name} is 0x{column.tag:02x} in the MIB, the "
                                   "type snmpd would serve")
        suffix = oid[depth + 1:]
        row = rows.get(suffix)
        if row is None:
            if shape.index.decode(suffix) is None:
                raise TableConfigError(f"{oid_text(oid)}: {oid_text(suffix)} is not an index "
                                       f"of {shape.name}")
            row = rows[suffix] = {}
        row[column.subid] = (tag, value)
        cells += 1
    config = TableConfig(lines=[f"table {shape.name}"], rows=len(rows), cells=cells)
    for column in shape.columns:
        having = [suffix for suffix, row in rows.items() if column.subid in row]
        prefix = entry + (column.subid,)
        if not having:
            config.hidden.append(Hidden(prefix))
            continue
        lacking = [suffix for suffix, row in rows.items() if column.subid not in row]
        if not lacking:
            continue
        for suffix, wildcards in cover(lacking, having, f"{shape.name} column {column.name}"):
            config.hidden.append(Hidden(prefix + suffix,
                                        frozenset(len(prefix) + w for w in wildcards)))
    for suffix in sorted(rows):
        row = rows[suffix]
        where = f"{shape.name} row {oid_text(suffix)}"
        values = [config_value(tag, value, where) for tag, value
                  in zip(shape.index_tags, shape.index.decode(suffix) or ())]
        for column in shape.columns:
            # add_row wants every column: a cell the walk lacks gets the
            # type's zero, never served since the view excludes it.
            tag, value = row.get(column.subid) or (column.tag, _ZERO.get(column.tag))
            values.append(config_value(tag, value, f"{where} column {column.name}"))
        config.lines.append(f"add_row {shape.name} " + " ".join(values))
    return config


def cover(lacking: Sequence[Oid], having: Sequence[Oid],
          where: str) -> list[tuple[Oid, frozenset[int]]]:
    """Patterns (index suffix, wildcarded positions) that match every suffix in
    `lacking` and none in `having`, as a view entry matches (a prefix match).

    Each suffix not yet matched grows a pattern greedily, wildcarding first
    the positions where the lacking suffixes vary most; a position keeps its
    value when wildcarding it would match a suffix in `having`.
    """
    present: dict[tuple[int, int], set[int]] = {}  # (position, sub-id) -> rows in `having`
    for row, suffix in enumerate(having):
        for position, sub in enumerate(suffix):
            present.setdefault((position, sub), set()).add(row)
    long_enough: dict[int, set[int]] = {}

    def hits(suffix: Oid, wildcards: frozenset[int]) -> bool:
        if len(suffix) not in long_enough:
            long_enough[len(suffix)] = {r for r, s in enumerate(having) if len(s) >= len(suffix)}
        sets = [long_enough[len(suffix)]]
        sets += [present.get((i, sub), set()) for i, sub in enumerate(suffix)
                 if i not in wildcards]
        sets.sort(key=len)
        common = sets[0]
        for other in sets[1:]:
            if not common:
                break
            common = common & other
        return bool(common)

    longest = max((len(s) for s in lacking), default=0)
    variety = [len({s[i] for s in lacking if len(s) > i}) for i in range(longest)]
    order = sorted(range(longest), key=lambda i: (-variety[i], i))
    patterns: list[tuple[Oid, frozenset[int]]] = []
    for suffix in lacking:
        if any(Hidden(p, w).matches(suffix) for p, w in patterns):
            continue
        wildcards: frozenset[int] = frozenset()
        if hits(suffix, wildcards):
            raise TableConfigError(f"{where}: no view can hide row {oid_text(suffix)} without "
                                   "hiding a longer index that starts with it")
        for position in order:
            if position < len(suffix) and not hits(suffix, wildcards | {position}):
                wildcards |= {position}
        patterns.append((suffix, wildcards))
    return patterns


def view_lines(view: str, hidden: Iterable[Hidden]) -> list[str]:
    """A VACM view of everything but the `hidden` subtrees."""
    lines = [f"view {view} included .1"]
    for entry in hidden:
        mask = f" {entry.mask()}" if entry.wildcards else ""
        lines.append(f"view {view} excluded {oid_text(entry.oid)}{mask}")
    return lines

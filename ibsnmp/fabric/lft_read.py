"""Read the linear forwarding tables a subnet manager programmed.

`read_lfts` / `load_lfts` take OpenSM's `opensm-lfts.dump` (written at every routing pass when
its log has the ROUTING flag, `-D 0x43`) or `ibroute` output (several switches' in one file),
one block per switch; `with_forwarding` makes a fabric serve them. A block's LID range ends
at the switch's LinearFDBTop; a LID it does not list forwards nowhere (255). Every block must
end with a closing count that matches, so a file cut short (being rewritten) is refused
(LftError names the line), never half read. Multicast tables (`ibroute -M`) are not read.
Reference: docs/providers.md, 'A fabric: an ibnetdiscover dump' (both formats).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from .iba import MAX_PHYS_PORTS, MAX_UNICAST_LID, UNROUTED_PORT
from .ibnetdiscover_read import TopologyError
from .model import Fabric, ForwardingTables

__all__ = ["LftError", "SwitchLft", "read_lfts", "load_lfts", "with_forwarding"]

_NUMBER = r"(0x[0-9a-fA-F]+|\d+)"
_HEADER = re.compile(r"Unicast lids \[" + _NUMBER + "-" + _NUMBER + r"\] of switch Lid (\d+) "
                     r"guid 0x([0-9a-fA-F]{1,16})\b.*:\s*")
_ENTRY = re.compile(r"0x([0-9a-fA-F]{1,4}) +(\d{1,3})(?:\s*[#:]|\s*$)")
_FOOTER = re.compile(r"(\d+) (valid )?lids dumped\s*")
# ibroute's column heads under each header.
_COLUMN_HEADS = (re.compile(r"\s*Lid\s+Out\s+Destination\s*"), re.compile(r"\s*Port\s+Info\s*"))


class LftError(TopologyError):
    """A forwarding table file that cannot be read (names the line)."""


@dataclass(frozen=True, slots=True)
class SwitchLft:
    """One switch's table: `ports[lid]` is the egress port of DLID `lid`
    (0: the switch itself; 255: no route), for LIDs 0..top."""

    guid: int
    lid: int
    top: int
    ports: bytes


def read_lfts(text: str, *, source: str = "<lft dump>") -> dict[int, SwitchLft]:
    """Switch GUID -> its table, from an OpenSM LFT dump or ibroute output."""
    tables: dict[int, SwitchLft] = {}
    lines = text.splitlines()
    block: _Block | None = None

    def error(message: str, line_no: int) -> LftError:
        return LftError(message, source=source, line_no=line_no, line=lines[line_no - 1])

    for line_no, line in enumerate(lines, 1):
        # Entries first: they are nearly every line of a large fabric's file.
        entry = _ENTRY.match(line) if block is not None and line.startswith("0x") else None
        if entry is not None:
            assert block is not None
            problem = block.add(int(entry[1], 16), int(entry[2]))
            if problem is not None:
                raise error(problem, line_no)
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        header = _HEADER.fullmatch(line)
        if header is not None:
            if block is not None:
                raise error(f"a new table starts before the table of switch {block.guid:016x} "
                            f"(line {block.line_no}) has its 'N lids dumped' line", line_no)
            low, top = int(header[1], 0), int(header[2], 0)
            guid = int(header[4], 16)
            if not low <= top <= MAX_UNICAST_LID:
                raise error(f"LID range {low}-{top} is not within 0..{MAX_UNICAST_LID}", line_no)
            if guid in tables:
                raise error(f"switch {guid:016x} has a second table", line_no)
            block = _Block(guid, int(header[3]), low, top, line_no)
            continue
        if block is None:
            if line.startswith("Multicast"):
                raise error("multicast tables are not read (give `ibroute` without -M)", line_no)
            raise error("expected 'Unicast lids [FIRST-LAST] of switch Lid N guid 0x...:'", line_no)
        if any(head.fullmatch(line) for head in _COLUMN_HEADS):
            continue
        footer = _FOOTER.fullmatch(line)
        if footer is not None:
            # ibroute counts the entries it printed ("N valid lids dumped"),
            # OpenSM the LIDs up to the top ("N lids dumped", gaps included).
            expected = block.count if footer[2] else block.top
            if int(footer[1]) != expected:
                what = "entries" if footer[2] else "as its top LID"
                raise error(f"says {footer[1]} LIDs but the table has {expected} {what}", line_no)
            tables[block.guid] = SwitchLft(block.guid, block.lid, block.top, bytes(block.ports))
            block = None
            continue
        raise error("expected an entry '0xLID PORT ...' or the closing 'N lids dumped'", line_no)
    if block is not None:
        raise LftError(f"the table of switch {block.guid:016x} (line {block.line_no}) has no closing "
                       "'N lids dumped' line: the file is incomplete", source=source)
    return tables


def load_lfts(path: str | Path) -> dict[int, SwitchLft]:
    """read_lfts on a file; an unreadable file is an LftError too."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise LftError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    return read_lfts(text, source=str(path))


def with_forwarding(fabric: Fabric, tables: Mapping[int, SwitchLft]) -> tuple[Fabric, tuple[int, ...]]:
    """The fabric serving these tables (and each switch's LinearFDBTop from
    them), and the GUIDs of tables for switches the fabric does not have."""
    linear: dict[int, bytes] = {}
    nodes = dict(fabric.nodes)
    strangers: list[int] = []
    for guid, table in tables.items():
        node = nodes.get(guid)
        if node is None or node.switch is None:
            strangers.append(guid)
            continue
        linear[guid] = table.ports
        nodes[guid] = dataclasses.replace(
            node, switch=dataclasses.replace(node.switch, linear_fdb_top=table.top))
    served = dataclasses.replace(fabric, nodes=MappingProxyType(nodes),
                                 forwarding=ForwardingTables(MappingProxyType(linear)))
    return served, tuple(strangers)


@dataclass(slots=True)
class _Block:
    guid: int
    lid: int
    low: int
    top: int
    line_no: int
    count: int = 0
    ports: bytearray = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.ports = bytearray([UNROUTED_PORT]) * (self.top + 1)

    def add(self, lid: int, port: int) -> str | None:
        """Record one entry; what is wrong with it, if anything."""
        if not self.low <= lid <= self.top:
            return f"LID {lid} outside the table's range {self.low}-{self.top}"
        if port > MAX_PHYS_PORTS:
            return f"egress port {port} outside 0..{MAX_PHYS_PORTS}"
        if self.ports[lid] != UNROUTED_PORT:
            return f"LID {lid} is listed twice"
        self.ports[lid] = port
        self.count += 1
        return None

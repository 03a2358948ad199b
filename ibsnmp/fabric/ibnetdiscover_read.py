"""Read `ibnetdiscover` topology text (infiniband-diags) into a `Fabric`.

`read_topology` and `load_topology` take the plain, `-g` and `-f` layouts and what
`ibnetdiscover.export` writes; a line that cannot be read is a TopologyError naming it. Every
node, port, link and LID of the file becomes the model, each link checked from both ends.
What the file does not carry is not invented: it is None (UNKNOWN), served as no instance;
tables that would need invented content are empty, and there are no counters. Forwarding
tables are not computed (`Fabric.computes_routes` is False): an SM's LFT dump supplies them.
Reference: docs/providers.md, 'A fabric: an ibnetdiscover dump' (format, conventions).
"""

from __future__ import annotations

import gc
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .iba import (
    DEFAULT_SUBNET_PREFIX,
    MAX_PHYS_PORTS,
    MAX_UNICAST_LID,
    LinkSpeed,
    LinkSpeedExt,
    LinkWidth,
    NodeType,
    PhysicalInterface,
    PortPhysState,
    PortState,
    SmState,
    VLCap,
)
from .model import (
    CounterLayout,
    Fabric,
    Link,
    Node,
    Port,
    PortInfo,
    PortRef,
    SmInfo,
    SwitchInfo,
)

__all__ = [
    "TopologyError",
    "UNKNOWN",
    "read_topology",
    "load_topology",
    "parse_guid",
]

# What a field an ibnetdiscover file does not carry holds: nothing.  None
# is "not read" in the model, and the MIB bindings serve no instance for it.
UNKNOWN = None

_NO_EXT = LinkSpeedExt(0)

# A dump has no counters, so PMA-MIB must serve none rather than simulate
# traffic: a counter layout of no counters is "a port without a PMA".
_PORT_EXTRA: dict[str, Any] = {"counter_layout": CounterLayout(frozenset())}


class TopologyError(ValueError):
    """A topology file that cannot be read: the message names the file, the
    line number and the line's text where one line is at fault."""

    def __init__(self, message: str, *, source: str = "", line_no: int | None = None,
                 line: str | None = None) -> None:
        self.message = message
        self.source = source
        self.line_no = line_no
        self.line = line
        where = source or "topology"
        if line_no is not None:
            where += f", line {line_no}"
        text = f"{where}: {message}"
        if line is not None:
            shown = line.rstrip("\n")
            if len(shown) > 160:
                shown = shown[:157] + "..."
            text += f": {shown!r}"
        super().__init__(text)


# -- what the lines say ---------------------------------------------------------------------

_NAME = r'"([SHR?])-([0-9a-fA-F]{1,16})"'
_PORT_LINE = re.compile(
    r"\[(\d+)\](?:\[ext \d+\])?\s*(?:\(([0-9a-fA-F]{1,16})\))?\s*" + _NAME
    + r"\[(\d+)\](?:\[ext \d+\])?\s*(?:\(([0-9a-fA-F]{1,16})\))?\s*"
)
_NODE_LINE = re.compile(r"(Switch|Ca|Hca|Rt|Router)\s+(\d+)\s+" + _NAME + r"\s*")
_ID_LINE = re.compile(r"(vendid|devid|sysimgguid|switchguid|caguid|rtguid|hcaguid)\s*=\s*"
                      r"(?:0x)?([0-9a-fA-F]{1,16})(?:\s*\(\s*(?:0x)?([0-9a-fA-F]{1,16})\s*\))?\s*")
_INITIATED = re.compile(r"#\s*Initiated from node (?:0x)?([0-9a-fA-F]{1,16}) port (?:0x)?([0-9a-fA-F]{1,16})")
_OWN_LID = re.compile(r"lid (\d+) lmc (\d+)\s*")
_LID = re.compile(r"lid (\d+)\s*")
_RATE_START = re.compile(r"\d+x")
_FULL = re.compile(r"s=(\d+) w=(\d+) v=(\d+)(?: e=(\d+))?\s*")
_TAIL = re.compile(r"(?:slot \d+|\(scp\))?\s*")
_SWITCH_TAIL = re.compile(r"(enhanced|base) port 0(?: lid (\d+) lmc (\d+))?\s*")
# Lines of the -g grouping layout that carry nothing the model keeps.
_GROUPING = ("Chassis ", "Hostname:", "Non-Chassis Nodes")

_TYPES = {"Switch": NodeType.SWITCH, "Ca": NodeType.CA, "Hca": NodeType.CA, "Rt": NodeType.ROUTER,
          "Router": NodeType.ROUTER}
_LETTERS = {"S": NodeType.SWITCH, "H": NodeType.CA, "R": NodeType.ROUTER}
_LETTER_OF = {NodeType.SWITCH: "S", NodeType.CA: "H", NodeType.ROUTER: "R"}
_KIND = {NodeType.SWITCH: "switch", NodeType.CA: "channel adapter", NodeType.ROUTER: "router"}
_ID_GUIDS = {"switchguid": NodeType.SWITCH, "caguid": NodeType.CA, "hcaguid": NodeType.CA,
             "rtguid": NodeType.ROUTER}

_WIDTHS = {"1x": LinkWidth.X1, "2x": LinkWidth.X2, "4x": LinkWidth.X4, "8x": LinkWidth.X8,
           "12x": LinkWidth.X12}
# name -> (LinkSpeedActive, LinkSpeedExtActive, FDR10)
_SPEEDS: dict[str, tuple[LinkSpeed, LinkSpeedExt, bool]] = {
    "SDR": (LinkSpeed.SDR, _NO_EXT, False),
    "DDR": (LinkSpeed.DDR, _NO_EXT, False),
    "QDR": (LinkSpeed.QDR, _NO_EXT, False),
    "FDR10": (LinkSpeed.QDR, _NO_EXT, True),
    "FDR": (LinkSpeed.QDR, LinkSpeedExt.FDR, False),
    "EDR": (LinkSpeed.QDR, LinkSpeedExt.EDR, False),
    "HDR": (LinkSpeed.QDR, LinkSpeedExt.HDR, False),
    "NDR": (LinkSpeed.QDR, LinkSpeedExt.NDR, False),
}
_Rate = tuple[LinkWidth, LinkSpeed, LinkSpeedExt, bool]
_RATES: dict[str, _Rate] = {
    w + s: (width, *speed) for w, width in _WIDTHS.items() for s, speed in _SPEEDS.items()
}


@dataclass(slots=True)
class _RawPort:
    """One port line: this port and what it says of the port at the far end."""

    num: int
    line_no: int
    peer_guid: int
    peer_port: int
    peer_type: NodeType
    own_guid: int | None = None
    peer_port_guid: int | None = None
    own_lid: int | None = None
    own_lmc: int | None = None
    peer_lid: int | None = None
    rate: _Rate | None = None
    vl_cap: int | None = None


@dataclass(slots=True)
class _RawNode:
    guid: int
    node_type: NodeType
    num_ports: int
    description: str
    line_no: int
    vendor_id: int = 0
    device_id: int = 0
    system_image_guid: int = 0
    port_guid: int | None = None  # switchguid=0x..(port GUID)
    lid: int | None = None
    lmc: int | None = None
    enhanced: bool = False
    ports: dict[int, _RawPort] = field(default_factory=dict)


@dataclass(slots=True)
class _Topology:
    source: str
    lines: list[str]
    nodes: dict[int, _RawNode]
    initiated: tuple[int, int, int] | None  # (node GUID, port GUID, line number)


# -- parsing ----------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.lines = text.splitlines()
        self.nodes: dict[int, _RawNode] = {}
        self.initiated: tuple[int, int, int] | None = None
        self.ids: dict[str, tuple[int, int | None, int]] = {}  # name -> (value, paren, line)
        self.node: _RawNode | None = None

    def error(self, message: str, line_no: int) -> TopologyError:
        return TopologyError(message, source=self.source, line_no=line_no, line=self.lines[line_no - 1])

    def parse(self) -> _Topology:
        port_line = self._port_line
        for line_no, raw in enumerate(self.lines, 1):
            line = raw.strip()
            if not line:
                self._end_block(line_no)
                continue
            first = line[0]
            if first == "[":
                node = self.node
                if node is None:
                    raise self.error("port line outside a node block (no Switch/Ca/Rt line above it)",
                                     line_no)
                port_line(node, line, line_no)
            elif first == "#":
                if self.initiated is None:
                    match = _INITIATED.match(line)
                    if match:
                        self.initiated = (int(match[1], 16), int(match[2], 16), line_no)
            elif "=" in line.partition("#")[0]:
                self._id_line(line, line_no)
            elif line.startswith(_GROUPING):
                self._end_block(line_no)
            else:
                self._node_line(line, line_no)
        self._end_block(len(self.lines) + 1)
        if not self.nodes:
            raise TopologyError("no Switch, Ca or Rt block: not an ibnetdiscover topology",
                                source=self.source)
        return _Topology(self.source, self.lines, self.nodes, self.initiated)

    def _end_block(self, line_no: int) -> None:
        self.node = None
        if self.ids:
            first = min(entry[2] for entry in self.ids.values())
            raise self.error("node ids not followed by a Switch, Ca or Rt line", first)

    def _id_line(self, line: str, line_no: int) -> None:
        if self.node is not None:  # the ids of the next block begin it
            self.node = None
        body = line.partition("#")[0]
        match = _ID_LINE.fullmatch(body)
        if match is None:
            raise self.error("malformed id line (expected vendid=, devid=, sysimgguid=, "
                             "switchguid=, caguid= or rtguid= and a hex number)", line_no)
        name = match[1]
        if name in self.ids:
            raise self.error(f"second {name}= line for one node", line_no)
        if match[3] is not None and name != "switchguid":
            raise self.error(f"{name}= takes no port GUID in parentheses", line_no)
        self.ids[name] = (int(match[2], 16), int(match[3], 16) if match[3] else None, line_no)

    def _node_line(self, line: str, line_no: int) -> None:
        head, _, comment = line.partition("#")
        match = _NODE_LINE.fullmatch(head)
        if match is None:
            raise self.error("not a topology line (expected a node line such as "
                             "'Switch 36 \"S-<guid>\" # ...', a port line '[n] ...', "
                             "an id line 'vendid=0x..', a comment or a blank line)", line_no)
        node_type = _TYPES[match[1]]
        letter, guid = match[3], int(match[4], 16)
        if _LETTERS.get(letter) is not node_type:
            raise self.error(f"a {match[1]} named \"{letter}-...\"", line_no)
        num_ports = int(match[2])
        if not 1 <= num_ports <= MAX_PHYS_PORTS:
            raise self.error(f"port count {num_ports} outside 1..{MAX_PHYS_PORTS}", line_no)
        if guid in self.nodes:
            raise self.error(f"node {guid:016x} already has a block at line "
                             f"{self.nodes[guid].line_no}", line_no)
        description, rest = _quoted(comment)
        node = _RawNode(guid, node_type, num_ports, description or "", line_no)
        if node_type is NodeType.SWITCH:
            tail = _SWITCH_TAIL.fullmatch(rest) if rest else None
            if rest and tail is None:
                raise self.error("switch comment should end 'enhanced|base port 0 lid N lmc N'", line_no)
            if tail is not None:
                node.enhanced = tail[1] == "enhanced"
                if tail[2] is not None:
                    node.lid, node.lmc = _lid(self, tail[2], line_no), _lmc(self, tail[3], line_no)
        elif rest and _TAIL.fullmatch(rest) is None:
            raise self.error(f"unexpected text after the description: {rest!r}", line_no)
        self._take_ids(node, line_no)
        self.nodes[guid] = node
        self.node = node

    def _take_ids(self, node: _RawNode, line_no: int) -> None:
        ids, self.ids = self.ids, {}
        for name, (value, paren, id_line) in ids.items():
            if name == "vendid":
                if value > 0xFFFFFF:
                    raise self.error("vendor id wider than 24 bits", id_line)
                node.vendor_id = value
            elif name == "devid":
                if value > 0xFFFF:
                    raise self.error("device id wider than 16 bits", id_line)
                node.device_id = value
            elif name == "sysimgguid":
                node.system_image_guid = value
            else:
                if _ID_GUIDS[name] is not node.node_type:
                    raise self.error(f"{name}= for a {_KIND[node.node_type]} (line {line_no})",
                                     id_line)
                if value != node.guid:
                    raise self.error(f"{name}=0x{value:x} but the node line (line {line_no}) "
                                     f"names {node.guid:016x}", id_line)
                node.port_guid = paren

    def _port_line(self, node: _RawNode, line: str, line_no: int) -> None:
        head, _, comment = line.partition("#")
        match = _PORT_LINE.fullmatch(head)
        if match is None:
            raise self.error('malformed port line (expected \'[port](port GUID) "S|H|R-<guid>"[port] '
                             "# comment')", line_no)
        num = int(match[1])
        if not 1 <= num <= node.num_ports:
            raise self.error(f"port {num} outside 1..{node.num_ports} of this node", line_no)
        if num in node.ports:
            raise self.error(f"port {num} already listed at line {node.ports[num].line_no}", line_no)
        peer_type = _LETTERS.get(match[3])
        if peer_type is None:
            raise self.error(f"peer of unknown type \"{match[3]}-...\"", line_no)
        port = _RawPort(num, line_no, int(match[4], 16), int(match[5]), peer_type)
        if port.peer_port < 1 or port.peer_port > MAX_PHYS_PORTS:
            raise self.error(f"peer port {port.peer_port} outside 1..{MAX_PHYS_PORTS}", line_no)
        if match[2] is not None:
            port.own_guid = int(match[2], 16)
        if match[6] is not None:
            port.peer_port_guid = int(match[6], 16)
        if comment:
            self._port_comment(port, comment, line_no)
        node.ports[num] = port

    def _port_comment(self, port: _RawPort, comment: str, line_no: int) -> None:
        """`lid N lmc N "desc" lid N 4xEDR s=.. w=.. v=..`, every part optional."""
        text = comment.strip()
        match = _OWN_LID.match(text)
        if match:
            port.own_lid, port.own_lmc = _lid(self, match[1], line_no), _lmc(self, match[2], line_no)
            text = text[match.end():]
        if text.startswith('"'):
            _, text = _quoted(text)
        match = _LID.match(text)
        if match:
            port.peer_lid = _lid(self, match[1], line_no)
            text = text[match.end():]
        token = text.split(None, 1)[0] if text else ""
        if token and (token[0] == "?" or _RATE_START.match(token)):
            text = text[len(token):].lstrip()
            # The tool prints ?? / ??? for a width or speed it has no name
            # for: the rate is then unknown, not an error.
            if "?" not in token:
                rate = _RATES.get(token)
                if rate is None:
                    width = _RATE_START.match(token)[0]  # type: ignore[index]  # matched above
                    if width not in _WIDTHS:
                        raise self.error(f"unknown link width {width!r} (1x, 2x, 4x, 8x or 12x)", line_no)
                    raise self.error(f"unknown link speed {token[len(width):]!r} "
                                     f"({', '.join(_SPEEDS)})", line_no)
                port.rate = rate
        match = _FULL.match(text)
        if match:
            raw_speed, raw_width, vl_cap = int(match[1]), int(match[2]), int(match[3])
            if port.rate is not None:
                width, speed, ext, fdr10 = port.rate
                if raw_width and raw_width != int(width):
                    raise self.error(f"w={raw_width} disagrees with the width {width.label}", line_no)
                if raw_speed in (1, 2, 4):
                    speed = LinkSpeed(raw_speed)
                port.rate = (width, speed, ext, fdr10)
            if 1 <= vl_cap <= 5:
                port.vl_cap = vl_cap
            text = text[match.end():]
        if _TAIL.fullmatch(text) is None:
            raise self.error(f"unexpected text in the port comment: {text!r}", line_no)


def _quoted(text: str) -> tuple[str | None, str]:
    """The description between the first and last double quote, and what
    follows it; (None, text) when the text does not start with a quote."""
    text = text.strip()
    if not text.startswith('"'):
        return None, text
    end = text.rfind('"')
    if end == 0:  # an unterminated description: keep it whole
        return text[1:], ""
    return text[1:end], text[end + 1:].strip()


def _lid(parser: _Parser, text: str, line_no: int) -> int:
    value = int(text)
    if value > MAX_UNICAST_LID:
        raise parser.error(f"LID {value} above the unicast range (max {MAX_UNICAST_LID})", line_no)
    return value


def _lmc(parser: _Parser, text: str, line_no: int) -> int:
    value = int(text)
    if value > 7:
        raise parser.error(f"LMC {value} outside 0..7", line_no)
    return value


# -- building the model ---------------------------------------------------------------------------


def read_topology(text: str, *, source: str = "<topology>", sm_guid: int | None = None,
                  sm_priority: int = 0, local_guid: int | None = None) -> Fabric:
    """The Fabric an ibnetdiscover text describes.  Ports it lists are
    Active and LinkUp (ibnetdiscover follows only links that are up, and
    the LIDs show an SM configured them); ports it does not list are Down.
    Kept although not in the text: NodeInfo's BaseVersion and ClassVersion
    (1, the only ones IBA defines for the SMPs discovery used) and the GID
    prefix fe80::/64, which indexes every IB-SM-MIB subnet row.

    sm_guid: node GUID or port GUID of the master subnet manager (None: no SM
      is known; the fabric's `sms` is empty). sm_priority: its SMInfo
      priority (default 0, OpenSM's).
    local_guid: the node of the default SNMP context (default: the node
      discovery was initiated from).
    Raises TopologyError naming the line for anything it cannot read.
    """
    # Every object made here lives as long as the snapshot: the cyclic
    # collector's passes over them would only add to the load time.
    paused = gc.isenabled()
    gc.disable()
    try:
        topology = _Parser(text, source).parse()
        return _Builder(topology).build(sm_guid=sm_guid, sm_priority=sm_priority, local_guid=local_guid)
    finally:
        if paused:
            gc.enable()


def load_topology(path: str | Path, *, sm_guid: int | None = None, sm_priority: int = 0,
                  local_guid: int | None = None) -> Fabric:
    """read_topology on a file; an unreadable file is a TopologyError too."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise TopologyError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    return read_topology(text, source=str(path), sm_guid=sm_guid, sm_priority=sm_priority,
                         local_guid=local_guid)


def parse_guid(text: str) -> int:
    """A GUID as people write it: 0x0002c90300a1b2c3, 0002c90300a1b2c3 or
    0002:c903:00a1:b2c3 (sysfs, ibstat).  ValueError if it is none of these."""
    digits = text.strip().lower()
    if digits.startswith("0x"):
        digits = digits[2:]
    if ":" in digits:
        groups = digits.split(":")
        if len(groups) != 4 or not all(1 <= len(g) <= 4 for g in groups):
            raise ValueError(f"not a GUID: {text!r}")
        digits = "".join(g.rjust(4, "0") for g in groups)
    if not 1 <= len(digits) <= 16 or any(c not in "0123456789abcdef" for c in digits):
        raise ValueError(f"not a GUID: {text!r}")
    return int(digits, 16)


@dataclass(slots=True)
class _Fact:
    value: int
    line_no: int


class _Builder:
    def __init__(self, topology: _Topology) -> None:
        self.t = topology
        self.nodes = topology.nodes

    def error(self, message: str, line_no: int | None) -> TopologyError:
        line = self.t.lines[line_no - 1] if line_no is not None and line_no <= len(self.t.lines) else None
        return TopologyError(message, source=self.t.source, line_no=line_no, line=line)

    # -- cross-checking the two ends of every link ---------------------------------------

    def _links(self) -> dict[PortRef, PortRef]:
        """Port -> peer for every port listed at either end, both ends checked."""
        nodes = self.nodes
        peers: dict[PortRef, PortRef] = {}
        lines: dict[PortRef, int] = {}
        for node in nodes.values():
            guid = node.guid
            for num, port in node.ports.items():
                peer = nodes.get(port.peer_guid)
                if peer is None:
                    raise self.error(f"the peer {_LETTER_OF[port.peer_type]}-{port.peer_guid:016x} "
                                     "has no block of its own in this file", port.line_no)
                if peer.node_type is not port.peer_type:
                    raise self.error(f"the peer {port.peer_guid:016x} is a {_KIND[peer.node_type]} "
                                     f"(line {peer.line_no}), not a {_KIND[port.peer_type]}", port.line_no)
                if port.peer_port > peer.num_ports:
                    raise self.error(f"the peer has ports 1..{peer.num_ports} (line {peer.line_no}), "
                                     f"no port {port.peer_port}", port.line_no)
                here, there = PortRef(guid, num), PortRef(port.peer_guid, port.peer_port)
                for a, b in ((here, there), (there, here)):
                    known = peers.get(a)
                    if known is None:
                        peers[a], lines[a] = b, port.line_no
                    elif known != b:
                        raise self.error(
                            f"port {a.port} of {a.guid:016x} is linked to {b.guid:016x} port {b.port} "
                            f"here but to {known.guid:016x} port {known.port} at line {lines[a]}",
                            port.line_no)
        return peers

    def _facts(self) -> tuple[dict[PortRef, _Fact], dict[PortRef, _Fact], dict[PortRef, _Fact]]:
        """Port GUIDs, LIDs and LMCs from both the port's own line and its
        peer's; conflicting values are an error naming the second line."""
        guids: dict[PortRef, _Fact] = {}
        lids: dict[PortRef, _Fact] = {}  # switches under port 0
        lmcs: dict[PortRef, _Fact] = {}
        nodes = self.nodes

        def note(table: dict[PortRef, _Fact], ref: PortRef, value: int | None, line_no: int, what: str) -> None:
            known = table.get(ref)
            if known is None:
                table[ref] = _Fact(value, line_no)  # type: ignore[arg-type]  # LMC set with LID
            elif known.value != value:
                raise self.error(f"{what} of {ref.guid:016x} port {ref.port} is {value} here but "
                                 f"{known.value} at line {known.line_no}", line_no)

        for node in nodes.values():
            switch = node.node_type is NodeType.SWITCH
            if switch:
                ref0 = PortRef(node.guid, 0)
                if node.lid is not None:
                    note(lids, ref0, node.lid, node.line_no, "the LID")
                    note(lmcs, ref0, node.lmc, node.line_no, "the LMC")
                if node.port_guid is not None:
                    guids[ref0] = _Fact(node.port_guid, node.line_no)
            for num, port in node.ports.items():
                line_no = port.line_no
                if not switch:
                    ref = PortRef(node.guid, num)
                    if port.own_guid is not None:
                        note(guids, ref, port.own_guid, line_no, "the port GUID")
                    if port.own_lid is not None:
                        note(lids, ref, port.own_lid, line_no, "the LID")
                        note(lmcs, ref, port.own_lmc, line_no, "the LMC")
                peer_switch = port.peer_type is NodeType.SWITCH
                far = PortRef(port.peer_guid, 0 if peer_switch else port.peer_port)
                if port.peer_lid is not None:
                    note(lids, far, port.peer_lid, line_no, "the LID")
                if port.peer_port_guid is not None and not peer_switch:
                    note(guids, far, port.peer_port_guid, line_no, "the port GUID")
        return guids, lids, lmcs

    # -- the snapshot -----------------------------------------------------------------------

    def build(self, *, sm_guid: int | None, sm_priority: int, local_guid: int | None) -> Fabric:
        nodes = self.nodes
        peers = self._links()
        guids, lids, lmcs = self._facts()
        rates = self._rates(peers)

        local, local_port = self._local(local_guid, guids, peers)
        order, reached_on = self._discover(local, local_port, peers)

        lid_of = {ref: fact.value for ref, fact in lids.items()}
        lmc_of = {ref: fact.value for ref, fact in lmcs.items()}
        lid_map = self._lid_map(lid_of, lmc_of, lids)
        sm = self._sm(sm_guid, sm_priority, guids, lid_of)
        sm_port = PortRef(sm.node_guid, sm.port_num) if sm is not None else None
        sm_lid = lid_of.get(sm_port, 0) if sm_port is not None else 0

        maker = _PortInfoMaker(sm_lid if sm is not None else None)
        fdr10: set[PortRef] = set()
        built: dict[int, Node] = {}
        for guid in order:
            built[guid] = self._node(nodes[guid], reached_on[guid], peers, rates, guids, lid_of, lmc_of,
                                     maker, fdr10)
        links = tuple(sorted({Link.between(a, b) for a, b in peers.items()}))
        return Fabric(
            subnet_prefix=DEFAULT_SUBNET_PREFIX,
            nodes=MappingProxyType(built),
            links=links,
            lid_map=MappingProxyType(lid_map),
            sms=(sm,) if sm is not None else (),
            sm_config=None,  # an SM's configuration is not in a dump
            partitions=(),  # nor are P_Keys
            multicast_groups=(),
            services=(),
            connections=MappingProxyType({}),
            local_node_guid=local,
            seed=None,
            spec=f"ibnetdiscover:{self.t.source}",
            computes_routes=False,  # the SM routes; its tables come from its dump
            fdr10_ports=frozenset(fdr10),
        )

    def _rates(self, peers: dict[PortRef, PortRef]) -> dict[PortRef, tuple[_Rate | None, int | None]]:
        """(rate, VLCap) of each linked port: its own line's, else its peer's rate."""
        own: dict[PortRef, tuple[_Rate | None, int | None]] = {}
        for node in self.nodes.values():
            for num, port in node.ports.items():
                own[PortRef(node.guid, num)] = (port.rate, port.vl_cap)
        result = {}
        for ref, peer in peers.items():
            rate, vl_cap = own.get(ref, (None, None))
            if rate is None:
                rate = own.get(peer, (None, None))[0]
            result[ref] = (rate, vl_cap)
        return result

    def _local(self, local_guid: int | None, guids: dict[PortRef, _Fact],
               peers: dict[PortRef, PortRef]) -> tuple[int, int | None]:
        """The local node and the port discovery started from (None: pick one)."""
        nodes = self.nodes
        initiated = self.t.initiated
        if local_guid is not None:
            if local_guid not in nodes:
                raise TopologyError(f"local node {local_guid:016x} is not in the file", source=self.t.source)
            if initiated is not None and initiated[0] == local_guid:
                return local_guid, self._port_by_guid(nodes[local_guid], initiated[1], guids)
            return local_guid, None
        if initiated is not None:
            guid, port_guid, line_no = initiated
            if guid not in nodes:
                raise self.error(f"discovery was initiated from node {guid:016x}, which has no block",
                                 line_no)
            return guid, self._port_by_guid(nodes[guid], port_guid, guids)
        return next(iter(nodes)), None

    @staticmethod
    def _port_by_guid(node: _RawNode, port_guid: int, guids: dict[PortRef, _Fact]) -> int | None:
        """The number of the port the header names.  When no port line gives
        that GUID (a lone host: its link leads out of the dump), it is the
        first port whose GUID is unknown, and it gets the header's GUID."""
        if node.node_type is NodeType.SWITCH:
            return 0
        unknown = None
        for num in range(1, node.num_ports + 1):
            fact = guids.get(PortRef(node.guid, num))
            if fact is None:
                unknown = unknown or num
            elif fact.value == port_guid:
                return num
        if unknown is not None:
            guids[PortRef(node.guid, unknown)] = _Fact(port_guid, 0)
        return unknown

    def _discover(self, local: int, local_port: int | None,
                  peers: dict[PortRef, PortRef]) -> tuple[list[int], dict[int, int]]:
        """Breadth first from the local node, ports in order: node order and
        NodeInfo:LocalPortNum (the port each node was first reached on)."""
        nodes = self.nodes
        adjacency: dict[int, list[tuple[int, PortRef]]] = {}
        for ref, peer in peers.items():
            adjacency.setdefault(ref.guid, []).append((ref.port, peer))
        for edges in adjacency.values():
            edges.sort()

        def first_port(guid: int) -> int:
            node = nodes[guid]
            if node.node_type is NodeType.SWITCH:
                return 0
            edges = adjacency.get(guid)
            return edges[0][0] if edges else 1

        reached_on = {local: local_port if local_port is not None else first_port(local)}
        order = [local]
        queue = deque([local])
        while queue:
            here = queue.popleft()
            for _, peer in adjacency.get(here, ()):
                if peer.guid not in reached_on:
                    reached_on[peer.guid] = peer.port
                    order.append(peer.guid)
                    queue.append(peer.guid)
        if len(order) < len(nodes):
            # libibnetdisc prints each type in reverse discovery order.
            for kind in (NodeType.SWITCH, NodeType.CA, NodeType.ROUTER):
                rest = [g for g, n in nodes.items() if n.node_type is kind and g not in reached_on]
                for guid in reversed(rest):
                    reached_on[guid] = first_port(guid)
                    order.append(guid)
        return order, reached_on

    def _lid_map(self, lid_of: dict[PortRef, int], lmc_of: dict[PortRef, int],
                 facts: dict[PortRef, _Fact]) -> dict[int, PortRef]:
        """Base LID -> port; two ports whose LID blocks overlap are an error."""
        owner: dict[int, PortRef] = {}
        lid_map: dict[int, PortRef] = {}
        for ref in sorted(lid_of, key=lid_of.__getitem__):
            base = lid_of[ref]
            if base == 0:
                continue
            size = 1 << lmc_of.get(ref, 0)
            if base & (size - 1):
                raise self.error(f"LID {base} is not aligned to its LMC block of {size}",
                                 facts[ref].line_no)
            for lid in range(base, base + size):
                other = owner.get(lid)
                if other is not None:
                    raise self.error(f"LID {lid} of {ref.guid:016x} port {ref.port} is also the LID of "
                                     f"{other.guid:016x} port {other.port} (line {facts[other].line_no})",
                                     facts[ref].line_no)
                owner[lid] = ref
            lid_map[base] = ref
        return lid_map

    def _sm(self, sm_guid: int | None, priority: int, guids: dict[PortRef, _Fact],
            lid_of: dict[PortRef, int]) -> SmInfo | None:
        if sm_guid is None:
            return None
        if not 0 <= priority <= 15:
            raise TopologyError(f"SM priority {priority} outside 0..15", source=self.t.source)
        nodes = self.nodes
        node = nodes.get(sm_guid)
        num: int | None = None
        if node is not None:  # a node GUID: its management port, else its first linked port
            if node.node_type is NodeType.SWITCH:
                num = 0
            else:
                num = min(node.ports, default=1)
        else:
            for ref, fact in guids.items():
                if fact.value == sm_guid:
                    node, num = nodes[ref.guid], ref.port
                    break
        if node is None or num is None:
            raise TopologyError(f"SM {sm_guid:016x} is neither a node GUID nor a port GUID of this "
                                "file", source=self.t.source)
        port_guid = guids.get(PortRef(node.guid, num))
        return SmInfo(
            guid=port_guid.value if port_guid is not None else node.guid,
            sm_key=UNKNOWN,
            act_count=UNKNOWN,
            priority=priority,
            state=SmState.MASTER,
            node_guid=node.guid,
            port_num=num,
            act_rate=0.0,
        )

    def _node(self, raw: _RawNode, local_port: int, peers: dict[PortRef, PortRef],
              rates: dict[PortRef, tuple[_Rate | None, int | None]], guids: dict[PortRef, _Fact],
              lid_of: dict[PortRef, int], lmc_of: dict[PortRef, int], maker: _PortInfoMaker,
              fdr10: set[PortRef]) -> Node:
        guid = raw.guid
        switch = raw.node_type is NodeType.SWITCH
        ports: list[Port] = []
        if switch:
            ref0 = PortRef(guid, 0)
            port_guid = guids[ref0].value if ref0 in guids else guid
            switch_lid = lid_of.get(ref0, 0)
            # Port 0 has no link: the file shows no rate or VLCap for it.
            info0 = maker.make(0, switch_lid, lmc_of.get(ref0, 0), None, None, True)
            ports.append(Port(guid, 0, port_guid, info0, (), (), (), (), (port_guid,), None,
                              PhysicalInterface.BACKPLANE, **_PORT_EXTRA))
        for num in range(1, raw.num_ports + 1):
            ref = PortRef(guid, num)
            peer = peers.get(ref)
            rate, vl_cap = rates.get(ref, (None, None))
            if rate is not None and rate[3]:
                fdr10.add(ref)
            up = peer is not None
            if switch:
                # PortInfo's LID of a switch data port is not the switch's
                # (IBA gives it only for port 0; ibsim reads 0): not served.
                lid, lmc, pguid = 0, 0, port_guid
                port_guids: tuple[int, ...] = ()
            else:
                lid, lmc = lid_of.get(ref, 0), lmc_of.get(ref, 0)
                fact = guids.get(ref)
                pguid = fact.value if fact is not None else 0
                port_guids = (pguid,) if pguid else ()  # GUIDInfo entry 0 is the port GUID
            info = maker.make(num, lid, lmc, rate, vl_cap, up)
            ports.append(Port(guid, num, pguid, info, (), (), (), (), port_guids, peer,
                              PhysicalInterface.CABLE, **_PORT_EXTRA))
        return Node(
            guid=guid,
            node_type=raw.node_type,
            description=raw.description,
            system_image_guid=raw.system_image_guid,
            # A node the tool discovered answered SubnGet(NodeInfo) in the only
            # SMP BaseVersion and ClassVersion IBA defines.
            base_version=1,
            class_version=1,
            vendor_id=raw.vendor_id,
            device_id=raw.device_id,
            revision=UNKNOWN,
            num_ports=raw.num_ports,
            partition_cap=UNKNOWN,
            local_port_num=local_port,
            ports=tuple(ports),
            switch=_switch_info(raw.enhanced) if switch else None,
            ca=None,
        )


class _PortInfoMaker:
    """PortInfo from list templates: the fields the file gives (LID, LMC,
    port number, state, active width and speeds, VLCap with `-f`, the
    MasterSMLID when the SM is named) are set per port, every other field is
    None.  One template per (rate, VLCap, state) keeps 25,000 ports cheap."""

    _INDEX = {name: i for i, name in enumerate(PortInfo._fields)}

    def __init__(self, sm_lid: int | None) -> None:
        values: dict[str, Any] = dict(gid_prefix=DEFAULT_SUBNET_PREFIX)
        self.base = [values.get(name) for name in PortInfo._fields]
        self.sm_lid = sm_lid
        self.templates: dict[tuple[Any, ...], list[Any]] = {}
        i = self._INDEX
        self.i_lid, self.i_sm_lid, self.i_num, self.i_lmc = (
            i["lid"], i["master_sm_lid"], i["local_port_num"], i["lmc"])

    def _template(self, key: tuple[Any, ...]) -> list[Any]:
        rate, vl_cap, up = key
        v, i = self.base.copy(), self._INDEX
        if rate is not None:
            v[i["link_width_active"]] = rate[0]
            v[i["link_speed_active"]] = rate[1]
            v[i["link_speed_ext_active"]] = rate[2]
        v[i["port_state"]] = PortState.ACTIVE if up else PortState.DOWN
        # Only links that are up are followed; a port not listed may be in
        # any physical state but LinkUp.
        v[i["phys_state"]] = PortPhysState.LINK_UP if up else None
        v[i["vl_cap"]] = VLCap(vl_cap) if vl_cap is not None else UNKNOWN
        self.templates[key] = v
        return v

    def make(self, num: int, lid: int, lmc: int, rate: _Rate | None, vl_cap: int | None,
             up: bool) -> PortInfo:
        key = (rate, vl_cap, up)
        template = self.templates.get(key)
        if template is None:
            template = self._template(key)
        v = template.copy()
        v[self.i_lid] = lid
        v[self.i_sm_lid] = (self.sm_lid if lid else 0) if self.sm_lid is not None else UNKNOWN
        v[self.i_num] = num
        v[self.i_lmc] = lmc
        return PortInfo._make(v)


def _switch_info(enhanced: bool) -> SwitchInfo:
    """SwitchInfo: the file shows EnhancedPort0 and nothing else of it."""
    return SwitchInfo(
        linear_fdb_cap=UNKNOWN,
        random_fdb_cap=UNKNOWN,
        multicast_fdb_cap=UNKNOWN,
        linear_fdb_top=UNKNOWN,
        default_port=UNKNOWN,
        default_multicast_primary_port=UNKNOWN,
        default_multicast_not_primary_port=UNKNOWN,
        life_time_value=UNKNOWN,
        port_state_change=UNKNOWN,
        optimized_sl_to_vl_mapping_programming=UNKNOWN,
        lids_per_port=UNKNOWN,
        partition_enforcement_cap=UNKNOWN,
        inbound_enforcement_cap=UNKNOWN,
        outbound_enforcement_cap=UNKNOWN,
        filter_raw_inbound_cap=UNKNOWN,
        filter_raw_outbound_cap=UNKNOWN,
        enhanced_port0=enhanced,
        multicast_fdb_top=UNKNOWN,
    )

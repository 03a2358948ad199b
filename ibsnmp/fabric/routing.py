"""Routing as pure functions of a fabric snapshot; only links whose two ports are Active carry
routes, as with OpenSM.

- `assign_lids`: as OpenSM's LID manager (LMC-aligned CA blocks, single LIDs in the holes).
- `linear_forwarding_table`: the LFT the snapshot read (`Fabric.forwarding`), else min-hop
  routing per switch where the fabric computes its own routes (made on first request, kept
  as `bytes`: index DLID, value egress port, 255 no route), else empty.
- `multicast_forwarding_table`: read, else a spanning tree per group there, else empty.
- `trace` / `path`: the LFTs hop by hop, as an SA PathRecord or TraceRecord needs.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from .iba import MAX_UNICAST_LID, UNROUTED_PORT, Mtu, NodeType, Rate
from .lineage import Aspect, Derived
from .model import Fabric, Node, Port, PortRef

__all__ = [
    "NoRoute",
    "assign_lids",
    "linear_forwarding_table",
    "lft_port",
    "random_forwarding_table",
    "RandomFdbEntry",
    "multicast_forwarding_table",
    "Hop",
    "Path",
    "trace",
    "path",
    "switch_hop_distance",
]

_K = TypeVar("_K", bound=Hashable)
_NO_SWITCH = 0xFFFF
_FAR = 255  # distance of an unreachable switch


class NoRoute(LookupError):
    """The forwarding tables do not lead from the source to the destination."""


def assign_lids(endports: Iterable[tuple[_K, int]], first_lid: int = 1,
                last_lid: int = MAX_UNICAST_LID) -> dict[_K, int]:
    """Base LID for each (key, lmc) in order: a port with LMC n gets a block
    of 2**n LIDs aligned to 2**n; single LIDs reuse the holes alignment left."""
    result: dict[_K, int] = {}
    holes: deque[int] = deque()
    next_lid = first_lid
    for key, lmc in endports:
        size = 1 << lmc
        if size == 1 and holes:
            result[key] = holes.popleft()
            continue
        base = (next_lid + size - 1) & ~(size - 1)
        holes.extend(range(next_lid, base))
        if base + size - 1 > last_lid:
            raise ValueError(f"out of unicast LIDs: {key!r} needs {size} above {base - 1} (limit {last_lid})")
        result[key] = base
        next_lid = base + size
    return result


@dataclass(frozen=True, slots=True)
class _SwitchGraph:
    guids: tuple[int, ...]
    index: dict[int, int]
    # per switch: (local port, neighbour switch index, neighbour's port), by port
    adjacency: tuple[tuple[tuple[int, int, int], ...], ...]
    # distance[d][s]: hops from switch s to switch d (255 = unreachable)
    distance: tuple[bytes, ...]
    top: int
    lid_switch: array[int]  # DLID -> switch index the LID hangs off (0xFFFF: none)
    lid_port: bytes  # DLID -> port of that switch leading to the LID (0: itself)


def _routable(port: Port | None) -> bool:
    return port is not None and port.is_active and port.remote is not None


def _graph(fabric: Fabric) -> _SwitchGraph:
    return fabric.derive(_GRAPH)


def _build_graph(fabric: Fabric) -> _SwitchGraph:
    guids = tuple(g for g, n in fabric.nodes.items() if n.is_switch)
    index = {g: i for i, g in enumerate(guids)}
    adjacency = []
    for guid in guids:
        edges = []
        for port in fabric.nodes[guid].ports:
            if _routable(port):
                remote = port.remote
                assert remote is not None
                far = fabric.port(remote.guid, remote.port)
                if remote.guid in index and far is not None and far.is_active:
                    edges.append((port.num, index[remote.guid], remote.port))
        adjacency.append(tuple(edges))
    distance = tuple(_bfs(adjacency, d) for d in range(len(guids)))

    top = fabric.max_lid
    lid_switch = array("H", [_NO_SWITCH]) * (top + 1)
    lid_port = bytearray(top + 1)
    for ref in fabric.lid_map.values():
        port = fabric.port_at(ref)
        if ref.guid in index:
            target = (index[ref.guid], 0)
        elif _routable(port) and port.remote is not None and port.remote.guid in index:
            target = (index[port.remote.guid], port.remote.port)
        else:
            continue
        for lid in range(port.lid, port.lid + (1 << port.lmc)):
            lid_switch[lid], lid_port[lid] = target
    return _SwitchGraph(guids, index, tuple(adjacency), distance, top, lid_switch, bytes(lid_port))


def _bfs(adjacency: list[tuple[tuple[int, int, int], ...]], start: int) -> bytes:
    dist = bytearray([_FAR]) * len(adjacency)
    dist[start] = 0
    queue = deque([start])
    while queue:
        here = queue.popleft()
        step = dist[here] + 1
        for _, nbr, _ in adjacency[here]:
            if dist[nbr] == _FAR:
                dist[nbr] = step
                queue.append(nbr)
    return bytes(dist)


def switch_hop_distance(fabric: Fabric, from_switch: int, to_switch: int) -> int | None:
    """Switch-to-switch hops over active links (None if unreachable)."""
    graph = _graph(fabric)
    hops = graph.distance[graph.index[to_switch]][graph.index[from_switch]]
    return None if hops == _FAR else hops


def linear_forwarding_table(fabric: Fabric, switch_guid: int) -> bytes:
    """The LFT of one switch: entry i is the egress port for DLID i; empty
    where no table was read and the fabric does not compute routes."""
    if fabric.forwarding is not None:
        return fabric.forwarding.linear.get(switch_guid, b"")
    if not fabric.computes_routes:
        return b""
    tables = fabric.derive(_LFTS)
    table = tables.get(switch_guid)
    if table is None:
        table = tables.setdefault(switch_guid, _compute_lft(fabric, switch_guid))
    return table


def lft_port(fabric: Fabric, switch_guid: int, lid: int) -> int:
    table = linear_forwarding_table(fabric, switch_guid)
    return table[lid] if 0 <= lid < len(table) else UNROUTED_PORT


def _compute_lft(fabric: Fabric, switch_guid: int) -> bytes:
    graph = _graph(fabric)
    if switch_guid not in graph.index:
        raise KeyError(f"no switch {switch_guid:#018x} in this fabric")
    here = graph.index[switch_guid]
    edges = graph.adjacency[here]
    distance = graph.distance
    lid_switch, lid_port = graph.lid_switch, graph.lid_port
    lft = bytearray([UNROUTED_PORT]) * (graph.top + 1)
    # Paths already routed through each port: min-hop picks the least used
    # of the equal-cost ports for each DLID in turn, as OpenSM does.
    num_ports = fabric.nodes[switch_guid].num_ports
    assert num_ports is not None  # a switch in a routed fabric has its NodeInfo
    load = [0] * (num_ports + 1)
    choices: dict[int, tuple[int, ...]] = {}
    for lid in range(1, graph.top + 1):
        target = lid_switch[lid]
        if target == _NO_SWITCH:
            continue
        if target == here:
            lft[lid] = lid_port[lid]
            continue
        ports = choices.get(target)
        if ports is None:
            to_target = distance[target]
            want = to_target[here] - 1
            ports = tuple(p for p, nbr, _ in edges if to_target[nbr] == want) if want < _FAR - 1 else ()
            choices[target] = ports
        if not ports:
            continue
        best = ports[0] if len(ports) == 1 else min(ports, key=load.__getitem__)
        load[best] += 1
        lft[lid] = best
    return bytes(lft)


@dataclass(frozen=True, slots=True)
class RandomFdbEntry:
    lid: int
    lmc: int
    port: int
    valid: bool = True


def random_forwarding_table(fabric: Fabric, switch_guid: int) -> tuple[RandomFdbEntry, ...]:
    """The LFT's routes as RandomForwardingTable entries (one per LMC block
    when the whole block leaves by one port), up to the switch's
    RandomFDBCap; empty for switches without a random FDB."""
    node = fabric.nodes[switch_guid]
    cap = node.switch.random_fdb_cap if node.switch else 0
    if not cap:
        return ()
    table = linear_forwarding_table(fabric, switch_guid)
    entries: list[RandomFdbEntry] = []
    for lid in fabric.sorted_lids():
        port = fabric.port_at(fabric.lid_map[lid])
        block = table[lid : lid + (1 << port.lmc)]
        if all(p == block[0] for p in block) and block[0] != UNROUTED_PORT:
            entries.append(RandomFdbEntry(lid, port.lmc, block[0]))
        else:
            entries.extend(RandomFdbEntry(lid + i, 0, p) for i, p in enumerate(block) if p != UNROUTED_PORT)
    return tuple(entries[:cap])


def multicast_forwarding_table(fabric: Fabric, switch_guid: int) -> Mapping[int, int]:
    """MLID -> port mask (bit n set: forward to port n) for one switch."""
    if fabric.forwarding is not None:
        read = fabric.forwarding.multicast
        return read.get(switch_guid, {}) if read is not None else {}
    if not fabric.computes_routes:
        return {}
    return fabric.derive(_MFTS).get(switch_guid, {})


def _compute_mfts(fabric: Fabric) -> dict[int, dict[int, int]]:
    graph = _graph(fabric)
    tables: dict[int, dict[int, int]] = {}
    for group in fabric.multicast_groups:
        for switch, mask in _group_tree(fabric, graph, [(m.guid, m.port) for m in group.members]).items():
            per_switch = tables.setdefault(graph.guids[switch], {})
            per_switch[group.mlid] = per_switch.get(group.mlid, 0) | mask
    return tables


def _group_tree(fabric: Fabric, graph: _SwitchGraph, members: list[tuple[int, int]]) -> dict[int, int]:
    masks: dict[int, int] = {}
    for guid, num in members:
        if guid in graph.index:  # a switch's own port 0 joined
            switch = graph.index[guid]
            masks[switch] = masks.get(switch, 0) | 1
            continue
        port = fabric.port(guid, num)
        if port is not None and _routable(port) and port.remote and port.remote.guid in graph.index:
            switch = graph.index[port.remote.guid]
            masks[switch] = masks.get(switch, 0) | (1 << port.remote.port)
    if not masks:
        return {}
    member_switches = sorted(masks)
    # Root: the switch closest to the farthest member switch (OpenSM's choice).
    root = min(
        range(len(graph.guids)),
        key=lambda s: (
            max(graph.distance[m][s] for m in member_switches),
            sum(graph.distance[m][s] for m in member_switches),
            graph.guids[s],
        ),
    )
    to_root = graph.distance[root]
    in_tree = {root}
    for member in member_switches:
        here = member
        if to_root[here] == _FAR:
            continue
        while here not in in_tree:
            up_port, parent, parent_port = next(
                edge for edge in graph.adjacency[here] if to_root[edge[1]] == to_root[here] - 1
            )
            masks[here] = masks.get(here, 0) | (1 << up_port)
            masks[parent] = masks.get(parent, 0) | (1 << parent_port)
            in_tree.add(here)
            here = parent
    return masks


@dataclass(frozen=True, slots=True)
class Hop:
    """One node on a path: where the packet enters and leaves it (None at
    the source's entry and the destination's exit)."""

    node_guid: int
    node_type: NodeType
    system_image_guid: int | None  # the node's, which a provider may not know
    in_port: int | None
    out_port: int | None
    in_port_guid: int | None
    out_port_guid: int | None


@dataclass(frozen=True, slots=True)
class Path:
    src_lid: int
    dst_lid: int
    src: PortRef
    dst: PortRef
    hops: tuple[Hop, ...]
    # None: a port on the way has no MTU or rate that was read.
    mtu: Mtu | None
    rate: Rate | None

    @property
    def hop_count(self) -> int:
        """Links traversed."""
        return len(self.hops) - 1


def _hop(node: Node, in_port: int | None, out_port: int | None) -> Hop:
    def guid_of(num: int | None) -> int | None:
        port = node.port(num) if num is not None else None
        return port.guid if port is not None else None

    return Hop(node.guid, node.node_type, node.system_image_guid, in_port, out_port,
               guid_of(in_port), guid_of(out_port))


def _rate(port: Port) -> Rate | None:
    info = port.info
    if info.link_width_active is None or info.link_speed_active is None:
        return None
    return info.rate


def _least(a: Mtu | None, b: Mtu | None) -> Mtu | None:
    return None if a is None or b is None else min(a, b)


def _slowest(a: Rate | None, b: Rate | None) -> Rate | None:
    return None if a is None or b is None else min(a, b, key=lambda r: r.gbps)


def trace(fabric: Fabric, src_lid: int, dst_lid: int) -> Path:
    """Follow the forwarding tables from src_lid's port to dst_lid."""
    src = fabric.resolve_lid(src_lid)
    dst = fabric.resolve_lid(dst_lid)
    if src is None or dst is None:
        raise NoRoute(f"LID {src_lid if src is None else dst_lid} is not assigned")
    node = fabric.nodes[src.guid]
    start = fabric.port_at(src)
    mtu, rate = start.info.neighbor_mtu, _rate(start)
    if src == dst or (node.is_switch and src.guid == dst.guid):
        return Path(src_lid, dst_lid, src, dst, (_hop(node, None, None),), mtu, rate)

    hops: list[Hop] = []
    in_port: int | None = None
    out_port = src.port
    if node.is_switch:
        in_port, out_port = 0, lft_port(fabric, node.guid, dst_lid)
    for _ in range(64):  # IBA paths never reach 64 hops; a longer one is a loop
        if out_port == UNROUTED_PORT:
            raise NoRoute(f"switch {node.guid:#018x} has no route to LID {dst_lid}")
        hops.append(_hop(node, in_port, out_port))
        leaving = node.port(out_port)
        if leaving is None or not _routable(leaving) or leaving.remote is None:
            raise NoRoute(f"port {out_port} of {node.guid:#018x} is not active")
        mtu = _least(mtu, leaving.info.neighbor_mtu)
        rate = _slowest(rate, _rate(leaving))
        node = fabric.nodes[leaving.remote.guid]
        in_port = leaving.remote.port
        if node.guid == dst.guid and (node.is_switch or in_port == dst.port):
            hops.append(_hop(node, in_port, None))
            return Path(src_lid, dst_lid, src, dst, tuple(hops), mtu, rate)
        if not node.is_switch:
            raise NoRoute(f"LID {dst_lid} routed into CA {node.guid:#018x}, which does not own it")
        out_port = lft_port(fabric, node.guid, dst_lid)
    raise NoRoute(f"loop while routing LID {src_lid} -> {dst_lid}")


def path(fabric: Fabric, src_lid: int, dst_lid: int) -> Path | None:
    """Like trace, but None when there is no route."""
    try:
        return trace(fabric, src_lid, dst_lid)
    except NoRoute:
        return None


# Routes follow the switches, the active links between them and the LIDs;
# nothing else a node holds changes them.
_ROUTES = Aspect.NODE_SET | Aspect.LINKS | Aspect.LIDS
_GRAPH = Derived("switch graph", _ROUTES, _build_graph)
# Each switch's computed LFT, filled as switches are asked for.
_LFTS: Derived[dict[int, bytes]] = Derived("computed LFTs", _ROUTES, lambda fabric: {})
_MFTS = Derived("computed MFTs", _ROUTES | Aspect.SA, _compute_mfts)

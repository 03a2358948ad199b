"""Routing: LID assignment, min-hop LFTs checked against an independent BFS,
multicast trees and path tracing."""

from __future__ import annotations

from collections import Counter, deque
from typing import TypeVar

import pytest

from ibsnmp.fabric import build_fabric, routing
from ibsnmp.fabric.iba import UNROUTED_PORT, Mtu, NodeType
from ibsnmp.fabric.model import Fabric, PortRef

T = TypeVar("T")


def present(value: T | None) -> T:
    """`value`, which the test expects to be there."""
    assert value is not None
    return value


def test_assign_lids_aligns_blocks_and_fills_holes() -> None:
    lids = routing.assign_lids([("sm", 2), ("sw1", 0), ("ca", 2), ("sw2", 0), ("sw3", 0), ("sw4", 0)])
    assert lids == {"sm": 4, "sw1": 1, "ca": 8, "sw2": 2, "sw3": 3, "sw4": 12}
    with pytest.raises(ValueError, match="out of unicast LIDs"):
        routing.assign_lids([("a", 3), ("b", 3)], last_lid=15)


def _bfs_hops(fabric: Fabric, start: PortRef) -> dict[PortRef, int]:
    """Links from a CA port to every other CA port, over active links,
    through switches only: an oracle that shares no code with routing."""
    graph: dict[object, list[object]] = {}

    def vertex(ref: PortRef) -> object:
        return ref.guid if fabric.nodes[ref.guid].is_switch else ref

    for link in fabric.links:
        a, b = vertex(link.a), vertex(link.b)
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, []).append(a)
    dist: dict[object, int] = {start: 0}
    queue: deque[object] = deque([start])
    while queue:
        here = queue.popleft()
        for nxt in graph.get(here, []):
            if nxt not in dist:
                dist[nxt] = dist[here] + 1
                if not isinstance(nxt, PortRef):  # CAs do not forward
                    queue.append(nxt)
    return {v: d for v, d in dist.items() if isinstance(v, PortRef)}


@pytest.mark.parametrize(
    "spec",
    [
        "fat-tree:spines=3,leaves=4,hosts=3",
        "fat-tree:spines=2,leaves=3,hosts=4,ports=2,lmc=1,faults=5",
        "fat-tree:spines=4,leaves=3,hosts=2,lmc=2,faults=3,speed=hdr",
        "fat-tree3:radix=4",
        "fat-tree3:radix=6,pods=3,faults=3,lmc=1",
    ],
)
def test_every_ca_port_reaches_every_other_by_min_hops(spec: str) -> None:
    fabric = build_fabric(spec, seed=4)
    ports = [p for g in fabric.sorted_ca_guids() for p in fabric.nodes[g].ports if p.is_active]
    assert len(ports) >= 6
    for src in ports:
        expected = _bfs_hops(fabric, src.ref)
        for dst in ports:
            for lid in range(dst.lid, dst.lid + (1 << dst.lmc)):
                path = routing.trace(fabric, src.lid, lid)
                assert path.dst == dst.ref and path.hops[-1].node_guid == dst.node_guid
                if dst.ref == src.ref:  # loopback inside the adapter
                    assert path.hop_count == 0
                    continue
                assert path.hops[0].out_port == src.num and path.hops[-1].in_port == dst.num
                assert path.hop_count == expected[dst.ref]


def test_no_lft_is_computed_until_asked() -> None:
    fabric = build_fabric("fat-tree:spines=2,leaves=3,hosts=2", seed=1)
    assert not fabric.derive(routing._LFTS)
    leaf = next(g for g in fabric.sorted_switch_guids())
    table = routing.linear_forwarding_table(fabric, leaf)
    assert isinstance(table, bytes) and len(table) == fabric.max_lid + 1
    assert routing.linear_forwarding_table(fabric, leaf) is table  # cached
    assert len(fabric.derive(routing._LFTS)) == 1


def test_lft_spreads_remote_lids_over_uplinks() -> None:
    fabric = build_fabric("fat-tree:spines=4,leaves=4,hosts=8,faults=0", seed=9)
    leaf = next(n for n in fabric.nodes.values() if n.description == "leaf01")
    table = routing.linear_forwarding_table(fabric, leaf.guid)
    uplinks = {p.num for p in leaf.data_ports if p.remote and fabric.nodes[p.remote.guid].is_switch}
    local = {p.remote for p in leaf.data_ports if p.remote and not fabric.nodes[p.remote.guid].is_switch}
    remote_lids = [lid for lid in fabric.lid_map if fabric.resolve_lid(lid) not in local
                   and present(fabric.resolve_lid(lid)).guid != leaf.guid]
    use = Counter(table[lid] for lid in remote_lids)
    assert set(use) == uplinks
    assert max(use.values()) - min(use.values()) <= 1
    assert table[leaf.ports[0].lid] == 0
    assert table[0] == UNROUTED_PORT


def test_lmc_lids_of_one_port_take_different_spines() -> None:
    fabric = build_fabric("fat-tree:spines=4,leaves=2,hosts=2,lmc=2,faults=0", seed=2)
    hosts = [fabric.nodes[g] for g in fabric.sorted_ca_guids()]
    src = present(hosts[0].port(1))
    src_leaf = fabric.nodes[present(src.remote).guid].guid
    dst = next(present(h.port(1)) for h in hosts
               if fabric.nodes[present(present(h.port(1)).remote).guid].guid != src_leaf)
    spines = {routing.trace(fabric, src.lid, lid).hops[2].node_guid for lid in range(dst.lid, dst.lid + 4)}
    assert len(spines) == 4


def test_path_reports_min_mtu_and_rate() -> None:
    fabric = build_fabric("fat-tree:spines=2,leaves=2,hosts=4,faults=4", seed=8)
    slow = next(p for n in fabric.nodes.values() if n.is_ca for p in n.ports if p.degraded and p.is_active)
    other = next(p for n in fabric.nodes.values() if n.is_ca for p in n.ports
                 if p.is_active and not p.degraded and p.node_guid != slow.node_guid)
    path = routing.trace(fabric, other.lid, slow.lid)
    assert path.rate == slow.info.rate and path.rate.gbps < other.info.rate.gbps
    assert path.mtu is Mtu.MTU_4096
    assert path.hops[0].node_type is NodeType.CA and path.hops[1].node_type is NodeType.SWITCH
    assert path.hops[1].in_port_guid == path.hops[1].node_guid  # switch ports share its GUID
    assert routing.path(fabric, other.lid, fabric.max_lid + 1) is None
    with pytest.raises(routing.NoRoute):
        routing.trace(fabric, other.lid, fabric.max_lid + 1)


def test_trace_to_and_from_a_switch() -> None:
    fabric = build_fabric("fat-tree:spines=2,leaves=2,hosts=2,faults=0", seed=8)
    host = present(fabric.local_node.port(1))
    spine = next(n for n in fabric.nodes.values() if n.description == "spine02")
    there = routing.trace(fabric, host.lid, spine.ports[0].lid)
    assert there.hop_count == 2 and there.hops[-1].node_guid == spine.guid
    back = routing.trace(fabric, spine.ports[0].lid, host.lid)
    assert back.hop_count == 2 and back.hops[0].in_port == 0 and back.hops[-1].in_port == 1


def test_multicast_tree_reaches_every_member_once() -> None:
    fabric = build_fabric("fat-tree:spines=3,leaves=4,hosts=3,faults=2", seed=6)
    group = fabric.multicast_groups[0]
    members = {(m.guid, m.port) for m in group.members}
    # Flood from one member along the MFTs; every member must get exactly one copy.
    start = present(fabric.port(*next(iter(sorted(members)))))
    received: Counter[tuple[int, int]] = Counter()
    start_remote = present(start.remote)
    queue = deque([(start_remote.guid, start_remote.port)])
    hops = 0
    while queue:
        guid, in_port = queue.popleft()
        hops += 1
        assert hops < 1000, "multicast loop"
        mask = routing.multicast_forwarding_table(fabric, guid).get(group.mlid, 0)
        for port in fabric.nodes[guid].data_ports:
            if mask >> port.num & 1 and port.num != in_port:
                far = present(port.remote)
                if fabric.nodes[far.guid].is_switch:
                    queue.append((far.guid, far.port))
                else:
                    received[(far.guid, far.port)] += 1
    assert set(received) == members - {(start.node_guid, start.num)}
    assert set(received.values()) == {1}


def test_random_fdb_is_empty_without_capacity() -> None:
    fabric = build_fabric("fat-tree:spines=2,leaves=2,hosts=2", seed=1)
    assert routing.random_forwarding_table(fabric, fabric.sorted_switch_guids()[0]) == ()


def test_read_tables_win_over_computed_routes() -> None:
    import dataclasses

    from ibsnmp.fabric.model import ForwardingTables

    fabric = build_fabric("fat-tree:spines=2,leaves=2,hosts=2,faults=0", seed=8)
    leaf = next(n for n in fabric.nodes.values() if n.description == "leaf01")
    other = next(g for g in fabric.sorted_switch_guids() if g != leaf.guid)
    computed = routing.linear_forwarding_table(fabric, leaf.guid)
    # A table read from the switch: every DLID sent out of port 1.
    read = bytes([UNROUTED_PORT]) + bytes([1]) * (len(computed) - 1)
    tables = ForwardingTables(linear={leaf.guid: read}, multicast={leaf.guid: {0xC000: 0b110}})
    measured = dataclasses.replace(fabric, forwarding=tables)
    assert routing.linear_forwarding_table(measured, leaf.guid) == read != computed
    assert routing.linear_forwarding_table(measured, other) == b""  # not read: none
    assert routing.lft_port(measured, other, 1) == UNROUTED_PORT
    assert routing.multicast_forwarding_table(measured, leaf.guid) == {0xC000: 0b110}

    no_tables = dataclasses.replace(fabric, computes_routes=False)
    assert routing.linear_forwarding_table(no_tables, leaf.guid) == b""
    assert routing.multicast_forwarding_table(no_tables, leaf.guid) == {}

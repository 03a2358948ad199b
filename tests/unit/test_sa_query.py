"""SA queries (PathRecord, MultiPathRecord, TraceRecord) against an
independent shortest-path computation over the fabric's links."""

from __future__ import annotations

from typing import TypeVar

import pytest
from tests.support.hop_distances import hop_distances

from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.iba import LinkSpeed, LinkSpeedExt, LinkWidth, Mtu, NodeType, Rate
from ibsnmp.fabric.model import Fabric, Port
from ibsnmp.sa import query
from ibsnmp.sa.query import PathQuery

PRISTINE = "fat-tree:spines=2,leaves=4,hosts=3,faults=0"
LMC = "fat-tree:spines=3,leaves=3,hosts=2,faults=0,lmc=1"
FAULTY = "fat-tree:spines=2,leaves=4,hosts=4,faults=4"



_LANES = {LinkWidth.X1: 1, LinkWidth.X4: 4, LinkWidth.X8: 8, LinkWidth.X12: 12, LinkWidth.X2: 2}
_SPEED = {LinkSpeed.SDR: 2.5, LinkSpeed.DDR: 5.0, LinkSpeed.QDR: 10.0}
_SPEED_EXT = {LinkSpeedExt.FDR: 14.0, LinkSpeedExt.EDR: 25.0, LinkSpeedExt.HDR: 50.0,
              LinkSpeedExt.NDR: 100.0}


T = TypeVar("T")


def present(value: T | None) -> T:
    """`value`, which the test expects to be there."""
    assert value is not None
    return value


def gbps(port: Port) -> float:
    info = port.info
    lane = (_SPEED_EXT[LinkSpeedExt(info.link_speed_ext_active)] if info.link_speed_ext_active
            else _SPEED[LinkSpeed(present(info.link_speed_active))])
    return _LANES[LinkWidth(present(info.link_width_active))] * lane


def host_ports(fabric: Fabric) -> list[Port]:
    return [p for n in fabric.nodes.values() if n.is_ca for p in n.ports
            if p.lid and p.is_active]


def check_route(fabric: Fabric, record: query.PathRecord) -> None:
    """The record's route is a shortest path, each hop cabled to the next,
    and MTU and rate are the smallest along it."""
    route = present(record.route)
    src = present(fabric.resolve_lid(record.slid))
    dst = present(fabric.resolve_lid(record.dlid))
    assert (route.hops[0].node_guid, route.hops[-1].node_guid) == (src.guid, dst.guid)
    assert len(route.hops) - 1 == hop_distances(fabric, src.guid)[dst.guid]
    leaving = []
    for here, there in zip(route.hops, route.hops[1:]):
        out = present(fabric.port(here.node_guid, present(here.out_port)))
        assert out.remote is not None
        assert out.remote.guid == there.node_guid and out.remote.port == there.in_port
        leaving.append(out)
    mtu = min(int(present(p.info.neighbor_mtu)) for p in leaving)
    assert record.mtu == mtu
    assert Rate(record.rate).gbps == Rate.from_gbps(min(gbps(p) for p in leaving)).gbps


@pytest.fixture(scope="module")
def pristine() -> Fabric:
    return build_fabric(PRISTINE, seed=5)


def test_every_host_pair_is_a_shortest_path(pristine: Fabric) -> None:
    hosts = host_ports(pristine)
    assert len(hosts) == 12
    for src in hosts:
        for dst in hosts:
            if src is dst:
                continue
            records = query.path_records(pristine, PathQuery(slid=src.lid, dlid=dst.lid))
            assert len(records) == 1
            check_route(pristine, records[0])
            assert records[0].sgid == src.gid() and records[0].dgid == dst.gid()


def test_unknown_lids_and_gids_give_no_records(pristine: Fabric) -> None:
    src = host_ports(pristine)[0]
    assert query.path_records(pristine, PathQuery(slid=src.lid, dlid=4000)) == []
    assert query.path_records(pristine, PathQuery(sgid=1 << 100, dgid=src.gid())) == []
    # A GID and a LID of two different ports match nothing either.
    other = host_ports(pristine)[1]
    assert query.path_records(pristine, PathQuery(sgid=src.gid(), slid=other.lid,
                                                  dlid=src.lid)) == []


def test_wildcards_cover_every_end_port_pair(pristine: Fabric) -> None:
    src = host_ports(pristine)[0]
    ends = len(set(pristine.lid_map.values()))
    records = query.path_records(pristine, PathQuery(slid=src.lid))
    assert len(records) == ends - 1  # not to itself
    assert len(query.path_records(pristine, PathQuery())) == ends * (ends - 1)


def test_lmc_gives_one_record_per_lid_pair_preferred_first() -> None:
    fabric = build_fabric(LMC, seed=2)
    src, dst = host_ports(fabric)[0], host_ports(fabric)[-1]
    records = query.path_records(fabric, PathQuery(sgid=src.gid(), dgid=dst.gid()))
    assert len(records) == 4
    assert {(r.slid, r.dlid) for r in records} == {
        (s, d) for s in (src.lid, src.lid + 1) for d in (dst.lid, dst.lid + 1)}
    assert [r.preference for r in records] == [0, 0, 1, 1]
    assert records[0].slid == src.lid and records[0].dlid == dst.lid
    for record in records:
        check_route(fabric, record)
        assert record.numb_path == 4
    limited = query.path_records(fabric, PathQuery(sgid=src.gid(), dgid=dst.gid(), numb_path=3))
    assert [(r.slid, r.dlid) for r in limited] == [(r.slid, r.dlid) for r in records[:3]]


def test_multipath_independent_paths_use_different_spines() -> None:
    fabric = build_fabric(LMC, seed=2)
    src, dst = host_ports(fabric)[0], host_ports(fabric)[-1]
    records = query.multipath_records(fabric, PathQuery(), [src.gid()], [dst.gid()],
                                      independent=True)
    assert len(records) == 4
    routes = [present(r.route) for r in records]
    spines = [{h.node_guid for h in route.hops[1:-1]} - {route.hops[1].node_guid,
                                                         route.hops[-2].node_guid}
              for route in routes]
    # The first two share no spine (3 spines, LMC 1: two LIDs each side).
    assert records[0].preference == 0 and not spines[0] & spines[1]
    for record in records:
        check_route(fabric, record)
    assert len(query.multipath_records(fabric, PathQuery(numb_path=2), [src.gid()],
                                       [dst.gid()])) == 2
    assert query.multipath_records(fabric, PathQuery(), [1], [dst.gid()]) == []


def test_min_mtu_and_rate_on_a_fabric_with_faults() -> None:
    fabric = build_fabric(FAULTY, seed=7)
    hosts = host_ports(fabric)
    degraded = 0
    for src in hosts:
        for dst in hosts:
            if src is dst:
                continue
            for record in query.path_records(fabric, PathQuery(slid=src.lid, dlid=dst.lid)):
                check_route(fabric, record)
                degraded += Rate(record.rate).gbps < gbps(src)
    assert degraded  # some path crosses a slower link than its end ports


def test_selectors_and_pkeys(pristine: Fabric) -> None:
    src, dst = host_ports(pristine)[0], host_ports(pristine)[-1]
    (plain,) = query.path_records(pristine, PathQuery(slid=src.lid, dlid=dst.lid))
    def one(**kw: int | None) -> list[query.PathRecord]:
        return query.path_records(pristine, PathQuery(slid=src.lid, dlid=dst.lid, **kw))
    assert one(mtu_selector=2, mtu=Mtu.MTU_1024)[0].mtu == Mtu.MTU_1024
    assert one(mtu_selector=0, mtu=plain.mtu) == []
    assert one(mtu_selector=1, mtu=plain.mtu)[0].mtu == plain.mtu - 1
    assert one(rate_selector=2, rate=Rate.GBPS_10)[0].rate == Rate.GBPS_10
    assert one(rate_selector=0, rate=plain.rate) == []
    assert one(pkt_life_selector=2, pkt_life=plain.pkt_life + 1)[0].pkt_life == plain.pkt_life + 1
    assert one(pkt_life_selector=1, pkt_life=plain.pkt_life) == []
    assert one(sl=3)[0].sl == 3
    # P_Keys: both hold the default partition; 0x0002 (storage) only as
    # limited members unless one of them is a server.
    shared = set(k & 0x7FFF for k in src.pkeys) & set(k & 0x7FFF for k in dst.pkeys)
    assert plain.pkey & 0x7FFF in shared
    assert one(pkey=0x1234) == []
    # A loopback path has lifetime 0 (IBA 1.2 Table 205).
    (loop,) = query.path_records(pristine, PathQuery(slid=src.lid, dlid=src.lid))
    assert loop.pkt_life == 0 and len(present(loop.route).hops) == 1


def test_packet_lifetime_grows_with_switches(pristine: Fabric) -> None:
    hosts = host_ports(pristine)
    lifetimes = {}
    for dst in hosts[1:]:
        (record,) = query.path_records(pristine, PathQuery(slid=hosts[0].lid, dlid=dst.lid))
        switches = sum(1 for h in present(record.route).hops if h.node_type is NodeType.SWITCH)
        lifetimes[switches] = record.pkt_life
    assert sorted(lifetimes) == [1, 3]
    assert lifetimes[3] > lifetimes[1]


def test_trace_records_name_every_hop(pristine: Fabric) -> None:
    src, dst = host_ports(pristine)[0], host_ports(pristine)[-1]
    (record,) = query.path_records(pristine, PathQuery(slid=src.lid, dlid=dst.lid))
    hops = query.trace_records(pristine, present(record.route))
    assert [h.node_id for h in hops] == [h.node_guid for h in present(record.route).hops]
    assert hops[0].node_type == NodeType.CA and hops[0].entry_port_id == src.guid
    assert hops[-1].node_type == NodeType.CA and hops[-1].entry_port_id == dst.guid
    for hop, route_hop in zip(hops[1:-1], present(record.route).hops[1:-1]):
        assert hop.node_type == NodeType.SWITCH
        assert (hop.entry_port, hop.exit_port) == (route_hop.in_port, route_hop.out_port)
        assert hop.chassis_id == pristine.nodes[hop.node_id].system_image_guid


def test_too_large_a_query_is_refused(monkeypatch: pytest.MonkeyPatch, pristine: Fabric) -> None:
    monkeypatch.setattr(query, "MAX_PAIRS", 10)
    with pytest.raises(query.TooManyRecords):
        query.path_records(pristine, PathQuery())

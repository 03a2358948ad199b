"""Simulated fabrics: shape, determinism and the data the MIBs read."""

from __future__ import annotations

from collections import Counter

import json
import re
from typing import TypeVar

import pytest

from ibsnmp.fabric import build_fabric, export_ibnetdiscover, to_json
from ibsnmp.fabric.iba import (
    DEFAULT_SUBNET_PREFIX,
    CapabilityMask,
    JoinState,
    LinkWidth,
    NodeType,
    PortPhysState,
    PortState,
    SmState,
    parse_gid,
)
from ibsnmp.fabric.model import Fabric, PortRef

TREE = "fat-tree:spines=3,leaves=4,hosts=5"

T = TypeVar("T")


def present(value: T | None) -> T:
    """`value`, which the test expects to be there."""
    assert value is not None
    return value


@pytest.fixture(scope="module")
def tree() -> Fabric:
    return build_fabric(TREE, seed=11)


def test_same_seed_same_fabric_other_seed_other_guids() -> None:
    one, two = build_fabric(TREE, seed=5), build_fabric(TREE, seed=5)
    assert to_json(one, include_connections=True) == to_json(two, include_connections=True)
    assert export_ibnetdiscover(one, 0) == export_ibnetdiscover(two, 0)
    other = build_fabric(TREE, seed=6)
    assert set(other.nodes).isdisjoint(one.nodes)


def test_fat_tree_counts(tree: Fabric) -> None:
    switches = [n for n in tree.nodes.values() if n.is_switch]
    cas = [n for n in tree.nodes.values() if n.is_ca]
    assert (len(switches), len(cas)) == (3 + 4, 4 * 5)
    assert len(tree.nodes) == 27
    # Every leaf cabled to every spine and every host to its leaf; faults
    # may take one uplink down, which then is no link.
    down_uplinks = sum(1 for n in switches for p in n.data_ports
                       if p.degraded and not p.is_active) // 2
    assert len(tree.links) == 3 * 4 + 20 - down_uplinks
    for link in tree.links:
        a, b = tree.port_at(link.a), tree.port_at(link.b)
        assert a.remote == link.b and b.remote == link.a
        assert a.is_active and b.is_active
    leaves = [n for n in switches if present(n.description).startswith("leaf")]
    assert all(n.num_ports == 36 for n in switches)
    assert [n.description for n in leaves] == ["leaf01", "leaf02", "leaf03", "leaf04"]
    assert sorted(present(n.description) for n in cas)[0] == "host001 HCA-1"


def test_nodes_look_real(tree: Fabric) -> None:
    for node in tree.nodes.values():
        assert node.vendor_id == 0x02C9
        assert (node.guid >> 32) & 0xFF == 0x03  # OUI, 0x03, serial
        assert node.guid >> 40 in (0x7CFE90, 0x248A07, 0x98039B, 0x506B4B, 0xEC0D9A)
        if node.is_switch:
            assert node.ports[0].num == 0 and node.switch is not None and node.ca is None
            assert all(p.guid == node.guid for p in node.ports)
        else:
            assert node.ca is not None and node.switch is None
            assert present(node.port(1)).guid == node.guid  # ConnectX-4 and later
            assert node.num_ports in (1, 2)


def test_local_node_runs_master_sm_and_another_host_standby(tree: Fabric) -> None:
    local = tree.local_node
    assert local.description == "host001 HCA-1"
    assert list(tree.nodes)[0] == local.guid  # discovery starts here
    master = tree.master_sm
    assert master is not None and master.node_guid == local.guid and master.state is SmState.MASTER
    standby = [sm for sm in tree.sms if sm.state is SmState.STANDBY]
    assert len(standby) == 1 and tree.nodes[standby[0].node_guid].description == "host002 HCA-1"
    master_port = present(tree.port(master.node_guid, master.port_num))
    assert present(master_port.info.capability_mask) & CapabilityMask.IS_SM
    for ref in tree.lid_map.values():
        assert tree.port_at(ref).info.master_sm_lid == master_port.lid


def test_ports_and_links_are_consistent(tree: Fabric) -> None:
    for node in tree.nodes.values():
        for port in node.ports:
            info = port.info
            if port.is_active:
                assert info.phys_state is PortPhysState.LINK_UP
            else:
                assert info.port_state is PortState.DOWN and port.remote is None
            if port.remote is not None:
                far = tree.port_at(port.remote)
                assert far.info.link_width_active == info.link_width_active
                assert far.info.rate == info.rate
    assert tree.peer(*tree.links[0].a) == tree.links[0].b


def test_some_ports_are_degraded_or_down() -> None:
    fabric = build_fabric("fat-tree:spines=2,leaves=4,hosts=8,ports=2,faults=6", seed=3)
    ports = [p for n in fabric.nodes.values() for p in n.ports]
    degraded = [p for p in ports if p.degraded and p.is_active]
    assert any(p.info.link_width_active is LinkWidth.X1 for p in degraded)
    assert any(p.info.rate.gbps < 100 for p in degraded if p.info.link_width_active is LinkWidth.X4)
    assert any(p.degraded and not p.is_active for p in ports)  # a pulled cable
    assert any(p.vendor_diag for p in degraded)
    pristine = build_fabric("fat-tree:spines=2,leaves=4,hosts=8,faults=0", seed=3)
    assert not any(p.degraded for n in pristine.nodes.values() for p in n.ports)


def test_single_host() -> None:
    fabric = build_fabric("single", seed=1)
    (node,) = fabric.nodes.values()
    assert node.node_type is NodeType.CA and node.num_ports == 2
    one, two = node.ports
    assert one.is_active and one.lid == 1 and not two.is_active and two.lid == 0
    assert fabric.links == () and fabric.master_sm is not None and len(fabric.sms) == 1
    assert fabric.local_node is node
    assert fabric.connections[node.guid].ud  # QP0, QP1 and IPoIB listen


def test_lmc_gives_aligned_lid_blocks() -> None:
    fabric = build_fabric("fat-tree:spines=2,leaves=3,hosts=4,lmc=2", seed=2)
    owned: dict[int, PortRef] = {}
    for node in fabric.nodes.values():
        for port in node.ports:
            if node.is_switch:
                assert port.lmc == 0
                if port.num == 0:
                    assert fabric.resolve_lid(port.lid) == port.ref
            elif port.is_active:
                assert port.lmc == 2 and port.lid % 4 == 0
                for lid in range(port.lid, port.lid + 4):
                    assert lid not in owned
                    owned[lid] = port.ref
                    assert fabric.resolve_lid(lid) == port.ref
    assert fabric.resolve_lid(fabric.max_lid + 1) is None
    assert max(owned) <= fabric.max_lid
    switch = next(n for n in fabric.nodes.values() if n.is_switch)
    assert present(switch.switch).linear_fdb_top == fabric.max_lid


def test_partitions_pkeys_and_groups(tree: Fabric) -> None:
    default = tree.partition(0xFFFF)
    assert default is not None and default.pkey == 0x7FFF and default.name == "Default"
    active_ca_ports = {p.ref for n in tree.nodes.values() if n.is_ca for p in n.ports if p.is_active}
    assert active_ca_ports <= {PortRef(m.guid, m.port) for m in default.members}
    assert all(m.full for m in default.members)
    storage = tree.partition(0x0002)
    assert {m.full for m in present(storage).members} == {True, False}
    assert len(tree.partitions) == 3
    for ref in active_ca_ports:
        pkeys = tree.port_at(ref).pkeys
        assert pkeys[0] == 0xFFFF and (0x8002 in pkeys) != (0x0002 in pkeys)

    broadcast = tree.multicast_group(parse_gid("ff12:401b:ffff::ffff:ffff"))
    assert broadcast is not None and broadcast.pkey == 0xFFFF and broadcast.q_key == 0x0B1B
    assert broadcast.mlid == 0xC000 and broadcast.scope.name == "LINK_LOCAL"
    assert {PortRef(m.guid, m.port) for m in broadcast.members} == active_ca_ports
    assert all(m.join_state is JoinState.FULL_MEMBER for m in broadcast.members)
    assert tree.group_by_mlid(0xC000) == (broadcast,)
    assert len(tree.services) >= 2
    for service in tree.services:
        assert service.gid >> 64 == DEFAULT_SUBNET_PREFIX and len(service.key) == 16


def test_connections_agree_on_both_ends(tree: Fabric) -> None:
    by_gid = {}
    for guid in tree.connections:
        for qp in tree.connections[guid].connected:
            by_gid[(qp.local_gid, qp.local_qpn, qp.remote_gid, qp.remote_qpn)] = qp
    assert by_gid
    for (lgid, lqpn, rgid, rqpn), qp in by_gid.items():
        mirror = by_gid[(rgid, rqpn, lgid, lqpn)]
        assert mirror.reliable == qp.reliable
        assert (qp.state.name == "ESTABLISHED") == (mirror.state.name == "ESTABLISHED")


def test_sorted_index_helpers(tree: Fabric) -> None:
    guids = tree.sorted_node_guids()
    assert list(guids) == sorted(tree.nodes)
    keys = tree.sorted_port_keys()
    assert list(keys) == sorted(keys) and len(keys) == sum(len(n.ports) for n in tree.nodes.values())
    assert len(tree.sorted_link_keys()) == 2 * len(tree.links)
    assert tree.sorted_node_guids() is guids  # built once per snapshot
    assert set(tree.sorted_switch_guids()) | set(tree.sorted_ca_guids()) == set(guids)


def test_ibnetdiscover_text(tree: Fabric) -> None:
    text = export_ibnetdiscover(tree, generated_at=0)
    local = tree.local_node
    assert text.startswith("#\n# Topology file: generated on ")
    assert f"# Initiated from node {local.guid:016x} port {local.port_guid:016x}\n" in text
    switch = re.compile(r'^Switch\t36 "S-[0-9a-f]{16}"\t\t# "(spine|leaf)\d\d" enhanced port 0 lid \d+ lmc 0$')
    ca = re.compile(r'^Ca\t[12] "H-[0-9a-f]{16}"\t\t# "host\d{3} HCA-1"$')
    rate = r"(1x|4x)(EDR|FDR)"
    sw_port = re.compile(r'^\[\d+\]\t"[SH]-[0-9a-f]{16}"\[\d+\](\([0-9a-f]+\) )?\t\t# "[^"]+" lid \d+ ' + rate + "$")
    ca_port = re.compile(r'^\[\d\]\([0-9a-f]+\) \t"S-[0-9a-f]{16}"\[\d+\]\t\t# lid \d+ lmc 0 "leaf\d\d" lid \d+ '
                         + rate + "$")
    counts = {"switch": 0, "ca": 0, "port": 0}
    for line in text.splitlines():
        if line.startswith("Switch"):
            assert switch.match(line), line
            counts["switch"] += 1
        elif line.startswith("Ca"):
            assert ca.match(line), line
            counts["ca"] += 1
        elif line.startswith("["):
            assert sw_port.match(line) or ca_port.match(line), line
            counts["port"] += 1
        elif line and not line.startswith("#"):
            assert re.match(r"^(vendid=0x2c9|devid=0x[0-9a-f]+|sysimgguid=0x[0-9a-f]+|"
                            r"switchguid=0x[0-9a-f]+\([0-9a-f]+\)|caguid=0x[0-9a-f]+)$", line), line
    assert counts == {"switch": 7, "ca": 20, "port": 2 * len(tree.links)}


def test_json_export(tree: Fabric) -> None:
    data = json.loads(to_json(tree))
    assert data["format"] == "ibsnmp-fabric" and data["spec"] == TREE and data["seed"] == 11
    assert len(data["nodes"]) == len(tree.nodes)
    first = data["nodes"][0]
    assert first["guid"] == f"0x{tree.local_node_guid:016x}"
    assert first["ports"][0]["info"]["port_state"] == "ACTIVE"
    assert data["subnet_prefix"] == "0xfe80000000000000"


def test_three_level_fat_tree_is_cabled_as_a_folded_clos() -> None:
    fabric = build_fabric("fat-tree3:radix=8,pods=3,faults=0", seed=2)
    kinds = Counter(present(node.description).split()[0].rstrip("0123456789")
                    for node in fabric.nodes.values())
    assert kinds == {"core": 16, "spine": 12, "leaf": 12, "host": 48}
    names = sorted(present(node.description) for node in fabric.nodes.values())
    assert names[0] == "core01" and "host048 HCA-1" in names and "leaf12" in names

    def neighbours(name: str) -> Counter[str]:
        node = next(n for n in fabric.nodes.values() if n.description == name)
        return Counter(present(fabric.nodes[port.remote.guid].description).split()[0]
                       .rstrip("0123456789")
                       for port in node.ports if port.remote is not None)

    assert neighbours("leaf01") == {"host": 4, "spine": 4}
    assert neighbours("spine01") == {"leaf": 4, "core": 4}
    assert neighbours("core01") == {"spine": 3}  # one spine of each built pod
    # Spine s of every pod reaches cores s*4+1 .. s*4+4: core05 hangs off spine02, 06, 10.
    core5 = next(n for n in fabric.nodes.values() if n.description == "core05")
    assert sorted(present(fabric.nodes[p.remote.guid].description)
                  for p in core5.ports if p.remote) == \
        ["spine02", "spine06", "spine10"]
    assert len(fabric.links) == 48 + 48 + 48
    assert all(port.lid for node in fabric.nodes.values() for port in node.ports
               if port.is_active and (not node.is_switch or port.num == 0))

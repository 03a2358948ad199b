"""IB-SM-MIB binding: the whole fabric as its subnet manager sees it, walked without SNMP."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any

import pytest
from tests.support.mib_walk import walk as walk_from
from tests.support.narrow import present

from ibsnmp.fabric.traffic import sm_act_count
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.iba import SmState
from ibsnmp.fabric.model import Fabric, Node
from ibsnmp.mib.api import NO_SUCH_INSTANCE, NO_SUCH_OBJECT, ContextTarget, Missing
from ibsnmp.mib.index import IndexCodec
from ibsnmp.mib.loader import definitions
from ibsnmp.mib.sm import IB_SM_MIB
from ibsnmp.mib.virtual import InfinibandMib

MODULE_OID = (1, 3, 6, 1, 3, 117, 7)
SESSION_ENTRIES = (
    "ibSmPathReqEntry", "ibSmPathResultEntry", "ibSmMultiPathReqEntry", "ibSmMultiPathResultEntry",
    "ibSmTraceReqEntry", "ibSmTraceResultEntry", "ibSmServiceAssocEntry",
)
SWITCH_ONLY = ("ibSmSwitchInfoEntry", "ibSmSwSLtoVLMapEntry")
TRUE, FALSE = 1, 2
DEFS = definitions()


def columns(entry: str) -> set[str]:
    return {c.name for c in DEFS.columns_of(entry) if DEFS.readable(c.name)}


def oid_of(name: str) -> tuple[int, ...]:
    return DEFS.objects[name].oid


def instance(column: str, entry: str, *index: Any) -> tuple[int, ...]:
    return oid_of(column) + IndexCodec(DEFS.index_of(entry)).encode(index)


def owner(oid: tuple[int, ...]) -> str:
    """The scalar or column an instance OID belongs to."""
    for k in range(len(oid), len(MODULE_OID), -1):
        name = OBJECT_AT.get(oid[:k])
        if name is not None:
            return name
    raise AssertionError(f"{oid} is under no IB-SM-MIB object")


OBJECT_AT = {
    o.oid: o.name for o in DEFS.objects.values()
    if o.module == "IB-SM-MIB" and o.kind in ("column", "scalar")
}
READABLE = {
    name for name in OBJECT_AT.values() if DEFS.readable(name)
}


def served(value: Any | Missing) -> Any:
    """`value`, asserted an instance (not noSuchObject or noSuchInstance)."""
    assert not isinstance(value, Missing)
    return value


def guid(value: int) -> bytes:
    return value.to_bytes(8, "big")


@pytest.fixture(scope="module")
def mib() -> InfinibandMib:
    return InfinibandMib([IB_SM_MIB])


@pytest.fixture(scope="module")
def single() -> Fabric:
    return build_fabric("single")


@pytest.fixture(scope="module")
def target(fabric: Fabric) -> ContextTarget:
    return ContextTarget(fabric, fabric.local_node, True, 10.0)  # the master SM's host


def first_per_column(mib: InfinibandMib,
                     target: ContextTarget) -> dict[str, tuple[tuple[int, ...], object]]:
    """The first instance of every scalar and column, skipping the rest of each column."""
    found: dict[str, tuple[tuple[int, ...], object]] = {}
    oid: tuple[int, ...] = MODULE_OID
    while ((step := mib.get_next(target, oid)) is not None
           and step[0][: len(MODULE_OID)] == MODULE_OID):
        assert step[0] > oid
        name = owner(step[0])
        assert name not in found, f"{name} visited twice"
        found[name] = step
        oid = oid_of(name) + (0xFFFFFFFF,)  # past every instance of this object
    return found



def walk(mib: InfinibandMib, target: ContextTarget,
         start: tuple[int, ...]) -> list[tuple[tuple[int, ...], Any]]:
    """Every instance under `start`."""
    return list(walk_from(mib, target, start).items())


def column(mib: InfinibandMib, target: ContextTarget, name: str) -> list[Any]:
    return [value for _, value in walk(mib, target, oid_of(name))]


# -- coverage ----------------------------------------------------------------------------


def test_every_readable_object_has_instances_except_empty_request_tables(
        mib: InfinibandMib, target: ContextTarget) -> None:
    found = set(first_per_column(mib, target))
    session = set().union(*(columns(e) for e in SESSION_ENTRIES))
    assert found == READABLE - session
    assert not found & session


def test_request_and_result_tables_are_bound_but_empty(
        mib: InfinibandMib, target: ContextTarget) -> None:
    bound = {h for h in mib.object_oids}
    for entry in SESSION_ENTRIES:
        cols = columns(entry)
        assert cols and all(oid_of(c) in bound for c in cols)
        assert walk(mib, target, DEFS.objects[entry].oid) == []
    assert mib.get(target, oid_of("ibSmPartitionConfigAction") + (0,)) == 1  # none(1)
    assert mib.get(target, oid_of("ibSmPartitionConfigKey") + (0,)) == b"\x00\x00"


def test_served_only_where_an_sm_is(mib: InfinibandMib, fabric: Fabric) -> None:
    off = ContextTarget(fabric, fabric.local_node, False, 10.0)
    assert mib.get_next(off, MODULE_OID) is None
    prefix = fabric.subnet_prefix.to_bytes(8, "big")
    oid = instance("ibSmNodeInfoType", "ibSmNodeInfoEntry", prefix, guid(fabric.local_node_guid))
    assert mib.get(off, oid) is NO_SUCH_OBJECT
    assert int(served(mib.get(ContextTarget(fabric, fabric.local_node, True, 10.0), oid))) == 1


def test_get_returns_what_the_walk_found(mib: InfinibandMib, target: ContextTarget) -> None:
    for name, (oid, value) in first_per_column(mib, target).items():
        assert mib.get(target, oid) == value, name


def test_fabric_without_switches_has_no_switch_rows(mib: InfinibandMib, single: Fabric) -> None:
    target = ContextTarget(single, single.local_node, True, 5.0)
    everything = walk(mib, target, MODULE_OID)
    present = {owner(oid) for oid, _ in everything}
    for entry in SWITCH_ONLY + ("ibSmLinkEntry",):  # `single` is one HCA, no cable
        assert not present & columns(entry), entry
    assert columns("ibSmCaSLtoVLMapEntry") <= present
    assert columns("ibSmNodeInfoEntry") <= present
    assert column(mib, target, "ibSmNodeInfoNodeGUID") == [guid(single.local_node_guid)]


# -- node, port, switch ----------------------------------------------------------------------


def test_node_table_lists_every_node_with_its_node_info(
        mib: InfinibandMib, target: ContextTarget, fabric: Fabric) -> None:
    assert [bytes(v) for v in column(mib, target, "ibSmNodeInfoNodeGUID")] == [
        guid(g) for g in fabric.sorted_node_guids()
    ]
    prefix = fabric.subnet_prefix.to_bytes(8, "big")
    for node in (fabric.local_node, fabric.nodes[fabric.sorted_switch_guids()[0]]):
        def get(col: str) -> Any:
            return mib.get(target, instance(col, "ibSmNodeInfoEntry", prefix, guid(node.guid)))

        assert int(get("ibSmNodeInfoType")) == (2 if node.is_switch else 1)
        assert int(get("ibSmNodeInfoNumPorts")) == node.num_ports
        assert bytes(get("ibSmNodeInfoPortGUID")) == guid(present(node.port_guid))
        assert bytes(get("ibSmNodeInfoSystemImageGUID")) == guid(present(node.system_image_guid))
        assert bytes(get("ibSmNodeInfoVendorID")) == present(node.vendor_id).to_bytes(3, "big")
        assert bytes(get("ibSmNodeInfoDeviceID")) == present(node.device_id).to_bytes(2, "big")
        assert str(get("ibSmNodeInfoDescription")) == node.description
        assert bytes(get("ibSmNodeInfoSubnetPrefix")) == prefix


def test_port_table_has_every_port_and_its_port_info(
        mib: InfinibandMib, target: ContextTarget, fabric: Fabric) -> None:
    walked = walk(mib, target, oid_of("ibSmPortInfoLocalPortNum"))
    assert len(walked) == len(fabric.sorted_port_keys())
    prefix = fabric.subnet_prefix.to_bytes(8, "big")
    ca_port = present(fabric.local_node.port(1))
    switch = fabric.nodes[fabric.sorted_switch_guids()[0]]
    for port in (ca_port, present(switch.port(0)), present(switch.port(1))):
        def get(col: str) -> Any:
            return mib.get(target, instance(col, "ibSmPortInfoEntry", prefix,
                                            guid(port.node_guid), port.num))

        info = port.info
        assert int(get("ibSmPortInfoLID")) == info.lid
        assert int(get("ibSmPortInfoState")) == int(info.port_state)
        assert int(get("ibSmPortInfoPhyState")) == int(present(info.phys_state))
        # mtu256(1) = IBA 1
        assert int(get("ibSmPortInfoNeighborMTU")) == int(present(info.neighbor_mtu))
        assert int(get("ibSmPortInfoOperVL")) == int(present(info.operational_vls))
        assert int(get("ibSmPortInfoLinkWidthActive")) == int(present(info.link_width_active))
        assert bytes(get("ibSmPortInfoCapMask")) == present(info.capability_mask).to_bytes(4, "big")
        assert bytes(get("ibSmPortInfoMKey")) == present(info.m_key).to_bytes(8, "big")
        assert int(get("ibSmPortInfoInPartEnforce")) == (
            TRUE if info.partition_enforcement_inbound else FALSE)
    # A port without a LID (down) has no LID instance: the MIB's range starts at 1.
    down = next(p for g in fabric.sorted_node_guids() for p in fabric.nodes[g].ports
                if p.info.lid == 0)
    oid = instance("ibSmPortInfoLID", "ibSmPortInfoEntry", prefix, guid(down.node_guid), down.num)
    assert mib.get(target, oid) is NO_SUCH_INSTANCE
    assert int(served(mib.get(target, instance("ibSmPortInfoState", "ibSmPortInfoEntry", prefix,
                                               guid(down.node_guid), down.num)))) == 1  # down(1)


def test_switch_table_lists_switches_only(
        mib: InfinibandMib, target: ContextTarget, fabric: Fabric) -> None:
    assert [bytes(v) for v in column(mib, target, "ibSmSwitchInfoNodeGUID")] == [
        guid(g) for g in fabric.sorted_switch_guids()
    ]
    prefix = fabric.subnet_prefix.to_bytes(8, "big")
    switch = fabric.nodes[fabric.sorted_switch_guids()[-1]]
    oid = instance("ibSmSwitchInfoLinearFdbTop", "ibSmSwitchInfoEntry", prefix, guid(switch.guid))
    assert int(served(mib.get(target, oid))) == present(switch.switch).linear_fdb_top
    oid = instance("ibSmSwitchInfoLinearFdbTop", "ibSmSwitchInfoEntry", prefix,
                   guid(fabric.local_node_guid))
    assert mib.get(target, oid) is NO_SUCH_INSTANCE  # a CA has no SwitchInfo


def test_link_table_has_both_directions_of_each_link(
        mib: InfinibandMib, target: ContextTarget, fabric: Fabric) -> None:
    rows = walk(mib, target, DEFS.objects["ibSmLinkEntry"].oid)
    to_guid = {oid[len(oid_of("ibSmLinkToNodeGUID")):]: bytes(v) for oid, v in rows
               if owner(oid) == "ibSmLinkToNodeGUID"}
    to_port = {oid[len(oid_of("ibSmLinkToPortNum")):]: int(v) for oid, v in rows
               if owner(oid) == "ibSmLinkToPortNum"}
    assert len(to_guid) == len(to_port) == 2 * len(fabric.links)
    codec = IndexCodec(DEFS.index_of("ibSmLinkEntry"))
    prefix = fabric.subnet_prefix.to_bytes(8, "big")
    for link in fabric.links:
        for a, b in ((link.a, link.b), (link.b, link.a)):
            suffix = codec.encode((prefix, guid(a.guid), a.port))
            assert (to_guid[suffix], to_port[suffix]) == (guid(b.guid), b.port)


# -- subnet manager -------------------------------------------------------------------------


def test_config_row_without_a_known_configuration_serves_the_sm_alone(
        mib: InfinibandMib, fabric: Fabric) -> None:
    """A live subnet: SMInfo was read, the SM's configuration was not."""
    import dataclasses

    live = dataclasses.replace(fabric, sm_config=None)
    target = ContextTarget(live, live.nodes[present(live.master_sm).node_guid], True, 10.0)
    prefix = live.subnet_prefix.to_bytes(8, "big")
    assert int(served(mib.get(target, instance("ibSmConfigOperStatus", "ibSmConfigEntry",
                                               prefix)))) == 3
    assert mib.get(target, instance("ibSmConfigSweepInterval", "ibSmConfigEntry", prefix)) \
        is NO_SUCH_INSTANCE


def test_config_row_describes_the_sm_of_the_context(mib: InfinibandMib, fabric: Fabric) -> None:
    prefix = fabric.subnet_prefix.to_bytes(8, "big")
    master = present(fabric.master_sm)
    standby = next(sm for sm in fabric.sms if sm.state is SmState.STANDBY)

    def get(node: Node, col: str, elapsed: float = 10.0) -> Any:
        target = ContextTarget(fabric, node, True, elapsed)
        return mib.get(target, instance(col, "ibSmConfigEntry", prefix))

    host, standby_host = fabric.nodes[master.node_guid], fabric.nodes[standby.node_guid]
    assert bytes(get(host, "ibSmConfigGUID")) == guid(master.guid)
    assert int(get(host, "ibSmConfigOperStatus")) == 3  # master(3)
    assert bytes(get(standby_host, "ibSmConfigGUID")) == guid(standby.guid)
    assert int(get(standby_host, "ibSmConfigOperStatus")) == 2  # standby(2)
    assert int(get(standby_host, "ibSmConfigPriority")) == standby.priority
    # A node hosting no SM (served where the agent speaks for the fabric) shows the master.
    switch = fabric.nodes[fabric.sorted_switch_guids()[0]]
    assert bytes(get(switch, "ibSmConfigGUID")) == guid(master.guid)
    assert bytes(get(host, "ibSmConfigSMKey")) == present(master.sm_key).to_bytes(8, "big")
    assert int(get(host, "ibSmConfigAdminStatus")) == 1
    assert int(get(host, "ibSmConfigStatus")) == 1  # active(1)
    config = present(fabric.sm_config)
    assert int(get(host, "ibSmConfigSweepInterval")) == config.sweep_interval_s
    assert int(get(host, "ibSmConfigMaxUnicastLID")) == config.max_unicast_lid
    assert int(get(host, "ibSmConfigDefaultLMC")) == config.lmc
    early, late = (int(get(host, "ibSmConfigActCount", 10.0)),
                   int(get(host, "ibSmConfigActCount", 1000.0)))
    assert early == sm_act_count(master, 10.0) and late == sm_act_count(master, 1000.0)
    assert late > early


def test_sm_info_lists_every_sm(mib: InfinibandMib, target: ContextTarget, fabric: Fabric) -> None:
    assert [bytes(v) for v in column(mib, target, "ibSmSMInfoGUID")] == [
        guid(g) for g in sorted(sm.guid for sm in fabric.sms)
    ]
    prefix = fabric.subnet_prefix.to_bytes(8, "big")
    for sm in fabric.sms:
        def get(col: str, elapsed: float = 10.0) -> Any:
            return mib.get(ContextTarget(fabric, fabric.local_node, True, elapsed),
                           instance(col, "ibSmSMInfoEntry", prefix, guid(sm.guid)))

        assert int(get("ibSmSMInfoSMState")) == int(sm.state)
        assert int(get("ibSmSMInfoPriority")) == sm.priority
        assert bytes(get("ibSmSMInfoSMKey")) == present(sm.sm_key).to_bytes(8, "big")[:2]
        assert int(get("ibSmSMInfoActCount", 2000.0)) >= int(get("ibSmSMInfoActCount", 1.0))
        assert 0 <= int(get("ibSmSMInfoActCount", 1e9)) <= 2147483647


# -- partitions, multicast, services ---------------------------------------------------------


def decode_vectors(mib: InfinibandMib, target: ContextTarget, table: str,
                   element: int) -> dict[bytes, list[bytes]]:
    """{key: elements} from ibSm<table>Vector, checking sizes on the way."""
    key_column = {"Partition": "ibSmPartitionKey", "McastMember": "ibSmMcastMemberMGID"}[table]
    out: dict[bytes, list[bytes]] = {}
    for oid, value in walk(mib, target, oid_of(f"ibSm{table}Vector")):
        suffix = oid[len(oid_of(f"ibSm{table}Vector")):]
        data = bytes(value)
        assert len(data) <= 255 and len(data) % element == 0
        assert int(served(mib.get(target, oid_of(f"ibSm{table}VectorSize") + suffix))) == len(data)
        assert int(served(mib.get(target, oid_of(f"ibSm{table}VectorElementSize") + suffix))) \
            == element
        key = bytes(served(mib.get(target, oid_of(key_column) + suffix)))
        out.setdefault(key, []).extend(data[i : i + element] for i in range(0, len(data), element))
    return out


def test_partition_vectors_hold_every_member(
        mib: InfinibandMib, target: ContextTarget, fabric: Fabric) -> None:
    vectors = decode_vectors(mib, target, "Partition", 10)
    assert set(vectors) == {p.pkey.to_bytes(2, "big") for p in fabric.partitions}
    for partition in fabric.partitions:
        elements = vectors[partition.pkey.to_bytes(2, "big")]
        assert elements == [guid(m.guid) + bytes((m.port, 1 if m.full else 2))
                            for m in partition.members]


def test_partition_vectors_split_at_25_elements(mib: InfinibandMib) -> None:
    big = build_fabric("fat-tree:spines=1,leaves=2,hosts=20,faults=0", seed=3)
    target = ContextTarget(big, big.local_node, True, 1.0)
    default = max(big.partitions, key=lambda p: len(p.members))
    assert len(default.members) > 25
    vectors = decode_vectors(mib, target, "Partition", 10)
    assert len(vectors[default.pkey.to_bytes(2, "big")]) == len(default.members)
    sizes = [int(v) for v in column(mib, target, "ibSmPartitionVectorSize")]
    assert max(sizes) == 250


def test_multicast_groups_and_members(
        mib: InfinibandMib, target: ContextTarget, fabric: Fabric) -> None:
    prefix = fabric.subnet_prefix.to_bytes(8, "big")
    assert [bytes(v) for v in column(mib, target, "ibSmMcastGroupMGID")] == [
        g.to_bytes(16, "big") for g in fabric.sorted_mgids()
    ]
    group = fabric.multicast_groups[0]

    def get(col: str) -> Any:
        return mib.get(target, instance(col, "ibSmMcastGroupEntry", prefix,
                                        group.mgid.to_bytes(16, "big")))

    assert bytes(get("ibSmMcastGroupMLID")) == group.mlid.to_bytes(2, "big")
    assert bytes(get("ibSmMcastGroupQKey")) == group.q_key.to_bytes(4, "big")
    assert bytes(get("ibSmMcastGroupPKey")) == group.pkey.to_bytes(2, "big")
    assert int(get("ibSmMcastGroupMTU")) == int(group.mtu)
    assert int(get("ibSmMcastGroupRate")) == int(group.rate) == 3  # gbps10(3)
    assert int(get("ibSmMcastGroupScope")) == 2  # linkLocal(2): ff12::
    members = decode_vectors(mib, target, "McastMember", 18)
    for g in fabric.multicast_groups:
        expected = [
            present(fabric.port(m.guid, m.port)).gid().to_bytes(16, "big")
            + bytes((int(m.join_state), FALSE))
            for m in g.members
        ]
        assert members[g.mgid.to_bytes(16, "big")] == expected


def test_services_with_clamped_lease(
        mib: InfinibandMib, target: ContextTarget, fabric: Fabric) -> None:
    prefix = fabric.subnet_prefix.to_bytes(8, "big")
    assert len(column(mib, target, "ibSmServiceName")) == len(fabric.services)
    for service in fabric.services:
        def get(col: str) -> Any:
            return mib.get(target, instance(col, "ibSmServiceEntry", prefix,
                                            service.service_id.to_bytes(8, "big"),
                                            service.gid.to_bytes(16, "big"),
                                            service.pkey.to_bytes(2, "big")))

        assert int(get("ibSmServiceLease")) == min(service.lease, 2147483647)
        assert str(get("ibSmServiceName")) == service.name
        assert bytes(get("ibSmServiceKey")) == service.key
        assert bytes(get("ibSmServiceData")) == service.data
    assert {min(s.lease, 2147483647) for s in fabric.services} == {2147483647, 3600}


# -- SL to VL, VL arbitration ---------------------------------------------------------------------


def test_switch_sl_to_vl_rows_cover_every_port_pair(
        mib: InfinibandMib, target: ContextTarget, fabric: Fabric) -> None:
    prefix = fabric.subnet_prefix.to_bytes(8, "big")
    switch = fabric.nodes[fabric.sorted_switch_guids()[1]]
    start = oid_of("ibSmSwSLtoVLMapOutPortNum") + tuple(prefix + guid(switch.guid))
    rows = walk(mib, target, start)
    assert len(rows) == len(switch.data_ports) ** 2
    out_port = present(switch.port(3))
    for sl in (0, 1, 7, 15):
        oid = instance(f"ibSmSwSLtoVLMapSL{sl}toVL", "ibSmSwSLtoVLMapEntry", prefix,
                       guid(switch.guid), 5, 3)
        assert int(served(mib.get(target, oid))) == out_port.sl2vl[sl]
    # A channel adapter has no switch rows, a switch no CA rows.
    ca = fabric.local_node
    assert walk(mib, target, oid_of("ibSmSwSLtoVLMapSL0toVL") + tuple(prefix + guid(ca.guid))) == []
    assert walk(mib, target,
                oid_of("ibSmCaSLtoVLMapSL0toVL") + tuple(prefix + guid(switch.guid))) == []
    ca_rows = walk(mib, target, oid_of("ibSmCaSLtoVLMapSL15toVL") + tuple(prefix + guid(ca.guid)))
    assert [int(v) for _, v in ca_rows] == [p.sl2vl[15] for p in ca.ports]


def test_switch_sl_to_vl_rows_of_tables_read_per_input_port(
        mib: InfinibandMib, fabric: Fabric) -> None:
    # Output port 3's tables were read per input port: input 0 (outside the
    # INDEX) and 5 only; the other output ports keep one table for every input.
    prefix = fabric.subnet_prefix.to_bytes(8, "big")
    switch = fabric.nodes[fabric.sorted_switch_guids()[1]]
    ports = tuple(dataclasses.replace(p, sl2vl_inputs=((0, (1,) * 16), (5, (6,) * 16)))
                  if p.num == 3 else p for p in switch.ports)
    changed = dataclasses.replace(fabric, nodes=MappingProxyType(
        {**fabric.nodes, switch.guid: dataclasses.replace(switch, ports=ports)}))
    target = ContextTarget(changed, changed.local_node, True, 10.0)
    rows = walk(mib, target, oid_of("ibSmSwSLtoVLMapSL4toVL") + tuple(prefix + guid(switch.guid)))
    pairs = {oid[-2:]: int(value) for oid, value in rows}
    data_ports = len(switch.data_ports)
    assert {pair: vl for pair, vl in pairs.items() if pair[1] == 3} == {(5, 3): 6}
    assert len(pairs) == data_ports * (data_ports - 1) + 1
    assert pairs[(5, 4)] == present(switch.port(4)).sl2vl[4]


def test_vl_arbitration_serves_the_first_entry_per_priority(
        mib: InfinibandMib, target: ContextTarget, fabric: Fabric) -> None:
    prefix = fabric.subnet_prefix.to_bytes(8, "big")
    port = present(fabric.local_node.port(1))
    for priority, table in ((1, port.vl_arb_low), (2, port.vl_arb_high)):
        def get(col: str) -> Any:
            return mib.get(target, instance(col, "ibSmVLArbitrationEntry", prefix,
                                            guid(port.node_guid), port.num, priority))

        assert int(get("ibSmVLArbitrationPriority")) == priority
        assert int(get("ibSmVLArbitrationIndex")) == 1
        assert int(get("ibSmVLArbitrationWeight")) == table[0].weight
        assert int(get("ibSmVLArbitrationPortNum")) == port.num
    weights = column(mib, target, "ibSmVLArbitrationWeight")
    assert len(weights) == sum(
        bool(p.vl_arb_low) + bool(p.vl_arb_high)
        for g in fabric.sorted_node_guids() for p in fabric.nodes[g].ports
    )
    # The model's default tables: VL0 at weight 4 heads the high table, VL0 at 0 the low one.
    assert {int(w) for w in weights} == {0, 4}

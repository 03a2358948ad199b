"""SMA-MIB binding: the context node's subnet management agent, walked without SNMP."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any

import pytest
from tests.support.mib_walk import walk as walk_from
from tests.support.narrow import present

from ibsnmp.fabric.traffic import sm_act_count
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.iba import (
    UNROUTED_PORT,
    LinkDownDefaultState,
    LinkSpeed,
    LinkSpeedExt,
    LinkWidth,
    MKeyProtect,
    Mtu,
    PortPhysState,
    PortState,
    SmState,
    VLCap,
)
from ibsnmp.fabric.model import Fabric, Node
from ibsnmp.fabric.routing import linear_forwarding_table, multicast_forwarding_table
from ibsnmp.mib.api import NO_SUCH_INSTANCE, ContextTarget, Missing
from ibsnmp.mib.loader import definitions
from ibsnmp.mib.sma import SMA_MIB
from ibsnmp.mib.virtual import InfinibandMib

MODULE_OID = (1, 3, 6, 1, 3, 117, 3)
SWITCH_SCALARS = {
    "ibSmaSwLinearFdbTableNum", "ibSmaSwRandomFdbTableNum", "ibSmaSwMulticastFdbTableNum",
    "ibSmaSwLinearFdbTop", "ibSmaSwDefaultPort", "ibSmaSwDefMcastPriPort",
    "ibSmaSwDefMcastNotPriPort", "ibSmaSwLifeTimeValue", "ibSmaSwPortStateChange",
    "ibSmaSwLidsPerPort", "ibSmaSwPartitionEnforceNum",
    "ibSmaSwInboundEnforceCap", "ibSmaSwOutboundEnforceCap", "ibSmaSwFilterRawPktInputCap",
    "ibSmaSwFilterRawPktOutputCap", "ibSmaSwEnhancedPort0",
}
RANDOM_FDB = {
    "ibSmaRandomDestLID", "ibSmaRandomForwEgressPort", "ibSmaRandomLMC", "ibSmaRandomIsValid",
}
SM_INFO = {"ibSmaSmGuid", "ibSmaSmSmKey", "ibSmaSmSmpCount", "ibSmaSmPriority", "ibSmaSmState"}
SWITCH_TABLES = {"ibSmaLinForwEgressPort", "ibSmaMulForwMask"} | RANDOM_FDB
TRUE, FALSE = 1, 2

Found = dict[tuple[int, ...], Any]


@pytest.fixture(scope="module")
def mib() -> InfinibandMib:
    return InfinibandMib([SMA_MIB])


@pytest.fixture(scope="module")
def switch(fabric: Fabric) -> Node:
    # leaf02 has a degraded (1x) host link on port 3.
    return next(n for n in fabric.nodes.values() if n.description == "leaf02")


@pytest.fixture(scope="module")
def switch_walk(mib: InfinibandMib, fabric: Fabric, switch: Node) -> Found:
    return walk(mib, ContextTarget(fabric, switch, False, 10.0))


@pytest.fixture(scope="module")
def sm_host(fabric: Fabric) -> Node:
    return fabric.local_node  # runs the master SM


@pytest.fixture(scope="module")
def sm_host_walk(mib: InfinibandMib, fabric: Fabric, sm_host: Node) -> Found:
    return walk(mib, ContextTarget(fabric, sm_host, True, 10.0))



def walk(mib: InfinibandMib, target: ContextTarget) -> Found:
    return walk_from(mib, target, MODULE_OID)


def oid_of(name: str) -> tuple[int, ...]:
    return definitions().objects[name].oid


def cells(found: Found, name: str) -> dict[tuple[int, ...], Any]:
    """suffix -> plain value (int or bytes) for one scalar or column."""
    prefix = oid_of(name)
    return {oid[len(prefix):]: plain(v) for oid, v in found.items() if oid[: len(prefix)] == prefix}


def scalar(found: Found, name: str) -> Any:
    values = cells(found, name)
    assert list(values) == [(0,)], name
    return values[(0,)]


def served(value: Any | Missing) -> Any:
    """`value`, asserted an instance (not noSuchObject or noSuchInstance)."""
    assert not isinstance(value, Missing)
    return value


def plain(value: Any) -> int | bytes:
    try:
        return int(value)
    except (TypeError, ValueError):
        return bytes(value)


def readable() -> list[str]:
    d = definitions()
    return [o.name for o in d.objects.values()
            if o.module == "SMA-MIB" and o.kind in ("scalar", "column") and d.readable(o.name)]


def with_port(fabric: Fabric, guid: int, num: int, **changes: Any) -> Fabric:
    """A copy of the fabric whose port (guid, num) has PortInfo fields changed."""
    node = fabric.nodes[guid]
    ports = tuple(dataclasses.replace(p, info=p.info._replace(**changes)) if p.num == num else p
                  for p in node.ports)
    nodes = dict(fabric.nodes)
    nodes[guid] = dataclasses.replace(node, ports=ports)
    return dataclasses.replace(fabric, nodes=MappingProxyType(nodes))


# -- coverage of the module ------------------------------------------------------------


def test_every_readable_object_has_an_instance_on_a_switch(
        switch_walk: Found, switch: Node) -> None:
    names = readable()
    assert len(names) == 13 + 16 + 39 + 1 + 25 + 2 + 1 + 4 + 1 + 4 + 1 + 5 + 4 + 1
    assert present(switch.switch).random_fdb_cap == 0  # no RandomFDB: that table is empty
    for name in names:
        if name in RANDOM_FDB or name in SM_INFO:  # no SM runs on a switch here
            assert not cells(switch_walk, name), name
        else:
            assert cells(switch_walk, name), name


def test_a_ca_has_no_switch_objects_and_its_sm_table(
        sm_host_walk: Found, mib: InfinibandMib, fabric: Fabric, sm_host: Node) -> None:
    for name in readable():
        if name in SWITCH_SCALARS or name in SWITCH_TABLES:
            assert not cells(sm_host_walk, name), name
        else:
            assert cells(sm_host_walk, name), name
    target = ContextTarget(fabric, sm_host, True, 0.0)
    assert mib.get(target, oid_of("ibSmaSwLinearFdbTop") + (0,)) is NO_SUCH_INSTANCE
    assert mib.get(target, oid_of("ibSmaLinForwEgressPort") + (1,)) is NO_SUCH_INSTANCE


def test_notification_only_objects_are_not_served(
        switch_walk: Found, mib: InfinibandMib, fabric: Fabric, switch: Node) -> None:
    for name in ("ibSmaNodeLid", "ibSmaNodeKey", "ibSmaNodeCapMask", "ibSmaNodeDataValid"):
        assert not cells(switch_walk, name)
        assert mib.get(ContextTarget(fabric, switch, False), oid_of(name) + (0,)) is not None
        assert mib.get(ContextTarget(fabric, switch, False),
                       oid_of(name) + (0,)).name == "noSuchObject"


# -- NodeInfo, SwitchInfo, management port -------------------------------------------------


def test_node_info_follows_the_model(
        fabric: Fabric, switch_walk: Found, sm_host_walk: Found, switch: Node,
        sm_host: Node) -> None:
    for node, found, node_type in ((switch, switch_walk, 2), (sm_host, sm_host_walk, 1)):
        assert scalar(found, "ibSmaNodeString") == present(node.description).encode()
        assert scalar(found, "ibSmaNodeType") == node_type
        assert scalar(found, "ibSmaNodeGuid") == node.guid.to_bytes(8, "big")
        assert scalar(found, "ibSmaSystemImageGuid") == present(
            node.system_image_guid).to_bytes(8, "big")
        assert scalar(found, "ibSmaNodePortGuid") == present(node.port_guid).to_bytes(8, "big")
        assert scalar(found, "ibSmaNodeNumPorts") == node.num_ports
        assert scalar(found, "ibSmaNodeBaseVersion") == node.base_version == 1
        assert scalar(found, "ibSmaNodePartitionTableNum") == node.partition_cap
        assert scalar(found, "ibSmaNodeDeviceId") == present(node.device_id).to_bytes(2, "big")
        assert scalar(found, "ibSmaNodeRevision") == present(node.revision).to_bytes(4, "big")
        assert scalar(found, "ibSmaNodeVendorId") == present(node.vendor_id).to_bytes(3, "big")
        assert scalar(found, "ibSmaNodeLocalPortNumOrZero") == node.local_port_num
    assert scalar(switch_walk, "ibSmaNodeLocalPortNumOrZero") == 4  # leaf02 is reached on port 4


def test_switch_info_follows_the_model(switch_walk: Found, switch: Node) -> None:
    info = present(switch.switch)
    assert scalar(switch_walk, "ibSmaSwLinearFdbTableNum") == info.linear_fdb_cap == 49152
    assert scalar(switch_walk, "ibSmaSwMulticastFdbTableNum") == info.multicast_fdb_cap
    assert scalar(switch_walk, "ibSmaSwLinearFdbTop") == present(info.linear_fdb_top) > 0
    assert scalar(switch_walk, "ibSmaSwLifeTimeValue") == info.life_time_value
    assert scalar(switch_walk, "ibSmaSwPartitionEnforceNum") == info.partition_enforcement_cap
    assert scalar(switch_walk, "ibSmaSwEnhancedPort0") == (TRUE if info.enhanced_port0 else FALSE)
    assert scalar(switch_walk, "ibSmaSwPortStateChange") == int(present(info.port_state_change))
    # IBA's 255 ("no port") is outside 0..254: the draft reports unknown ports as 0.
    assert info.default_multicast_primary_port == 255
    assert scalar(switch_walk, "ibSmaSwDefMcastPriPort") == 0


def test_management_port_is_port_0_of_a_switch_and_the_sm_port_of_a_ca(
        switch_walk: Found, sm_host_walk: Found, switch: Node, sm_host: Node) -> None:
    port0 = present(switch.port(0))
    assert scalar(switch_walk, "ibSmaPortLid") == port0.lid > 0
    assert scalar(switch_walk, "ibSmaPortNumGuid") == port0.info.guid_cap
    assert scalar(switch_walk, "ibSmaPortIsLedInfoSupported") == TRUE
    assert scalar(switch_walk, "ibSmaPortIsSubnetManager") == FALSE
    local = present(sm_host.port(sm_host.local_port_num))
    assert scalar(sm_host_walk, "ibSmaPortLid") == local.lid > 0
    assert scalar(sm_host_walk, "ibSmaPortMasterSmLid") == local.info.master_sm_lid == local.lid
    assert scalar(sm_host_walk, "ibSmaPortIsSubnetManager") == TRUE
    assert scalar(sm_host_walk, "ibSmaPortIsLedInfoSupported") == FALSE
    assert scalar(sm_host_walk, "ibSmaPortGidPrefix") == present(
        local.info.gid_prefix).to_bytes(8, "big")
    assert scalar(sm_host_walk, "ibSmaPortSubnetTimeout") == local.info.subnet_timeout
    assert scalar(sm_host_walk, "ibSmaPortMKeyLeasePeriod") == local.info.m_key_lease_period
    assert scalar(sm_host_walk, "ibSmaPortInitTypeLoad") == FALSE  # InitType 0


def test_m_key_is_hidden_above_protection_level_0(
        mib: InfinibandMib, fabric: Fabric, sm_host: Node, sm_host_walk: Found) -> None:
    info = sm_host.management_port.info
    assert info.m_key != 0 and info.m_key_protect_bits is MKeyProtect.LEVEL1
    assert scalar(sm_host_walk, "ibSmaPortMKey") == bytes(8)
    assert scalar(sm_host_walk, "ibSmaPortMKeyProtectBits") == 3  # succeedWithReturnZeroes
    open_port = with_port(fabric, sm_host.guid, 1, m_key_protect_bits=MKeyProtect.LEVEL0)
    found = walk(mib, ContextTarget(open_port, open_port.nodes[sm_host.guid], True))
    assert scalar(found, "ibSmaPortMKey") == present(info.m_key).to_bytes(8, "big")
    assert scalar(found, "ibSmaPortMKeyProtectBits") == 2  # succeedWithReturnKey


def test_violation_gauges_and_init_flags() -> None:
    fabric = build_fabric("single")
    (node,) = fabric.nodes.values()
    changed = with_port(fabric, node.guid, 1, p_key_violations=70000, q_key_violations=12,
                        init_type=0b1010, init_type_reply=0b0001)
    found = walk(InfinibandMib([SMA_MIB]), ContextTarget(changed, changed.nodes[node.guid], True))
    assert scalar(found, "ibSmaPortPKeyViolations") == 65535  # 16-bit field, the draft's range
    assert scalar(found, "ibSmaPortQKeyViolations") == 12
    assert [scalar(found, n) for n in ("ibSmaPortInitTypeLoad", "ibSmaPortInitTypeContent",
                                       "ibSmaPortInitTypePresence",
                                       "ibSmaPortInitTypeResuscitate")] \
        == [FALSE, TRUE, FALSE, TRUE]
    assert scalar(found, "ibSmaPortInitNoLoadReply") == TRUE
    assert scalar(found, "ibSmaPortInitPreserveContReply") == FALSE


# -- PortInfo table ------------------------------------------------------------------------


def test_port_info_rows_are_the_data_ports(
        switch_walk: Found, sm_host_walk: Found, switch: Node, sm_host: Node) -> None:
    assert set(cells(switch_walk, "ibSmaPortLinkState")) == {
        (n,) for n in range(1, present(switch.num_ports) + 1)}
    assert set(cells(sm_host_walk, "ibSmaPortLinkState")) == {(p.num,) for p in sm_host.ports}


def test_port_info_enumerations_from_the_model(switch_walk: Found, switch: Node) -> None:
    degraded = present(switch.port(3))
    assert degraded.info.link_width_active is LinkWidth.X1
    width = cells(switch_walk, "ibSmaPortLinkWidthActive")
    assert width[(3,)] == 1  # oneX
    assert width[(4,)] == 2  # fourX (IBA code 2)
    # IBA 3 (1x or 4x): oneXOr4X(2)
    assert cells(switch_walk, "ibSmaPortLinkWidthSupported")[(4,)] == 2
    assert cells(switch_walk, "ibSmaPortLinkWidthEnabled")[(4,)] == 4  # IBA 3: oneXOr4X(4)
    # EDR links (LinkSpeedExt) and SDR|DDR|QDR sets have no name in the draft.
    assert cells(switch_walk, "ibSmaPortLinkSpeedActive")[(4,)] == 2
    assert cells(switch_walk, "ibSmaPortLinkSpeedSupported")[(4,)] == 2
    assert cells(switch_walk, "ibSmaPortLinkSpeedEnabled")[(4,)] == 4
    states = cells(switch_walk, "ibSmaPortLinkState")
    phys = cells(switch_walk, "ibSmaPortPhysState")
    for port in switch.data_ports:
        assert states[(port.num,)] == int(port.info.port_state) + 1
        assert phys[(port.num,)] == int(present(port.info.phys_state)) + 1
    assert {states[(p.num,)] for p in switch.data_ports} == {2, 5}  # down and active
    assert cells(switch_walk, "ibSmaPortNeighborMtu")[(4,)] == 5  # mtu4096
    assert cells(switch_walk, "ibSmaPortVirtLaneSupport")[(4,)] == int(
        present(present(switch.port(4)).info.vl_cap))
    assert cells(switch_walk, "ibSmaPortHeadOfQueueLife")[(4,)] == present(
        switch.port(4)).info.hoq_life
    faces_host = present(switch.port(1))
    assert cells(switch_walk, "ibSmaPortPartEnforceInbound")[(1,)] == (
        TRUE if faces_host.info.partition_enforcement_inbound else FALSE)


def test_port_info_enumeration_edges(mib: InfinibandMib) -> None:
    fabric = build_fabric("single")
    (node,) = fabric.nodes.values()
    changed = with_port(
        fabric, node.guid, 1,
        link_speed_active=LinkSpeed.SDR, link_speed_ext_active=LinkSpeedExt(0),
        link_speed_supported=LinkSpeed.SDR, link_speed_ext_supported=LinkSpeedExt(0),
        link_speed_enabled=LinkSpeed.SDR, link_speed_ext_enabled=LinkSpeedExt(0),
        link_width_active=LinkWidth.X12,
        link_width_supported=LinkWidth.X1 | LinkWidth.X4 | LinkWidth.X12,
        link_width_enabled=LinkWidth.X2 | LinkWidth.X4, port_state=PortState.ARMED,
        phys_state=PortPhysState.PHY_TEST, link_down_default_state=LinkDownDefaultState.SLEEP,
        neighbor_mtu=Mtu.MTU_256, operational_vls=VLCap.VL0_14,
    )
    found = walk(mib, ContextTarget(changed, changed.nodes[node.guid], True))
    expected = {
        "ibSmaPortLinkSpeedActive": 1, "ibSmaPortLinkSpeedSupported": 1,
        "ibSmaPortLinkSpeedEnabled": 2,
        "ibSmaPortLinkWidthActive": 3, "ibSmaPortLinkWidthSupported": 3,
        "ibSmaPortLinkWidthEnabled": 10,
        "ibSmaPortLinkState": 4, "ibSmaPortPhysState": 8, "ibSmaPortLinkDownDefaultState": 2,
        "ibSmaPortNeighborMtu": 1, "ibSmaPortOperationalVls": 5,
    }
    assert {name: cells(found, name)[(1,)] for name in expected} == expected
    # Port 2 of the single host is not cabled: down(2), polling(3).
    assert cells(found, "ibSmaPortLinkState")[(2,)] == 2
    assert cells(found, "ibSmaPortPhysState")[(2,)] == 3


# -- GUIDInfo, P_Key, SL-to-VL, VL arbitration -----------------------------------------------


def test_guid_info(switch_walk: Found, sm_host_walk: Found, switch: Node, sm_host: Node) -> None:
    guids = cells(sm_host_walk, "ibSmaGuidVal")
    assert guids == {(p.num, i + 1): g.to_bytes(8, "big")
                     for p in sm_host.ports for i, g in enumerate(present(p.guids))}
    assert guids[(1, 1)] == present(present(sm_host.port(1)).guid).to_bytes(8, "big")
    # A switch answers GUIDInfo for port 0 alone (IBA 14.2.5.5): its rows are
    # port 0's, under 255; its external ports have none.
    port0 = present(switch.port(0))
    assert port0.guids == (port0.guid,)
    assert cells(switch_walk, "ibSmaGuidVal") == {(255, 1): present(port0.guid).to_bytes(8, "big")}


def test_guid_info_of_a_port_without_guids(
        mib: InfinibandMib, fabric: Fabric, sm_host: Node) -> None:
    # A CA port with no GUID assigned: "1 entry with a 0 value" (the draft);
    # one whose GUIDInfo is not known (None): no rows.
    for guids, expected in (((), {(1, 1): bytes(8)}), (None, {})):
        port = dataclasses.replace(present(sm_host.port(1)), guids=guids)
        node = dataclasses.replace(
            sm_host, ports=tuple(port if p.num == 1 else p for p in sm_host.ports))
        changed = dataclasses.replace(
            fabric, nodes=MappingProxyType({**fabric.nodes, node.guid: node}))
        found = cells(walk(mib, ContextTarget(changed, node, False, 10.0)), "ibSmaGuidVal")
        assert {key: value for key, value in found.items() if key[0] == 1} == expected, guids


def test_p_key_tables(switch_walk: Found, sm_host_walk: Found, switch: Node, sm_host: Node) -> None:
    pkeys = sm_host.management_port.pkeys
    membership = cells(sm_host_walk, "ibSmaPKeyMembership")
    assert set(membership) == {(255, i) for i in range(1, present(sm_host.partition_cap) + 1)}
    base = cells(sm_host_walk, "ibSmaPKeyBase")
    assert base == {(255, i + 1): key & 0x7FFF for i, key in enumerate(pkeys)}
    for i, key in enumerate(pkeys):
        assert membership[(255, i + 1)] == (3 if key & 0x8000 else 2)
    assert membership[(255, len(pkeys) + 1)] == 1  # an unused entry: none(1), no base
    # A switch: port 0's table under 255, each data port's enforcement table under its number.
    switch_membership = cells(switch_walk, "ibSmaPKeyMembership")
    cap = present(present(switch.switch).partition_enforcement_cap)
    assert len(switch_membership) == (present(switch.partition_cap)
                                      + present(switch.num_ports) * cap)
    assert cells(switch_walk, "ibSmaPKeyBase")[(255, 1)] == 0x7FFF
    host_port = present(switch.port(1))
    assert host_port.pkeys
    assert [cells(switch_walk, "ibSmaPKeyBase").get((1, i + 1))
            for i in range(len(host_port.pkeys))] == [k & 0x7FFF for k in host_port.pkeys]


def test_limited_membership_is_reported() -> None:
    fabric = build_fabric("fat-tree:spines=2,leaves=4,hosts=3", seed=1)
    limited = next(n for n in fabric.nodes.values()
                   if n.is_ca and any(not k & 0x8000 for k in n.management_port.pkeys))
    found = walk(InfinibandMib([SMA_MIB]), ContextTarget(fabric, limited, False))
    index = limited.management_port.pkeys.index(0x0002) + 1
    assert cells(found, "ibSmaPKeyMembership")[(255, index)] == 2
    assert cells(found, "ibSmaPKeyBase")[(255, index)] == 2


def test_sl_to_vl(switch_walk: Found, sm_host_walk: Found, switch: Node, sm_host: Node) -> None:
    ca = cells(sm_host_walk, "ibSmaVirtualLane")
    assert ca == {(p.num, 255, sl + 1): vl for p in sm_host.ports for sl, vl in enumerate(p.sl2vl)}
    table = cells(switch_walk, "ibSmaVirtualLane")
    ports = present(switch.num_ports) + 1
    assert len(table) == ports * ports * 16
    for out in (0, 1, 30):
        for into in (0, 2, 36):
            for sl in (0, 5, 15):
                key = (out or 255, into or 255, sl + 1)
                assert table[key] == present(switch.port(out)).sl2vl[sl]


def with_sl2vl_inputs(fabric: Fabric, guid: int, num: int,
                      inputs: tuple[tuple[int, tuple[int, ...]], ...]) -> Fabric:
    """A copy of the fabric whose switch port (guid, num) has per-input SL-to-VL tables."""
    node = fabric.nodes[guid]
    ports = tuple(dataclasses.replace(p, sl2vl_inputs=inputs) if p.num == num else p
                  for p in node.ports)
    nodes = dict(fabric.nodes)
    nodes[guid] = dataclasses.replace(node, ports=ports)
    return dataclasses.replace(fabric, nodes=MappingProxyType(nodes))


def test_sl_to_vl_tables_read_per_input_port(
        mib: InfinibandMib, fabric: Fabric, switch: Node) -> None:
    # Port 1's tables were read from input ports 0 and 3 only (as a live
    # sweep whose other SMPs went unanswered leaves them): those two pairs
    # have rows, the others of port 1 none; port 2 keeps one table for all.
    from_switch, from_port_3 = tuple(range(16)), (7,) * 16
    changed = with_sl2vl_inputs(fabric, switch.guid, 1, ((0, from_switch), (3, from_port_3)))
    table = cells(walk(mib, ContextTarget(changed, changed.nodes[switch.guid], False, 10.0)),
                  "ibSmaVirtualLane")
    port_1 = {key: vl for key, vl in table.items() if key[0] == 1}
    assert port_1 == {**{(1, 255, sl + 1): vl for sl, vl in enumerate(from_switch)},
                      **{(1, 3, sl + 1): vl for sl, vl in enumerate(from_port_3)}}
    ports = present(switch.num_ports) + 1
    assert len([key for key in table if key[0] == 2]) == ports * 16


def test_vl_arbitration(
        switch_walk: Found, sm_host_walk: Found, switch: Node, sm_host: Node) -> None:
    for found, node in ((switch_walk, switch), (sm_host_walk, sm_host)):
        high = cells(found, "ibSmaHiPriWeight")
        low_vl = cells(found, "ibSmaLowPriVirtLane")
        assert set(high) == {(p.num, n + 1)
                             for p in node.data_ports for n in range(len(p.vl_arb_high))}
        for port in node.data_ports:
            for n, entry in enumerate(port.vl_arb_high):
                assert high[(port.num, n + 1)] == entry.weight
            for n, entry in enumerate(port.vl_arb_low):
                assert low_vl[(port.num, n + 1)] == entry.vl
        assert all(key[0] != 0 for key in high)


# -- forwarding tables -----------------------------------------------------------------------


def test_linear_forwarding_table(
        mib: InfinibandMib, fabric: Fabric, switch: Node, switch_walk: Found) -> None:
    lft = linear_forwarding_table(fabric, switch.guid)
    rows = cells(switch_walk, "ibSmaLinForwEgressPort")
    assert rows == {(lid,): port for lid, port in enumerate(lft) if port != UNROUTED_PORT}
    # The switch itself: port 0, as the SM programs it.
    assert rows[(present(switch.port(0)).lid,)] == 0
    host = next(p for p in switch.data_ports
                if p.remote and not fabric.nodes[p.remote.guid].is_switch)
    host_lid = fabric.port_at(present(host.remote)).lid
    assert rows[(host_lid,)] == host.num
    target = ContextTarget(fabric, switch, False)
    assert int(served(mib.get(target, oid_of("ibSmaLinForwEgressPort") + (host_lid,)))) == host.num
    assert mib.get(target, oid_of("ibSmaLinForwEgressPort") + (0,)) is NO_SUCH_INSTANCE


def test_linear_forwarding_tables_differ_between_switches(
        mib: InfinibandMib, fabric: Fabric) -> None:
    spines = [n for n in fabric.nodes.values() if present(n.description).startswith("spine")]
    tables = [cells(walk(mib, ContextTarget(fabric, s, False)), "ibSmaLinForwEgressPort")
              for s in spines]
    assert tables[0] and tables[0] != tables[1]


def test_multicast_forwarding_masks(fabric: Fabric, switch: Node, switch_walk: Found) -> None:
    masks = multicast_forwarding_table(fabric, switch.guid)
    rows = cells(switch_walk, "ibSmaMulForwMask")
    assert set(rows) == {(mlid,) for mlid in masks} and rows
    for (mlid,), octets in rows.items():
        assert len(octets) == 32
        ports = {n for n in range(256) if octets[n // 8] & (0x80 >> (n % 8))}
        assert ports == {n for n in range(256) if masks[mlid] >> n & 1}


# -- SMInfo, VendorDiag, LedInfo ---------------------------------------------------------------


def test_sm_info_of_the_node_running_the_sm(
        mib: InfinibandMib, fabric: Fabric, sm_host: Node, sm_host_walk: Found) -> None:
    (sm,) = [s for s in fabric.sms if s.node_guid == sm_host.guid]
    assert cells(sm_host_walk, "ibSmaSmGuid") == {(sm.port_num,): sm.guid.to_bytes(8, "big")}
    assert cells(sm_host_walk, "ibSmaSmState") == {(sm.port_num,): 5}  # master
    assert cells(sm_host_walk, "ibSmaSmPriority") == {(sm.port_num,): sm.priority}
    assert cells(sm_host_walk, "ibSmaSmSmKey") == {(sm.port_num,): bytes(8)}
    oid = oid_of("ibSmaSmSmpCount") + (sm.port_num,)
    early = int(served(mib.get(ContextTarget(fabric, sm_host, True, 0.0), oid)))
    late = int(served(mib.get(ContextTarget(fabric, sm_host, True, 100.0), oid)))
    assert early == sm_act_count(sm, 0.0) and late == sm_act_count(sm, 100.0) and late > early
    standby = next(s for s in fabric.sms if s.state is SmState.STANDBY)
    found = walk(mib, ContextTarget(fabric, fabric.nodes[standby.node_guid], True))
    assert cells(found, "ibSmaSmState") == {(standby.port_num,): 4}
    other = next(n for n in fabric.nodes.values()
                 if n.is_ca and n.guid not in {s.node_guid for s in fabric.sms})
    assert not cells(walk(mib, ContextTarget(fabric, other, False)), "ibSmaSmGuid")


def test_vendor_diag(switch_walk: Found, switch: Node) -> None:
    generic = cells(switch_walk, "ibSmaPortGenericDiagCode")
    assert set(generic) == {(255,)} | {(n,) for n in range(1, present(switch.num_ports) + 1)}
    degraded = present(switch.port(3))
    assert generic[(3,)] == int(degraded.info.generic_diag_code) + 1 == 4  # softError
    assert generic[(255,)] == 1  # port 0 ready
    assert cells(switch_walk, "ibSmaPortVendorDiagCode")[(3,)] == degraded.info.vendor_diag_code
    assert cells(switch_walk, "ibSmaPortVendorDiagIndexFwd")[(3,)] == TRUE
    assert cells(switch_walk, "ibSmaPortVendorDiagIndexFwd")[(4,)] == FALSE
    data = cells(switch_walk, "ibSmaPortVendorDiagData")[(3,)]
    assert len(data) == 124 and data.rstrip(b"\0") == degraded.vendor_diag


def test_led_state(mib: InfinibandMib, fabric: Fabric, switch_walk: Found, switch: Node) -> None:
    assert set(cells(switch_walk, "ibSmaLedState").values()) == {3}  # off, LedInfo supported
    beacon = next(n for n in fabric.nodes.values() if n.led_on)
    assert cells(walk(mib, ContextTarget(fabric, beacon, False)), "ibSmaLedState") == {
        (p.num,): 2 if p.led_on else 1 for p in beacon.ports}
    dark = next(n for n in fabric.nodes.values() if n.is_ca and not n.led_on)
    # A CA without IsLEDInfoSupported and no LED lit: the SM cannot tell.
    assert set(cells(walk(mib, ContextTarget(fabric, dark, False)),
                     "ibSmaLedState").values()) == {1}


def test_get_agrees_with_the_walk(
        mib: InfinibandMib, fabric: Fabric, switch: Node, switch_walk: Found, sm_host: Node,
        sm_host_walk: Found) -> None:
    for node, found in ((switch, switch_walk), (sm_host, sm_host_walk)):
        target = ContextTarget(fabric, node, node is sm_host, 10.0)
        for oid, value in list(found.items())[:: max(1, len(found) // 400)]:
            assert plain(mib.get(target, oid)) == plain(value)

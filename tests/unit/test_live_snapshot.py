"""Snapshots of what a sweep read (ibsnmp.live.snapshot), from sweeps built by
hand: every value comes from an answer, and what did not answer is absent."""

from __future__ import annotations

from typing import TypeVar

from tests.support.mib_walk import walk

from ibsnmp.fabric.counters import InterfaceCounters, interface_counters_of
from ibsnmp.fabric.iba import Mtu, PortPhysState, PortState, SmState
from ibsnmp.fabric.model import PortRef
from ibsnmp.live.snapshot import build_fabric, link_state, measured_counters
from ibsnmp.mad.attributes import (
    NODE_INFO,
    PORT_COUNTERS,
    PORT_COUNTERS_EXTENDED,
    PORT_INFO,
    SM_INFO,
    SWITCH_INFO,
    AnyAttribute,
    Attribute,
)
from ibsnmp.mad.counters import ALL_EXTENDED, DATA_EXTENDED, merge_counters
from ibsnmp.mad.discovery import DiscoveredNode, PortTables, Subnet
from ibsnmp.mad import records_generated as mad_records
from ibsnmp.mad.layout import AnyRecord, FieldValue
from ibsnmp.mib.api import NO_SUCH_INSTANCE, ContextTarget
from ibsnmp.mib.loader import definitions
from ibsnmp.mib.sm import IB_SM_MIB
from ibsnmp.mib.sma import SMA_MIB
from ibsnmp.mib.virtual import InfinibandMib

CA, SWITCH = 0x10, 0x20
ACTIVE, LINK_UP, DISABLED = 4, 5, 3

T = TypeVar("T")
R = TypeVar("R", bound=AnyRecord)


def present(value: T | None) -> T:
    """`value`, which the test expects to be there."""
    assert value is not None
    return value


def answer(attribute: Attribute[R], **fields: FieldValue) -> R:
    """The record of an answer carrying `fields` (the rest 0)."""
    return attribute.layout.decode(bytes(attribute.layout.encode(fields)))


def port(**fields: FieldValue) -> mad_records.PortInfo:
    return answer(PORT_INFO, **{"PortState": ACTIVE, "PortPhysicalState": LINK_UP, **fields})


def subnet(*, switch_port1_phys: int = LINK_UP) -> Subnet:
    ca = DiscoveredNode(CA, (), answer(NODE_INFO, NodeType=1, NumPorts=1, NodeGUID=CA,
                                       PortGUID=CA + 1, PartitionCap=64, LocalPortNum=1))
    ca.ports[1] = port(LID=1, NeighborMTU=int(Mtu.MTU_2048), GUIDCap=8, CapabilityMask=0x2)
    tables = ca.tables[1] = PortTables(port_guid=CA + 1)
    tables.expect("guids", 1)
    tables.store("guids", 0, (CA + 1, 0, 0, 0, 0, 0, 0, 0))
    tables.expect("pkeys", 2)  # the second block never answered
    tables.store("pkeys", 0, (0xFFFF,) + (0,) * 31)
    tables.sm_info = answer(SM_INFO, GUID=CA + 1, SM_Key=0, ActCount=7, Priority=3, SMState=3)
    switch = DiscoveredNode(SWITCH, (1,), answer(NODE_INFO, NodeType=2, NumPorts=2,
                                                 NodeGUID=SWITCH, PortGUID=SWITCH,
                                                 PartitionCap=8, LocalPortNum=1))
    switch.description = "S"
    switch.ports[0] = port(LID=2)
    switch.ports[1] = port(PortPhysicalState=switch_port1_phys)
    switch.ports[2] = port(PortState=1, PortPhysicalState=2, NeighborMTU=0)
    switch.switch_info = answer(SWITCH_INFO, LinearFDBTop=2, MulticastFDBCap=32)
    switch.lft = {0: 0xFF, 1: 1, 2: 0}
    switch.mft_pending = 1  # a multicast block never answered
    net = Subnet()
    net.nodes = {CA: ca, SWITCH: switch}
    net.links = {(CA, 1): (SWITCH, 1), (SWITCH, 1): (CA, 1)}
    return net


def test_values_come_from_the_answers_and_the_rest_is_absent() -> None:
    fabric = build_fabric(subnet(), CA)
    ca, switch = fabric.nodes[CA], fabric.nodes[SWITCH]
    assert ca.description is None and switch.description == "S"  # the CA's never answered
    assert fabric.lid_map == {1: PortRef(CA, 1), 2: PortRef(SWITCH, 0)}
    assert ca.ports[0].guid == CA + 1 and ca.ports[0].guids == (CA + 1,)
    assert ca.ports[0].pkeys == ()  # a table with a block missing is not served
    assert ca.ports[0].info.neighbor_mtu is Mtu.MTU_2048
    assert present(switch.port(2)).info.neighbor_mtu is None  # NeighborMTU 0 is no MTU
    assert present(switch.port(1)).guids == () and present(switch.port(1)).guid == SWITCH
    assert [(sm.guid, sm.node_guid, sm.port_num, sm.state, sm.act_count) for sm in fabric.sms] \
        == [(CA + 1, CA, 1, SmState.MASTER, 7)]
    assert fabric.sm_config is None and fabric.partitions == ()


def test_forwarding_tables_are_the_switches_own_and_complete() -> None:
    fabric = build_fabric(subnet(), CA)
    assert not fabric.computes_routes
    assert fabric.forwarding is not None
    assert fabric.forwarding.linear == {SWITCH: bytes([0xFF, 1, 0])}
    assert fabric.forwarding.multicast == {}  # a block is missing: no table


def test_a_link_is_down_when_its_physical_link_is() -> None:
    up = build_fabric(subnet(), CA)
    assert [(link.a, link.b) for link in up.links] == [(PortRef(CA, 1), PortRef(SWITCH, 1))]
    down = build_fabric(subnet(switch_port1_phys=DISABLED), CA)
    assert down.links == () and down.nodes[CA].ports[0].remote is None
    info = present(down.nodes[SWITCH].port(1)).info
    assert info.port_state is PortState.ACTIVE and info.phys_state is PortPhysState.DISABLED
    assert link_state(info) is PortState.DOWN


def test_polled_port_info_and_counters_replace_the_sweeps() -> None:
    polled = {PortRef(SWITCH, 1): port(PortState=1, PortPhysicalState=DISABLED)}
    counters = {PortRef(CA, 1): measured_counters({"PortXmitData": 9, "SymbolErrorCounter": 2,
                                                   "QP1Dropped": 5})}
    fabric = build_fabric(subnet(), CA, port_infos=polled, counters=counters)
    assert present(fabric.nodes[SWITCH].port(1)).info.port_state is PortState.DOWN
    assert dict(present(fabric.measured(fabric.nodes[CA].ports[0])).values) == {
        "port_xmit_data": 9, "symbol_error_counter": 2}
    # A port no PMA answered for has no counters at all, not zeros.
    unanswered = present(fabric.nodes[SWITCH].port(2))
    assert dict(present(fabric.measured(unanswered)).values) == {}


def _answer(attribute: AnyAttribute, **values: int) -> dict[str, FieldValue]:
    """What a PMA's answer carrying `values` (the rest 0) is read as: loosely, to be merged."""
    layout = attribute.layout
    return layout.decoder()(bytes(layout.encode(values)))


BIG = 3 << 40  # past any 32-bit counter


def _interface(basic: dict[str, FieldValue], extended: dict[str, FieldValue] | None,
               kept: frozenset[str] = ALL_EXTENDED) -> InterfaceCounters | None:
    merged, wide = merge_counters(basic, extended, kept)
    measured = measured_counters(merged, wide)
    return interface_counters_of(measured.values, measured.wide)


def test_port_counters_alone_give_no_interface_counters() -> None:
    basic = _answer(PORT_COUNTERS, PortXmitData=0xFFFFFFFF, PortRcvData=7, PortXmitPkts=9, PortRcvPkts=9)
    assert _interface(basic, None) is None  # saturated 32-bit counters: no Counter64 from them


def test_port_counters_extended_give_all_six() -> None:
    basic = _answer(PORT_COUNTERS, PortXmitData=0xFFFFFFFF, PortRcvData=7, SymbolErrorCounter=4)
    extended = _answer(PORT_COUNTERS_EXTENDED, PortXmitData=BIG, PortRcvData=7, PortXmitPkts=10, PortRcvPkts=5,
                       PortUnicastXmitPkts=8, PortUnicastRcvPkts=4, PortMulticastXmitPkts=2,
                       PortMulticastRcvPkts=1)
    assert _interface(basic, extended) == InterfaceCounters(28, BIG * 4, 4, 8, 1, 2)
    merged, wide = merge_counters(basic, extended)
    assert merged["SymbolErrorCounter"] == 4 and merged["PortXmitData"] == BIG


def test_a_data_only_pma_has_octets_but_no_unicast_or_multicast() -> None:
    # A NoIETF PMA answers PortCountersExtended with the last four fields unused.
    basic = _answer(PORT_COUNTERS, PortXmitData=5, PortRcvData=6)
    extended = _answer(PORT_COUNTERS_EXTENDED, PortXmitData=BIG, PortRcvData=6, PortXmitPkts=3, PortRcvPkts=2)
    assert _interface(basic, extended, DATA_EXTENDED) == InterfaceCounters(24, BIG * 4, None, None, None, None)


def test_a_node_description_that_did_not_answer_is_served_as_no_instance() -> None:
    fabric = build_fabric(subnet(), CA)
    objects = definitions().objects
    sma = InfinibandMib([SMA_MIB])
    node_string = objects["ibSmaNodeString"].oid + (0,)
    assert sma.get(ContextTarget(fabric, fabric.nodes[CA], False, 1.0),
                   node_string) is NO_SUCH_INSTANCE
    assert sma.get(ContextTarget(fabric, fabric.nodes[SWITCH], False, 1.0), node_string) == b"S"
    sm = InfinibandMib([IB_SM_MIB])
    target = ContextTarget(fabric, fabric.local_node, True, 1.0)
    served = {name: [bytes(value) for value in walk(sm, target, objects[name].oid).values()]
              for name in ("ibSmNodeInfoNodeGUID", "ibSmNodeInfoDescription")}
    assert len(served["ibSmNodeInfoNodeGUID"]) == 2
    assert served["ibSmNodeInfoDescription"] == [b"S"]  # the CA's row has no description

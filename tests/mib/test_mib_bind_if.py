"""IF-MIB binding: a switch's and a CA's ports as interfaces, walked without SNMP."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from tests.support.measured import with_measured
from tests.support import sysfs_trees as trees
from tests.support.mib_walk import walk as walk_from

from ibsnmp.fabric.traffic import interface_counters
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.iba import PortPhysState, PortState, guid_bytes
from ibsnmp.fabric.interface_history import InterfaceHistory
from ibsnmp.fabric.interfaces import context_interfaces, interface_name
from ibsnmp.fabric.model import Fabric, MeasuredCounters, Node, PortRef
from ibsnmp.mib.api import NO_SUCH_INSTANCE, ContextTarget, SetError
from ibsnmp.mib.ifmib import if_mib_binding
from ibsnmp.mib.loader import definitions
from ibsnmp.mib.registry import build_mib
from ibsnmp.mib.subtrees import IF_MIB_IFMIB, IF_MIB_INTERFACES
from ibsnmp.mib.virtual import InfinibandMib
from ibsnmp.mqtt.codec import decode_state, encode_state, record_of
from ibsnmp.providers.sysfs import build_fabric as sysfs_fabric
from ibsnmp.providers.sysfs_read import SysfsReader

ELAPSED = 600.0
MASK32 = (1 << 32) - 1


@pytest.fixture(scope="module")
def mib() -> InfinibandMib:
    return InfinibandMib([if_mib_binding()])


def oid(name: str) -> tuple[int, ...]:
    return definitions().objects[name].oid


def walk(mib: Any, target: ContextTarget) -> dict[tuple[int, ...], Any]:
    return {**walk_from(mib, target, IF_MIB_INTERFACES), **walk_from(mib, target, IF_MIB_IFMIB)}


def column(found: dict[tuple[int, ...], Any], name: str) -> dict[int, Any]:
    """ifIndex -> value of one column, as the pysnmp path boxes it."""
    prefix = oid(name)
    return {key[-1]: value for key, value in found.items() if key[:-1] == prefix}


def leaf(fabric: Fabric) -> Node:
    return next(n for n in fabric.nodes.values() if n.is_switch and n.description == "leaf01")


def test_a_switch_has_its_data_ports_with_every_column(mib: InfinibandMib, fabric: Fabric) -> None:
    switch = leaf(fabric)
    found = walk(mib, ContextTarget(fabric, switch, False, ELAPSED))
    assert int(found[oid("ifNumber") + (0,)]) == 36
    assert list(column(found, "ifIndex")) == list(range(1, 37))  # port 0 is no interface
    assert column(found, "ifIndex") == {i: i for i in range(1, 37)}
    assert str(column(found, "ifDescr")[3]) == "leaf01/3" == str(column(found, "ifName")[3])
    assert set(map(int, column(found, "ifType").values())) == {199}
    up, down, disabled = switch.port(1), switch.port(7), switch.port(6)
    assert up is not None and down is not None and disabled is not None
    assert down.info.phys_state is PortPhysState.POLLING
    assert disabled.info.phys_state is PortPhysState.DISABLED
    assert int(column(found, "ifMtu")[1]) == 4096
    assert int(column(found, "ifSpeed")[1]) == MASK32  # 100 Gb/s is above Gauge32: its maximum
    assert int(column(found, "ifHighSpeed")[1]) == 100_000
    assert int(column(found, "ifHighSpeed")[7]) == 0 == int(column(found, "ifSpeed")[7])
    assert up.guid is not None
    assert bytes(column(found, "ifPhysAddress")[1]) == guid_bytes(up.guid)
    assert (int(column(found, "ifAdminStatus")[1]) == 1
            and int(column(found, "ifOperStatus")[1]) == 1)
    assert (int(column(found, "ifAdminStatus")[7]) == 1
            and int(column(found, "ifOperStatus")[7]) == 2)
    assert (int(column(found, "ifAdminStatus")[6]) == 2
            and int(column(found, "ifOperStatus")[6]) == 2)
    assert set(map(int, column(found, "ifLastChange").values())) == {0}  # no history
    assert up.remote is not None
    peer = fabric.nodes[up.remote.guid]
    assert str(column(found, "ifAlias")[1]) == f"{peer.description}/{up.remote.port}"
    assert str(column(found, "ifAlias")[7]) == ""
    assert set(map(int, column(found, "ifLinkUpDownTrapEnable").values())) == {1}
    assert set(map(int, column(found, "ifPromiscuousMode").values())) == {2}
    assert set(map(int, column(found, "ifConnectorPresent").values())) == {1}
    assert set(map(int, column(found, "ifCounterDiscontinuityTime").values())) == {0}
    counters = interface_counters(fabric, up, ELAPSED)
    assert counters is not None and counters.in_octets
    assert int(column(found, "ifHCInOctets")[1]) == counters.in_octets
    assert int(column(found, "ifHCOutOctets")[1]) == counters.out_octets
    assert int(column(found, "ifHCInUcastPkts")[1]) == counters.in_ucast_pkts
    assert int(column(found, "ifHCOutUcastPkts")[1]) == counters.out_ucast_pkts
    assert int(column(found, "ifHCInMulticastPkts")[1]) == counters.in_mcast_pkts
    assert int(column(found, "ifHCOutMulticastPkts")[1]) == counters.out_mcast_pkts
    assert int(column(found, "ifInOctets")[1]) == counters.in_octets & MASK32
    assert int(column(found, "ifOutUcastPkts")[1]) == counters.out_ucast_pkts & MASK32
    assert int(column(found, "ifInMulticastPkts")[1]) == counters.in_mcast_pkts & MASK32
    assert type(column(found, "ifHCInOctets")[1]).__name__ == "Counter64"
    assert type(column(found, "ifInOctets")[1]).__name__ == "Counter32"
    # Nobody counts these on InfiniBand: no instance, never a made-up zero.
    for name in ("ifInNUcastPkts", "ifInDiscards", "ifInErrors", "ifInUnknownProtos", "ifOutQLen",
                 "ifSpecific", "ifHCInBroadcastPkts", "ifOutBroadcastPkts"):
        assert column(found, name) == {}, name
    for table in ("ifStackTable", "ifRcvAddressTable", "ifTestTable"):
        assert not [k for k in found if k[: len(oid(table))] == oid(table)], table
    assert int(found[oid("ifTableLastChange") + (0,)]) == 0
    assert int(found[oid("ifStackLastChange") + (0,)]) == 0


def test_a_ca_has_its_ports_named_and_reaching_its_switch(
        mib: InfinibandMib, fabric: Fabric) -> None:
    ca = next(n for n in fabric.nodes.values() if n.is_ca)
    found = walk(mib, ContextTarget(fabric, ca, False, ELAPSED))
    port = ca.port(1)
    assert port is not None and port.remote is not None
    assert list(column(found, "ifIndex")) == [p.num for p in ca.ports]
    assert str(column(found, "ifName")[1]) == f"{ca.description}/1"
    switch = fabric.nodes[port.remote.guid]
    assert str(column(found, "ifAlias")[1]) == f"{switch.description}/{port.remote.port}"
    assert port.guid is not None
    assert bytes(column(found, "ifPhysAddress")[1]) == guid_bytes(port.guid)
    counters = interface_counters(fabric, port, ELAPSED)
    assert counters is not None
    assert int(column(found, "ifHCOutOctets")[1]) == counters.out_octets


def test_counters_move_with_time_and_wrap_as_counter32(mib: InfinibandMib, fabric: Fabric) -> None:
    switch = leaf(fabric)
    at = {t: walk(mib, ContextTarget(fabric, switch, False, t)) for t in (100.0, 200.0)}
    early, late = (int(column(at[t], "ifHCInOctets")[1]) for t in (100.0, 200.0))
    assert late > early
    port = switch.port(1)
    assert port is not None
    counters = interface_counters(fabric, port, 200.0)
    assert counters is not None
    full = counters.in_octets
    assert full is not None
    assert int(column(at[200.0], "ifInOctets")[1]) == full % 2**32


def test_the_counter_columns_read_the_time(mib: InfinibandMib, fabric: Fabric) -> None:
    # The walk cache keeps every step but those that read the time.
    target = ContextTarget(fabric, leaf(fabric), False, ELAPSED)
    timed = set()
    key = oid("ifIndex") + (36,)  # the end of ifIndex: the next step is ifDescr.1
    for name in ("ifHCInOctets", "ifInOctets", "ifLastChange", "ifCounterDiscontinuityTime"):
        step = mib.next_step(target, oid(name))
        assert step is not None and step[2] is False, name
        timed.add(name)
    for name in ("ifName", "ifHighSpeed", "ifAlias", "ifDescr", "ifOperStatus"):
        step = mib.next_step(target, oid(name))
        assert step is not None and step[2] is True, name
    step = mib.next_step(target, key)
    assert step is not None
    assert step[2] is True


def test_a_port_without_a_64_bit_source_has_no_counter_instances(mib: InfinibandMib,
                                                                   fabric: Fabric) -> None:
    ca = next(n for n in fabric.nodes.values() if n.is_ca)
    narrow = MeasuredCounters({"port_xmit_data": 10, "port_rcv_data": 20})  # 32-bit PortCounters
    wide = MeasuredCounters({"port_xmit_data": 2**40, "port_rcv_data": 7},
                            frozenset({"port_xmit_data"}))
    for measured, present in ((narrow, set()), (wide, {"ifHCOutOctets", "ifOutOctets"})):
        alone = dataclasses.replace(fabric, nodes={**fabric.nodes, ca.guid: dataclasses.replace(
            ca, ports=ca.ports[:1])})
        changed = with_measured(alone, {ca.ports[0].ref: measured})
        node = changed.nodes[ca.guid]
        found = walk(mib, ContextTarget(changed, node, False, ELAPSED))
        counter_names = {name for name in definitions().objects
                         if name.startswith(("ifHC", "ifIn", "ifOut")) and name != "ifIndex"
                         and column(found, name)}
        assert counter_names == present
        assert column(found, "ifName")  # the row is there
    found = walk(mib, ContextTarget(changed, node, False, ELAPSED))
    assert int(column(found, "ifHCOutOctets")[1]) == 2**42  # words times 4
    assert int(column(found, "ifOutOctets")[1]) == 0  # 2**42 wraps to 0 in 32 bits


def test_a_host_context_numbers_every_ca(mib: InfinibandMib, fabric: Fabric) -> None:
    cas = sorted((n for n in fabric.nodes.values() if n.is_ca), key=lambda n: n.guid)[:3]
    entity = (cas[2].guid, cas[0].guid, cas[1].guid)  # any order: ifIndex follows GUID order
    found = walk(mib, ContextTarget(fabric, cas[1], False, ELAPSED, entity))
    names = column(found, "ifName")
    expected = {position * 256 + port.num: interface_name(ca, port.num)
                for position, ca in enumerate(cas) for port in ca.ports}
    assert {1, 257, 513} <= set(expected)
    assert {index: str(name) for index, name in names.items()} == expected
    assert list(names) == sorted(expected)
    assert int(found[oid("ifNumber") + (0,)]) == len(expected)
    assert [index for index, _, _ in context_interfaces(fabric, cas[1], entity)] == sorted(expected)


def test_a_sysfs_host_names_its_interfaces_after_its_devices(
        mib: InfinibandMib, tmp_path: Path) -> None:
    trees.mlx5_two_port(tmp_path)
    trees.second_hca(tmp_path)
    host, _ = sysfs_fabric(SysfsReader(tmp_path).read(full=True))
    assert host is not None and len(host.host_node_guids) == 2
    node = host.local_node
    found = walk(mib, ContextTarget(host, node, False, ELAPSED, host.host_node_guids))
    names = {index: str(value) for index, value in column(found, "ifName").items()}
    first, second = sorted([(trees.MLX_NODE_GUID, "mlx5_0"), (trees.MLX1_NODE_GUID, "mlx5_1")])
    assert names[1] == f"{first[1]}/1" and names[257] == f"{second[1]}/1"
    assert set(names.values()) == {"mlx5_0/1", "mlx5_0/2", "mlx5_1/1"}
    assert int(column(found, "ifHighSpeed")[
        [i for i, n in names.items() if n == "mlx5_0/2"][0]]) == 200_000
    # MQTT carries the device name to an aggregator.
    record = decode_state(encode_state(record_of(host, node, ELAPSED, 0.0)), node.guid)
    assert record.node.device_name == node.device_name is not None


def test_a_history_dates_changes_in_centiseconds(fabric: Fabric) -> None:
    history = InterfaceHistory(clock=lambda: 0.0)
    history.observe(fabric, 0.0)
    switch = leaf(fabric)
    port = switch.port(1)
    assert port is not None
    info = port.info._replace(port_state=PortState.DOWN, phys_state=PortPhysState.POLLING)
    node = dataclasses.replace(switch, ports=tuple(
        dataclasses.replace(p, info=info, remote=None) if p.num == 1 else p for p in switch.ports))
    changed = dataclasses.replace(fabric, nodes={**fabric.nodes, switch.guid: node})
    history.observe(changed, 12.34)
    mib = InfinibandMib([if_mib_binding(history)])
    found = walk(mib, ContextTarget(changed, node, False, ELAPSED))
    if history.last_change(PortRef(switch.guid, 1)) is None:
        pytest.skip("this history dates changes by its own clock only")
    changed_at = history.last_change(PortRef(switch.guid, 1))
    assert changed_at is not None
    assert int(column(found, "ifLastChange")[1]) == int(changed_at * 100)
    assert int(column(found, "ifOperStatus")[1]) == 2
    assert int(column(found, "ifLastChange")[2]) == 0


def test_link_traps_off_shows_disabled(fabric: Fabric) -> None:
    mib = InfinibandMib([if_mib_binding(link_traps=lambda: False)])
    found = walk(mib, ContextTarget(fabric, leaf(fabric), False, ELAPSED))
    assert set(map(int, column(found, "ifLinkUpDownTrapEnable").values())) == {2}


def test_writable_if_mib_objects_are_not_writable(fabric: Fabric) -> None:
    from pysnmp.proto import rfc1902

    mib = build_mib()
    target = ContextTarget(fabric, leaf(fabric), False, ELAPSED)
    for name, value in (("ifAdminStatus", rfc1902.Integer32(2)),
                        ("ifAlias", rfc1902.OctetString(b"x")),
                        ("ifLinkUpDownTrapEnable", rfc1902.Integer32(2))):
        with pytest.raises(SetError) as caught:
            mib.prepare_write(target, [(oid(name) + (1,), value)])
        assert caught.value.status == "notWritable", name
    assert mib.get(target, oid("ifInErrors") + (1,)) is NO_SUCH_INSTANCE


def test_a_long_far_end_name_fits_if_alias(mib: InfinibandMib, fabric: Fabric) -> None:
    switch = leaf(fabric)
    port = switch.port(1)
    assert port is not None and port.remote is not None
    peer = fabric.nodes[port.remote.guid]
    long_name = dataclasses.replace(peer, description="h" * 64)  # NodeDescription's 64 octets
    changed = dataclasses.replace(fabric, nodes={**fabric.nodes, peer.guid: long_name})
    alias = str(column(walk(mib, ContextTarget(changed, switch, False, ELAPSED)), "ifAlias")[1])
    suffix = f"/{port.remote.port}"
    assert len(alias) == 64 and alias == "h" * (64 - len(suffix)) + suffix

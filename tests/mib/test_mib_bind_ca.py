"""IB-CA-MIB binding: the context's channel adapter, walked without SNMP."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from tests.support.mib_walk import walk as walk_from
from tests.support.narrow import present

from ibsnmp.fabric.generators import build_fabric
from ibsnmp.mib.api import NO_SUCH_INSTANCE, ContextTarget
from ibsnmp.mib.ca import IB_CA_MIB
from ibsnmp.fabric.model import Fabric
from ibsnmp.mib.loader import definitions
from ibsnmp.mib.virtual import InfinibandMib

MODULE_OID = (1, 3, 6, 1, 3, 117, 4)


@pytest.fixture(scope="module")
def mib() -> InfinibandMib:
    return InfinibandMib([IB_CA_MIB])



def walk(mib: InfinibandMib, target: ContextTarget) -> dict[tuple[int, ...], Any]:
    return walk_from(mib, target, MODULE_OID)


def column(name: str) -> tuple[int, ...]:
    return definitions().objects[name].oid


def cells(found: dict[tuple[int, ...], Any], name: str) -> dict[tuple[int, ...], Any]:
    """suffix -> value for one column."""
    prefix = column(name)
    return {oid[len(prefix):]: v for oid, v in found.items() if oid[: len(prefix)] == prefix}


def readable_columns() -> list[str]:
    d = definitions()
    return [o.name for o in d.objects.values()
            if o.module == "IB-CA-MIB" and o.kind == "column" and d.readable(o.name)]


def test_every_readable_column_has_an_instance_on_a_ca(mib: InfinibandMib, fabric: Fabric) -> None:
    ca = next(n for n in fabric.nodes.values() if n.is_ca)
    found = walk(mib, ContextTarget(fabric, ca, False, 10.0))
    names = readable_columns()
    assert len(names) == 3 + 14 + 7 + 1
    for name in names:
        assert cells(found, name), name


def test_general_and_attribute_values_follow_the_model(mib: InfinibandMib, fabric: Fabric) -> None:
    for ca in (n for n in fabric.nodes.values() if n.is_ca):
        found = walk(mib, ContextTarget(fabric, ca, False, 0.0))
        info = present(ca.ca)
        assert cells(found, "ibCaNodeGuid") == {(1,): ca.guid.to_bytes(8, "big")}
        assert cells(found, "ibCaType") == {(1,): int(info.ca_type)}
        assert cells(found, "ibCaNumPorts") == {(1,): ca.num_ports}
        assert cells(found, "ibCaPathMtuSetSupport") == {(1,): int(present(info.max_path_mtu))}
        truth: Callable[[bool | None], int] = lambda flag: 1 if flag else 2  # noqa: E731
        assert cells(found, "ibCaHasReliableDatagram") == {(1,): truth(info.reliable_datagram)}
        assert cells(found, "ibCaHasReliableConnection") == {(1,): truth(info.reliable_connection)}
        assert cells(found, "ibCaSupportsSubnetManager") == {(1,): truth(info.subnet_manager)}


def test_truth_values_and_mtu_enumeration() -> None:
    fabric = build_fabric("single")
    (ca,) = fabric.nodes.values()
    found = walk(InfinibandMib([IB_CA_MIB]), ContextTarget(fabric, ca, True, 0.0))
    # The simulated HCA: RC yes, RD no; MTU up to 4096 is mtu256n512n1024n2048n4096(5).
    info = present(ca.ca)
    assert info.reliable_connection and not info.reliable_datagram
    assert cells(found, "ibCaHasReliableConnection")[(1,)] == 1
    assert cells(found, "ibCaHasReliableDatagram")[(1,)] == 2
    assert present(info.max_path_mtu).octets == 4096
    assert cells(found, "ibCaPathMtuSetSupport")[(1,)] == 5


def test_port_and_gid_tables_list_every_port(mib: InfinibandMib) -> None:
    fabric = build_fabric("single")
    (ca,) = fabric.nodes.values()
    found = walk(mib, ContextTarget(fabric, ca, True, 0.0))
    ports = {(1, p.num): p for p in ca.ports}
    assert len(ports) == 2
    assert cells(found, "ibCaPortGuid") == {
        k: present(p.guid).to_bytes(8, "big") for k, p in ports.items()}
    assert cells(found, "ibCaPhysicalInterface") == {
        k: int(present(p.physical_interface)) for k, p in ports.items()}
    info = present(ca.ca)
    assert set(cells(found, "ibCaMaxGidsPerPort").values()) == {info.max_gids_per_port}
    ipd = info.interpacket_delay if info.static_rate_control else 0
    assert set(cells(found, "ibCaInterpacketDelayValue").values()) == {ipd}
    gids = cells(found, "ibCaPortGidValue")
    expected = {(1, p.num, i + 1): p.gid(i).to_bytes(16, "big")
                for p in ca.ports for i in range(len(present(p.guids)))}
    assert gids == expected and gids
    # GID = subnet prefix (8 octets) then the port GUID.
    for (_, num, _), value in gids.items():
        value = bytes(value)
        assert value[:8] == fabric.subnet_prefix.to_bytes(8, "big")
        assert value[8:] == present(present(ca.port(num)).guid).to_bytes(8, "big")


def test_get_matches_the_walk(mib: InfinibandMib, fabric: Fabric) -> None:
    ca = next(n for n in fabric.nodes.values() if n.is_ca)
    target = ContextTarget(fabric, ca, False, 5.0)
    found = walk(mib, target)
    assert found
    for oid, value in found.items():
        assert mib.get(target, oid) == value
    assert mib.get(target, column("ibCaNodeGuid") + (2,)) is NO_SUCH_INSTANCE
    assert mib.get(target, column("ibCaPortGuid") + (1, 99)) is NO_SUCH_INSTANCE


def test_a_switch_has_no_ca_rows(mib: InfinibandMib, fabric: Fabric) -> None:
    switch = next(n for n in fabric.nodes.values() if n.is_switch)
    target = ContextTarget(fabric, switch, True, 5.0)
    assert walk(mib, target) == {}
    assert mib.get(target, column("ibCaNodeGuid") + (1,)) is NO_SUCH_INSTANCE


def test_one_gid_row_per_guid_entry(mib: InfinibandMib) -> None:
    fabric = build_fabric("single")
    (ca,) = fabric.nodes.values()
    port = ca.ports[0]
    assert port.guid is not None
    alias = port.guid + 0x100
    node = dataclasses.replace(
        ca, ports=(dataclasses.replace(port, guids=(port.guid, alias)),) + ca.ports[1:])
    gids = cells(walk(mib, ContextTarget(fabric, node, True, 0.0)), "ibCaPortGidValue")
    prefix = fabric.subnet_prefix.to_bytes(8, "big")
    assert gids[(1, port.num, 1)] == prefix + port.guid.to_bytes(8, "big")
    assert gids[(1, port.num, 2)] == prefix + alias.to_bytes(8, "big")
    assert (1, port.num, 3) not in gids

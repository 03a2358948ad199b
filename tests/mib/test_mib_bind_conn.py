"""IBCONNECTION-MIB binding: transport endpoints of the context's node, without SNMP."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from tests.support.mib_walk import walk as walk_from

from ibsnmp.fabric.traffic import connection_counters_at
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.iba import CmState
from ibsnmp.fabric.model import Fabric, Node, RdConnection
from ibsnmp.mib.api import NO_SUCH_INSTANCE, ContextTarget
from ibsnmp.mib.conn import IBCONNECTION_MIB
from ibsnmp.mib.loader import definitions
from ibsnmp.mib.virtual import InfinibandMib

MODULE_OID = (1, 3, 6, 1, 3, 117, 8)
HOUR = 3600.0

SCALARS = {
    "ibConnUDInDatagrams": "ud_in_datagrams",
    "ibConnUDNoQP": "ud_no_qp",
    "ibConnUDInErrors": "ud_in_errors",
    "ibConnUDOutDatagrams": "ud_out_datagrams",
    "ibConnRDInDatagrams": "rd_in_datagrams",
    "ibConnRDNoQP": "rd_no_qp",
    "ibConnRDInErrors": "rd_in_errors",
    "ibConnRDOutDatagrams": "rd_out_datagrams",
    "ibConnCInSegs": "connected_in_segments",
    "ibConnCOutSegs": "connected_out_segments",
}


@pytest.fixture(scope="module")
def mib() -> InfinibandMib:
    return InfinibandMib([IBCONNECTION_MIB])


@pytest.fixture(scope="module")
def ca(fabric: Fabric) -> Node:
    return next(n for n in fabric.nodes.values() if n.is_ca and n.guid in fabric.connections)



def walk(mib: InfinibandMib, target: ContextTarget) -> dict[tuple[int, ...], Any]:
    return walk_from(mib, target, MODULE_OID)


def oid_of(name: str) -> tuple[int, ...]:
    return definitions().objects[name].oid


def cells(found: dict[tuple[int, ...], Any], name: str) -> dict[tuple[int, ...], Any]:
    prefix = oid_of(name)
    return {oid[len(prefix):]: v for oid, v in found.items() if oid[: len(prefix)] == prefix}


def gid_oid(gid: int) -> tuple[int, ...]:
    return tuple(gid.to_bytes(16, "big"))  # fixed-size index: no length sub-identifier


def with_rd(fabric: Fabric, guid: int) -> tuple[Fabric, RdConnection]:
    """A copy of the fabric whose node `guid` also has one RD context pair."""
    conns = fabric.connections[guid]
    qp = conns.connected[0]
    rd = RdConnection(qp.local_gid, qp.local_lid, 0x00ABCD, qp.remote_gid, qp.remote_lid, 0xFFFFFF)
    extra = dataclasses.replace(conns, rd=(rd,), rd_datagrams_per_s=250.0)
    connections = {g: fabric.connections[g] for g in fabric.connections}
    connections[guid] = extra
    return dataclasses.replace(fabric, connections=connections), rd


def test_every_object_has_an_instance_on_a_ca(mib: InfinibandMib, fabric: Fabric, ca: Node) -> None:
    rd_fabric, _ = with_rd(fabric, ca.guid)
    found = walk(mib, ContextTarget(rd_fabric, ca, False, HOUR))
    d = definitions()
    names = [o.name for o in d.objects.values()
             if o.module == "IBCONNECTION-MIB" and o.kind in ("scalar", "column")
             and d.readable(o.name)]
    assert len(names) == 10 + 3 + 6 + 8
    for name in names:
        assert cells(found, name), name


def test_scalars_are_the_model_counters_and_grow(mib: InfinibandMib, fabric: Fabric,
                                                 ca: Node) -> None:
    conns = fabric.connections[ca.guid]
    early = walk(mib, ContextTarget(fabric, ca, False, 60.0))
    later = walk(mib, ContextTarget(fabric, ca, False, 10 * HOUR))
    for name, field in SCALARS.items():
        assert cells(early, name) == {(0,): getattr(connection_counters_at(conns, 60.0), field)}
        assert cells(later, name) == {
            (0,): getattr(connection_counters_at(conns, 10 * HOUR), field)}
    for name in ("ibConnUDInDatagrams", "ibConnUDOutDatagrams", "ibConnCInSegs", "ibConnCOutSegs"):
        assert int(cells(early, name)[(0,)]) < int(cells(later, name)[(0,)]), name


def test_ud_table_follows_the_model(mib: InfinibandMib, fabric: Fabric, ca: Node) -> None:
    conns = fabric.connections[ca.guid]
    found = walk(mib, ContextTarget(fabric, ca, False, HOUR))
    expected = {gid_oid(e.gid) + (e.lid, e.qpn + 1): e for e in conns.ud}
    assert set(cells(found, "ibConnUDLocalQPN")) == set(expected) and expected
    for suffix, ep in expected.items():
        assert cells(found, "ibConnUDGID")[suffix] == ep.gid.to_bytes(16, "big")
        assert cells(found, "ibConnUDLID")[suffix] == ep.lid
        assert cells(found, "ibConnUDLocalQPN")[suffix] == ep.qpn + 1
    # QP0 (wire value 0) is listed as IBQuePairNumber 1.
    assert any(e.qpn == 0 for e in conns.ud)
    assert 1 in {int(v) for v in cells(found, "ibConnUDLocalQPN").values()}


def test_connected_table_follows_the_model(mib: InfinibandMib, fabric: Fabric, ca: Node) -> None:
    conns = fabric.connections[ca.guid]
    found = walk(mib, ContextTarget(fabric, ca, False, HOUR))
    state = cells(found, "ibConnCState")
    assert len(state) == len(conns.connected) > 0
    for qp in conns.connected:
        suffix = (gid_oid(qp.local_gid) + (qp.local_lid, qp.local_qpn + 1)
                  + gid_oid(qp.remote_gid) + (qp.remote_lid, qp.remote_qpn + 1))
        assert state[suffix] == int(qp.state)
        assert cells(found, "ibConnCReliable")[suffix] == (1 if qp.reliable else 2)
        assert cells(found, "ibConnCRQPN")[suffix] == qp.remote_qpn + 1
        assert cells(found, "ibConnCRGID")[suffix] == qp.remote_gid.to_bytes(16, "big")
        assert cells(found, "ibConnCLLID")[suffix] == qp.local_lid
    # The MIB's enumeration: established(5), timeWait(8), ... as iba.CmState.
    assert int(CmState.ESTABLISHED) == 5 and int(CmState.DREP_TIMEOUT) == 14
    assert 5 in {int(v) for v in state.values()}


def test_rd_table_and_eecn_plus_one(mib: InfinibandMib, fabric: Fabric, ca: Node) -> None:
    rd_fabric, rd = with_rd(fabric, ca.guid)
    target = ContextTarget(rd_fabric, ca, False, HOUR)
    found = walk(mib, target)
    suffix = (gid_oid(rd.local_gid) + (rd.local_lid, 0xABCD + 1)
              + gid_oid(rd.remote_gid) + (rd.remote_lid, 0x1000000))
    assert cells(found, "ibConnRDLEEC") == {suffix: 0xABCD + 1}
    assert cells(found, "ibConnRDREEC") == {suffix: 16777216}  # the largest EECN fits the range
    assert mib.get(target, oid_of("ibConnRDRLID") + suffix) == rd.remote_lid
    assert int(cells(found, "ibConnRDInDatagrams")[(0,)]) == int(250.0 * HOUR)
    # The unmodified fabric has no RD contexts.
    assert cells(walk(mib, ContextTarget(fabric, ca, False, HOUR)), "ibConnRDLGID") == {}


def test_get_matches_the_walk(mib: InfinibandMib, fabric: Fabric, ca: Node) -> None:
    target = ContextTarget(fabric, ca, False, HOUR)
    found = walk(mib, target)
    assert found
    for oid, value in found.items():
        assert mib.get(target, oid) == value
    missing = oid_of("ibConnCState") + (0,) * 16 + (1, 1) + (0,) * 16 + (1, 1)
    assert mib.get(target, missing) is NO_SUCH_INSTANCE


def test_a_switch_has_no_connections(mib: InfinibandMib, fabric: Fabric) -> None:
    switch = next(n for n in fabric.nodes.values() if n.is_switch)
    target = ContextTarget(fabric, switch, True, HOUR)
    assert walk(mib, target) == {}
    assert mib.get(target, oid_of("ibConnUDInDatagrams") + (0,)) is NO_SUCH_INSTANCE


def test_a_single_ca_fabric(mib: InfinibandMib) -> None:
    fabric = build_fabric("single")
    (ca,) = fabric.nodes.values()
    found = walk(mib, ContextTarget(fabric, ca, True, HOUR))
    conns = fabric.connections[ca.guid]
    assert len(cells(found, "ibConnUDGID")) == len(conns.ud) > 0
    assert len(cells(found, "ibConnCLGID")) == len(conns.connected)
    assert cells(found, "ibConnUDInDatagrams")

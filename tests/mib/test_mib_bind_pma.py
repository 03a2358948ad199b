"""PMA-MIB binding: per-port counters of the context's node, walked without SNMP."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.mib_walk import walk as walk_from
from tests.support.narrow import present

from ibsnmp.fabric import counters, traffic
from ibsnmp.fabric.changes import with_error_burst
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.model import Fabric, Node
from ibsnmp.mib import pma
from ibsnmp.mib.api import NO_SUCH_INSTANCE, ContextTarget, Missing
from ibsnmp.mib.loader import definitions
from ibsnmp.mib.pma import PMA_MIB
from ibsnmp.mib.virtual import InfinibandMib

MODULE_OID = (1, 3, 6, 1, 3, 117, 6)
HOUR = 3600.0


@pytest.fixture(scope="module")
def mib() -> InfinibandMib:
    return InfinibandMib([PMA_MIB])


@pytest.fixture(scope="module")
def ca(fabric: Fabric) -> Node:
    return next(n for n in fabric.nodes.values() if n.is_ca)


@pytest.fixture(scope="module")
def switch(fabric: Fabric) -> Node:
    return next(n for n in fabric.nodes.values() if n.is_switch)



def walk(mib: InfinibandMib, target: ContextTarget,
         start: tuple[int, ...] = MODULE_OID) -> dict[tuple[int, ...], Any]:
    return walk_from(mib, target, start)


def column(name: str) -> tuple[int, ...]:
    return definitions().objects[name].oid


def cells(found: dict[tuple[int, ...], Any], name: str) -> dict[tuple[int, ...], int]:
    prefix = column(name)
    return {oid[len(prefix):]: int(v) for oid, v in found.items() if oid[: len(prefix)] == prefix}


def served(value: Any | Missing) -> Any:
    """`value`, asserted an instance (not noSuchObject or noSuchInstance)."""
    assert not isinstance(value, Missing)
    return value


def readable_columns() -> list[str]:
    d = definitions()
    return [o.name for o in d.objects.values()
            if o.module == "PMA-MIB" and o.kind == "column" and d.readable(o.name)]


def test_every_column_has_instances_where_the_node_kind_has_them(
        mib: InfinibandMib, fabric: Fabric, ca: Node, switch: Node) -> None:
    on_ca = walk(mib, ContextTarget(fabric, ca, False, HOUR))
    on_switch = walk(mib, ContextTarget(fabric, switch, False, HOUR))
    names = readable_columns()
    assert len(names) == 12 + 4 + 6 + 4 + 2 + 2 + 16 * 5
    for name in names:
        assert cells(on_switch, name), name
        if name.startswith("ibPmaPortVlSwCongestion"):
            assert not cells(on_ca, name), name  # a switch attribute
        else:
            assert cells(on_ca, name), name


def test_rows_are_the_data_ports(mib: InfinibandMib, fabric: Fabric, ca: Node,
                                 switch: Node) -> None:
    for node in (ca, switch):
        found = walk(mib, ContextTarget(fabric, node, False, HOUR))
        ports = {(p.num,) for p in node.data_ports}
        assert set(cells(found, "ibPmaSymbolErrCounter")) == ports
        assert set(cells(found, "ibPmaPortXmitData")) == ports
        assert set(cells(found, "ibPmaPortVlXmitWait0")) == ports
    found = walk(mib, ContextTarget(fabric, switch, False, HOUR))
    assert (0,) not in cells(found, "ibPmaSymbolErrCounter")  # switch port 0 has no PMA row
    assert len(cells(found, "ibPmaSymbolErrCounter")) == switch.num_ports


def test_opcode_tables_are_indexed_by_opcode_plus_one(mib: InfinibandMib, fabric: Fabric,
                                                      ca: Node) -> None:
    found = walk(mib, ContextTarget(fabric, ca, False, HOUR))
    expected = {(p.num, op + 1) for p in ca.data_ports for op in counters.TRACKED_OPCODES}
    for name in ("ibPmaPortOpCodeRcvCntrsRcvPkts", "ibPmaPortVlOpPkt0", "ibPmaPortVlOpData15"):
        assert set(cells(found, name)) == expected
    port = ca.data_ports[0]
    profile = traffic.traffic_profile(fabric, port)
    assert isinstance(profile, traffic.TrafficProfile)
    send_only = 0x04  # RC SEND Only -> index 5
    op = profile.op_rcv_counters_at(send_only, HOUR)
    assert cells(found, "ibPmaPortOpCodeRcvCntrsRcvPkts")[(port.num, 5)] == op.port_op_rcv_pkts > 0
    assert cells(found, "ibPmaPortOpCodeRcvCntrsRcvData")[(port.num, 5)] == op.port_op_rcv_data > 0
    per_vl = profile.vl_op_packets_at(send_only, HOUR).per_vl
    assert [cells(found, f"ibPmaPortVlOpPkt{vl}")[(port.num, 5)]
            for vl in range(16)] == list(per_vl)
    data_vl = profile.vl_op_data_at(send_only, HOUR).per_vl
    assert [cells(found, f"ibPmaPortVlOpData{vl}")[(port.num, 5)]
            for vl in range(16)] == list(data_vl)


def test_values_are_the_model_counters(mib: InfinibandMib, fabric: Fabric, switch: Node) -> None:
    elapsed = 7 * HOUR
    found = walk(mib, ContextTarget(fabric, switch, False, elapsed))
    pairs = {
        "ibPmaSymbolErrCounter": "symbol_error_counter",
        "ibPmaLinkDownedCntr": "link_downed_counter",
        "ibPmaPortRcvErr": "port_rcv_errors",
        "ibPmaPortXmitDiscard": "port_xmit_discards",
        "ibPmaVl15Dropped": "vl15_dropped",
        "ibPmaPortXmitData": "port_xmit_data",
        "ibPmaPortRcvData": "port_rcv_data",
        "ibPmaPortXmitPkts": "port_xmit_pkts",
        "ibPmaPortRcvPkts": "port_rcv_pkts",
    }
    names = [*pairs, "ibPmaPortSwHoqLimitDiscards", "ibPmaPortFlowCtlXmitFlowPkts"]
    names += [f"ibPmaPortVlSwCongestion{vl}" for vl in range(16)]
    by_name = {name: cells(found, name) for name in names}
    for port in switch.data_ports:
        pc = traffic.port_counters(fabric, port, elapsed)
        profile = traffic.traffic_profile(fabric, port)
        assert isinstance(profile, traffic.TrafficProfile)
        for name, field in pairs.items():
            assert by_name[name][(port.num,)] == getattr(pc, field), (name, port.num)
        details = profile.xmit_discard_details_at(elapsed)
        assert (by_name["ibPmaPortSwHoqLimitDiscards"][(port.num,)]
                == details.port_sw_hoq_limit_discards)
        flow = profile.flow_ctl_counters_at(elapsed)
        assert by_name["ibPmaPortFlowCtlXmitFlowPkts"][(port.num,)] == flow.port_xmit_flow_pkts
        congestion = profile.sw_port_vl_congestion_at(elapsed).per_vl
        assert [by_name[f"ibPmaPortVlSwCongestion{vl}"][(port.num,)]
                for vl in range(16)] == list(congestion)
    assert max(by_name["ibPmaPortVlSwCongestion0"].values()) > 0
    # The walk saw traffic: some active port transmitted data.
    assert max(cells(found, "ibPmaPortXmitData").values()) > 0


def test_counters_grow_with_time_and_saturate(mib: InfinibandMib, fabric: Fabric, ca: Node) -> None:
    port = next(p for p in ca.data_ports if p.is_active)
    oid = column("ibPmaPortXmitData") + (port.num,)
    early = int(served(mib.get(ContextTarget(fabric, ca, False, 60.0), oid)))
    later = int(served(mib.get(ContextTarget(fabric, ca, False, 2 * HOUR), oid)))
    assert 0 < early < later
    # Read again at the earlier time: the per-row memo must not leak the later value.
    assert int(served(mib.get(ContextTarget(fabric, ca, False, 60.0), oid))) == early
    # Far in the future every counter sits at or below all ones of its IBA width.
    found = walk(mib, ContextTarget(fabric, ca, False, 1e12))
    assert cells(found, "ibPmaPortXmitData")[(port.num,)] == 0xFFFFFFFF
    assert cells(found, "ibPmaPortVlXmitWait0")[(port.num,)] == 0xFFFF
    for vl in range(16):
        assert all(v <= 3 for v in cells(found, f"ibPmaPortVlXmitFCUpErr{vl}").values())
    assert all(v <= 15 for v in cells(found, "ibPmaLocalLinkIntegrityErr").values())


def test_rows_read_each_snapshots_own_profile(mib: InfinibandMib, fabric: Fabric, ca: Node) -> None:
    """Snapshots that share the rows (a burst keeps them) are read each with
    its own profile, alternately, at one instant, both alive."""
    port = next(p for p in ca.data_ports if p.is_active)
    oid = column("ibPmaSymbolErrCounter") + (port.num,)
    burst = with_error_burst(fabric, port.ref, {"symbol": 7}, at=60.0)
    assert burst.derive_for(pma._ROWS, ca) is fabric.derive_for(pma._ROWS, ca)
    before = int(served(mib.get(ContextTarget(fabric, ca, False, HOUR), oid)))
    after = int(served(mib.get(ContextTarget(burst, ca, False, HOUR), oid)))
    assert after == min(before + 7, 0xFFFF)
    assert int(served(mib.get(ContextTarget(fabric, ca, False, HOUR), oid))) == before
    assert int(served(mib.get(ContextTarget(burst, ca, False, HOUR), oid))) == after


def test_get_matches_the_walk(mib: InfinibandMib, fabric: Fabric, switch: Node) -> None:
    target = ContextTarget(fabric, switch, False, HOUR)
    found = walk(mib, target)
    for oid, value in list(found.items())[::37]:
        assert mib.get(target, oid) == value
    assert mib.get(target, column("ibPmaSymbolErrCounter") + (0,)) is NO_SUCH_INSTANCE
    assert mib.get(target, column("ibPmaSymbolErrCounter")
                   + (present(switch.num_ports) + 1,)) is NO_SUCH_INSTANCE


def test_a_ca_has_no_switch_congestion_rows(mib: InfinibandMib, fabric: Fabric, ca: Node) -> None:
    target = ContextTarget(fabric, ca, False, HOUR)
    start = column("ibPmaPortVlSwCongestion0")[:-1]
    assert walk(mib, target, start) == {}
    assert mib.get(target, column("ibPmaPortVlSwCongestion0") + (1,)) is NO_SUCH_INSTANCE

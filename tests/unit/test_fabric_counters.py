"""PMA counters: IBA widths, saturation, 4-octet words and the traffic model."""

from __future__ import annotations

import dataclasses
from typing import TypeVar

import pytest

from ibsnmp.fabric import build_fabric, counters, traffic
from ibsnmp.fabric.counters import NUM_VLS, TRACKED_OPCODES, PortCounters
from ibsnmp.fabric.traffic import ErrorRates, Flow, TrafficProfile
from ibsnmp.fabric.changes import with_error_burst, with_port_state
from ibsnmp.fabric.iba import PortState
from ibsnmp.fabric.model import Fabric, Port

TIMES = [0, 0.5, 1, 7, 60, 333, 3600, 86_400, 30 * 86_400, 10**9]

IBA_WIDTHS = {
    "symbol_error_counter": 16,
    "link_error_recovery_counter": 8,
    "link_downed_counter": 8,
    "port_rcv_errors": 16,
    "port_rcv_remote_physical_errors": 16,
    "port_rcv_switch_relay_errors": 16,
    "port_xmit_discards": 16,
    "port_xmit_constraint_errors": 8,
    "port_rcv_constraint_errors": 8,
    "local_link_integrity_errors": 4,
    "excessive_buffer_overrun_errors": 4,
    "vl15_dropped": 16,
    "port_xmit_data": 32,
    "port_rcv_data": 32,
    "port_xmit_pkts": 32,
    "port_rcv_pkts": 32,
    "port_xmit_wait": 32,
}


@pytest.fixture(scope="module")
def fabric() -> Fabric:
    return build_fabric("fat-tree:spines=2,leaves=3,hosts=4,ports=2,faults=6", seed=21)


T = TypeVar("T")


def present(value: T | None) -> T:
    """`value`, which the test expects to be there."""
    assert value is not None
    return value


def derived_profile(fabric: Fabric, port: Port) -> TrafficProfile:
    """The profile of a port whose counters were not measured: derived from the seed."""
    profile = traffic.traffic_profile(fabric, port)
    assert isinstance(profile, TrafficProfile)
    return profile


def _ports(fabric: Fabric) -> list[Port]:
    return [p for n in fabric.nodes.values() for p in n.data_ports]


def test_widths_are_the_iba_ones() -> None:
    assert PortCounters.BITS == IBA_WIDTHS
    assert [f.name for f in dataclasses.fields(PortCounters)] == list(IBA_WIDTHS)
    assert counters.PortVLXmitFlowCtlUpdateErrors.BITS == 2
    assert counters.PortVLOpPackets.BITS == 16 and counters.PortVLOpData.BITS == 32
    assert counters.SwPortVLCongestion.BITS == 16 and counters.PortVLXmitWaitCounters.BITS == 16


def test_saturate() -> None:
    assert counters.saturate(-3, 4) == 0
    assert counters.saturate(14.9, 4) == 14
    assert counters.saturate(15, 4) == 15
    assert counters.saturate(10**30, 4) == 15


def test_every_counter_is_monotonic_and_within_its_width(fabric: Fabric) -> None:
    for port in _ports(fabric):
        previous = None
        for t in TIMES:
            now = traffic.port_counters(fabric, port, t)
            for name, bits in IBA_WIDTHS.items():
                value = getattr(now, name)
                assert 0 <= value <= (1 << bits) - 1
                if previous is not None:
                    assert value >= getattr(previous, name), (port.ref, name, t)
            previous = now


def test_counters_saturate_at_all_ones(fabric: Fabric) -> None:
    busy = next(p for p in _ports(fabric) if p.is_active and p.degraded)
    late = traffic.port_counters(fabric, busy, 10**12)
    for name in ("port_xmit_data", "port_rcv_data", "port_xmit_pkts", "port_rcv_pkts", "port_xmit_wait",
                 "symbol_error_counter", "port_rcv_errors", "link_error_recovery_counter",
                 "local_link_integrity_errors"):
        assert getattr(late, name) == (1 << IBA_WIDTHS[name]) - 1, name
    profile = derived_profile(fabric, busy)
    assert set(profile.vl_xmit_flow_ctl_update_errors_at(10**12).per_vl) <= {0, 3}
    assert max(profile.vl_xmit_wait_at(10**12).per_vl) == 0xFFFF


def test_data_counts_four_octet_words() -> None:
    flow = Flow(bytes_per_s=4000.0, packet_bytes=100.0)
    profile = TrafficProfile(True, False, flow, flow, 0.0, 0.0, (1.0,) + (0.0,) * 15, ((0x04, 1.0),))
    at = profile.counters_at(10)
    assert at.port_xmit_data == 40_000 // 4 and at.port_rcv_data == 10_000
    assert at.port_xmit_pkts == 400
    op = profile.op_rcv_counters_at(0x04, 10)
    assert (op.port_op_rcv_pkts, op.port_op_rcv_data) == (400, 10_000)
    assert profile.vl_op_data_at(0x04, 10).per_vl[0] == 10_000
    assert profile.op_rcv_counters_at(0x20, 10).port_op_rcv_pkts == 0


def test_bursts_keep_counters_monotonic() -> None:
    flow = Flow(1e6, 1000.0, burst_period_s=10.0, burst_length_s=2.0, burst_boost=3.0, phase_s=4.0)
    values = [flow.load(t / 10) for t in range(0, 1000)]
    assert values == sorted(values)
    assert flow.load(10.0) == pytest.approx(10.0 + 3.0 * 2.0)  # one whole burst per period


def test_down_port_has_no_traffic(fabric: Fabric) -> None:
    down = [p for p in _ports(fabric) if not p.is_active]
    assert down
    for port in down:
        for t in TIMES:
            now = present(traffic.port_counters(fabric, port, t))
            assert now.port_xmit_data == now.port_rcv_data == now.port_xmit_pkts == now.port_rcv_pkts == 0
            assert now.symbol_error_counter == 0
        profile = derived_profile(fabric, port)
        assert profile.flow_ctl_counters_at(3600).port_xmit_flow_pkts == 0
    single = build_fabric("single", seed=1)
    empty = present(single.local_node.port(2))
    assert traffic.port_counters(single, empty, 3600) == traffic.port_counters(single, empty, 0)


def test_degraded_ports_accumulate_errors_healthy_ones_mostly_not(fabric: Fabric) -> None:
    day = 86_400
    degraded = [p for p in _ports(fabric) if p.degraded and p.is_active]
    assert degraded
    for port in degraded:
        now = present(traffic.port_counters(fabric, port, day))
        assert now.symbol_error_counter > 0 and now.link_error_recovery_counter > 0
        details = derived_profile(fabric, port).rcv_error_details_at(day)
        assert now.port_rcv_errors == min(0xFFFF, sum(dataclasses.astuple(details)))
    healthy = [p for p in _ports(fabric) if p.is_active and not p.degraded]
    quiet = [p for p in healthy
             if present(traffic.port_counters(fabric, p, day)).symbol_error_counter == 0]
    assert len(quiet) > len(healthy) // 2


def test_a_link_carries_what_its_peer_sends(fabric: Fabric) -> None:
    for link in fabric.links[:10]:
        a, b = fabric.port_at(link.a), fabric.port_at(link.b)
        at_a = present(traffic.port_counters(fabric, a, 42))
        at_b = present(traffic.port_counters(fabric, b, 42))
        assert at_a.port_xmit_data == at_b.port_rcv_data and at_a.port_rcv_pkts == at_b.port_xmit_pkts


def test_per_vl_and_opcode_attributes(fabric: Fabric) -> None:
    switch_port = next(p for n in fabric.nodes.values() if n.is_switch for p in n.data_ports if p.is_active)
    ca_port = present(fabric.local_node.port(1))
    for port in (switch_port, ca_port):
        profile = derived_profile(fabric, port)
        assert len(profile.vl_shares) == NUM_VLS and sum(profile.vl_shares) == pytest.approx(1.0)
        total = sum(profile.op_rcv_counters_at(op, 30).port_op_rcv_pkts for op in TRACKED_OPCODES)
        assert total == pytest.approx(profile.counters_at(30).port_rcv_pkts, rel=1e-3, abs=len(TRACKED_OPCODES))
        assert len(profile.vl_op_packets_at(0x04, 30).per_vl) == NUM_VLS
    assert any(derived_profile(fabric, switch_port).sw_port_vl_congestion_at(86_400).per_vl)
    assert not any(derived_profile(fabric, ca_port).sw_port_vl_congestion_at(86_400).per_vl)
    assert derived_profile(fabric, ca_port).flow_ctl_counters_at(1).port_rcv_flow_pkts > 0


def test_per_vl_values_are_each_vls_share_saturated(fabric: Fabric) -> None:
    """Each VL counts its share of the port's total at the attribute's width,
    below the width and past it (where some VLs saturate and others not)."""
    port = next(p for n in fabric.nodes.values() if n.is_switch for p in n.data_ports if p.is_active)
    profile = traffic.traffic_profile(fabric, port)
    assert isinstance(profile, TrafficProfile)
    for t in (0, 30, 86_400, 10**9, 10**12, *(1.5**k for k in range(80))):
        rcv_octets = profile.rcv.octets(t)
        packets = rcv_octets / profile.rcv.packet_bytes * profile.opcode_shares[0][1]
        opcode = profile.opcode_shares[0][0]
        wait = profile.xmit_wait_per_s * profile.xmit.load(t)
        expected = {
            "vl_op_packets": ([counters.saturate(packets * s, 16) for s in profile.vl_shares],
                              profile.vl_op_packets_at(opcode, t).per_vl),
            "vl_xmit_wait": ([counters.saturate(wait * s, 16) for s in profile.vl_shares],
                             profile.vl_xmit_wait_at(t).per_vl),
            "congestion": ([counters.saturate(wait / 256 * s, 16) for s in profile.vl_shares],
                           profile.sw_port_vl_congestion_at(t).per_vl),
        }
        for name, (per_vl, served) in expected.items():
            assert list(served) == per_vl, (name, t)
    # And at a time when the busiest VL has saturated and a quieter one not yet.
    split = [profile.vl_op_packets_at(opcode, 1.5**k).per_vl for k in range(80)]
    assert any(0xFFFF in per_vl and any(0 < v < 0xFFFF for v in per_vl) for per_vl in split)


def test_a_long_history_adds_up_as_a_pass_over_it_does() -> None:
    """A scenario that repeats adds an interval, a down or a burst at every
    event; the counters sum them by bisection (counters._Timeline). Each sum
    equals the pass over the whole history that defines it, to the float."""
    fabric = build_fabric("fat-tree:spines=1,leaves=2,hosts=2", seed=1)
    host = next(n for _, n in sorted(fabric.nodes.items()) if n.is_ca)
    ref = next(p.ref for p in host.ports if p.remote is not None)
    for i in range(300):
        fabric = with_error_burst(fabric, ref, {"symbol": 40 + i % 7, "local_link_integrity": 1 + i % 2},
                                  at=10.0 + 2 * i + (i % 3) * 0.37)
    for i in range(30):
        fabric = with_port_state(fabric, ref, PortState.DOWN, at=10.0 + 20 * i + 1.5)[0]
        fabric = with_port_state(fabric, ref, PortState.ACTIVE, at=10.0 + 20 * i + 5.25)[0]
    profile = traffic.traffic_profile(fabric, fabric.port_at(ref))
    assert isinstance(profile, TrafficProfile) and profile.history is not None
    history = profile.history
    assert history.up is not None and len(history.up) == 31 and len(history.bursts) == 600
    for k in range(1500):
        t = k * 0.5137
        up = [(start, end) for start, end in history.up if start < t]
        assert profile._up_time(t) == sum(min(t, end) - start for start, end in up)
        for flow in (profile.xmit, profile.rcv):
            assert profile._load(flow, t) == sum(flow.load(min(t, end)) - flow.load(start) for start, end in up)
        for kind in ("symbol", "local_link_integrity", "link_downed"):
            by_bursts = sum(n for when, name, n in history.bursts if name == kind and when <= t)
            assert profile._error(kind, t, 0.0) == by_bursts
        downs = sum(1 for when in history.downs if when <= t)
        steady = profile._error("link_downed", t, profile._up_time(t))
        assert profile.counters_at(t).link_downed_counter == min(profile.link_downed_base + steady + downs, 255)


def test_error_rates_default_to_none() -> None:
    assert all(value == 0.0 for value in dataclasses.astuple(ErrorRates()))


def test_sm_act_count_and_connection_counters(fabric: Fabric) -> None:
    master = fabric.master_sm
    assert master is not None
    assert traffic.sm_act_count(master, 0) == master.act_count
    assert present(traffic.sm_act_count(master, 100)) > present(traffic.sm_act_count(master, 10))
    conns = fabric.connections[fabric.local_node_guid]
    early, late = traffic.connection_counters_at(conns, 10), traffic.connection_counters_at(conns, 1000)
    assert late.ud_in_datagrams > early.ud_in_datagrams > 0
    assert late.connected_in_segments > early.connected_in_segments > 0
    assert late.rd_in_datagrams == 0  # ConnectX has no reliable datagram

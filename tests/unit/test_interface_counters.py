"""IF-MIB's 64-bit counters: from the simulated traffic (wrapping at 2**64,
never saturating, agreeing with PortCounters while that has room) and from
measured values, only where those came from a 64-bit source."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import TypeVar

import pytest
from tests.support.measured import measured_port

from ibsnmp.fabric import build_fabric
from ibsnmp.fabric.changes import with_counters_cleared, with_port_state
from ibsnmp.fabric.counters import EXTENDED_NAMES, InterfaceCounters, interface_counters_of
from ibsnmp.fabric.traffic import IDLE, Flow, TrafficProfile, extended_counters, interface_counters, port_counters, traffic_profile
from ibsnmp.fabric.iba import PortState
from ibsnmp.fabric.ibnetdiscover import export
from ibsnmp.fabric.ibnetdiscover_read import read_topology
from ibsnmp.fabric.model import Fabric, MeasuredCounters, Port

TIMES = [0, 0.5, 7, 333, 3600, 86_400, 30 * 86_400]
MAX32 = (1 << 32) - 1

T = TypeVar("T")


def present(value: T | None) -> T:
    """`value`, which the test expects to be there."""
    assert value is not None
    return value


@pytest.fixture(scope="module")
def fabric() -> Fabric:
    return build_fabric("fat-tree:spines=2,leaves=3,hosts=4,ports=2,faults=6", seed=21)


def _linked(fabric: Fabric) -> list[Port]:
    return [p for n in fabric.nodes.values() for p in n.data_ports if p.remote is not None and p.is_active]


def test_every_simulated_port_has_all_six(fabric: Fabric) -> None:
    for node in fabric.nodes.values():
        for port in node.data_ports:
            counters = interface_counters(fabric, port, 600.0)
            assert counters is not None
            assert None not in dataclasses.astuple(counters)


def test_octets_are_port_counters_words_times_four_until_saturation(fabric: Fabric) -> None:
    checked = 0
    for port in _linked(fabric):
        for t in TIMES:
            pc = port_counters(fabric, port, t)
            ic = interface_counters(fabric, port, t)
            assert pc is not None and ic is not None
            if pc.port_xmit_data < MAX32:
                assert ic.out_octets == pc.port_xmit_data * 4
                checked += 1
            else:  # saturated there, still counting here
                assert ic.out_octets is not None and ic.out_octets > MAX32 * 4
            if pc.port_rcv_data < MAX32:
                assert ic.in_octets == pc.port_rcv_data * 4
            if pc.port_xmit_pkts < MAX32:
                assert present(ic.out_ucast_pkts) + present(ic.out_mcast_pkts) == pc.port_xmit_pkts
    assert checked > 100


def test_some_counters_pass_what_port_counters_can_hold(fabric: Fabric) -> None:
    month = 30 * 86_400
    saturated = [p for p in _linked(fabric)
                 if present(port_counters(fabric, p, month)).port_xmit_data == MAX32]
    assert saturated
    for port in saturated:
        assert present(present(interface_counters(fabric, port, month)).out_octets) > 4 * MAX32


def test_multicast_is_a_small_share(fabric: Fabric) -> None:
    for port in _linked(fabric):
        ic = interface_counters(fabric, port, 86_400)
        assert ic is not None
        total = present(ic.out_ucast_pkts) + present(ic.out_mcast_pkts)
        assert total > 0
        assert 0.0005 <= present(ic.out_mcast_pkts) / total <= 0.021


def test_peer_receives_what_the_port_sends(fabric: Fabric) -> None:
    for port in _linked(fabric):
        peer = fabric.port_at(present(port.remote))
        for t in TIMES:
            mine, theirs = interface_counters(fabric, port, t), interface_counters(fabric, peer, t)
            assert mine is not None and theirs is not None
            assert (theirs.in_octets, theirs.in_ucast_pkts, theirs.in_mcast_pkts) == (
                mine.out_octets, mine.out_ucast_pkts, mine.out_mcast_pkts)


def test_never_decreases_without_a_clear(fabric: Fabric) -> None:
    port = _linked(fabric)[0]
    before = None
    for t in [0, 1, 2, 10, 100, 1000, 10_000, 100_000]:
        now = dataclasses.astuple(present(interface_counters(fabric, port, t)))
        if before is not None:
            assert all(a <= b for a, b in zip(before, now))
        before = now


def _steady(bytes_per_s: float, packet_bytes: float = 1024.0) -> TrafficProfile:
    flow = Flow(bytes_per_s, packet_bytes, multicast_share=0.01)
    return TrafficProfile(True, False, flow, IDLE, 0.0, 0.0, (1.0,) + (0.0,) * 15, ())


def test_counts_wrap_at_two_to_the_64() -> None:
    rate = 1e9  # octets a second: 2**64 octets after 18,446,744,073.7 s
    profile = _steady(rate)
    wrap = 2**64 / rate
    before = profile.interface_counters_at(wrap - 1000)
    after = profile.interface_counters_at(wrap + 1000)
    assert before.out_octets is not None and after.out_octets is not None
    assert before.out_octets > 2**64 - 2e12
    assert after.out_octets < 2e12  # wrapped, did not stop at all ones
    expected = (int((rate * (wrap + 1000)) / 4) * 4) % 2**64
    assert after.out_octets == expected
    assert profile.counters_at(wrap + 1000).port_xmit_data == MAX32  # PortCounters saturates meanwhile


def test_packet_counts_wrap_too() -> None:
    profile = _steady(1e9, packet_bytes=1.0)  # a packet an octet; 99 % of them unicast
    t = 2**64 / 0.99e9 + 1000  # unicast packets have just passed 2**64
    after = profile.interface_counters_at(t)
    packets = int(1e9 * t)
    assert after.out_ucast_pkts is not None and after.out_mcast_pkts is not None
    assert after.out_ucast_pkts < 2e13  # wrapped
    assert (after.out_ucast_pkts + after.out_mcast_pkts) % 2**64 == packets % 2**64


def test_a_clear_of_port_counters_clears_the_same_traffic(fabric: Fabric) -> None:
    port = _linked(fabric)[0]
    cleared = with_counters_cleared(fabric, port.ref, ("port_xmit_data", "port_rcv_pkts"), at=100.0)
    before = interface_counters(fabric, port, 200.0)
    after = interface_counters(cleared, cleared.port_at(port.ref), 200.0)
    assert before is not None and after is not None
    cleared_counters = present(port_counters(cleared, cleared.port_at(port.ref), 200.0))
    assert after.out_octets == cleared_counters.port_xmit_data * 4
    assert present(after.out_octets) < present(before.out_octets)
    assert present(after.in_ucast_pkts) < present(before.in_ucast_pkts)
    assert after.out_ucast_pkts == before.out_ucast_pkts  # not cleared
    assert after.in_octets == before.in_octets


def test_a_down_port_stops_counting(fabric: Fabric) -> None:
    port = _linked(fabric)[0]
    down, _ = with_port_state(fabric, port.ref, PortState.DOWN, at=100.0)
    later = interface_counters(down, down.port_at(port.ref), 5000.0)
    at_down = interface_counters(down, down.port_at(port.ref), 100.0)
    assert later == at_down
    assert later is not None and later.out_octets and later.out_octets > 0


def test_extended_counters_are_the_interface_counters_source(fabric: Fabric) -> None:
    port = _linked(fabric)[0]
    measured = extended_counters(fabric, port, 1234.5)
    assert measured is not None and measured.wide == frozenset(EXTENDED_NAMES)
    assert interface_counters_of(measured.values, measured.wide) == interface_counters(fabric, port, 1234.5)
    fresh, measured_port_now = measured_port(fabric, port.ref, measured)
    assert extended_counters(fresh, measured_port_now, 1.0) is None


# -- measured values -------------------------------------------------------------


def _measured_port(fabric: Fabric, values: dict[str, int], wide: frozenset[str]) -> tuple[Fabric, Port]:
    return measured_port(fabric, _linked(fabric)[0].ref, MeasuredCounters(MappingProxyType(values), wide))


def test_measured_wide_counters_are_served_in_octets() -> None:
    values = {"port_xmit_data": 2**62 + 5, "port_rcv_data": 10, "port_xmit_pkts": 7, "port_rcv_pkts": 9,
              "unicast_xmit_pkts": 6, "unicast_rcv_pkts": 8, "multicast_xmit_pkts": 1, "multicast_rcv_pkts": 1,
              "symbol_error_counter": 3}
    counters = interface_counters_of(values, frozenset(EXTENDED_NAMES))
    assert counters == InterfaceCounters(40, (4 * (2**62 + 5)) % 2**64, 8, 6, 1, 1)


def test_measured_without_a_64_bit_source_has_no_counters(fabric: Fabric) -> None:
    values = {"port_xmit_data": 100, "port_rcv_data": 100, "port_xmit_pkts": 1, "port_rcv_pkts": 1}
    fresh, port = _measured_port(fabric, values, frozenset())
    assert interface_counters(fresh, port, 10.0) is None
    assert present(traffic_profile(fresh, port).counters_at(10.0)).port_xmit_data == 100


def test_data_only_extended_set_has_octets_but_no_unicast(fabric: Fabric) -> None:
    # A PMA with PortCountersExtended's data counters only (the NoIETF kind).
    values = {"port_xmit_data": 5, "port_rcv_data": 6, "port_xmit_pkts": 1, "port_rcv_pkts": 2}
    fresh, port = _measured_port(fabric, values, frozenset(values))
    assert interface_counters(fresh, port, 0.0) == InterfaceCounters(24, 20, None, None, None, None)


def test_a_port_without_a_pma_has_none(fabric: Fabric) -> None:
    fresh, port = _measured_port(fabric, {}, frozenset())
    assert interface_counters(fresh, port, 0.0) is None


def test_a_topology_dump_has_no_counters(fabric: Fabric) -> None:
    dumped = read_topology(export(fabric))
    assert all(interface_counters(dumped, port, 60.0) is None
               for node in dumped.nodes.values() for port in node.ports)

"""InterfaceHistory: ifLastChange, ifCounterDiscontinuityTime and
ifTableLastChange from the snapshots the agent serves."""

from __future__ import annotations

import dataclasses
import time
from types import MappingProxyType

import pytest
from tests.support.measured import with_measured

from ibsnmp.fabric import build_fabric
from ibsnmp.fabric.changes import with_counters_cleared, with_port_state
from ibsnmp.fabric.counters import EXTENDED_NAMES
from ibsnmp.fabric.interface_history import InterfaceHistory
from ibsnmp.fabric.iba import PortState
from ibsnmp.fabric.model import Fabric, MeasuredCounters, Port, PortRef
from ibsnmp.fabric.swap import Swap
from ibsnmp.providers.simulated import SimulatedProvider

SPEC = "fat-tree:spines=2,leaves=3,hosts=4,ports=2"


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fabric() -> Fabric:
    return build_fabric(SPEC, seed=5)


def _host_port(fabric: Fabric) -> PortRef:
    host = next(n for n in fabric.nodes.values() if not n.is_switch)
    return next(p.ref for p in host.ports if p.remote is not None)


def _every_ref(fabric: Fabric) -> list[PortRef]:
    return [p.ref for n in fabric.nodes.values() for p in n.ports]


def test_nothing_is_recorded_at_start(fabric: Fabric) -> None:
    history = InterfaceHistory(Clock())
    history.observe(fabric, 0.0)
    history.observe(fabric, 5.0)
    assert all(history.last_change(ref) is None and history.discontinuity(ref) is None
               for ref in _every_ref(fabric))
    assert history.table_last_change is None


def test_a_link_change_is_dated_by_the_scenario(fabric: Fabric) -> None:
    clock = Clock(1000.0)
    history = InterfaceHistory(clock)
    history.observe(fabric, 50.0)  # the provider started 50 s before the agent
    ref = _host_port(fabric)
    peer = fabric.port_at(ref).remote
    assert peer is not None
    down, _ = with_port_state(fabric, ref, PortState.DOWN, at=62.5)
    clock.now = 1020.0  # served 7.5 s after it happened
    history.observe(down, 70.0)
    assert history.last_change(ref) == pytest.approx(12.5)
    assert history.last_change(peer) == pytest.approx(12.5)
    # Down -> Init has no date in the history: dated when seen (dormant now).
    init, _ = with_port_state(down, ref, PortState.INIT, at=80.0)
    clock.now = 1030.0
    history.observe(init, 80.0)
    assert history.last_change(ref) == pytest.approx(30.0)
    up, _ = with_port_state(init, ref, PortState.ACTIVE, at=85.0)
    clock.now = 1036.0
    history.observe(up, 86.0)
    assert history.last_change(ref) == pytest.approx(35.0)
    assert history.discontinuity(ref) is None  # a link change clears no counter


def test_a_change_before_the_start_is_not_recorded(fabric: Fabric) -> None:
    ref = _host_port(fabric)
    down, _ = with_port_state(fabric, ref, PortState.DOWN, at=3.0)
    cleared = with_counters_cleared(down, ref, ("port_xmit_data",), at=4.0)
    clock = Clock()
    history = InterfaceHistory(clock)
    history.observe(cleared, 10.0)
    clock.now += 1
    history.observe(with_counters_cleared(cleared, ref, ("symbol_error_counter",), at=11.0), 11.0)
    assert history.last_change(ref) is None and history.discontinuity(ref) is None


def test_a_clear_of_traffic_counters_is_a_discontinuity(fabric: Fabric) -> None:
    clock = Clock()
    history = InterfaceHistory(clock)
    history.observe(fabric, 0.0)
    ref = _host_port(fabric)
    errors_only = with_counters_cleared(fabric, ref, ("symbol_error_counter",), at=5.0)
    clock.now += 6
    history.observe(errors_only, 6.0)
    assert history.discontinuity(ref) is None  # IF-MIB serves no error counter
    cleared = with_counters_cleared(errors_only, ref, ("port_rcv_pkts",), at=9.0)
    clock.now += 4
    history.observe(cleared, 10.0)
    assert history.discontinuity(ref) == pytest.approx(9.0)
    assert history.last_change(ref) is None


def _with_measured(fabric: Fabric, ref: PortRef, values: dict[str, int], wide: frozenset[str]) -> Fabric:
    return with_measured(fabric, {ref: MeasuredCounters(MappingProxyType(values), wide)})


def _measured(xmit_words: int, symbol_errors: int = 0) -> dict[str, int]:
    values = dict.fromkeys(EXTENDED_NAMES, 100)
    values["port_xmit_data"] = xmit_words
    values["symbol_error_counter"] = symbol_errors
    return values


def test_a_measured_counter_going_back_is_a_discontinuity(fabric: Fabric) -> None:
    ref = _host_port(fabric)
    wide = frozenset(EXTENDED_NAMES)
    clock = Clock()
    history = InterfaceHistory(clock)
    history.observe(_with_measured(fabric, ref, _measured(500), wide), 0.0)
    clock.now += 3
    history.observe(_with_measured(fabric, ref, _measured(900, symbol_errors=2), wide), 3.0)
    assert history.discontinuity(ref) is None
    clock.now += 3
    history.observe(_with_measured(fabric, ref, _measured(900, symbol_errors=0), wide), 6.0)
    assert history.discontinuity(ref) is None  # a 16-bit error counter: no IF-MIB instance
    clock.now += 3
    history.observe(_with_measured(fabric, ref, _measured(10), wide), 9.0)
    assert history.discontinuity(ref) == pytest.approx(9.0)
    clock.now += 3
    history.observe(_with_measured(fabric, ref, _measured(5), frozenset()), 12.0)
    assert history.discontinuity(ref) == pytest.approx(9.0)  # 32-bit only: nothing served, nothing compared


def test_nodes_that_come_and_go(fabric: Fabric) -> None:
    clock = Clock()
    history = InterfaceHistory(clock)
    host = next(n for n in fabric.nodes.values() if not n.is_switch)
    without = dataclasses.replace(
        fabric, nodes=MappingProxyType({g: n for g, n in fabric.nodes.items() if g != host.guid}), )
    history.observe(without, 0.0)
    interfaces = len(history)
    clock.now += 4
    history.observe(fabric, 4.0)
    ref = PortRef(host.guid, host.ports[0].num)
    assert history.table_last_change == pytest.approx(4.0)
    assert history.last_change(ref) == pytest.approx(4.0) and history.discontinuity(ref) == pytest.approx(4.0)
    assert len(history) == interfaces + len(host.ports)
    clock.now += 4
    history.observe(without, 8.0)
    assert history.table_last_change == pytest.approx(8.0)
    assert history.last_change(ref) is None and history.discontinuity(ref) is None
    assert len(history) == interfaces  # nothing kept of a node that left


def test_a_switch_management_port_is_no_interface(fabric: Fabric) -> None:
    history = InterfaceHistory(Clock())
    history.observe(fabric, 0.0)
    switch_ports = sum(len(n.ports) - 1 for n in fabric.nodes.values() if n.is_switch)
    ca_ports = sum(len(n.ports) for n in fabric.nodes.values() if not n.is_switch)
    assert len(history) == switch_ports + ca_ports


def test_follow_sees_every_swap_of_a_provider() -> None:
    provider = SimulatedProvider(SPEC, seed=5)
    history = InterfaceHistory()
    started = time.monotonic()
    history.follow(provider)
    ref = _host_port(provider.snapshot)
    provider._fabric, _ = with_port_state(provider.snapshot, ref, PortState.DOWN, at=provider.elapsed())
    when = history.last_change(ref)
    assert when is not None and 0.0 <= when <= time.monotonic() - started


def _unchanged(port: Port) -> Port:
    return dataclasses.replace(port)


def test_an_equal_but_new_port_object_is_no_change(fabric: Fabric) -> None:
    history = InterfaceHistory(Clock())
    history.observe(fabric, 0.0)
    ref = _host_port(fabric)
    node = fabric.nodes[ref.guid]
    nodes = dict(fabric.nodes)
    nodes[ref.guid] = dataclasses.replace(node, ports=tuple(_unchanged(p) for p in node.ports))
    history.observe(dataclasses.replace(fabric, nodes=MappingProxyType(nodes)), 1.0)
    assert history.last_change(ref) is None and history.table_last_change is None


def test_a_failing_swap_listener_stops_neither_the_swap_nor_the_others(caplog: pytest.LogCaptureFixture) -> None:
    provider = SimulatedProvider(SPEC, seed=5)
    seen: list[Swap] = []

    def broken(swap: Swap) -> None:
        raise RuntimeError("a listener's bug")

    provider.add_swap_listener(broken)
    provider.add_swap_listener(seen.append)
    old = provider.snapshot
    ref = _host_port(old)
    new, _ = with_port_state(old, ref, PortState.DOWN, at=1.0)
    provider._fabric = new
    # The new snapshot's lineage tells the swap which nodes changed: the link's two ends.
    peer = old.port_at(ref).remote
    assert peer is not None
    assert provider.snapshot is new and seen == [Swap(old, new, frozenset({ref.guid, peer.guid}))]
    assert "snapshot listener failed" in caplog.text


def _state_of(history: InterfaceHistory, fabric: Fabric) -> tuple[object, ...]:
    return (history.table_last_change, len(history),
            [(history.last_change(ref), history.discontinuity(ref)) for ref in _every_ref(fabric)])


def test_a_swap_naming_its_changed_nodes_ends_as_the_full_comparison(fabric: Fabric) -> None:
    ref = _host_port(fabric)
    peer = fabric.port_at(ref).remote
    assert peer is not None
    wide = frozenset(EXTENDED_NAMES)
    counted = _with_measured(fabric, ref, _measured(500), wide)
    went_back = _with_measured(counted, ref, _measured(10), wide)
    down, _ = with_port_state(went_back, ref, PortState.DOWN, at=3.0)
    without = dataclasses.replace(
        down, nodes=MappingProxyType({g: n for g, n in down.nodes.items() if g != ref.guid}), )
    swaps = [(counted, {ref.guid}), (went_back, {ref.guid}), (down, {ref.guid, peer.guid}),
             (without, {ref.guid}), (down, {ref.guid})]
    clock = Clock()
    full, told = InterfaceHistory(clock), InterfaceHistory(clock)
    full.observe(fabric, 0.0)
    told.observe(fabric, 0.0)
    for step, (snapshot, changed) in enumerate(swaps, start=1):
        clock.now += 2
        full.observe(snapshot, 2.0 * step)
        told.observe(snapshot, 2.0 * step, changed)
        assert _state_of(told, fabric) == _state_of(full, fabric), f"after swap {step}"
    assert told.discontinuity(ref) == pytest.approx(10.0) and told.table_last_change == pytest.approx(10.0)


def test_a_swap_naming_one_node_looks_at_no_other(fabric: Fabric) -> None:
    ref = _host_port(fabric)
    peer = fabric.port_at(ref).remote
    assert peer is not None
    down, _ = with_port_state(fabric, ref, PortState.DOWN, at=3.0)
    assert down.nodes[peer.guid] is not fabric.nodes[peer.guid]  # the switch differs too
    clock = Clock()
    history = InterfaceHistory(clock)
    history.observe(fabric, 0.0)
    clock.now += 4
    history.observe(down, 4.0, {ref.guid})
    assert history.last_change(ref) == pytest.approx(3.0)
    assert history.last_change(peer) is None  # not named by the swap: not compared


def test_a_swap_after_one_not_seen_is_compared_whole(fabric: Fabric) -> None:
    ref = _host_port(fabric)
    peer = fabric.port_at(ref).remote
    assert peer is not None
    down, _ = with_port_state(fabric, ref, PortState.DOWN, at=3.0)
    clock = Clock()
    history = InterfaceHistory(clock)
    history.observe(fabric, 0.0)
    clock.now += 4
    # It says only the host changed since `down`, but the history last saw `fabric`.
    history.observe_swap(Swap(down, down, frozenset({ref.guid})), 4.0)
    assert history.last_change(ref) == pytest.approx(3.0) and history.last_change(peer) == pytest.approx(3.0)

"""Traps 129/130: a threshold's worth of growth fires once, then re-arms;
saturated counters are cleared so the next burst is seen."""

from __future__ import annotations

import time

import pytest

from ibsnmp.events import IbaTrap
from ibsnmp.fabric import build_fabric, traffic
from ibsnmp.fabric.changes import with_counters_cleared, with_error_burst, with_port_info
from ibsnmp.fabric.model import Fabric, PortRef
from ibsnmp.providers.simulated import SimulatedProvider
from ibsnmp.providers.thresholds import ThresholdWatcher

SMALL = "fat-tree:spines=1,leaves=2,hosts=2,faults=0"
LLI = "local_link_integrity"
EBO = "excessive_buffer_overrun"


@pytest.fixture()
def small() -> Fabric:
    return build_fabric(SMALL, seed=3)


def _leaf_port(fabric: Fabric, num: int = 1) -> PortRef:
    leaf = next(n for n in fabric.nodes.values() if n.description == "leaf01")
    return PortRef(leaf.guid, num)


def _lli(fabric: Fabric, ref: PortRef, t: float) -> int:
    now = traffic.port_counters(fabric, fabric.port_at(ref), t)
    assert now is not None
    return now.local_link_integrity_errors


def _polls(fabric: Fabric, ref: PortRef, bursts: list[dict[str, int]], watcher: ThresholdWatcher | None = None,
           clear: bool = True) -> list[tuple[int, IbaTrap, int, bool]]:
    """Poll once a second, a burst half a second before each poll; apply the
    clears the crossings ask for, as the provider does."""
    watcher = watcher or ThresholdWatcher()
    watcher.poll(fabric, 0.0)
    fired = []
    for step, burst in enumerate(bursts, start=1):
        if burst:
            fabric = with_error_burst(fabric, ref, burst, at=step - 0.5)
        for c in watcher.poll(fabric, float(step)):
            fired.append((step, c.trap, c.value, c.clear))
            if c.clear and clear:
                fabric = with_counters_cleared(fabric, c.ref, [c.counter], at=float(step))
    return fired


def test_a_burst_of_three_thresholds_fires_once(small: Fabric) -> None:
    ref = _leaf_port(small)
    assert small.port_at(ref).info.local_phy_errors_threshold == 8
    watcher = ThresholdWatcher()
    assert watcher.poll(small, 0.0) == []
    burst = with_error_burst(small, ref, {LLI: 24}, at=0.5)
    (crossing,) = watcher.poll(burst, 1.0)
    assert (crossing.ref, crossing.trap, crossing.value, crossing.threshold) == (
        ref, IbaTrap.LOCAL_LINK_INTEGRITY, 15, 8)
    assert crossing.clear  # 15 + 8 > 15: no room for another threshold
    event = crossing.event(burst)
    leaf = burst.nodes[ref.guid]
    assert (event.trap, event.node_guid, event.lid, event.port) == (
        IbaTrap.LOCAL_LINK_INTEGRITY, leaf.guid, leaf.ports[0].lid, 1)
    assert watcher.poll(burst, 2.0) == []  # not again for the same errors
    # Through the polls, with the clears applied: once per burst, not three times.
    assert _polls(small, ref, [{LLI: 24}, {}, {}, {LLI: 24}, {}]) == [
        (1, IbaTrap.LOCAL_LINK_INTEGRITY, 15, True), (4, IbaTrap.LOCAL_LINK_INTEGRITY, 15, True)]


def test_without_the_clear_a_saturated_counter_cannot_fire_again(small: Fabric) -> None:
    ref = _leaf_port(small)
    fired = _polls(small, ref, [{LLI: 24}, {}, {LLI: 24}, {LLI: 24}], clear=False)
    assert fired == [(1, IbaTrap.LOCAL_LINK_INTEGRITY, 15, True)]


def test_a_trickle_below_the_threshold_fires_when_it_adds_up(small: Fabric) -> None:
    ref = _leaf_port(small)
    # 3 a poll, threshold 8: 3, 6, then 9 fires (and is cleared); 3, 6, 9 ...
    fired = _polls(small, ref, [{LLI: 3}] * 12)
    assert [(step, value) for step, _, value, _ in fired] == [(3, 9), (6, 9), (9, 9), (12, 9)]
    # Overruns, 5 a poll: 5, then 10 fires; 5, 10 ...
    fired = _polls(small, ref, [{EBO: 5}] * 6)
    assert [(step, trap) for step, trap, _, _ in fired] == [
        (2, IbaTrap.EXCESSIVE_BUFFER_OVERRUN), (4, IbaTrap.EXCESSIVE_BUFFER_OVERRUN),
        (6, IbaTrap.EXCESSIVE_BUFFER_OVERRUN)]


def test_the_provider_clears_and_refires_per_threshold(small: Fabric) -> None:
    ref = _leaf_port(small)
    provider = SimulatedProvider(SMALL, 3, watch_interval=0)
    provider.watcher.poll(provider.snapshot, 0.0)
    fired = []
    for step in range(1, 13):
        provider._fabric = with_error_burst(provider.snapshot, ref, {LLI: 3}, at=provider.elapsed())
        fired += [step for e in provider.check_thresholds() if e.trap is IbaTrap.LOCAL_LINK_INTEGRITY]
    # 3 per poll, threshold 8: the 3rd, 6th, 9th and 12th polls fire (9 >= 8,
    # then the counter is cleared and counts 3, 6, 9 again).
    assert fired == [3, 6, 9, 12]
    assert _lli(provider.snapshot, ref, provider.elapsed()) == 0


def test_a_lower_threshold_rearms_without_clearing(small: Fabric) -> None:
    ref = _leaf_port(small)
    fabric = with_port_info(small, ref, local_phy_errors_threshold=2)
    fired = _polls(fabric, ref, [{LLI: 1}] * 18)
    # One error per poll: every second poll; cleared only once the counter
    # has less than a threshold of room (14 + 2 > 15), then 1, 2 again.
    assert [(step, value, clear) for step, _, value, clear in fired] == [
        (2, 2, False), (4, 4, False), (6, 6, False), (8, 8, False), (10, 10, False),
        (12, 12, False), (14, 14, True), (16, 2, False), (18, 4, False)]


def test_threshold_zero_counts_as_one(small: Fabric) -> None:
    ref = _leaf_port(small)
    fabric = with_port_info(small, ref, overrun_errors_threshold=0)
    watcher = ThresholdWatcher()
    watcher.poll(fabric, 0.0)
    fabric = with_error_burst(fabric, ref, {EBO: 1}, at=0.5)
    (crossing,) = watcher.poll(fabric, 1.0)
    assert crossing.trap is IbaTrap.EXCESSIVE_BUFFER_OVERRUN and crossing.threshold == 1


def test_a_degraded_ports_steady_rate_fires_after_hours() -> None:
    fabric = build_fabric("fat-tree:spines=2,leaves=3,hosts=4,faults=6", seed=21)
    degraded = [p for n in fabric.nodes.values() for p in n.data_ports if p.degraded and p.is_active]
    assert degraded
    watcher = ThresholdWatcher()
    watcher.poll(fabric, 0.0)
    fired: dict[PortRef, list[int]] = {}
    for hour in range(1, 13):
        for crossing in watcher.poll(fabric, hour * 3600.0):
            if crossing.trap is IbaTrap.LOCAL_LINK_INTEGRITY:
                fired.setdefault(crossing.ref, []).append(hour)
    # Two LocalLinkIntegrityErrors an hour: 8 after four hours. Nobody
    # clears the counter here (no provider), so it fires once, saturates.
    assert set(fired) == {p.ref for p in degraded}
    assert all(hours == [4] for hours in fired.values())


def test_a_port_first_seen_after_a_burst_is_armed_from_before_it(small: Fabric) -> None:
    ref = _leaf_port(small, 2)
    watcher = ThresholdWatcher()
    watcher.poll(small, 0.0)  # the port is not watched yet: no errors, no history
    assert watcher.armed(ref) is None
    burst = with_error_burst(small, ref, {EBO: 9}, at=0.5)
    (crossing,) = watcher.poll(burst, 1.0)
    assert crossing.ref == ref and crossing.value == 9


def test_the_watch_set_covers_every_port_that_can_count() -> None:
    fabric = build_fabric("fat-tree:spines=2,leaves=3,hosts=4,ports=2,faults=6", seed=21)
    watched = set(traffic.threshold_watch_ports(fabric))
    for node in fabric.nodes.values():
        for port in node.ports:
            profile = traffic.traffic_profile(fabric, port)
            assert isinstance(profile, traffic.TrafficProfile)
            rates = profile.errors
            if rates.local_link_integrity or rates.excessive_buffer_overrun:
                assert port.ref in watched
    touched = with_error_burst(fabric, PortRef(next(iter(fabric.nodes)), 1), {"symbol": 1}, at=1.0)
    assert PortRef(next(iter(fabric.nodes)), 1) in traffic.threshold_watch_ports(touched)


def test_a_poll_of_a_ten_thousand_node_fabric_is_cheap() -> None:
    fabric = build_fabric("fat-tree:spines=20,leaves=200,hosts=50", seed=1)
    assert len(fabric.nodes) > 10_000
    watcher = ThresholdWatcher()
    watcher.poll(fabric, 0.0)  # builds the watch set once per fabric
    start = time.perf_counter()
    for i in range(1, 11):
        watcher.poll(fabric, float(i))
    per_poll = (time.perf_counter() - start) / 10
    assert len(traffic.threshold_watch_ports(fabric)) < 200
    assert per_poll < 0.02, f"{per_poll * 1e3:.1f} ms per poll"


def test_a_poll_that_read_what_the_last_read_judges_alike() -> None:
    """The same counters on the same structure are not judged again (the
    watcher's shortcut), and what grows after still fires exactly once."""
    fabric = build_fabric("fat-tree:spines=1,leaves=2,hosts=2", seed=3)
    assert not fabric.port_history
    ref = sorted(traffic.threshold_watch_ports(fabric))[0]
    threshold = fabric.port_at(ref).info.local_phy_errors_threshold
    assert threshold is not None
    watcher = ThresholdWatcher()
    assert watcher.poll(fabric, 0.0, {ref: (0, 0)}) == []
    below = {ref: (threshold - 1, 0)}
    assert watcher.poll(fabric, 1.0, below) == []
    assert watcher.poll(fabric, 2.0, dict(below)) == []
    assert watcher.armed(ref) == (0, 0)
    (crossing,) = watcher.poll(fabric, 3.0, {ref: (threshold, 0)})
    assert (crossing.ref, crossing.trap, crossing.value) == (ref, IbaTrap.LOCAL_LINK_INTEGRITY, threshold)
    assert watcher.poll(fabric, 4.0, {ref: (threshold, 0)}) == []

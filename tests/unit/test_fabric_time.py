"""Requests read the fabric in whole ticks (mib.targets.FabricContexts.elapsed):
every request of one hundredth of a second reads counters of one instant,
never one before the snapshot it reads was first served."""

from __future__ import annotations

import pytest
from tests.support.held import Held

from ibsnmp.fabric import build_fabric
from ibsnmp.fabric.changes import with_port_state
from ibsnmp.fabric.traffic import port_counters
from ibsnmp.fabric.iba import PortState
from ibsnmp.fabric.model import Fabric
from ibsnmp.mib.targets import FabricContexts

EPOCH = 1000.0


class Clock:
    def __init__(self) -> None:
        self.now = EPOCH

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def small() -> Fabric:
    return build_fabric("fat-tree:spines=1,leaves=1,hosts=2", seed=1)


def elapsed_at(contexts: FabricContexts, clock: Clock, seconds: float) -> float:
    clock.now = EPOCH + seconds
    target = contexts(b"")
    assert target is not None
    return float(target.elapsed)


def test_requests_in_one_tick_read_one_instant(small: Fabric) -> None:
    clock = Clock()
    contexts = FabricContexts(Held(small, EPOCH), clock)  # type: ignore[arg-type]  # a partial provider
    first = elapsed_at(contexts, clock, 10.001)  # the snapshot's first read: when it happened
    assert first == pytest.approx(10.001)
    assert elapsed_at(contexts, clock, 10.004) == first
    assert elapsed_at(contexts, clock, 10.009) == first
    assert elapsed_at(contexts, clock, 10.0101) == pytest.approx(10.01)  # the next tick
    assert elapsed_at(contexts, clock, 10.0199) == pytest.approx(10.01)
    assert elapsed_at(contexts, clock, 12.3456) == pytest.approx(12.34)


def test_a_new_snapshot_is_never_read_before_it_was_served(small: Fabric) -> None:
    clock = Clock()
    provider = Held(small, EPOCH)
    contexts = FabricContexts(provider, clock)  # type: ignore[arg-type]  # a partial provider
    assert elapsed_at(contexts, clock, 20.001) == pytest.approx(20.001)
    assert elapsed_at(contexts, clock, 20.005) == pytest.approx(20.001)
    # A port goes down at 20.006, in the same tick: a read after it reads the
    # new snapshot at or after the change, so its down is counted.
    host = next(node for node in small.nodes.values() if node.is_ca)
    port = host.ports[0]
    provider.snapshot = with_port_state(small, port.ref, PortState.DOWN, at=20.006)[0]
    after = elapsed_at(contexts, clock, 20.007)
    assert after == pytest.approx(20.007)
    assert elapsed_at(contexts, clock, 20.009) == after  # the rest of the tick: that instant
    down = provider.snapshot.port(host.guid, port.num)
    assert down is not None
    down_counters = port_counters(provider.snapshot, down, after)
    up_counters = port_counters(small, port, after)
    assert down_counters is not None and up_counters is not None
    assert down_counters.link_downed_counter == up_counters.link_downed_counter + 1
    # Read times never go back.
    times = [elapsed_at(contexts, clock, 20.007 + step / 1000) for step in range(30)]
    assert times == sorted(times)

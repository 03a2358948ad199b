"""ifLastChange and the linkDown / linkUp that report a change tell one
time: the interface history, once it reads the agent's sysUpTime
(`use_clock`), dates a change no later than the sysUpTime the notification
carries, which is read when the swap that shows the change is seen (equal
to the tick when nothing dated it earlier)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pysnmp.entity.engine import SnmpEngine
from tests.support import sysfs_trees as trees

from ibsnmp.agentx.service import sys_up_time
from ibsnmp.fabric.changes import with_port_state
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.iba import PortState
from ibsnmp.fabric.interface_history import InterfaceHistory
from ibsnmp.fabric.model import Fabric, PortRef
from ibsnmp.mib.api import ContextTarget, Missing
from ibsnmp.mib.loader import definitions
from ibsnmp.mib.registry import build_mib
from ibsnmp.mib.targets import FabricContexts
from ibsnmp.providers.simulated import SimulatedProvider
from ibsnmp.providers.sysfs import SysfsProvider
from ibsnmp.traps.originator import Outgoing
from ibsnmp.traps.service import NotificationService

SPEC = "fat-tree:spines=2,leaves=2,hosts=2"
SEED = 3
IF_LAST_CHANGE = definitions().objects["ifLastChange"].oid


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def host_port(fabric: Fabric) -> PortRef:
    host = next(n for n in fabric.nodes.values() if n.is_ca and n.guid != fabric.local_node_guid)
    return next(p.ref for p in host.ports if p.remote is not None)


def history_since(start: float) -> tuple[InterfaceHistory, Clock, Fabric, PortRef]:
    """A history whose clock reads `start` as it sees its first snapshot,
    and a host port of that snapshot."""
    fabric = build_fabric(SPEC, seed=SEED)
    clock = Clock(start)
    history = InterfaceHistory(clock)
    history.observe(fabric, 0.0)
    return history, clock, fabric, host_port(fabric)


def test_the_agents_clock_moves_what_was_recorded_and_dates_what_comes() -> None:
    history, own, fabric, ref = history_since(100.0)
    down, _ = with_port_state(fabric, ref, PortState.DOWN, at=1.0)
    own.now = 102.0  # seen 2 s after the history started
    history.observe(down, 5.0)
    seen_at = history.last_change(ref)
    assert seen_at is not None
    # The agent's sysUpTime reads 0.5 s when the history has counted 2.5 s.
    own.now = 102.5
    uptime = Clock(0.5)
    history.use_clock(uptime)
    assert history.last_change(ref) == pytest.approx(seen_at - 2.0)
    # An undated change is dated by the agent's clock, exactly when seen.
    init, _ = with_port_state(down, ref, PortState.INIT, at=9.0)  # Down -> Init has no date
    uptime.now = 7.25
    history.observe(init, 10.0)
    assert history.last_change(ref) == 7.25


def test_what_happened_before_the_agents_zero_reads_zero() -> None:
    history, own, fabric, ref = history_since(0.0)
    own.now = 0.2
    history.observe(with_port_state(fabric, ref, PortState.DOWN, at=0.2)[0], 0.2)
    own.now = 0.4
    history.use_clock(Clock(0.1))  # the agent started 0.3 s after the history
    assert history.last_change(ref) is None


def test_a_scenarios_date_is_never_after_the_change_was_seen() -> None:
    history, clock, fabric, ref = history_since(10.0)
    # The port history dates the change 3 s after the elapsed time it is served at.
    down, _ = with_port_state(fabric, ref, PortState.DOWN, at=8.0)
    clock.now = 15.0
    history.observe(down, 5.0)
    assert history.last_change(ref) == 5.0


class Watching:
    """The agent's pieces on one provider, as `ibsnmp run` wires them: the
    interface history follows it first and reads the engine's sysUpTime, the
    notification service sends linkDown / linkUp (to a relay, kept here)."""

    def __init__(self, provider: SimulatedProvider | SysfsProvider) -> None:
        self.engine = SnmpEngine()
        self.history = InterfaceHistory()
        self.history.follow(provider)
        ticks = sys_up_time(self.engine)
        self.history.use_clock(lambda: ticks() / 100)
        self.sent: list[Outgoing] = []
        self.service = NotificationService(self.engine, provider, relays=[self.sent.append])
        self.mib = build_mib(interfaces=self.history)
        self.contexts = FabricContexts(provider)

    async def until_sent(self, count: int, timeout: float = 10.0) -> list[Outgoing]:
        deadline = time.monotonic() + timeout
        while len(self.sent) < count and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return self.sent

    def if_last_change(self, item: Outgoing) -> int:
        """ifLastChange of the port `item` speaks of, read in its context
        (where its ifIndex is the port number, here)."""
        port = int(item.notification.varbinds[0][1])
        # Recorded: 0 would be "not since the start" (the engine is new: sysUpTime reads ~0).
        assert self.history.last_change(PortRef(item.notification.node_guid, port)) is not None
        target = self.contexts(item.context_name)
        assert isinstance(target, ContextTarget)
        value = self.mib.get(target, IF_LAST_CHANGE + (port,))
        assert not isinstance(value, Missing)
        return int(value)

    def close(self) -> None:
        self.engine.close_dispatcher()


async def run_watching(provider: SimulatedProvider | SysfsProvider,
                       act: Callable[[], object], count: int) -> tuple[Watching, list[Outgoing]]:
    watching = Watching(provider)
    await watching.service.apply(())
    try:
        act()
        sent = await watching.until_sent(count)
    finally:
        await watching.service.close()
        watching.close()
    assert len(sent) == count
    return watching, sent


async def test_a_change_seen_by_the_agent_is_dated_at_its_link_downs_sysuptime(
        tmp_path: Path) -> None:
    trees.mlx5_two_port(tmp_path)
    provider = SysfsProvider(tmp_path, poll_interval=1.0)

    def port_2_down() -> object:
        trees.set_file(tmp_path, "mlx5_0/ports/2/state", "1: DOWN")
        trees.set_file(tmp_path, "mlx5_0/ports/2/phys_state", "3: Disabled")
        return provider.poll()

    watching, (link_down,) = await run_watching(provider, port_2_down, 1)
    assert link_down.notification.name == "linkDown"
    last_change = watching.if_last_change(link_down)
    # One reading of the clock each, one just after the other: a tick may
    # begin between them, never more.
    assert last_change <= int(link_down.uptime) <= last_change + 1


async def test_a_scenarios_change_is_dated_no_later_than_its_link_downs(tmp_path: Path) -> None:
    fabric = build_fabric(SPEC, seed=SEED)
    ref = host_port(fabric)
    peer = fabric.port_at(ref).remote
    assert peer is not None
    (tmp_path / "down.toml").write_text(
        f'[[event]]\nat = 1\naction = "port-down"\nnode = "{fabric.nodes[peer.guid].description}"\n'
        f'port = {peer.port}\n')
    provider = SimulatedProvider(SPEC, SEED, tmp_path / "down.toml", watch_interval=0)
    (step,) = provider.steps
    # The leaf's trap 128, and a linkDown from each end.
    watching, sent = await run_watching(provider, lambda: provider.apply(step), 3)
    link_downs = [item for item in sent if item.notification.name == "linkDown"]
    assert len(link_downs) == 2
    for item in link_downs:
        assert watching.if_last_change(item) <= int(item.uptime)

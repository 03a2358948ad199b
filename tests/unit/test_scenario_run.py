"""The simulated provider runs a scenario from start(): the traps come in
order, at their times, with the right fields, stop() cancels cleanly, and
the shipped examples/all-ten.toml raises all ten traps on the default fabric.
The runs are on virtual time (tests/support/virtual_time.py): exact and
free of wall time."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import TypeVar

import pytest

from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric import traffic
from ibsnmp.fabric.iba import CapabilityMask, PortState
from ibsnmp.fabric.model import Fabric, Node, PortRef
from ibsnmp.providers.scenario import Scenario, load_scenario, parse_scenario
from ibsnmp.providers.simulated import DEFAULT_SPEC, SimulatedProvider
from tests.support.paths import PROJECT_ROOT
from tests.support.virtual_time import on_virtual_time

ROOT = PROJECT_ROOT
ALL_TEN = ROOT / "examples" / "all-ten.toml"
SMALL = "fat-tree:spines=1,leaves=2,hosts=2,faults=0"

SCENARIO = """
[scenario]
name = "small run"
watch_interval = 0.02

[[event]]
at = 0.05
action = "port-down"
node = "host003"
port = 1
up_after = 0.15

[[event]]
at = 0.10
action = "error-burst"
node = "leaf01"
port = 1
errors = { local_link_integrity = 24 }

[[event]]
at = 0.25
action = "bad-p-key"
from = "host001"
to = "host004"
sl = 3
key = 0x8123

[[event]]
at = 0.30
action = "flow-control-watchdog"
node = "spine01"
port = 2
"""


T = TypeVar("T")


def present(value: T | None) -> T:
    """`value`, which the test expects to be there."""
    assert value is not None
    return value


def _node(fabric: Fabric, name: str) -> Node:
    return next(n for n in fabric.nodes.values() if present(n.description).split()[0] == name)


def _on_loop(spec: str, seed: int, scenario: Scenario | Path | None = None, *,
             time_scale: float | None = None, watch_interval: float | None = None) -> SimulatedProvider:
    """A provider whose clock is the running (virtual-time) loop's."""
    return SimulatedProvider(spec, seed, scenario, time_scale=time_scale, watch_interval=watch_interval,
                             clock=asyncio.get_running_loop().time)


def _at(t: float) -> object:
    """Equal to `t` seconds but for float rounding: on virtual time a step
    runs exactly when it falls due, never earlier, never later."""
    return pytest.approx(t, abs=1e-9)


async def _run(provider: SimulatedProvider, seconds: float) -> list[tuple[float, TrapEvent, Fabric]]:
    """Start, collect (time, event, snapshot at emit time) for `seconds`, stop."""
    got: list[tuple[float, TrapEvent, Fabric]] = []
    provider.add_listener(lambda e: got.append((provider.elapsed(), e, provider.snapshot)))
    await provider.start()
    try:
        await asyncio.sleep(seconds)
    finally:
        await provider.stop()
    return got


@on_virtual_time
async def test_a_scenario_run_gives_the_traps_in_order() -> None:
    provider = _on_loop(SMALL, 3, parse_scenario(SCENARIO, "small.toml"))
    start = provider.snapshot
    leaf1, leaf2, spine = _node(start, "leaf01"), _node(start, "leaf02"), _node(start, "spine01")
    host1, host3, host4 = _node(start, "host001"), _node(start, "host003"), _node(start, "host004")
    got = await _run(provider, 0.45)

    events = [e for _, e, _ in got]
    assert [e.trap for e in events] == [
        IbaTrap.LINK_STATE_CHANGE,  # 0.05 host003 down: from leaf02, not the CA
        IbaTrap.LOCAL_LINK_INTEGRITY,  # the next poll after 0.10
        IbaTrap.LINK_STATE_CHANGE,  # 0.20 the link comes back
        IbaTrap.BAD_P_KEY,  # 0.25
        IbaTrap.FLOW_CONTROL_WATCHDOG,  # 0.30
    ]
    down, lli, up, pkey, watchdog = events
    assert down == TrapEvent(IbaTrap.LINK_STATE_CHANGE, leaf2.guid, leaf2.ports[0].lid)
    assert up == down
    assert lli == TrapEvent(IbaTrap.LOCAL_LINK_INTEGRITY, leaf1.guid, leaf1.ports[0].lid, port=1)
    h1, h4 = host1.ports[0], host4.ports[0]
    assert pkey == TrapEvent(
        IbaTrap.BAD_P_KEY, host4.guid, h1.lid, key=0x8123, lid2=h4.lid, gid1=h1.gid(), gid2=h4.gid(),
        qp1=1, qp2=1, sl=3)
    assert watchdog == TrapEvent(IbaTrap.FLOW_CONTROL_WATCHDOG, spine.guid, spine.ports[0].lid, port=2)

    times = [t for t, _, _ in got]
    assert times == sorted(times)
    # Each step's trap at its time; 129 with the first poll (every 0.02 s)
    # at or after the burst at 0.10, which may be the one at 0.10 itself.
    lli_at = times.pop(1)
    assert times == [_at(0.05), _at(0.20), _at(0.25), _at(0.30)]
    assert 0.10 - 1e-9 <= lli_at <= 0.12 + 1e-9
    # The snapshot a listener sees already holds the change the trap reports.
    down_snapshot = got[0][2]
    assert present(down_snapshot.port(host3.guid, 1)).info.port_state is PortState.DOWN
    assert present(start.port(host3.guid, 1)).info.port_state is PortState.ACTIVE
    assert present(got[2][2].port(host3.guid, 1)).info.port_state is PortState.ACTIVE
    # The watcher cleared the saturated counter after the trap.
    final = provider.snapshot
    assert present(traffic.port_counters(final, final.port_at(PortRef(leaf1.guid, 1)),
                                          provider.elapsed())).local_link_integrity_errors == 0


@on_virtual_time
async def test_time_scale_runs_the_same_scenario_faster() -> None:
    text = SCENARIO.replace("watch_interval = 0.02", "watch_interval = 0.5")
    text = text.replace("at = 0.05", "at = 1").replace("up_after = 0.15", "up_after = 3") \
        .replace("at = 0.10", "at = 2").replace("at = 0.25", "at = 5").replace("at = 0.30", "at = 6")
    provider = _on_loop(SMALL, 3, parse_scenario(text), time_scale=0.05)
    got = await _run(provider, 0.45)
    # The traps of the run above, in its order, each at its time x 0.05 (the
    # last at 0.3 s rather than 6 s); 129 with the first poll (every 0.5 x
    # 0.05 s) at or after the burst.
    assert [int(e.trap) for _, e, _ in got] == [128, 129, 128, 257, 131]
    times = [t for t, _, _ in got]
    lli_at = times.pop(1)
    assert times == [_at(1 * 0.05), _at(4 * 0.05), _at(5 * 0.05), _at(6 * 0.05)]
    assert 2 * 0.05 - 1e-9 <= lli_at <= (2 + 0.5) * 0.05 + 1e-9


@on_virtual_time
async def test_stop_cancels_a_running_scenario() -> None:
    text = '[[event]]\nat = 0.05\naction = "bad-q-key"\nfrom = 1\nto = "host004"\nrepeat = 1000\nperiod = 0.05\n'
    provider = _on_loop(SMALL, 3, parse_scenario(text))
    got = await _run(provider, 0.18)
    assert [t for t, _, _ in got] == [_at(0.05), _at(0.10), _at(0.15)]
    # Nothing after stop(): nothing is left scheduled that could raise one.
    assert [task for task in asyncio.all_tasks() if task is not asyncio.current_task()] == []
    await asyncio.sleep(0.15)  # scenario time passes while it is stopped
    assert len(got) == 3
    await provider.stop()  # twice is fine
    await provider.start()  # and it resumes: what fell due meanwhile (0.20-0.30) runs at once
    await asyncio.sleep(0.01)
    await provider.stop()
    # Not the whole history again, and nothing of what falls due later.
    assert [t for t, _, _ in got[3:]] == [_at(0.18 + 0.15)] * 3
    assert [e.trap for _, e, _ in got] == [IbaTrap.BAD_Q_KEY] * 6


@on_virtual_time
async def test_a_failing_listener_does_not_stop_the_scenario() -> None:
    text = '[[event]]\nat = 0\naction = "bad-q-key"\nfrom = 1\nto = "host004"\nrepeat = 3\nperiod = 0.02\n'
    provider = _on_loop(SMALL, 3, parse_scenario(text))

    def broken(event: TrapEvent) -> None:
        raise RuntimeError("receiver bug")

    provider.add_listener(broken)
    got = await _run(provider, 0.1)
    assert [e.trap for _, e, _ in got] == [IbaTrap.BAD_Q_KEY] * 3
    assert [t for t, _, _ in got] == [_at(0.0), _at(0.02), _at(0.04)]


@on_virtual_time
async def test_no_scenario_no_task_but_the_watcher() -> None:
    provider = _on_loop(SMALL, 3, watch_interval=0.01)
    got = await _run(provider, 0.05)
    assert got == []  # a healthy fabric: nothing crosses a threshold


# -- the shipped example ---------------------------------------------------------------


def test_all_ten_loads_and_binds_against_the_default_fabric() -> None:
    scenario = load_scenario(ALL_TEN)
    provider = SimulatedProvider(DEFAULT_SPEC, 1, scenario=scenario)
    steps = provider.steps
    assert [s.action for s in steps] == [
        "port-down", "error-burst", "error-burst", "port-up", "flow-control-watchdog", "capability-mask",
        "system-image-guid", "bad-m-key", "bad-p-key", "bad-q-key", "bad-p-key-switch",
    ]
    assert steps[-1].at <= 30 and scenario.duration <= 30
    names = {provider.snapshot.nodes[s.target.guid].description for s in steps}
    assert {"leaf02", "leaf03", "spine02", "leaf04", "host003 HCA-1", "leaf01", "host011 HCA-1"} <= names


def test_all_ten_expanded_schedule_yields_all_ten_traps() -> None:
    """Without waiting: apply each step at its time and poll the thresholds
    once a second, as the provider would."""
    provider = SimulatedProvider(DEFAULT_SPEC, 1, scenario=ALL_TEN, watch_interval=0)
    from ibsnmp.providers.scenario import apply_step
    from ibsnmp.providers.thresholds import ThresholdWatcher

    fabric = provider.snapshot
    watcher = ThresholdWatcher()
    watcher.poll(fabric, 0.0)
    traps: list[int] = []
    steps = list(provider.steps)
    for second in range(0, 31):
        while steps and steps[0].at <= second:
            fabric, events = apply_step(fabric, steps.pop(0), float(second))
            traps += [int(e.trap) for e in events]
        traps += [int(c.trap) for c in watcher.poll(fabric, second + 0.5)]
    assert traps == [128, 129, 130, 128, 131, 144, 145, 256, 257, 258, 259]


@on_virtual_time
async def test_all_ten_run_accelerated() -> None:
    provider = _on_loop(DEFAULT_SPEC, 1, ALL_TEN, time_scale=0.04)
    got = await _run(provider, 23 * 0.04)
    # The last step's trap at its time x 0.04, not at its time.
    assert got[-1][0] == _at(provider.steps[-1].at * 0.04)
    events = [e for _, e, _ in got]
    assert [int(e.trap) for e in events] == [128, 129, 130, 128, 131, 144, 145, 256, 257, 258, 259]
    assert {int(t) for t in IbaTrap} == {int(e.trap) for e in events}
    fabric = provider.snapshot
    by_name = {present(n.description).split()[0]: n for n in fabric.nodes.values()}
    e = {int(ev.trap): ev for ev in events}
    assert e[129].node_guid == by_name["leaf03"].guid and e[129].port == 2
    assert e[130].node_guid == by_name["spine02"].guid and e[130].port == 4
    assert e[131].node_guid == by_name["leaf04"].guid and e[131].port == 5
    assert e[144].capability_mask is not None and e[144].capability_mask & CapabilityMask.IS_SM
    assert present(fabric.port(by_name["host003"].guid, 1)).info.has(CapabilityMask.IS_SM)
    assert e[145].system_image_guid == 0x7CFE900300CD6200 == by_name["leaf01"].system_image_guid
    assert e[256].lid == by_name["host012"].ports[0].lid and e[256].key == 0
    assert (e[258].lid, e[258].lid2, e[258].key, e[258].qp1, e[258].qp2) == (7, 18, 0xB1C, 0x48, 0x52)
    assert e[259].switch_lid == by_name["leaf02"].ports[0].lid and e[259].data_valid == 0xFF
    assert e[259].lid == by_name["host005"].ports[0].lid and e[259].port == 1
    assert e[257].lid2 == by_name["host011"].ports[0].lid and e[257].sl == 0


LINK_FLAPS = ROOT / "examples" / "link-flaps.toml"


@on_virtual_time
async def test_link_flaps_raises_what_its_comments_promise() -> None:
    """Five flaps between two switches: 20 trap 128s (each end, down and up);
    30 bursts of 3 link-integrity errors against a threshold of 8: 10 trap
    129s; one saturating overrun burst: one 130; six wrong P_Keys: six 257s."""
    scale = 0.02
    provider = _on_loop(DEFAULT_SPEC, 1, LINK_FLAPS, time_scale=scale)
    got = await _run(provider, 95 * scale)
    counts = Counter(int(event.trap) for _, event, _ in got)
    assert counts == {128: 20, 129: 10, 130: 1, 257: 6}
    names = {n.guid: present(n.description).split()[0] for n in provider.snapshot.nodes.values()}
    flaps = Counter(names[event.node_guid] for _, event, _ in got if int(event.trap) == 128)
    assert flaps == {"leaf03": 10, "spine02": 10}

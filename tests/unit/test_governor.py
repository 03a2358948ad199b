"""The CPU governor (ibsnmp.agent.governor) on a fake clock: every source
served within the budget; over it, the sources that cost most dropped
first, a light one never; one source alone may use the whole budget."""

from __future__ import annotations

import pytest

from ibsnmp.agent.governor import CpuGovernor


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def run(governor: CpuGovernor, clock: Clock, demand: dict[str, tuple[float, float]],
        seconds: float, warmup: float = 3.0) -> dict[str, tuple[int, int]]:
    """Each source sends one datagram every `interval` s costing `cost` s,
    for `warmup` + `seconds`; per source (sent, served) after the warm-up
    (the decayed sums take a few half-lives to reach a steady use)."""
    step = 0.0005
    due = dict.fromkeys(demand, 0.0)
    counts = {source: [0, 0] for source in demand}
    t = 0.0
    while t < warmup + seconds:
        for source, (interval, cost) in demand.items():
            if due[source] <= t:
                due[source] += interval
                counted = t >= warmup
                counts[source][0] += counted
                if governor.admit(source):
                    counts[source][1] += counted
                    governor.charge(source, cost)
        t += step
        clock.now += step
    return {source: (sent, served) for source, (sent, served) in counts.items()}


def test_within_the_budget_every_source_is_served() -> None:
    clock = Clock()
    governor = CpuGovernor(0.5, clock=clock)
    # 500 sources at 12 a second, 25 us each (a refused datagram), and a
    # manager every 20 ms at 60 us: 16% of a core in all.
    demand = {f"10.0.{i // 256}.{i % 256}": (1 / 12, 25e-6) for i in range(500)}
    demand["manager"] = (0.02, 60e-6)
    counts = run(governor, clock, demand, 3.0)
    assert all(sent == served for sent, served in counts.values())
    assert governor.dropped == 0 and governor.use() == pytest.approx(0.16, rel=0.2)


def test_over_the_budget_the_costliest_source_is_dropped_first() -> None:
    clock = Clock()
    governor = CpuGovernor(0.5, clock=clock)
    demand = {"flood": (0.001, 0.0009), "manager": (0.02, 0.0002), "poller": (0.1, 0.001)}
    counts = run(governor, clock, demand, 5.0)
    assert counts["manager"][0] == counts["manager"][1] > 200  # never dropped
    assert counts["poller"][0] == counts["poller"][1]
    sent, served = counts["flood"]
    assert served < 0.7 * sent  # the flood alone pays for the budget
    # What it was served keeps the agent near its budget: 0.5 of a core.
    assert governor.use() == pytest.approx(0.5, abs=0.08)


def test_one_source_alone_may_use_the_whole_budget() -> None:
    clock = Clock()
    governor = CpuGovernor(0.5, clock=clock)
    counts = run(governor, clock, {"only": (0.001, 0.0009)}, 5.0)
    sent, served = counts["only"]
    assert served == pytest.approx(sent * 0.5 / 0.9, rel=0.1)


def test_among_equal_heavy_sources_the_budget_is_split_evenly() -> None:
    clock = Clock()
    governor = CpuGovernor(0.6, clock=clock)
    counts = run(governor, clock, {"a": (0.001, 0.0006), "b": (0.001, 0.0006),
                                   "c": (0.002, 0.0006)}, 6.0)
    served = {source: s for source, (_, s) in counts.items()}
    assert served["a"] == pytest.approx(served["b"], rel=0.1)
    assert served["c"] == pytest.approx(served["a"], rel=0.15)  # asks less, gets as much


def test_the_table_keeps_the_most_recent_sources() -> None:
    clock = Clock()
    governor = CpuGovernor(0.5, max_sources=2, clock=clock)
    for source in ("a", "b", "c"):
        governor.charge(source, 0.001)
    assert governor.admit("a")  # forgotten: starts again from nothing


@pytest.mark.parametrize("budget", [0, -0.1, 1.5])
def test_a_budget_is_a_share_of_one_core(budget: float) -> None:
    with pytest.raises(ValueError):
        CpuGovernor(budget)


def test_use_decayed_in_steps_stays_within_a_percent_of_the_exact_sum() -> None:
    """Charges come faster than DECAY_STEP_S: the sums are decayed once a step."""
    import math

    from ibsnmp.agent.governor import DECAY_STEP_S, HALF_LIFE_S

    clock = Clock()
    governor = CpuGovernor(clock=clock)
    tau, exact = HALF_LIFE_S / math.log(2), 0.0
    for _ in range(20_000):  # 0.3 ms apart, 50 us each: a sixth of a core
        governor.charge("manager", 50e-6)
        exact = exact * math.exp(-0.0003 / tau) + 50e-6
        clock.now += 0.0003
    assert DECAY_STEP_S > 0.0003
    assert governor.use() == pytest.approx(exact / tau, rel=0.01)

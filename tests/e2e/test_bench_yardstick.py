"""bench/hostile.py's yardstick: a fixed piece of Python work, run in the
agent's own process on SIGUSR2, with the agent serving on around it."""

from __future__ import annotations

from bench import yardstick
from bench.common import (VENV_BIN, Processes, SnmpClient, parse_oid, start_ibsnmp,
                          wait_until_answers)

SYS_DESCR = parse_oid("1.3.6.1.2.1.1.1.0")


def test_the_workload_reads_every_varbind_and_answers_each() -> None:
    # Its answer is the message written again: nothing read is skipped.
    assert yardstick.workload() == len(yardstick.MESSAGE)
    assert len(yardstick.MESSAGE) > 20 * yardstick.VARBINDS
    assert 0 < yardstick.measure(1) < 1000  # ms


def test_the_agent_measures_the_yardstick_on_sigusr2_and_serves_on() -> None:
    with Processes() as procs:
        proc, port, _ = start_ibsnmp(
            procs, "fat-tree:spines=1,leaves=1,hosts=1",
            launcher=[str(VENV_BIN / "python"), str(yardstick.LAUNCHER)])
        wait_until_answers(port, SYS_DESCR, timeout=60, proc=proc)
        measure = yardstick.AgentYardstick(proc)
        first, second = measure(), measure()
        # Two lines, one per signal, each a CPU time of a few milliseconds at most.
        assert 0 < first < 0.05 and 0 < second < 0.05
        assert sum(yardstick.LINE in line for _, line in proc.lines) == 2
        with SnmpClient(port, timeout=5.0) as client:
            (oid, _, value), = client.request("get", [SYS_DESCR])
        assert oid == SYS_DESCR and b"ibsnmp" in value
        assert proc.alive()

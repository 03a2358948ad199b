"""Walks answered from kept steps, answers and repeated requests still show every change,
through net-snmp's tools: a SET, a request row a manager creates, counters that grow
between two walks, and a port that goes down."""

from __future__ import annotations

from pathlib import Path

from tests.support.e2e import RunningAgent, assert_ok, ibsnmp_agent
from tests.support.waiting import wait_for

READ = ["-v2c", "-c", "public", "-Cr50", "-OQ", "-Ob"]
WRITE = ["-v2c", "-c", "private", "-r", "0", "-t", "5"]
PREFIX = "254.128.0.0.0.0.0.0"  # fe80::/64, the simulated subnet prefix, as index octets
SWEEP = f"IB-SM-MIB::ibSmConfigSweepInterval.{PREFIX}"
ACT_COUNT = "IB-SM-MIB::ibSmConfigActCount"


def _walk(agent: RunningAgent, name: str) -> dict[str, str]:
    out = assert_ok(agent.snmp("snmpbulkwalk", *READ, name))
    return dict(line.split(" = ", 1) for line in out.splitlines() if " = " in line)


def _without(values: dict[str, str], *names: str) -> dict[str, str]:
    return {k: v for k, v in values.items() if not k.startswith(names)}


def test_walks_from_kept_steps_show_sets_new_rows_and_moving_counters() -> None:
    with ibsnmp_agent("--write-community", "private") as agent:
        # ActCount grows with time: it is read anew on every walk.
        config = _without(_walk(agent, "IB-SM-MIB::ibSmConfigTable"), ACT_COUNT)
        assert _without(_walk(agent, "IB-SM-MIB::ibSmConfigTable"), ACT_COUNT) == config
        old = int(config[SWEEP])
        assert_ok(agent.snmp("snmpset", *WRITE, SWEEP, "i", str(old + 7)))
        after = _without(_walk(agent, "IB-SM-MIB::ibSmConfigTable"), ACT_COUNT)
        assert int(after[SWEEP]) == old + 7
        assert _without(after, SWEEP) == _without(config, SWEEP)

        row_status = f"IB-SM-MIB::ibSmPathReqRowStatus.{PREFIX}.9"
        for _ in range(2):
            assert row_status not in _walk(agent, "IB-SM-MIB::ibSmPathReqTable")
        assert_ok(agent.snmp("snmpset", *WRITE, row_status, "i", "5"))  # createAndWait
        assert _walk(agent, "IB-SM-MIB::ibSmPathReqTable")[row_status] == "notInService"

        # The simulated counters grow with time: a later walk reads them anew.
        first = _walk(agent, "PMA-MIB::ibPmaObjects")

        def moved() -> dict[str, str] | None:
            later = _walk(agent, "PMA-MIB::ibPmaObjects")
            return later if sum(first[k] != later.get(k) for k in first) > 10 else None

        second = wait_for(moved, 15, "counters to move", 0.2)
        assert first.keys() == second.keys()
        assert sum(first[k] != second[k] for k in first) > 10


# A link of leaf02 goes down 6 s after the agent starts.
PORT_DOWN = """
[scenario]
time_scale = 1

[[event]]
at = 6
action = "port-down"
node = "leaf02"
port = 1
"""
PORT_STATE = "IB-SM-MIB::ibSmPortInfoState"
DESCRIPTION = "IB-SM-MIB::ibSmNodeInfoDescription"


def test_a_walk_answered_by_repeats_shows_a_port_that_went_down(tmp_path: Path) -> None:
    """The third walk of the port table is answered by repeats of its
    requests (agent.repeats), the first two having kept its steps and then
    its answers; once the port goes down, a walk shows it, never the kept answer."""
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(PORT_DOWN)
    with ibsnmp_agent("--scenario", str(scenario)) as agent:
        names = _walk(agent, DESCRIPTION)
        (leaf,) = [name for name, value in names.items() if "leaf02" in value]
        instance = PORT_STATE + leaf.removeprefix(DESCRIPTION) + ".1"
        for _ in range(3):
            assert instance in _walk(agent, PORT_STATE)

        def went_down() -> dict[str, str] | None:
            states = _walk(agent, PORT_STATE)
            return states if states[instance] == "1" else None  # down(1)

        after = wait_for(went_down, 30, "the walk to show the port down", 0.2)
        assert sum(value == "1" for value in after.values()) >= 2  # both ends of its link

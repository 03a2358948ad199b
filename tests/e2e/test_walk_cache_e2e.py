"""Walks answered from kept steps still show every change, through net-snmp's tools:
a SET, a request row a manager creates, and counters that grow between two walks."""

from __future__ import annotations

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

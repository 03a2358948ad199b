"""snmpSetSerialNo (RFC 3418, SNMPv2-TC TestAndIncr 0..2147483647) refuses a
value outside its range with wrongValue (RFC 3416 4.2.5), badValue in
SNMPv1 (RFC 2576 4.3), and keeps inconsistentValue for an in-range value
other than the one held; a refused SET leaves the lock where it was."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.support.e2e import RunningAgent, assert_ok, ibsnmp_agent, varbinds

SERIAL = "SNMPv2-MIB::snmpSetSerialNo.0"


@pytest.fixture(scope="module")
def agent() -> Iterator[RunningAgent]:
    """Read community "public" (the default), write community "private"."""
    with ibsnmp_agent("--write-community", "private") as running:
        yield running


def held(agent: RunningAgent) -> int:
    result = agent.snmp("snmpget", "-v2c", "-c", "public", "-Oqv", "-r", "0", "-t", "5", SERIAL)
    return int(assert_ok(result).strip())


def refusal(agent: RunningAgent, version: str, value: int) -> str:
    """The error status snmpset reports (-Ir: no client-side range check)."""
    result = agent.snmp("snmpset", version, "-c", "private", "-Ir", "-r", "0", "-t", "5",
                        SERIAL, "i", str(value))
    assert result.returncode != 0, result.stdout
    reason = next(line for line in (result.stdout + result.stderr).splitlines()
                  if line.startswith("Reason:"))
    return reason.split()[1]


@pytest.mark.parametrize("value", [-1, -2147483648])
@pytest.mark.parametrize("version,status", [("-v2c", "wrongValue"), ("-v1", "(badValue)")])
def test_a_value_outside_the_range_is_wrong_value(agent: RunningAgent, value: int, version: str,
                                                  status: str) -> None:
    before = held(agent)
    assert refusal(agent, version, value) == status
    assert held(agent) == before


def test_an_in_range_stale_value_is_still_inconsistent_value(agent: RunningAgent) -> None:
    before = held(agent)
    assert refusal(agent, "-v2c", (before + 1) % 2**31) == "inconsistentValue"
    assert held(agent) == before


def test_the_value_held_is_still_taken(agent: RunningAgent) -> None:
    before = held(agent)
    result = agent.snmp("snmpset", "-v2c", "-c", "private", "-r", "0", "-t", "5",
                        SERIAL, "i", str(before))
    assert varbinds(assert_ok(result)) == [(SERIAL, f"INTEGER: {before}")]
    assert held(agent) == (before + 1) % 2**31

"""The subagent's reconnect backoff: it doubles after each attempt up to
the maximum, and starts again from the first wait after a session that
stayed open at least the maximum (a healthy one), but not after a shorter
one. Session length is measured on a fake clock; the waits themselves are
short real ones."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ibsnmp.agent.agentx_master import MasterAddress
from ibsnmp.agentx import pdu as ax
from ibsnmp.agentx.answers import MasterRequests
from ibsnmp.agent.context_hooks import ContextDirectory
from ibsnmp.agentx.connection import Backoff, Subagent, SubagentOptions
from ibsnmp.mib.api import INFINIBAND_MIB
from ibsnmp.mib.subtrees import SERVED_SUBTREES, Subtrees
from tests.support.set_support import FakeClock
from tests.unit.test_agentx_subagent import ScriptedMaster, until

FIRST, MOST = 0.05, 0.2


def test_failed_attempts_double_up_to_the_maximum() -> None:
    backoff = Backoff(1.0, 60.0, FakeClock())
    assert [backoff.next_wait() for _ in range(8)] == [1, 2, 4, 8, 16, 32, 60, 60]


def test_a_session_as_long_as_the_maximum_starts_the_waits_again() -> None:
    clock = FakeClock()
    backoff = Backoff(1.0, 60.0, clock)
    for _ in range(7):
        backoff.next_wait()  # grown to 60 s while the master was away
    backoff.opened()
    clock.now += 600.0  # a healthy ten-minute session
    assert [backoff.next_wait() for _ in range(3)] == [1, 2, 4]


def test_a_session_shorter_than_the_maximum_keeps_the_grown_wait() -> None:
    clock = FakeClock()
    backoff = Backoff(1.0, 60.0, clock)
    assert [backoff.next_wait() for _ in range(3)] == [1, 2, 4]
    backoff.opened()
    clock.now += 59.0  # accepted and dropped: no reason to hurry back
    assert backoff.next_wait() == 8


def make_subagent(path: Path, clock: FakeClock) -> Subagent:
    regions = Subtrees((INFINIBAND_MIB,))
    requests = MasterRequests(None,  # type: ignore[arg-type]  # no MIB: nothing is read
                              ContextDirectory(lambda _name: None),
                              lambda _c: regions)
    options = SubagentOptions((1, 3, 6, 1, 3, 117, 3), b"test", regions, SERVED_SUBTREES,
                              ping_interval=0.0, first_retry=FIRST, max_retry=MOST)
    return Subagent(MasterAddress(path=str(path)), options, requests, set, clock=clock)


async def test_the_subagent_reconnects_at_once_after_a_healthy_session(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "ibsnmp.agentx")
    clock = FakeClock()
    subagent = make_subagent(tmp_path / "m", clock)
    subagent.start()
    try:
        # No master yet: the wait grows to the maximum.
        await until(lambda: f"retrying in {MOST:g} s" in caplog.text)
        async with ScriptedMaster(tmp_path / "m") as master:
            await until(lambda: subagent.open_event.is_set())
            clock.now += MOST  # the session has been open as long as the maximum wait
            caplog.clear()
            master.send(ax.Close(ax.REASON_BY_MANAGER))
            await until(lambda: len(master.connections) == 2 and subagent.open_event.is_set())
            assert f"reconnecting in {FIRST:g} s" in caplog.text
            caplog.clear()
            master.send(ax.Close(ax.REASON_BY_MANAGER))  # at once: a short session
            await until(lambda: len(master.connections) == 3 and subagent.open_event.is_set())
            assert f"reconnecting in {2 * FIRST:g} s" in caplog.text
    finally:
        await subagent.stop()

"""traps.sent_log: one INFO line per notification sent, at most a burst per window."""

from __future__ import annotations

import logging

import pytest

from ibsnmp.traps.link_events import link_specs
from ibsnmp.traps.mapping import Notification
from ibsnmp.traps.sent_log import SentLog

GUID = 0x0002C90300000001


def _link_down() -> Notification:
    return Notification(link_specs()["linkDown"], GUID, ())


def test_a_burst_is_written_then_counted_and_said_when_the_window_ends(
        caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    sent = SentLog(logging.getLogger("test.sent"), burst=3, window=10.0, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="test.sent"):
        for _ in range(5):
            sent.sent(_link_down(), 2, "port 7")
        lines = [r.getMessage() for r in caplog.records]
        assert lines == [f"notification linkDown from node {GUID:016x}, port 7 sent to 2 receivers"] * 3
        now[0] += 10.0
        sent.sent(_link_down(), 1)
        lines = [r.getMessage() for r in caplog.records][3:]
        assert lines == ["2 more notifications sent in 10 s without a line each",
                         f"notification linkDown from node {GUID:016x} sent to 1 receiver"]


def test_flush_says_what_was_not_written_once(caplog: pytest.LogCaptureFixture) -> None:
    sent = SentLog(logging.getLogger("test.flush"), burst=1, window=10.0, clock=lambda: 100.0)
    with caplog.at_level(logging.INFO, logger="test.flush"):
        sent.sent(_link_down(), 1)
        sent.sent(_link_down(), 1)
        sent.flush()
        sent.flush()
    assert [r.getMessage() for r in caplog.records][1:] == [
        "1 more notification sent in 10 s without a line each"]

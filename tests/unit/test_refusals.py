"""The refusal log (agent.refusals) on a fake clock: the first line, what a
window suppresses, the count line, the flush, the bound on keys, and that no
line names a secret; the prefilter's reasons for v1/v2c refusals."""

from __future__ import annotations

import asyncio
import ipaddress
import logging

import pytest
from tests.support.wire import community_request

from ibsnmp.agent.config import Community, Limits
from ibsnmp.agent.prefilter import Prefilter
from ibsnmp.agent.refusals import (
    COMMUNITY_SOURCE,
    LOGGER_NAME,
    NO_WRITE_ACCESS,
    UNKNOWN_COMMUNITY,
    UNKNOWN_COMMUNITY_CONTEXT,
    UNKNOWN_USER,
    WRONG_DIGEST,
    Reason,
    RefusalLog,
    flushing,
)

SOURCE = "192.0.2.7"
NODE = b"0002c903000a1b2c"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Lines(logging.Handler):
    """What the log wrote, as text."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        assert record.levelno == logging.WARNING
        self.lines.append(record.getMessage())


@pytest.fixture()
def lines() -> Lines:
    return Lines()


def refusal_log(lines: Lines, clock: Clock, **options: float) -> RefusalLog:
    logger = logging.getLogger(f"test-refusals-{id(lines)}")
    logger.propagate = False
    logger.addHandler(lines)
    return RefusalLog(logger, clock=clock, **options)  # type: ignore[arg-type]  # numbers by name


def test_first_line_then_nothing_within_the_window_then_the_count(lines: Lines) -> None:
    clock = Clock()
    log = refusal_log(lines, clock)
    log.refused(SOURCE, UNKNOWN_COMMUNITY)
    assert lines.lines == [f"refused a request from {SOURCE}: unknown community"]
    for _ in range(36):
        clock.now += 1
        log.refused(SOURCE, UNKNOWN_COMMUNITY)
    assert len(lines.lines) == 1
    clock.now = 1060.0  # the window is over: this one and the 36 before it
    log.refused(SOURCE, UNKNOWN_COMMUNITY)
    assert lines.lines[1:] == [
        f"refused 37 more requests from {SOURCE} in the last 60 s: unknown community"]
    clock.now += 59  # its line opened a window of its own
    log.refused(SOURCE, UNKNOWN_COMMUNITY)
    assert len(lines.lines) == 2


def test_each_source_and_reason_has_its_own_line(lines: Lines) -> None:
    log = refusal_log(lines, Clock())
    for source, reason in ((SOURCE, UNKNOWN_COMMUNITY), ("192.0.2.8", UNKNOWN_COMMUNITY),
                           (SOURCE, COMMUNITY_SOURCE), (SOURCE, UNKNOWN_COMMUNITY),
                           ("fe80::1%eth0", UNKNOWN_USER)):
        log.refused(source, reason)
    assert lines.lines == [
        f"refused a request from {SOURCE}: unknown community",
        "refused a request from 192.0.2.8: unknown community",
        f"refused a request from {SOURCE}: community not accepted from this address",
        "refused a request from fe80::1: unknown user",  # without the IPv6 zone
    ]


def test_flush_writes_what_a_window_left_and_forgets_quiet_keys(lines: Lines) -> None:
    clock = Clock()
    log = refusal_log(lines, clock)
    log.refused(SOURCE, UNKNOWN_COMMUNITY)
    log.refused("192.0.2.8", UNKNOWN_COMMUNITY)
    log.refused(SOURCE, UNKNOWN_COMMUNITY)
    log.refused(SOURCE, UNKNOWN_COMMUNITY)
    clock.now += 59.5
    log.flush()  # no window is over yet
    assert len(lines.lines) == 2 and log.tracked == 2
    clock.now += 1
    log.flush()
    assert lines.lines[2:] == [
        f"refused 2 more requests from {SOURCE} in the last 60 s: unknown community"]
    # The quiet key is forgotten; the counted one's line opened a new window.
    assert log.tracked == 1
    log.refused(SOURCE, UNKNOWN_COMMUNITY)
    log.refused("192.0.2.8", UNKNOWN_COMMUNITY)  # forgotten: a first line again
    assert lines.lines[3:] == ["refused a request from 192.0.2.8: unknown community"]
    clock.now += 61
    log.flush()
    assert lines.lines[4:] == [
        f"refused 1 more request from {SOURCE} in the last 61 s: unknown community"]
    clock.now += 61
    log.flush()
    assert log.tracked == 0 and len(lines.lines) == 5


def test_a_refusal_after_a_quiet_window_is_a_first_line(lines: Lines) -> None:
    clock = Clock()
    log = refusal_log(lines, clock)
    log.refused(SOURCE, WRONG_DIGEST, b"monitor")
    clock.now += 300  # no flush ran
    log.refused(SOURCE, WRONG_DIGEST, b"monitor")
    assert lines.lines == [f"refused a request from {SOURCE}: wrong digest for user monitor"] * 2


def test_the_flush_at_shutdown_writes_every_count_and_tells_no_listener(lines: Lines) -> None:
    clock = Clock()
    log = refusal_log(lines, clock)
    heard: list[Reason] = []
    log.add_listener(heard.append)
    log.refused(SOURCE, UNKNOWN_COMMUNITY)
    log.refused(SOURCE, UNKNOWN_COMMUNITY)
    log.refused("192.0.2.8", UNKNOWN_COMMUNITY)
    clock.now += 10
    log.flush(everything=True)
    assert lines.lines[2:] == [
        f"refused 1 more request from {SOURCE} in the last 10 s: unknown community"]
    assert heard == [UNKNOWN_COMMUNITY, UNKNOWN_COMMUNITY]
    assert log.tracked == 0


def test_listeners_hear_every_line_and_only_lines(lines: Lines) -> None:
    clock = Clock()
    log = refusal_log(lines, clock)
    heard: list[Reason] = []
    log.add_listener(heard.append)
    for _ in range(5):
        log.refused(SOURCE, UNKNOWN_COMMUNITY)
    log.refused(SOURCE, NO_WRITE_ACCESS)
    assert heard == [UNKNOWN_COMMUNITY, NO_WRITE_ACCESS]
    clock.now += 60
    log.flush()  # the count's line is a line too
    assert heard == [UNKNOWN_COMMUNITY, NO_WRITE_ACCESS, UNKNOWN_COMMUNITY]
    log.remove_listener(heard.append)
    log.refused("192.0.2.9", UNKNOWN_COMMUNITY)
    assert len(heard) == 3


def test_sources_beyond_the_bound_are_other_sources(lines: Lines) -> None:
    clock = Clock()
    log = refusal_log(lines, clock, max_sources=3)
    for host in range(1, 1001):  # a flood from spoofed sources
        log.refused(f"198.51.100.{host}", UNKNOWN_COMMUNITY)
    assert log.tracked == 4  # three sources and "other sources"
    assert lines.lines == [
        "refused a request from 198.51.100.1: unknown community",
        "refused a request from 198.51.100.2: unknown community",
        "refused a request from 198.51.100.3: unknown community",
        "refused a request from other sources: unknown community",
    ]
    log.refused("198.51.100.2", UNKNOWN_COMMUNITY)  # a tracked one is still counted alone
    clock.now += 60
    log.refused("203.0.113.1", UNKNOWN_COMMUNITY)  # the flush made room: tracked again
    assert lines.lines[4:] == [
        "refused 1 more request from 198.51.100.2 in the last 60 s: unknown community",
        "refused 996 more requests from other sources in the last 60 s: unknown community",
        "refused a request from 203.0.113.1: unknown community",
    ]


def test_flushing_runs_while_the_agent_does(lines: Lines) -> None:
    clock = Clock()
    log = refusal_log(lines, clock, window=0.05)
    log.refused(SOURCE, UNKNOWN_COMMUNITY)
    log.refused(SOURCE, UNKNOWN_COMMUNITY)

    async def run() -> None:
        async with flushing(log, every=0.01):
            clock.now += 1
            for _ in range(500):  # until the periodic flush wrote the count
                if len(lines.lines) == 2:
                    break
                await asyncio.sleep(0.01)
            assert len(lines.lines) == 2
            log.refused(SOURCE, UNKNOWN_COMMUNITY)  # in the window the count opened
        # Leaving: the count left is written.
        assert lines.lines[2:] == [
            f"refused 1 more request from {SOURCE} in the last 0 s: unknown community"]

    asyncio.run(run())


# -- where v1/v2c requests are refused ---------------------------------------------


def test_the_prefilter_tells_each_reason_and_never_a_community(lines: Lines) -> None:
    log = refusal_log(lines, Clock())
    communities = (Community("s3cret-read"), Community("s3cret-write", access="write"),
                   Community("s3cret-lab", sources=(ipaddress.ip_network("10.0.0.0/8"),)))
    check = Prefilter(communities, Limits(), lambda name: name == NODE, refusals=log).check
    domain = (1, 3, 6, 1, 6, 1, 1, 1)
    sys_descr = ["1.3.6.1.2.1.1.1.0"]
    asked = {
        "192.0.2.1": community_request("get", sys_descr, community="guessed-one"),
        "192.0.2.2": community_request("get", sys_descr,
                                       community="s3cret-read@0002c903000a1b2d"),
        "192.0.2.3": community_request("get", sys_descr, community="s3cret-lab"),
        "192.0.2.4": community_request("set", ["1.3.6.1.2.1.1.4.0"], community="s3cret-read"),
    }
    for host, datagram in asked.items():
        check(domain, (host, 40000), datagram)
    # Accepted: a known node's context, a writer's SET, a read.
    check(domain, ("192.0.2.5", 40000),
          community_request("get", sys_descr, community=f"s3cret-read@{NODE.decode()}"))
    check(domain, ("192.0.2.5", 40000),
          community_request("set", ["1.3.6.1.2.1.1.4.0"], community="s3cret-write"))
    assert lines.lines == [
        "refused a request from 192.0.2.1: unknown community",
        "refused a request from 192.0.2.2: unknown context",
        "refused a request from 192.0.2.3: community not accepted from this address",
        "refused a request from 192.0.2.4: SET without write access",
    ]
    assert not any(secret in line for line in lines.lines
                   for secret in ("s3cret", "guessed", "0002c903000a1b2d"))


def test_reasons_say_which_are_authentication_failures() -> None:
    assert UNKNOWN_COMMUNITY.authentication and COMMUNITY_SOURCE.authentication
    assert UNKNOWN_COMMUNITY_CONTEXT.authentication and UNKNOWN_USER.authentication
    assert WRONG_DIGEST.authentication
    assert not NO_WRITE_ACCESS.authentication  # authorization
    assert not UNKNOWN_USER.names_user  # a name the sender made up


def test_the_default_logger_is_ibsnmp_refusals(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, LOGGER_NAME):
        RefusalLog(clock=Clock()).refused(SOURCE, UNKNOWN_USER)
    assert [(r.name, r.getMessage()) for r in caplog.records] == [
        (LOGGER_NAME, f"refused a request from {SOURCE}: unknown user")]

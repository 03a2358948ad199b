"""[limits]: the per-source rate, the aggregate rate over all sources, and what they drop.

Unit tests on a fake clock, the configuration, and a running agent fed
from many loopback source addresses (each client socket bound to its own
127.x.y.z): the aggregate cap stops what a rotation of sources gets past
the per-source limit, and Reports to SNMPv3 requests are limited like
every other answer, and on their own (`reports_per_second_per_source`).
"""

from __future__ import annotations

import re
import selectors
import socket
import time
from collections.abc import Iterator, Sequence

import pytest
from tests.support.e2e import READ_CONFIG, V3_AUTH_PRIV, ibsnmp_agent, net_snmp
from tests.e2e.test_v3_reports import LoggedAgent
from tests.support.wire import community_request, split_address
from tests.support.waiting import wait_for
from tests.support.wire_v3 import v3_message

from ibsnmp.agent import ConfigError
from ibsnmp.agent.config import (DEFAULT_REPORTS_PER_SECOND,
                                 DEFAULT_REPORTS_PER_SECOND_PER_SOURCE,
                                 DEFAULT_REQUESTS_PER_SECOND, Limits, parse_config)
from ibsnmp.agent.ratelimit import AggregateRateLimiter, RequestLimits
from ibsnmp.wire.header import REPORT, V3Message, read_header

SYS_NAME = (1, 3, 6, 1, 2, 1, 1, 5, 0)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


# -- the limiters ---------------------------------------------------------------------


def test_the_aggregate_caps_all_sources_together() -> None:
    clock = Clock()
    limits = RequestLimits(None, 10.0, clock=clock)
    allowed = sum(limits.allow(f"127.0.{i // 256}.{i % 256}") for i in range(2000))
    assert allowed == 10 and limits.dropped == 1990
    clock.now += 0.5  # five tokens back, whoever asks
    assert sum(limits.allow(f"10.0.0.{i}") for i in range(20)) == 5


def test_a_source_over_its_own_rate_takes_nothing_from_the_aggregate() -> None:
    clock = Clock()
    limits = RequestLimits(2.0, 10.0, clock=clock)
    assert sum(limits.allow("flooder") for _ in range(100)) == 2
    assert sum(limits.allow(f"manager-{i}") for i in range(8)) == 8  # 10 - the flooder's 2
    assert not limits.allow("late")
    assert limits.dropped == 98 + 1


def test_either_limit_alone_and_none() -> None:
    assert not RequestLimits(None, None)
    assert RequestLimits(5.0, None).describe() == "5 per second per source"
    assert RequestLimits(None, 2000.0).describe() == "2000 per second in all"
    assert RequestLimits(5.0, 2000.0).describe() == \
        "5 per second per source and 2000 per second in all"
    with pytest.raises(ValueError):
        AggregateRateLimiter(0)


# -- configuration ------------------------------------------------------------------


def test_the_aggregate_limit_is_off_by_default_the_cpu_budget_on() -> None:
    assert parse_config({}).limits == Limits()
    assert Limits().requests_per_second == DEFAULT_REQUESTS_PER_SECOND == 0
    assert Limits().cpu_budget == 0.8
    config = parse_config({"limits": {"cpu_budget": 0}})
    assert config.limits.cpu_budget == 0
    assert not RequestLimits(config.limits.requests_per_second_per_source,
                             config.limits.requests_per_second)
    with pytest.raises(ConfigError, match=r"limits\.cpu_budget"):
        parse_config({"limits": {"cpu_budget": 1.5}})
    config = parse_config({"limits": {"requests_per_second": 250,
                                      "requests_per_second_per_source": 20}})
    assert (config.limits.requests_per_second, config.limits.requests_per_second_per_source) \
        == (250.0, 20.0)


def test_reports_are_limited_by_default_and_0_turns_it_off() -> None:
    limits = parse_config({}).limits
    assert (limits.reports_per_second_per_source, limits.reports_per_second) == (
        DEFAULT_REPORTS_PER_SECOND_PER_SOURCE, DEFAULT_REPORTS_PER_SECOND) == (100.0, 1000.0)
    limits = parse_config({"limits": {"reports_per_second_per_source": 0,
                                      "reports_per_second": 2.5}}).limits
    assert (limits.reports_per_second_per_source, limits.reports_per_second) == (0, 2.5)
    for key in ("reports_per_second_per_source", "reports_per_second"):
        with pytest.raises(ConfigError, match=rf"limits\.{key}: must not be negative"):
            parse_config({"limits": {key: -1}})


@pytest.mark.parametrize("value,message", [
    (-1, r"limits\.requests_per_second: must not be negative"),
    ("fast", r"limits\.requests_per_second: expected a number, got a string"),
    (True, r"limits\.requests_per_second: expected a number"),
])
def test_a_bad_aggregate_limit_is_named(value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config({"limits": {"requests_per_second": value}})


# -- a running agent ------------------------------------------------------------------


AGENT_CONFIG = """
[[community]]
name = "public"

[limits]
requests_per_second_per_source = {per_source}
requests_per_second = {aggregate}
"""
PER_SOURCE = 20
AGGREGATE = 100
SOURCES = 2000  # the rotation that got 4,000 answers of 4,000 before the aggregate cap
PER_SOURCE_SENT = 2  # within every source's own limit
SEND_RATE = 1000.0  # datagrams per second in all: the agent keeps up, nothing is lost
QUIET_S = 0.5  # no answer for this long: the agent has handled everything


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoggedAgent]:
    yield from running(tmp_path_factory, AGGREGATE)


@pytest.fixture(scope="module")
def uncapped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoggedAgent]:
    yield from running(tmp_path_factory, 0)


def running(factory: pytest.TempPathFactory, aggregate: float) -> Iterator[LoggedAgent]:
    config = factory.mktemp("limits") / "agent.toml"
    config.write_text(AGENT_CONFIG.format(per_source=PER_SOURCE, aggregate=aggregate))
    with ibsnmp_agent("--config", str(config), fabric="single") as agent:
        yield LoggedAgent(agent)


@pytest.fixture()
def sources() -> Iterator[list[socket.socket]]:
    """One UDP socket per loopback source address 127.1.x.y."""
    sockets = []
    try:
        for i in range(SOURCES):
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sockets.append(sock)
            sock.bind((f"127.1.{i // 250}.{i % 250 + 1}", 0))
            sock.setblocking(False)
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


def send_paced(sockets: Sequence[socket.socket], target: tuple[str, int], payload: bytes,
               per_socket: int, rate: float) -> float:
    """Each socket sends `payload` `per_socket` times, in turn, `rate` per second in all."""
    start = time.monotonic()
    sent = 0
    for _ in range(per_socket):
        for sock in sockets:
            sock.sendto(payload, target)
            sent += 1
            if sent % 20 == 0:
                time.sleep(max(0.0, start + sent / rate - time.monotonic()))
    return start


def collect(sockets: Sequence[socket.socket]) -> tuple[int, float]:
    """(answers received, monotonic time of the last) once none came for QUIET_S."""
    answers, last = 0, time.monotonic()
    with selectors.DefaultSelector() as selector:
        for sock in sockets:
            selector.register(sock, selectors.EVENT_READ)
        while events := selector.select(QUIET_S):
            for key, _ in events:
                try:
                    while key.fileobj.recv(65535):  # type: ignore[union-attr]  # our sockets
                        answers += 1
                        last = time.monotonic()
                except BlockingIOError:
                    pass
    return answers, last


def rotation(agent: LoggedAgent, sockets: Sequence[socket.socket]) -> tuple[int, float]:
    target = split_address(agent.address)
    start = send_paced(sockets, target, community_request("get", [SYS_NAME]), PER_SOURCE_SENT,
                       SEND_RATE)
    answers, last = collect(sockets)
    return answers, last - start


def test_rotating_sources_get_no_more_than_the_aggregate(
        capped: LoggedAgent, sources: list[socket.socket]) -> None:
    answers, seconds = rotation(capped, sources)
    print(f"{answers} of {SOURCES * PER_SOURCE_SENT} answered over {seconds:.2f} s")
    # A full bucket (one second's worth), then the rate.
    assert AGGREGATE <= answers <= AGGREGATE + AGGREGATE * seconds + 1, (answers, seconds)
    assert len(re.findall(r"dropping requests beyond 20 per second per source and 100 per "
                          r"second in all from 127\.1\.", capped.log)) == 1, capped.log


def test_without_the_aggregate_every_rotating_source_is_answered(
        uncapped: LoggedAgent, sources: list[socket.socket]) -> None:
    """The same rotation, the per-source limit alone: what the aggregate cap is for."""
    answers, seconds = rotation(uncapped, sources)
    print(f"{answers} of {SOURCES * PER_SOURCE_SENT} answered over {seconds:.2f} s")
    assert answers >= 0.98 * SOURCES * PER_SOURCE_SENT


DISCOVERY = v3_message("get", [], msg_id=1, request_id=1)


def discovery_flood(agent: LoggedAgent, count: int, rate: float, limit: float) -> None:
    """`count` discoveries from 127.0.0.1 at `rate`: `limit` Reports a second
    answer them (a full bucket, then the rate), while another source's
    discovery is answered meanwhile."""
    target = split_address(agent.address)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as flooder, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other:
        flooder.bind(("127.0.0.1", 0))
        flooder.setblocking(False)
        start = send_paced([flooder], target, DISCOVERY, count, rate)
        reports, last = collect([flooder])
        seconds = last - start
        print(f"{reports} Reports of {count} discoveries over {seconds:.2f} s")
        assert limit <= reports <= limit + limit * seconds + 1, (reports, seconds)
        other.bind(("127.0.0.2", 0))
        other.settimeout(5.0)
        other.sendto(DISCOVERY, target)
        answer = read_header(other.recv(65535))
        assert isinstance(answer, V3Message) and answer.pdu is not None \
            and answer.pdu.tag == REPORT, "another source's discovery is answered meanwhile"


def test_reports_to_one_source_are_rate_limited(uncapped: LoggedAgent) -> None:
    discovery_flood(uncapped, 200, 200.0, PER_SOURCE)
    assert "dropping requests beyond 20 per second per source from 127.0.0.1" in uncapped.log


REPORT_LIMIT = 10
UNKNOWN_ENGINE_IDS = "1.3.6.1.6.3.15.1.1.4.0"  # usmStatsUnknownEngineIDs.0


@pytest.fixture(scope="module")
def report_limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoggedAgent]:
    """Requests unlimited, Reports to refused SNMPv3 requests 10 per second per source."""
    config = tmp_path_factory.mktemp("reports") / "agent.toml"
    config.write_text(READ_CONFIG + f"""
[limits]
requests_per_second = 0
reports_per_second_per_source = {REPORT_LIMIT}
reports_per_second = 0
""")
    with ibsnmp_agent("--config", str(config), fabric="single") as agent:
        yield LoggedAgent(agent)


def unknown_engine_ids(agent: LoggedAgent) -> int:
    result = net_snmp("snmpget", "-v2c", "-c", "public", "-On", "-Oqv", agent.address,
                      UNKNOWN_ENGINE_IDS)
    assert result.returncode == 0, result.stderr
    return int(result.stdout)


def test_reports_to_refused_v3_requests_are_limited_per_source(
        report_limited: LoggedAgent) -> None:
    """Every discovery is counted; Reports beyond the limit are withheld from
    the flooding source only, and a manager on its address (net-snmp's
    snmpget) discovers the engine and reads once its bucket refills."""
    before = unknown_engine_ids(report_limited)
    discovery_flood(report_limited, 200, 400.0, REPORT_LIMIT)
    assert unknown_engine_ids(report_limited) - before == 201  # each refusal counted
    assert len(re.findall(r"withholding SNMPv3 Reports .* beyond 10 per second per source to "
                          r"127\.0\.0\.1", report_limited.log)) == 1, report_limited.log

    def served() -> bool:  # once the flooder's bucket refills, a manager on its address is
        result = net_snmp("snmpget", *V3_AUTH_PRIV, "-r", "0", "-t", "1", "-On",
                          report_limited.address, "1.3.6.1.2.1.1.5.0")
        return result.returncode == 0 and "1.3.6.1.2.1.1.5.0 = STRING:" in result.stdout

    wait_for(served, 10, "snmpget from the flooder's address to be answered")

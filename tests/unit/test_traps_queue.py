"""Bounded per-target queues (drop the oldest, count, log once per burst), rate
limits, and the originator's behaviour toward targets that never answer."""

from __future__ import annotations

import asyncio
import logging
import socket
import time

import pytest
from tests.support.e2e import free_udp_port
from pysnmp.entity.engine import SnmpEngine

from ibsnmp.agent.trap_targets import TrapTarget, parse_trap_address
from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.traps.originator import TrapOriginator
from ibsnmp.traps.queue import DropQueue, RateLimiter


def event(lid: int) -> TrapEvent:
    return TrapEvent(IbaTrap.LINK_STATE_CHANGE, 0x0002C90300A1B2C3, lid)


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


async def test_drop_queue_drops_the_oldest_and_logs_once_per_burst(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ibsnmp.traps")
    queue: DropQueue[int] = DropQueue(3, "T")
    for i in range(10):
        queue.put(i)
    assert queue.dropped == 7 and len(queue) == 3
    assert warnings(caplog) == ["trap target T: queue full (3 waiting), dropping the oldest "
                                "notifications"]
    assert [await queue.get() for _ in range(3)] == [7, 8, 9]  # the newest were kept
    assert warnings(caplog)[1:] == ["trap target T: dropped 7 notifications (queue of 3 full); "
                                    "7 dropped since start"]
    caplog.clear()
    for i in range(5):  # a second burst: logged again, once
        queue.put(i)
    assert queue.dropped == 9
    assert len(warnings(caplog)) == 1
    assert queue.drain() == [2, 3, 4]
    assert warnings(caplog)[-1].endswith("dropped 2 notifications (queue of 3 full); "
                                         "9 dropped since start")


async def test_drop_queue_get_waits_for_put() -> None:
    queue: DropQueue[str] = DropQueue(2, "T")
    waiter = asyncio.create_task(queue.get())
    for _ in range(3):  # the waiter runs up to its wait: scheduler turns, not time
        await asyncio.sleep(0)
    assert not waiter.done()
    queue.put("x")
    assert await asyncio.wait_for(waiter, 1) == "x"


async def test_rate_limiter() -> None:
    limiter = RateLimiter(200.0)  # bursts of 10 (50 ms worth), then 5 ms apart
    start = time.monotonic()
    for _ in range(50):
        await limiter.acquire()
    elapsed = time.monotonic() - start
    assert 0.17 <= elapsed < 0.6  # (50 - 10) / 200 = 0.2 s


def udp_sink() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.setblocking(False)
    return sock


def drain(sock: socket.socket) -> list[float]:
    stamps: list[float] = []
    while True:
        try:
            sock.recv(65535)
        except BlockingIOError:
            return stamps
        stamps.append(time.monotonic())


async def test_rate_limited_target_is_paced() -> None:
    sink = udp_sink()
    engine = SnmpEngine()
    target = TrapTarget(parse_trap_address(f"127.0.0.1:{sink.getsockname()[1]}"),
                        rate_limit=100.0)
    originator = TrapOriginator(engine, [target])
    await originator.start()
    try:
        start = time.monotonic()
        for lid in range(1, 41):
            originator.notify(event(lid))
        (sender,) = originator.senders
        while sender.stats.sent < 40 and time.monotonic() - start < 10:
            await asyncio.sleep(0.01)
        elapsed = time.monotonic() - start
        received = drain(sink)
        while len(received) < 40 and time.monotonic() - start < 10:  # sent: on their way
            await asyncio.sleep(0.01)
            received += drain(sink)
        assert len(received) == 40
        assert elapsed >= 0.3  # (40 - 5 burst) / 100 per s
    finally:
        await originator.stop()
        engine.close_dispatcher()
        sink.close()


async def test_unanswered_informs_fill_the_queue_and_drops_are_counted(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ibsnmp.traps")
    engine = SnmpEngine()
    dead = TrapTarget(parse_trap_address(f"127.0.0.1:{free_udp_port()}"), "2c", "inform",
                      timeout=0.1, retries=0, queue_size=5)
    originator = TrapOriginator(engine, [dead])
    await originator.start()
    try:
        for lid in range(1, 51):
            originator.notify(event(lid))
        # A few unanswered rounds of the first kept one.
        deadline = asyncio.get_running_loop().time() + 10
        while originator.stats()[0][1].failed < 2:
            assert asyncio.get_running_loop().time() < deadline, "no inform failed"
            await asyncio.sleep(0.01)
        ((_target, stats),) = originator.stats()
        assert stats.dropped == 45  # 50 queued into 5 places before the sender ran
        assert stats.waiting == 4  # one is in hand, re-sent until answered
        assert stats.sent == 0 and stats.failed >= 2
        for lid in range(51, 61):  # more of the same burst: counted, not logged again
            originator.notify(event(lid))
        assert originator.stats()[0][1].dropped == 54  # one free place, then 9 out
        logged = warnings(caplog)
        assert sum("queue full" in m for m in logged) == 1
        assert sum("inform unanswered" in m for m in logged) == 1  # once, not per round
    finally:
        await originator.stop()
        engine.close_dispatcher()
    assert any("5 notifications not sent at shutdown" in m for m in warnings(caplog))


async def test_unmappable_events_are_counted_and_logged_once(
        caplog: pytest.LogCaptureFixture) -> None:
    sink = udp_sink()
    engine = SnmpEngine()
    originator = TrapOriginator(
        engine, [TrapTarget(parse_trap_address(f"127.0.0.1:{sink.getsockname()[1]}"))])
    await originator.start()
    try:
        for _ in range(3):
            originator.notify(TrapEvent(IbaTrap.BAD_P_KEY, 1, 7))  # no key, GIDs ...
        originator.notify(event(70000))  # LID out of range
        assert originator.rejected == 4
        errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) == 2
        assert "ibSmaBadPartitionKey needs TrapEvent.key (ibSmaNodeKey)" in errors[0]
        assert originator.stats()[0][1].sent == 0
    finally:
        await originator.stop()
        engine.close_dispatcher()
        sink.close()


async def test_a_slow_receiver_does_not_block_notify() -> None:
    """notify() returns at once whatever the targets do: it only appends."""
    engine = SnmpEngine()
    targets = [TrapTarget(parse_trap_address("192.0.2.1:162"), "2c", "inform", queue_size=100),
               TrapTarget(parse_trap_address(f"127.0.0.1:{free_udp_port()}"), queue_size=100)]
    originator = TrapOriginator(engine, targets)
    await originator.start()
    try:
        start = time.perf_counter()
        for lid in range(1, 2001):
            originator.notify(event(lid))
        per_event = (time.perf_counter() - start) / 2000
        assert per_event < 0.002  # mapping + two appends; no I/O, no waiting
    finally:
        await originator.stop()
        engine.close_dispatcher()

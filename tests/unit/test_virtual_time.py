"""The virtual-time loop of tests/support/virtual_time.py: a sleep costs no
wall time and moves loop.time() by exactly its length, timers run in the
order they fall due, and real I/O is still seen (and waited for when no
timer is pending)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

from tests.support.virtual_time import VirtualTimeLoop, on_virtual_time


def test_an_hour_of_sleep_takes_no_wall_time() -> None:
    async def sleep_an_hour() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        before = loop.time()
        await asyncio.sleep(3600)
        return before, loop.time()

    times: list[tuple[float, float]] = []

    def run() -> None:
        with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
            times.append(runner.run(sleep_an_hour()))

    # In a thread of its own: a loop that slept for real fails here, not after an hour.
    thread = threading.Thread(target=run, daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(timeout=5.0)
    assert not thread.is_alive(), "the loop waited in real time"
    assert time.monotonic() - start < 1.0
    ((before, after),) = times
    assert after - before == 3600.0


@on_virtual_time
async def test_timers_run_in_the_order_they_fall_due() -> None:
    loop = asyncio.get_running_loop()
    assert isinstance(loop, VirtualTimeLoop)
    ran: list[tuple[str, float]] = []
    # Scheduled against their order, the later one first.
    loop.call_later(2.0, lambda: ran.append(("second", loop.time())))
    loop.call_later(1.0, lambda: ran.append(("first", loop.time())))
    await asyncio.sleep(3.0)
    assert ran == [("first", 1.0), ("second", 2.0)]
    assert loop.time() == 3.0


@on_virtual_time
async def test_ready_io_runs_before_time_jumps() -> None:
    loop = asyncio.get_running_loop()
    reader, writer = socket.socketpair()
    with reader, writer:
        writer.send(b"x")
        heard: asyncio.Future[float] = loop.create_future()

        def hear() -> None:
            if not heard.done():
                heard.set_result(loop.time())

        loop.add_reader(reader, hear)
        try:
            sleeper = asyncio.ensure_future(asyncio.sleep(3600, -1.0))
            done, _ = await asyncio.wait({heard, sleeper}, return_when=asyncio.FIRST_COMPLETED)
            assert done == {heard}
            assert heard.result() == 0.0
            sleeper.cancel()
        finally:
            loop.remove_reader(reader)


@on_virtual_time
async def test_with_no_timer_it_waits_for_real_io() -> None:
    loop = asyncio.get_running_loop()

    def work() -> str:
        time.sleep(0.05)
        return "done"

    # A thread's result comes through the loop's self-pipe: real I/O.
    assert await loop.run_in_executor(None, work) == "done"
    assert loop.time() == 0.0

"""The broker session (ibsnmp.mqtt.broker.run_session) survives what it is
handed: a message whose handler raises is dropped and said once a minute,
on_connect's work or the session failing is said and reconnected.  In
process, against a stand-in for aiomqtt's Client: what is tested is the
session's own logic, not the broker."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import aiomqtt
import pytest

from ibsnmp.mqtt.broker import Backoff, SessionFailures, run_session


class Boom(Exception):
    """What a handler with a bug raises."""


def message(topic: str, payload: bytes = b"") -> aiomqtt.Message:
    return aiomqtt.Message(topic, payload, 1, False, 1, None)


class FakeClient:
    """A connection that delivers `messages` (the first through the
    iterator, the rest as a burst from the inbox, as aiomqtt queues them)
    and is then lost."""

    def __init__(self, messages: list[aiomqtt.Message], inbox: Callable[[], asyncio.Queue[aiomqtt.Message]]) -> None:
        self.queue = inbox()
        for item in messages:
            self.queue.put_nowait(item)
        self.subscribed: list[str] = []

    async def __aenter__(self) -> FakeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def subscribe(self, topic: str, qos: int = 0) -> None:
        self.subscribed.append(topic)

    @property
    def messages(self) -> FakeClient:
        return self

    def __aiter__(self) -> FakeClient:
        return self

    async def __anext__(self) -> aiomqtt.Message:
        await asyncio.sleep(0)
        if self.queue.empty():
            raise aiomqtt.MqttError("the connection was lost")
        return self.queue.get_nowait()


class FakeSettings:
    """BrokerSettings as run_session uses them: one FakeClient per connection,
    with the messages of `connections` in turn (none once they run out);
    an exception in their place is raised by client() instead."""

    label = "mqtt://fake:1883"
    client_id = "test"

    def __init__(self, *connections: list[aiomqtt.Message] | Exception) -> None:
        self.connections = list(connections)
        self.clients: list[FakeClient] = []

    def client(self, *, will: object = None, inbox: Callable[[], asyncio.Queue[aiomqtt.Message]]) -> FakeClient:
        plan = self.connections.pop(0) if self.connections else []
        if isinstance(plan, Exception):
            raise plan
        client = FakeClient(plan, inbox)
        self.clients.append(client)
        return client


class Session:
    """run_session as a task, with what it reported."""

    def __init__(self, settings: FakeSettings, on_message: Callable[[aiomqtt.Message], None] | None,
                 on_connect: Callable[[object], Coroutine[Any, Any, None]] | None = None,
                 backoff: Backoff | None = None) -> None:
        self.lost: list[str] = []
        self.failures = SessionFailures()
        self.connected = 0

        async def idle(client: object) -> None:
            self.connected += 1
            await asyncio.Event().wait()

        self.task = asyncio.create_task(run_session(
            settings,  # type: ignore[arg-type]  # a FakeSettings: what run_session uses
            ("t/#",), on_connect or idle, on_message, self.lost.append,
            backoff=backoff or Backoff(initial=0.001, cap=0.01), failures=self.failures))

    async def until(self, check: Callable[[], bool], timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while not check():
                assert not self.task.done(), self.task
                await asyncio.sleep(0.001)

    async def stop(self) -> None:
        self.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self.task


def _lines(caplog: pytest.LogCaptureFixture, level: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno == level and r.name == "ibsnmp.mqtt"]


async def test_a_message_whose_handler_raises_is_dropped_and_said_once(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="ibsnmp.mqtt")
    taken: list[str] = []

    def handle(item: aiomqtt.Message) -> None:
        if item.payload == b"bad":
            raise Boom("the handler tripped over its own feet")
        taken.append(str(item.topic))

    first = [message("t/1"), message("t/bad", b"bad"), message("t/2"), message("t/bad", b"bad"),
             message("t/bad", b"bad"), message("t/3")]
    settings = FakeSettings(first, [message("t/4")])
    session = Session(settings, handle)
    # The later positive signal: the next connection's message is taken too.
    await session.until(lambda: "t/4" in taken)
    await session.stop()
    assert taken == ["t/1", "t/2", "t/3", "t/4"]
    assert session.failures.counts == {"message Boom": 3} and session.failures.messages_dropped == 3
    assert session.lost[:2] == ["the connection was lost"] * 2  # lost as fakes are, never failed
    errors = _lines(caplog, logging.ERROR)
    assert [r.getMessage() for r in errors] == [
        "mqtt: a message on t/bad was dropped: handling it raised Boom: the handler tripped over its own feet "
        "(the first such failure; at most one such line every 60 s)"]
    # No traceback a remote client could have written per message; one at DEBUG.
    assert not [r for r in caplog.records if r.exc_info and r.levelno > logging.DEBUG]
    assert len([r for r in _lines(caplog, logging.DEBUG) if r.exc_info]) == 1


async def test_a_handler_past_recursion_or_memory_does_not_end_the_session(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ibsnmp.mqtt")
    taken: list[str] = []
    class Unspeakable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no words")

    failures = iter([RecursionError("maximum recursion depth exceeded"), MemoryError(), ValueError("x" * 10_000),
                     Unspeakable()])

    def handle(item: aiomqtt.Message) -> None:
        if item.payload:
            raise next(failures)
        taken.append(str(item.topic))

    settings = FakeSettings([message("t/a", b"1"), message("t/b", b"2"), message("t/c", b"3"), message("t/d", b"4"),
                             message("t/ok")])
    session = Session(settings, handle)
    await session.until(lambda: taken == ["t/ok"])
    await session.stop()
    said = [r.getMessage() for r in _lines(caplog, logging.ERROR)]
    assert len(said) == 4 and "RecursionError: maximum recursion depth exceeded" in said[0]
    assert "raised MemoryError (" in said[1] and len(said[2]) < 400  # the text cut short
    assert "raised Unspeakable: (its text cannot be shown)" in said[3]


def test_a_kind_of_failure_is_said_once_a_minute_with_its_count(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ibsnmp.mqtt")
    now = [1000.0]
    failures = SessionFailures(clock=lambda: now[0])
    bad = message("t/x")
    for second in range(0, 60, 10):  # 6 in the first minute: one line
        now[0] = 1000.0 + second
        failures.message(bad, Boom("again"))
    failures.message(bad, KeyError("other"))  # another kind: its own line
    now[0] = 1061.0
    failures.message(bad, Boom("again"))
    said = [r.getMessage() for r in _lines(caplog, logging.ERROR)]
    assert len(said) == 3
    assert said[0].endswith("Boom: again (the first such failure; at most one such line every 60 s)")
    assert "KeyError: 'other'" in said[1]
    assert said[2].endswith("Boom: again (6 such failures since the last such line, 7 in all)")
    assert failures.counts == {"message Boom": 7, "message KeyError": 1}


@pytest.mark.parametrize("reads", [True, False], ids=["aggregator", "publisher"])
async def test_on_connect_failing_is_said_and_the_session_reconnects(
        caplog: pytest.LogCaptureFixture, reads: bool) -> None:
    caplog.set_level(logging.INFO, logger="ibsnmp.mqtt")
    calls: list[object] = []

    async def work(client: object) -> None:
        calls.append(client)
        if len(calls) == 1:
            raise Boom("on_connect has a bug")
        await asyncio.Event().wait()

    # Messages keep the aggregator-like session busy while on_connect fails.
    settings = FakeSettings([message("t/1")] * 50, [message("t/2")] * 50)
    session = Session(settings, (lambda item: None) if reads else None, on_connect=work)
    await session.until(lambda: len(calls) == 2)
    await session.stop()
    assert session.lost[0] == "Boom: on_connect has a bug"
    assert [r.getMessage() for r in _lines(caplog, logging.ERROR)] == [
        "mqtt: the session with mqtt://fake:1883 failed: Boom: on_connect has a bug; reconnecting "
        "(the first such failure; at most one such line every 60 s)"]
    assert session.failures.counts == {"session Boom": 1}


async def test_a_session_that_fails_before_connecting_is_said_and_retried(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ibsnmp.mqtt")
    settings = FakeSettings(OSError("no such CA file"), OSError("no such CA file"), [message("t/1")])
    taken: list[str] = []
    session = Session(settings, lambda item: taken.append(str(item.topic)))
    await session.until(lambda: taken == ["t/1"])
    await session.stop()
    said = [r.getMessage() for r in _lines(caplog, logging.ERROR)]
    assert said == ["mqtt: the session with mqtt://fake:1883 failed: OSError: no such CA file; reconnecting "
                    "(the first such failure; at most one such line every 60 s)"]  # the second, counted
    assert session.failures.counts == {"session OSError": 2}
    assert settings.clients[0].subscribed == ["t/#"]


async def test_the_backoff_keeps_growing_while_the_session_fails(
        caplog: pytest.LogCaptureFixture) -> None:
    """A connect that works does not reset the backoff while every session
    fails right after it: no reconnection storm."""

    class Counted(Backoff):
        resets = 0

        def reset(self) -> None:
            self.resets += 1
            super().reset()

    backoff = Counted(initial=0.001, cap=0.004)
    calls: list[object] = []

    async def work(client: object) -> None:
        calls.append(client)
        if len(calls) == 4:
            raise aiomqtt.MqttError("lost as connections are")
        if len(calls) < 6:
            raise Boom("still broken")
        await asyncio.Event().wait()

    session = Session(FakeSettings(), None, on_connect=work, backoff=backoff)
    await session.until(lambda: len(calls) == 6)
    await session.stop()
    # As the session starts, at the first connect and at the one after the
    # fourth (lost well); never at a connect after a failure.
    assert backoff.resets == 3
    assert session.lost == ["Boom: still broken"] * 3 + ["lost as connections are", "Boom: still broken"]


async def test_on_lost_raising_does_not_end_the_session(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ibsnmp.mqtt")
    taken: list[str] = []
    settings = FakeSettings([message("t/1")], [message("t/2")])
    losses: list[str] = []

    def lost(reason: str) -> None:
        losses.append(reason)
        raise Boom("on_lost has a bug")

    async def idle(client: object) -> None:
        await asyncio.Event().wait()

    task = asyncio.create_task(run_session(
        settings, (), idle,  # type: ignore[arg-type]  # a FakeSettings: what run_session uses
        lambda item: taken.append(str(item.topic)), lost, backoff=Backoff(initial=0.001, cap=0.01)))
    async with asyncio.timeout(5):
        while taken != ["t/1", "t/2"]:
            await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert any("Boom: on_lost has a bug" in r.getMessage() for r in _lines(caplog, logging.ERROR))

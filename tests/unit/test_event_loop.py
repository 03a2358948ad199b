"""Which event loop the agent runs on: uvloop by default, the standard one when asked."""

from __future__ import annotations

import asyncio
import inspect
import warnings

import pytest
import uvloop

from ibsnmp.event_loop import ENV, EventLoopError, loop_factory, loop_name, run


async def running_loop() -> str:
    return loop_name(asyncio.get_running_loop())


def test_uvloop_by_default_and_the_standard_loop_when_asked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert loop_factory() is uvloop.new_event_loop
    assert run(running_loop()) == "uvloop"
    monkeypatch.setenv(ENV, "asyncio")
    assert loop_factory() is asyncio.new_event_loop
    assert run(running_loop()) == "asyncio"
    assert run(running_loop(), "uvloop") == "uvloop"  # a choice passed wins


def test_an_unknown_loop_is_refused_and_its_coroutine_closed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "trio")
    with pytest.raises(EventLoopError, match=r"IBSNMP_EVENT_LOOP='trio'.*uvloop, asyncio"):
        loop_factory()
    main = running_loop()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "never awaited" would be one
        with pytest.raises(EventLoopError):
            run(main)
    assert inspect.getcoroutinestate(main) == inspect.CORO_CLOSED  # closed unrun


def test_uvloop_asked_but_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "uvloop", None)  # import fails
    assert loop_factory() is asyncio.new_event_loop
    with pytest.raises(EventLoopError, match="not installed"):
        loop_factory("uvloop")

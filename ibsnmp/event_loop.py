"""The event loop `ibsnmp run` (the agent) runs on.

uvloop when it is installed (a dependency of the package): its loop costs
about two thirds of the standard one's CPU for each datagram or AgentX PDU
(docs/performance.md, "Event loop").
`IBSNMP_EVENT_LOOP=asyncio` chooses the standard library's loop, to tell a
loop problem from an agent problem; any other value is refused.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

ENV = "IBSNMP_EVENT_LOOP"
CHOICES = ("uvloop", "asyncio")

T = TypeVar("T")


class EventLoopError(ValueError):
    """IBSNMP_EVENT_LOOP names no loop this host has."""


def loop_factory(choice: str | None = None) -> Callable[[], asyncio.AbstractEventLoop]:
    """A new-loop factory for `choice` ("uvloop", "asyncio"; None: $IBSNMP_EVENT_LOOP,
    default uvloop when it imports, else asyncio)."""
    wanted = choice if choice is not None else os.environ.get(ENV, "")
    if wanted not in ("", *CHOICES):
        raise EventLoopError(f"{ENV}={wanted!r}: the event loop is one of {', '.join(CHOICES)}")
    if wanted == "asyncio":
        return asyncio.new_event_loop
    try:
        import uvloop
    except ImportError:
        if wanted == "uvloop":
            raise EventLoopError(f"{ENV}=uvloop, but uvloop is not installed") from None
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """"uvloop" or "asyncio": which loop `loop` is, for the start-up log line."""
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"


def run(main: Coroutine[Any, Any, T], choice: str | None = None) -> T:
    """asyncio.run(main) on the loop `loop_factory(choice)` makes (EventLoopError,
    with `main` closed unrun, when there is no such loop)."""
    try:
        factory = loop_factory(choice)
    except EventLoopError:
        main.close()
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)

"""An asyncio event loop on virtual time, for tests of timed code.

VirtualTimeLoop's time() starts at 0 and moves only when the loop would wait:
with no callback ready and no I/O ready (a select that does not block), it
jumps to its next timer at once, so asyncio.sleep(3600) costs no wall time and
timers run in the order they fall due. With no timer left it blocks on real I/O
as any loop does. Threads and other processes do not hold virtual time back.
`on_virtual_time` turns an async test into a plain one that runs on a fresh
VirtualTimeLoop; code under test reads the time as `loop.time`.
"""

from __future__ import annotations

import asyncio
import functools
import selectors
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, ParamSpec

if TYPE_CHECKING:
    from _typeshed import FileDescriptorLike

P = ParamSpec("P")


class _VirtualSelector(selectors.BaseSelector):
    """Real readiness first; where the loop would then sleep, `advance`."""

    def __init__(self, advance: Callable[[float], None]) -> None:
        self._real = selectors.DefaultSelector()
        self._advance = advance

    def register(self, fileobj: FileDescriptorLike, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: FileDescriptorLike) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def modify(self, fileobj: FileDescriptorLike, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._real.select(0)
        if ready or (timeout is not None and timeout <= 0):
            return ready
        if timeout is None:  # no timer to jump to: only real I/O can wake the loop
            return self._real.select(None)
        # The loop asks for exactly the wait until its next timer.
        self._advance(timeout)
        return []

    def get_map(self) -> Mapping[FileDescriptorLike, selectors.SelectorKey]:
        return self._real.get_map()

    def close(self) -> None:
        self._real.close()


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector event loop whose time() is virtual (see the module)."""

    def __init__(self) -> None:
        self._virtual_now = 0.0
        super().__init__(_VirtualSelector(self._advance))

    def time(self) -> float:
        return self._virtual_now

    def _advance(self, seconds: float) -> None:
        self._virtual_now += seconds


def on_virtual_time(test: Callable[P, Coroutine[Any, Any, None]]) -> Callable[P, None]:
    """`test` as a plain function that runs it on a fresh VirtualTimeLoop
    (pytest-asyncio's own loop keeps real time)."""

    @functools.wraps(test)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
            runner.run(test(*args, **kwargs))

    return run

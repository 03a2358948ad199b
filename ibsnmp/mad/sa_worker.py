"""The SA client on a thread of its own, for asyncio callers.

Under ibsim a port's descriptor cannot join an event loop (umad_recv waits
itself), so one thread owns the port: it runs the calls submitted to it one
after the other and, between them, waits for Reports. `call` is the
awaitable form; Report handlers run on the worker thread, so asyncio users
hand their events over with `loop.call_soon_threadsafe`.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from ibsnmp.mad.sa_client import SaClient

T = TypeVar("T")
IDLE_WAIT_S = 0.2  # how long a Report wait lasts before queued calls are looked at again


class SaWorker:
    """Runs `SaClient` calls on one thread; `open_client` is called on that thread."""

    def __init__(self, open_client: Callable[[], SaClient]) -> None:
        self._open_client = open_client
        self._calls: queue.SimpleQueue[tuple[Callable[[SaClient], object], Future[object]]] = \
            queue.SimpleQueue()
        self._stopping = threading.Event()
        self._ready: Future[None] = Future()
        self._thread = threading.Thread(target=self._run, name="sa-client", daemon=True)

    def start(self) -> None:
        """Starts the thread and waits until the client is open (its error is
        raised); a second call only waits for the first one's outcome."""
        if self._thread.ident is None:
            self._thread.start()
        self._ready.result()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.ident is not None:
            self._thread.join()

    def submit(self, call: Callable[[SaClient], T]) -> Future[T]:
        future: Future[T] = Future()
        self._calls.put((call, future))  # type: ignore[arg-type]
        return future

    async def call(self, call: Callable[[SaClient], T]) -> T:
        return await asyncio.wrap_future(self.submit(call))

    def _run(self) -> None:
        try:
            client = self._open_client()
        except BaseException as exc:  # handed to start()
            self._ready.set_exception(exc)
            return
        self._ready.set_result(None)
        try:
            while not self._stopping.is_set():
                try:
                    call, future = self._calls.get_nowait()
                except queue.Empty:
                    client.serve_reports(IDLE_WAIT_S)
                    continue
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(call(client))
                    except BaseException as exc:
                        future.set_exception(exc)
        finally:
            client.close()
            while not self._calls.empty():
                self._calls.get_nowait()[1].cancel()

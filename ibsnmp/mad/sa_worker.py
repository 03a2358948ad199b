"""The SA client on a thread of its own, for asyncio callers.

Under ibsim a port's descriptor cannot join an event loop, nor a poll()
beside another descriptor (the preload library's poll waits on that one port
alone), so nothing can wake a thread that waits in umad_recv. Two threads
share the port instead: a reader that only receives, into a queue, and the
worker that runs the calls submitted to it one after the other and sends.
The worker sleeps on one queue that both a submitted call and a received
MAD wake, so a call starts at once and a Report is answered between calls.
`call` is the awaitable form; Report handlers run on the worker thread, so
asyncio users hand their events over with `loop.call_soon_threadsafe`.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from ibsnmp.mad.sa_client import MadPort, SaClient
from ibsnmp.mad.umad import Address, UmadError

T = TypeVar("T")
# How long one receive of the reader lasts before it looks whether the port is
# closing: what close() may wait, and the only wake-up (five a second) while
# nothing happens.
READ_SLICE_S = 0.2

_Call = tuple[Callable[[SaClient], object], Future[object]]


class QueuedPort:
    """`port` with its MADs received by a thread of their own: `receive_sized`
    takes them from a queue, and `arrived` is called after each one is queued.
    Only the reader receives on `port`; sending stays with the caller's thread
    (a write beside a read of one descriptor: the kernel's umad device and
    ibsim's preload, which locks each, allow it). A receive error reaches the
    next caller of `receive_sized`."""

    def __init__(self, port: MadPort, arrived: Callable[[], None]) -> None:
        self._port = port
        self._arrived = arrived
        self._mads: queue.SimpleQueue[bytes | UmadError] = queue.SimpleQueue()
        self._closing = threading.Event()
        self._reader = threading.Thread(target=self._read, name="sa-receive", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while not self._closing.is_set():
            try:
                mad = self._port.receive_sized(READ_SLICE_S)
            except UmadError as exc:
                self._queue(exc)  # raised to the next receiver, as if it had met it
                self._closing.wait(READ_SLICE_S)  # a port that keeps failing must not spin
                continue
            if mad is not None:
                self._queue(mad)

    def _queue(self, mad: bytes | UmadError) -> None:
        self._mads.put(mad)
        self._arrived()

    def receive_sized(self, timeout: float) -> bytes | None:
        try:
            mad = self._mads.get(timeout=timeout) if timeout > 0 else self._mads.get_nowait()
        except queue.Empty:
            return None
        if isinstance(mad, UmadError):
            raise mad
        return mad

    def send(self, mad: bytes, address: Address, transaction_id: int | None = None) -> None:
        self._port.send(mad, address, transaction_id)

    def new_transaction_id(self) -> int:
        return self._port.new_transaction_id()

    def close(self) -> None:
        # The reader must be out of umad_recv before the port goes.
        self._closing.set()
        self._reader.join()
        self._port.close()


class SaWorker:
    """Runs `SaClient` calls on one thread; `open_client` is called on that thread."""

    def __init__(self, open_client: Callable[[], SaClient]) -> None:
        self._open_client = open_client
        # Calls, and None for "look again": a MAD arrived, or stop() was called.
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
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
        self._calls.put(None)
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
            client.port = QueuedPort(client.port, lambda: self._calls.put(None))
        except BaseException as exc:  # handed to start()
            self._ready.set_exception(exc)
            return
        self._ready.set_result(None)
        try:
            while not self._stopping.is_set():
                item = self._calls.get()
                if item is None:
                    # Whatever arrived outside a call: a Report is answered here.
                    client.serve_reports(0.0)
                    continue
                call, future = item
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(call(client))
                    except BaseException as exc:
                        future.set_exception(exc)
        finally:
            try:
                client.close()
            finally:
                while not self._calls.empty():
                    if (item := self._calls.get_nowait()) is not None:
                        item[1].cancel()

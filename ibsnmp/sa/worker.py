"""The SA client on a thread of its own, for asyncio callers.

Under ibsim a port's descriptor can join neither an event loop nor a poll() beside another
descriptor, so nothing can wake a thread that waits in umad_recv. Two threads share the port
instead: a reader that only receives, into a queue (`QueuedPort`), and the worker that runs
the calls submitted to it one after the other and sends (`SaWorker`). `call` is the awaitable
form; Report handlers run on the worker thread, so asyncio users hand their events over with
`loop.call_soon_threadsafe`. A stop never waits on the SA (`interrupt`, `stop`): a thread that
has not ended in a bounded time is left behind, a daemon that ends with the process.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from ibsnmp.mad.umad import Address, PortClosing, UmadError
from ibsnmp.sa.client import MadPort, SaClient

T = TypeVar("T")
# How long one receive of the reader lasts before it looks whether the port is
# closing: what close() may wait, and the only wake-up (five a second) while
# nothing happens.
READ_SLICE_S = 0.2
# How long closing the port waits for the reader to leave umad_recv (it looks
# every READ_SLICE_S): a reader still in it then keeps the port, which is left
# open for the process's exit (closing it under a receive crashes ibsim's preload).
READER_JOIN_S = 2 * READ_SLICE_S

log = logging.getLogger("ibsnmp.sa.worker")

# A call, its future and its number (in submission order: see SaWorker.interrupt).
_Call = tuple[Callable[[SaClient], object], Future[Any], int]  # each call's own result type


def _interrupted_call() -> PortClosing:
    return PortClosing("the SA call was interrupted: its client is stopping")


class QueuedPort:
    """`port` with its MADs received by a thread of their own (under ibsim the
    preload library's poll() waits on one port alone, so nothing else could
    wake a receiver): `receive_sized` takes them from a queue, and `arrived`
    is called after each one is queued.
    Only the reader receives on `port`; sending stays with the caller's thread
    (a write beside a read of one descriptor: the kernel's umad device and
    ibsim's preload, which locks each, allow it). A receive error reaches the
    next caller of `receive_sized`; so does PortClosing while `interrupted()`
    says the caller's call is interrupted (`wake` ends its wait at once)."""

    def __init__(self, port: MadPort, arrived: Callable[[], None],
                 interrupted: Callable[[], bool] = lambda: False) -> None:
        self._port = port
        self._arrived = arrived
        self._interrupted = interrupted
        # MADs, receive errors, and None: "look whether you are interrupted".
        self._mads: queue.SimpleQueue[bytes | UmadError | None] = queue.SimpleQueue()
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

    def wake(self) -> None:
        """Ends the wait of a `receive_sized` under way (or the next one) early."""
        self._mads.put(None)

    def receive_sized(self, timeout: float) -> bytes | None:
        if self._interrupted():
            raise _interrupted_call()
        try:
            mad = self._mads.get(timeout=timeout) if timeout > 0 else self._mads.get_nowait()
        except queue.Empty:
            return None
        if mad is None:  # woken: the caller waits on (it has time left) unless interrupted
            if self._interrupted():
                raise _interrupted_call()
            return None
        if isinstance(mad, UmadError):
            raise mad
        return mad

    def send(self, mad: bytes, address: Address, transaction_id: int | None = None) -> None:
        self._port.send(mad, address, transaction_id)

    def new_transaction_id(self) -> int:
        return self._port.new_transaction_id()

    def close(self) -> None:
        """Stops the reader and closes the port; at most READER_JOIN_S."""
        # The reader must be out of umad_recv before the port goes.
        self._closing.set()
        self._reader.join(READER_JOIN_S)
        if self._reader.is_alive():
            log.warning("SA port: the reader did not leave umad_recv within %.3g s; the port "
                        "is left open until the process ends", READER_JOIN_S)
            return
        self._port.close()


class SaWorker:
    """Runs `SaClient` calls on one thread; `open_client` is called on that thread.

    The worker sleeps on one queue that both a submitted call and a received
    MAD wake, so a call starts at once and a Report is answered between calls."""

    def __init__(self, open_client: Callable[[], SaClient]) -> None:
        self._open_client = open_client
        # Calls, and None for "look again": a MAD arrived, or stop() was called.
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._ready: Future[None] = Future()
        self._thread = threading.Thread(target=self._run, name="sa-client", daemon=True)
        # Numbers of the calls, in submission order; those below `_interrupt_below`
        # are interrupted, and `_running` is the number of the call under way.
        self._numbers = itertools.count()
        self._interrupt_below = 0
        self._running: int | None = None
        self._client: SaClient | None = None  # once open
        self._port: QueuedPort | None = None

    @property
    def silent(self) -> bool:
        """Whether the SA is known not to answer (SaClient.silent): its last
        query went unanswered. False while the client is not open."""
        client = self._client
        return client is not None and client.silent

    def start(self) -> None:
        """Starts the thread and waits until the client is open (its error is
        raised); a second call only waits for the first one's outcome."""
        if self._thread.ident is None:
            self._thread.start()
        self._ready.result()

    def interrupt(self) -> None:
        """From any thread: every call submitted so far that has not ended
        raises PortClosing, the one under way at once (its wait for an answer
        is woken); calls submitted from now on run as usual."""
        self._interrupt_below = next(self._numbers)
        port = self._port
        if port is not None:
            port.wake()

    def _interrupted(self) -> bool:
        running = self._running
        return running is not None and running < self._interrupt_below

    def stop(self, timeout: float | None = None) -> bool:
        """Interrupts the calls submitted so far (`interrupt`), cancels those
        not started, and has the worker close the client (draining its port:
        SaClient.close) and end; calls submitted later fail with PortClosing.
        Waits up to `timeout` seconds for the thread (None: until it ends,
        which the interruption keeps short). True if it has
        ended or never started; one still running is left, a daemon."""
        self._stopping.set()
        self.interrupt()
        self._calls.put(None)
        if self._thread.ident is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def submit(self, call: Callable[[SaClient], T]) -> Future[T]:
        future: Future[T] = Future()
        if self._stopping.is_set():
            future.set_exception(PortClosing("the SA client is stopped"))
            return future
        self._calls.put((call, future, next(self._numbers)))
        return future

    async def call(self, call: Callable[[SaClient], T]) -> T:
        return await asyncio.wrap_future(self.submit(call))

    def _run(self) -> None:
        try:
            client = self._open_client()
            port = QueuedPort(client.port, lambda: self._calls.put(None), self._interrupted)
            client.port = port
        except BaseException as exc:  # handed to start()
            self._ready.set_exception(exc)
            return
        self._client, self._port = client, port
        self._ready.set_result(None)
        try:
            while not self._stopping.is_set():
                item = self._calls.get()
                if item is None:
                    # Whatever arrived outside a call: a Report is answered here.
                    client.serve_reports(0.0)
                    continue
                self._run_call(client, *item)
        finally:
            try:
                client.close()  # no call under way: its drain is not interrupted
            finally:
                while not self._calls.empty():
                    if (item := self._calls.get_nowait()) is not None:
                        item[1].cancel()

    def _run_call(self, client: SaClient, call: Callable[[SaClient], object],
                  future: Future[object], number: int) -> None:
        if not future.set_running_or_notify_cancel():
            return
        self._running = number
        try:
            if self._interrupted():  # interrupted before it began: not sent at all
                raise _interrupted_call()
            future.set_result(call(client))
        except BaseException as exc:
            future.set_exception(exc)
        finally:
            self._running = None

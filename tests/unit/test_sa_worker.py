"""The SA worker thread: calls run on its thread in order, at once even while
the port waits for a MAD; Reports are served between them on the same thread;
a receive error reaches the call that receives; an opening error reaches
start(); the client and its port close on stop."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable

import pytest

from ibsnmp.mad.umad import Address, UmadError
from ibsnmp.sa import worker as sa_worker
from ibsnmp.sa.client import MadPort, SaClient
from ibsnmp.sa.worker import SaWorker

WAIT_S = 5.0  # for what a healthy worker does at once


class FakePort:
    """Receives what the test `deliver`s (a UmadError is raised), waiting up to the timeout."""

    def __init__(self) -> None:
        self._mads: queue.SimpleQueue[bytes | UmadError | None] = queue.SimpleQueue()
        self.waiting = threading.Event()  # set while a receive waits
        self.closed = False

    def deliver(self, mad: bytes | UmadError | None) -> None:
        """`mad` to the receive under way or the next one; None ends a receive empty-handed."""
        self._mads.put(mad)

    def receive_sized(self, timeout: float) -> bytes | None:
        self.waiting.set()
        try:
            mad = self._mads.get(timeout=timeout)
        except queue.Empty:
            return None
        finally:
            self.waiting.clear()
        if isinstance(mad, UmadError):
            raise mad
        return mad

    def send(self, mad: bytes, address: Address, transaction_id: int | None = None) -> None:
        pass

    def new_transaction_id(self) -> int:
        return 1

    def close(self) -> None:
        self.closed = True


class FakeClient:
    """An SaClient's part the worker uses: `port`, `serve_reports`, `close`."""

    def __init__(self) -> None:
        self.raw = FakePort()
        self.port: MadPort = self.raw  # the worker puts its queued port in front
        self.reports: list[tuple[bytes, int]] = []  # (MAD, the thread that served it)
        self.served = threading.Event()
        self.closed = False

    def serve_reports(self, timeout: float) -> None:
        mad = self.port.receive_sized(timeout)
        if mad is not None:
            self.reports.append((mad, threading.get_ident()))
            self.served.set()

    def close(self) -> None:
        self.port.close()
        self.closed = True


def started(client: FakeClient) -> SaWorker:
    worker = SaWorker(lambda: client)  # type: ignore[arg-type, return-value]  # a FakeClient
    worker.start()
    return worker


def test_calls_and_reports_run_on_the_worker_thread_in_order() -> None:
    client = FakeClient()
    worker = started(client)

    def numbered(n: int) -> Callable[[SaClient], tuple[int, int]]:
        return lambda c: (n, threading.get_ident())

    async def ask() -> list[tuple[int, int]]:
        return list(await asyncio.gather(*(worker.call(numbered(n)) for n in range(5))))

    try:
        answers = asyncio.run(ask())
        assert [n for n, _ in answers] == list(range(5))
        (thread,) = {t for _, t in answers}
        assert thread != threading.get_ident()
        client.raw.deliver(b"a Report")  # idle: it is served on the same thread
        assert client.served.wait(WAIT_S)
        assert client.reports == [(b"a Report", thread)]
    finally:
        worker.stop()
    assert client.closed and client.raw.closed


def test_a_call_runs_while_the_port_still_waits_for_a_mad(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sa_worker, "READ_SLICE_S", 60.0)
    client = FakeClient()
    worker = started(client)
    try:
        assert client.raw.waiting.wait(WAIT_S)
        assert worker.submit(lambda c: "at once").result(timeout=WAIT_S) == "at once"
        assert client.raw.waiting.is_set()  # the same receive: the call did not wait for it
    finally:
        monkeypatch.setattr(sa_worker, "READ_SLICE_S", 0.01)
        client.raw.deliver(None)
        worker.stop()


def test_a_receive_error_reaches_the_call_that_receives() -> None:
    client = FakeClient()
    worker = started(client)
    receiving = threading.Event()

    def receive(c: FakeClient) -> bytes | None:
        receiving.set()
        return c.port.receive_sized(WAIT_S)

    def answer(mad: bytes | UmadError) -> bytes | None:
        receiving.clear()
        future = worker.submit(receive)  # type: ignore[arg-type]  # takes the FakeClient
        assert receiving.wait(WAIT_S)
        client.raw.deliver(mad)
        return future.result(timeout=WAIT_S)

    try:
        with pytest.raises(UmadError, match="Input/output"):
            answer(UmadError(5, "umad_recv: Input/output error"))
        assert answer(b"an answer") == b"an answer"  # the port reads on
    finally:
        worker.stop()


def test_an_error_of_a_call_reaches_its_caller_and_the_worker_goes_on() -> None:
    worker = started(FakeClient())
    try:
        with pytest.raises(ZeroDivisionError):
            worker.submit(lambda c: 1 // 0).result(timeout=WAIT_S)
        assert worker.submit(lambda c: "still here").result(timeout=WAIT_S) == "still here"
    finally:
        worker.stop()


def test_a_port_that_does_not_open_fails_start() -> None:
    def refuse() -> FakeClient:
        raise OSError("cannot open port 0 of the first CA")

    with pytest.raises(OSError, match="cannot open"):
        SaWorker(refuse).start()  # type: ignore[arg-type]  # opens a FakeClient

"""The SA worker thread: calls run on its thread in order, Reports are served
between them, an opening error reaches start(), the client closes on stop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from ibsnmp.mad.sa_worker import SaWorker


class FakeClient:
    def __init__(self) -> None:
        self.threads: set[int] = set()
        self.waits = 0
        self.closed = False

    def serve_reports(self, timeout: float) -> None:
        self.threads.add(threading.get_ident())
        self.waits += 1
        threading.Event().wait(0.01)

    def close(self) -> None:
        self.closed = True


def test_calls_run_on_the_worker_thread_in_order() -> None:
    client = FakeClient()
    worker = SaWorker(lambda: client)  # type: ignore[arg-type, return-value]
    worker.start()

    async def ask() -> list[int]:
        return list(await asyncio.gather(*(worker.call(lambda c, n=n: (n, threading.get_ident()))
                                           for n in range(5))))

    try:
        answers = asyncio.run(ask())
        assert [n for n, _ in answers] == list(range(5))
        (thread,) = {t for _, t in answers}
        assert thread != threading.get_ident()
        while not client.waits:  # idle: it waits for Reports on the same thread
            threading.Event().wait(0.01)
        assert client.threads == {thread}
    finally:
        worker.stop()
    assert client.closed


def test_an_error_of_a_call_reaches_its_caller_and_the_worker_goes_on() -> None:
    worker = SaWorker(FakeClient)  # type: ignore[arg-type]
    worker.start()
    try:
        with pytest.raises(ZeroDivisionError):
            worker.submit(lambda c: 1 // 0).result(timeout=5)
        assert worker.submit(lambda c: "still here").result(timeout=5) == "still here"
    finally:
        worker.stop()


def test_a_port_that_does_not_open_fails_start() -> None:
    def refuse() -> FakeClient:
        raise OSError("cannot open port 0 of the first CA")

    with pytest.raises(OSError, match="cannot open"):
        SaWorker(refuse).start()  # type: ignore[arg-type]

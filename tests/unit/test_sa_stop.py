"""Stopping the SA client never waits on the SA: a call waiting for an answer
is interrupted at once, calls queued before the interruption never go out,
`stop` gives up on a thread that does not end (and says so), the port's
close does not wait on a reader stuck in a receive, requests made `within`
a deadline are tried once and end by it, and LiveSa's stop unsubscribes
from an SA that answers and skips it for one known silent."""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from concurrent.futures import Future

import pytest

from ibsnmp.live.subnet_sa import LiveSa
from ibsnmp.mad.records_generated import SAMAD
from ibsnmp.mad.umad import Address, MadTimeout, PortClosing
from ibsnmp.sa import records
from ibsnmp.sa.backend import SaUnavailable
from ibsnmp.sa.client import (
    ReportHandler,
    SaClient,
    subscribe,
    subscription,
    unsubscribe_within,
)
from ibsnmp.sa.mad_backend import MadSaBackend
from ibsnmp.sa.query import PathQuery
from ibsnmp.sa.records import SA_MAD
from ibsnmp.sa.worker import READER_JOIN_S, QueuedPort, SaWorker
from tests.unit.test_sa_mads import SM, captured

WAIT_S = 5.0  # for what happens at once
# What "at once" may take on a loaded machine: the close's drain (0.2 s) and
# the reader's last slice (0.2 s) fit well within it; a wait for the SA does not.
PROMPT_S = 1.0
SLOW_SA_S = 30.0  # the SA timeout of a client that must not be waited for


class FakeSa:
    """A port to an SA that answers every InformInfo Set (`answering`) or
    nothing; thread-safe, receives wait for their timeout as a port does."""

    def __init__(self, answering: bool) -> None:
        self.answering = answering
        self.sent: list[SAMAD] = []
        self.sending = threading.Event()  # set at each send
        self.closed = False
        self._inbox: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self._tids = iter(range(1, 1 << 16))

    def new_transaction_id(self) -> int:
        return next(self._tids)

    def send(self, mad: bytes, address: Address, transaction_id: int | None = None) -> None:
        header = SA_MAD.decode(mad)
        self.sent.append(header)
        self.sending.set()
        if self.answering and header["AttributeID"] == records.INFORM_INFO.attribute_id:
            answer = captured("sa_informinfo_set_resp")
            self._inbox.put(answer[:8] + mad[8:16] + answer[16:])  # the request's TID

    def receive_sized(self, timeout: float) -> bytes | None:
        try:
            return self._inbox.get(timeout=timeout) if timeout > 0 else self._inbox.get_nowait()
        except queue.Empty:
            return None

    def close(self) -> None:
        self.closed = True

    def sets(self) -> list[tuple[int, int]]:
        """(TrapNumber, Subscribe) of each InformInfo Set sent."""
        sets = []
        for header in self.sent:
            if header["AttributeID"] == records.INFORM_INFO.attribute_id:
                record = records.INFORM_INFO.layout.decode(header["Data"])
                sets.append((record["TrapNumber"], record["Subscribe"]))
        return sets


def open_worker(port: FakeSa) -> tuple[SaWorker, SaClient]:
    client = SaClient(port, SM, timeout=SLOW_SA_S)
    worker = SaWorker(lambda: client)
    worker.start()
    return worker, client


def sent_request(port: FakeSa) -> None:
    assert port.sending.wait(WAIT_S)
    port.sending.clear()


def test_stop_interrupts_a_call_waiting_for_the_sa_at_once() -> None:
    port = FakeSa(answering=False)
    worker, _ = open_worker(port)
    asked = worker.submit(lambda c: c.get(records.PATH_RECORD, {"SLID": 1, "DLID": 2}))
    sent_request(port)
    began = time.monotonic()
    assert worker.stop(timeout=WAIT_S)
    assert time.monotonic() - began < PROMPT_S
    with pytest.raises(PortClosing, match="interrupted"):
        asked.result(timeout=0)
    assert port.closed


def test_interrupt_ends_the_calls_submitted_before_it_and_no_later_one() -> None:
    port = FakeSa(answering=True)
    worker, client = open_worker(port)
    try:
        # A call that waits on the SA, and one queued behind it.
        waiting = worker.submit(lambda c: c.get(records.PATH_RECORD, {"SLID": 1, "DLID": 2}))
        queued = worker.submit(lambda c: c.get(records.PATH_RECORD, {"SLID": 1, "DLID": 3}))
        sent_request(port)
        worker.interrupt()
        after = worker.submit(lambda c: c.set(records.INFORM_INFO, subscription(128)))
        for future in (waiting, queued):
            with pytest.raises(PortClosing):
                future.result(timeout=PROMPT_S)
        assert after.result(timeout=WAIT_S)["TrapNumber"] == 128
        # The queued call never went out: the path query, then the Set.
        assert [h["AttributeID"] for h in port.sent] == [records.PATH_RECORD.attribute_id,
                                                         records.INFORM_INFO.attribute_id]
        assert not client.silent
    finally:
        worker.stop()


def test_a_call_submitted_after_stop_fails_at_once() -> None:
    worker, _ = open_worker(FakeSa(answering=True))
    assert worker.stop(timeout=WAIT_S)
    with pytest.raises(PortClosing, match="stopped"):
        worker.submit(lambda c: "never run").result(timeout=0)


def test_stop_gives_up_on_a_thread_that_does_not_end() -> None:
    worker, _ = open_worker(FakeSa(answering=True))
    began, release = threading.Event(), threading.Event()

    def deaf(client: SaClient) -> bool:  # a call that does not hear the interruption
        began.set()
        return release.wait(WAIT_S)

    stuck: Future[bool] = worker.submit(deaf)
    assert began.wait(WAIT_S)
    try:
        stopping = time.monotonic()
        assert not worker.stop(timeout=0.2)
        assert time.monotonic() - stopping < PROMPT_S
    finally:
        release.set()
    assert stuck.result(timeout=WAIT_S) is True
    assert worker.stop(timeout=WAIT_S)  # it ends once its call does


def test_closing_does_not_wait_on_a_reader_stuck_in_a_receive(
        caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()

    class StuckPort(FakeSa):
        def receive_sized(self, timeout: float) -> bytes | None:
            release.wait(WAIT_S)  # a umad_recv that keeps no timeout
            return None

    raw = StuckPort(answering=False)
    queued = QueuedPort(raw, lambda: None)
    try:
        began = time.monotonic()
        with caplog.at_level(logging.WARNING, "ibsnmp.sa.worker"):
            queued.close()
        assert time.monotonic() - began < READER_JOIN_S + PROMPT_S
        assert not raw.closed  # closing it under a receive would crash ibsim's preload
        assert "left open" in caplog.text
    finally:
        release.set()


def test_within_a_deadline_each_request_is_tried_once_and_all_end_by_it() -> None:
    port = FakeSa(answering=False)
    client = SaClient(port, SM, timeout=SLOW_SA_S, retries=2)
    began = time.monotonic()
    outcome = unsubscribe_within(client, [128, 129, 130], 0.3)
    assert 0.3 <= time.monotonic() - began < PROMPT_S
    assert outcome[128] == "[Errno 110] SA InformInfo: no answer by its deadline"
    assert outcome[129] == outcome[130] == "not asked: the SA did not answer the one before"
    assert port.sets() == [(128, 0)]  # one try of the first; the others never went out
    assert client.silent
    # Past the block its requests are tried as before: three times.
    client.timeout = 0.05
    with pytest.raises(MadTimeout, match="no answer after 3 tries"):
        client.set(records.INFORM_INFO, subscription(128))
    assert len(port.sets()) == 1 + 3


def test_an_answer_clears_silent() -> None:
    port = FakeSa(answering=False)
    client = SaClient(port, SM, timeout=0.05, retries=0)
    assert subscribe(client, [128])[128] is not None and client.silent
    port.answering = True
    assert subscribe(client, [128]) == {128: None} and not client.silent


def test_subscribing_to_a_silent_sa_asks_once_not_once_per_trap() -> None:
    """A start with no SM answering waits for one Set's tries, not six."""
    port = FakeSa(answering=False)
    client = SaClient(port, SM, timeout=0.05, retries=1)
    outcome = subscribe(client, [128, 129, 130])
    assert outcome[128] is not None and port.sets() == [(128, 1)] * 2  # its two tries
    assert outcome[129] == outcome[130] == "not asked: the SA did not answer the one before"
    port.answering = True  # the SM is back: the next subscription asks every trap
    assert subscribe(client, [128, 129, 130]) == dict.fromkeys((128, 129, 130))


def test_subscribe_ends_at_a_closing_port() -> None:
    class ClosingPort(FakeSa):
        def receive_sized(self, timeout: float) -> bytes | None:
            raise PortClosing()

    port = ClosingPort(answering=True)
    with pytest.raises(PortClosing):
        subscribe(SaClient(port, SM), [128, 129, 130], False)
    assert len(port.sets()) == 1


def live_sa(port: FakeSa, clients: list[SaClient] | None = None) -> LiveSa:
    """A LiveSa for traps 128 and 129 over `port`; its client is added to `clients`."""
    def open_client(on_report: ReportHandler) -> SaClient:
        client = SaClient(port, SM, timeout=SLOW_SA_S, on_report=on_report)
        (clients if clients is not None else []).append(client)
        return client

    return LiveSa(open_client, lambda event: None, lambda lid: None, lambda gid: None, list,
                  traps=(128, 129))


def test_live_sa_stop_unsubscribes_from_an_sa_that_answers() -> None:
    port = FakeSa(answering=True)
    sa = live_sa(port)

    async def run() -> float:
        await sa.start()
        began = time.monotonic()
        await sa.stop(within=1.0)
        return time.monotonic() - began

    assert asyncio.run(run()) < PROMPT_S
    assert port.sets() == [(128, 1), (129, 1), (128, 0), (129, 0)]
    assert port.closed


def test_live_sa_stop_interrupts_a_query_and_skips_the_unsubscribe_of_a_silent_sa(
        caplog: pytest.LogCaptureFixture) -> None:
    port = FakeSa(answering=True)
    clients: list[SaClient] = []
    sa = live_sa(port, clients)
    backend = MadSaBackend(sa.worker, lambda lid: None, lambda gid: None, list)

    async def run() -> tuple[float, object]:
        await sa.start()
        port.answering = False  # the SM dies, and a query times out
        (client,) = clients
        client.timeout = 0.05
        with pytest.raises(SaUnavailable, match="no answer after 3 tries"):
            await backend.path_records(PathQuery(slid=1, dlid=2))
        client.timeout = SLOW_SA_S  # the next waits as long as it may
        port.sending.clear()
        query = asyncio.create_task(backend.path_records(PathQuery(slid=1, dlid=2)))
        await asyncio.to_thread(sent_request, port)
        began = time.monotonic()
        await sa.stop(within=1.0)
        took = time.monotonic() - began
        return took, (await asyncio.gather(query, return_exceptions=True))[0]

    with caplog.at_level(logging.INFO, "ibsnmp.sa"):
        took, failed = asyncio.run(run())
    assert took < PROMPT_S
    assert isinstance(failed, SaUnavailable) and "interrupted" in str(failed)
    assert port.sets() == [(128, 1), (129, 1)]  # no unsubscribe went out
    assert sa.worker.silent
    assert "SA unsubscribe skipped: the SA did not answer its last query" in caplog.text
    assert port.closed


def test_live_sa_stop_gives_an_sa_that_died_one_short_try() -> None:
    port = FakeSa(answering=True)
    sa = live_sa(port)

    async def run() -> float:
        await sa.start()
        port.answering = False  # the SM dies; nothing has timed out yet
        began = time.monotonic()
        await sa.stop(within=1.5)
        return time.monotonic() - began

    took = asyncio.run(run())
    # The unsubscribe's half second, the port's close (its drain, the reader's slice).
    assert 0.5 <= took < 1.5
    assert port.sets() == [(128, 1), (129, 1), (128, 0)]  # one try of the first
    assert port.closed

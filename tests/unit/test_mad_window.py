"""The MAD window against a scripted port: transaction IDs written per try,
answers matched to their handlers, retries, timeouts and strays counted."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Set as AbstractSet

import pytest

from ibsnmp.mad import attributes as attrs
from ibsnmp.mad.packets import directed_route_get
from ibsnmp.mad.umad import DIRECTED_ROUTE, Address, reply_tid, with_transaction_id
from ibsnmp.mad.window import MadWindow


class ScriptedPort:
    """Answers each request at once with its own bytes (TID included), except
    the routes in `silent`, which never answer, and `late`, whose first try is
    answered only after its retry was sent."""

    def __init__(self, silent: AbstractSet[bytes] = frozenset(),
                 late: AbstractSet[bytes] = frozenset()) -> None:
        self.silent, self.late = silent, late
        self.sent: list[tuple[bytes, Address, int]] = []
        self.queue: deque[bytes] = deque()
        self.held: dict[bytes, bytes] = {}
        self.next_tid = 0xFFFF_FFFA  # UmadPort's IDs are 32 bits and wrap past 0
        self.outstanding_at_send: list[int] = []  # sent and not yet received, at each send
        self.received = 0

    def new_transaction_id(self) -> int:
        self.next_tid = (self.next_tid + 1) & 0xFFFF_FFFF or 1
        return self.next_tid

    def send(self, mad: bytes, address: Address, transaction_id: int | None = None) -> None:
        assert transaction_id is not None
        self.outstanding_at_send.append(len(self.sent) - self.received)
        # The kernel answers with its agent number in the top 32 bits.
        wire = with_transaction_id(mad, (0xAB << 32) | transaction_id)
        self.sent.append((mad, address, transaction_id))
        if mad in self.silent:
            return
        if mad in self.late and mad not in self.held:
            self.held[mad] = wire  # the first try's answer, sent after the retry's
            return
        self.queue.append(wire)
        if mad in self.held:
            self.queue.append(self.held[mad])

    def receive(self, timeout: float) -> bytes | None:
        if not self.queue:
            return None
        self.received += 1
        return self.queue.popleft()


def request(port_number: int) -> bytes:
    return directed_route_get(attrs.NODE_INFO, (port_number,), 0)


def test_each_answer_reaches_its_handler_with_a_fresh_tid_per_request() -> None:
    port = ScriptedPort()
    window = MadWindow(port, size=2)  # type: ignore[arg-type]  # a fake port
    got: dict[int, bytes | None] = {}

    def keep(number: int) -> Callable[[bytes | None], None]:
        return lambda answer: got.__setitem__(number, answer)

    for number in range(1, 8):
        window.submit(request(number), DIRECTED_ROUTE, keep(number))
    stats = window.drain()
    assert (stats.sent, stats.answered, stats.retried, stats.timed_out) == (7, 7, 0, 0)
    tids = [tid for _, _, tid in port.sent]
    assert len(set(tids)) == 7
    for (mad, address, tid), number in zip(port.sent, range(1, 8)):
        assert mad == request(number) and address is DIRECTED_ROUTE
        answer = got[number]
        assert answer is not None and reply_tid(answer) == tid
        assert answer[24:] == mad[24:]


def test_handlers_may_submit_more_and_the_window_drains_them_too() -> None:
    port = ScriptedPort()
    window = MadWindow(port, size=3)  # type: ignore[arg-type]  # a fake port
    order: list[int] = []

    def then(number: int) -> None:
        order.append(number)
        if number < 20:
            window.submit(request(number + 10), DIRECTED_ROUTE, lambda _: then(number + 10))

    def then_for(number: int) -> Callable[[bytes | None], None]:
        return lambda _: then(number)

    for number in (1, 2):
        window.submit(request(number), DIRECTED_ROUTE, then_for(number))
    window.drain()
    assert sorted(order) == [1, 2, 11, 12, 21, 22]


def test_a_lost_request_is_retried_with_a_new_tid_then_times_out() -> None:
    lost = request(5)
    port = ScriptedPort(silent={lost})
    window = MadWindow(port,  # type: ignore[arg-type]  # a fake port
                       size=4, timeout=0.01, retries=2)
    got: list[bytes | None] = []
    window.submit(lost, DIRECTED_ROUTE, got.append)
    window.submit(request(1), DIRECTED_ROUTE, lambda _: None)
    stats = window.drain()
    assert got == [None]  # once, after every try
    tries = [tid for mad, _, tid in port.sent if mad == lost]
    assert len(tries) == 3 and len(set(tries)) == 3
    assert (stats.sent, stats.answered, stats.retried, stats.timed_out) == (4, 1, 2, 1)


def test_a_late_first_answer_after_the_retry_counts_as_stray() -> None:
    slow = request(3)
    port = ScriptedPort(late={slow})
    window = MadWindow(port,  # type: ignore[arg-type]  # a fake port
                       size=1, timeout=0.01, retries=1)
    got: list[bytes | None] = []
    window.submit(slow, DIRECTED_ROUTE, got.append)
    window.submit(request(4), DIRECTED_ROUTE, got.append)  # read after the stale answer
    stats = window.drain()
    first, retry = (tid for mad, _, tid in port.sent if mad == slow)
    assert len(got) == 2 and got[0] is not None and reply_tid(got[0]) == retry
    assert got[1] is not None and got[1][24:] == request(4)[24:]
    assert (stats.sent, stats.answered, stats.retried, stats.stray) == (3, 2, 1, 1)
    assert first != retry


@pytest.mark.parametrize(("size", "refill_at", "pattern"), [
    # Topped up to the size once three quarters (the default) or `refill_at` are in flight.
    (8, None, [0, 1, 2, 3, 4, 5, 6, 7, 6, 7]),
    (4, 2, [0, 1, 2, 3, 2, 3, 2, 3, 2, 3]),
    (4, 3, [0, 1, 2, 3, 3, 3, 3, 3, 3, 3]),
    (4, 0, [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]),
    (1, None, [0] * 10),
])
def test_the_window_is_refilled_in_bursts(size: int, refill_at: int | None,
                                          pattern: list[int]) -> None:
    port = ScriptedPort()
    window = MadWindow(port,  # type: ignore[arg-type]  # a fake port
                       size=size, refill_at=refill_at)
    for number in range(1, 11):
        window.submit(request(number), DIRECTED_ROUTE, lambda _: None)
    assert window.drain().answered == 10
    assert port.outstanding_at_send == pattern


@pytest.mark.parametrize(("size", "refill_at"), [(0, None), (4, 4), (4, -1)])
def test_a_window_holds_at_least_one_mad_and_refills_below_its_size(
        size: int, refill_at: int | None) -> None:
    with pytest.raises(ValueError, match="at least one|refilled at"):
        MadWindow(ScriptedPort(),  # type: ignore[arg-type]  # a fake port
                  size=size, refill_at=refill_at)

"""Decision.decide: each kind of datagram takes one path, told by the return value."""

from __future__ import annotations

from typing import Any

from tests.support.wire import community_request, inform_answer
from tests.support.wire_v3 import v3_message

from ibsnmp.agent.config import Community, Limits
from ibsnmp.agent.decision import Decision
from ibsnmp.agent.pending_counts import (BAD_COMMUNITY, IN_GET_NEXTS, IN_GET_REQUESTS,
                                         IN_SET_REQUESTS, Counter)
from ibsnmp.agent.prefilter import (INFORM_ANSWER, Drop, PassedRequest, Prefilter, Reply,
                                    ToResponders, Verdict)
from ibsnmp.agent.transport import NOTIFICATION_DOMAINS
from ibsnmp.wire.header import V3Message, Varbind

LISTEN = (1, 3, 6, 1, 6, 1, 1)  # snmpUDPDomain
NOTIFY = next(iter(NOTIFICATION_DOMAINS))
SOURCE = ("127.0.0.1", 40000)
SYS_DESCR = "1.3.6.1.2.1.1.1.0"



class Recorder:
    """The parts a decision hands datagrams to, noting what each was given."""

    def __init__(self, fast_answer: bytes | None = b"fast",
                 repeat_answer: bytes | None = None) -> None:
        self.fast_answer = fast_answer
        self.repeat_answer = repeat_answer
        self.calls: list[str] = []
        self.counted: list[Counter] = []

    def handle(self, message: V3Message, datagram: bytes,
               varbinds: tuple[Varbind, ...] | None = None, sender: Any = None) -> Verdict:
        self.calls.append(f"v3 from {sender[0]}")
        return Reply(b"v3")

    def answer(self, data: bytes, passed: PassedRequest) -> bytes | None:
        self.calls.append(f"fast {passed.message.pdu.tag:#x}")
        return self.fast_answer

    def repeat(self, data: bytes, address: Any) -> bytes | None:
        if self.repeat_answer is not None:
            self.calls.append(f"repeat from {address[0]}")
        return self.repeat_answer

    def answer_community(self, data: bytes,
                         passed: PassedRequest) -> tuple[bytes | None, dict[Counter, int]]:
        self.calls.append(f"responders {passed.message.pdu.tag:#x}")
        return b"responders", {}

    def count(self, counter: Counter) -> None:
        self.counted.append(counter)


def decision(parts: Recorder, communities: tuple[Community, ...] = (
        Community("public"), Community("private", access="write")),
        use_fast_reads: bool = True, limits: Limits = Limits(max_varbinds=64)) -> Decision:
    prefilter = Prefilter(communities, limits, lambda name: False,
                          notification_communities=["trapcomm"])
    return Decision(prefilter, parts, parts, parts, parts, use_fast_reads=use_fast_reads)


def test_a_read_is_answered_by_the_fast_path_and_counted_before_it_reads() -> None:
    parts = Recorder()
    outcome = decision(parts).decide(LISTEN, SOURCE, community_request("get", [SYS_DESCR]))
    assert outcome == Reply(b"fast")
    assert parts.calls == ["fast 0xa0"] and parts.counted == [IN_GET_REQUESTS]


def test_a_read_the_fast_path_leaves_goes_to_the_command_responders() -> None:
    parts = Recorder(fast_answer=None)
    outcome = decision(parts).decide(LISTEN, SOURCE, community_request("next", [SYS_DESCR]))
    assert isinstance(outcome, ToResponders) and outcome.counters == ()
    assert parts.calls == ["fast 0xa1"]  # handed on, not yet answered
    assert outcome.handing() == (b"responders", {})
    assert parts.calls == ["fast 0xa1", "responders 0xa1"] and parts.counted == [IN_GET_NEXTS]


def test_a_set_never_takes_the_fast_path() -> None:
    parts = Recorder()
    outcome = decision(parts).decide(LISTEN, SOURCE, community_request(
        "set", [SYS_DESCR], community="private"))
    assert isinstance(outcome, ToResponders)
    outcome.handing()
    assert parts.calls == ["responders 0xa3"] and parts.counted == [IN_SET_REQUESTS]


def test_without_the_fast_path_reads_go_to_the_command_responders() -> None:
    parts = Recorder()
    outcome = decision(parts, use_fast_reads=False).decide(
        LISTEN, SOURCE, community_request("get", [SYS_DESCR]))
    assert isinstance(outcome, ToResponders)
    outcome.handing()
    assert parts.calls == ["responders 0xa0"]


def test_snmpv3_goes_to_the_usm_with_its_sender() -> None:
    parts = Recorder()
    v3_get = v3_message("get", [(1, 3, 6, 1, 2, 1, 1, 1, 0)], user=b"alice")
    assert decision(parts).decide(LISTEN, SOURCE, v3_get) == Reply(b"v3")
    assert parts.calls == ["v3 from 127.0.0.1"] and parts.counted == []


def test_a_refusal_reaches_nothing_and_an_inform_answer_is_pysnmp_s() -> None:
    parts = Recorder()
    decide = decision(parts).decide
    wrong = community_request("get", [SYS_DESCR], community="wrong")
    assert decide(LISTEN, SOURCE, wrong) == Drop((BAD_COMMUNITY,))
    assert decide(NOTIFY, SOURCE, inform_answer("trapcomm")) is INFORM_ANSWER
    assert parts.calls == [] and parts.counted == []


def test_the_same_datagram_twice_is_decided_twice() -> None:
    """No state between calls: the request travels in the return value."""
    parts = Recorder()
    decide = decision(parts).decide
    data = community_request("get", [SYS_DESCR])
    assert decide(LISTEN, SOURCE, data) == decide(LISTEN, SOURCE, data) == Reply(b"fast")
    assert parts.calls == ["fast 0xa0"] * 2


def test_a_repeat_is_answered_before_any_header_check_and_counts_nothing_here() -> None:
    """The fast path counts a repeat itself (it knows the request it repeats)."""
    parts = Recorder(repeat_answer=b"again")
    wrong = community_request("get", [SYS_DESCR], community="wrong")
    assert decision(parts).decide(LISTEN, SOURCE, wrong) == Reply(b"again")
    assert parts.calls == ["repeat from 127.0.0.1"] and parts.counted == []


def test_no_repeat_on_a_notification_socket_past_the_limits_or_without_the_fast_path() -> None:
    data = community_request("get", [SYS_DESCR])
    parts = Recorder(repeat_answer=b"again")
    assert decision(parts).decide(NOTIFY, SOURCE, data) == Drop((BAD_COMMUNITY,))
    assert decision(parts, use_fast_reads=False).decide(LISTEN, SOURCE, data) != Reply(b"again")
    limited = decision(parts, limits=Limits(max_varbinds=64, requests_per_second_per_source=1,
                                            requests_per_second=0, cpu_budget=0))
    assert limited.decide(LISTEN, SOURCE, data) == Reply(b"again")
    assert limited.decide(LISTEN, SOURCE, data) == Drop(())  # over the source's rate
    assert parts.calls == ["repeat from 127.0.0.1"]  # the limited one's first only

"""agent.fast_v3 on a configured engine: what it answers, what it leaves to pysnmp.

Requests are sealed with ibsnmp.wire's own USM (interop with net-snmp and
pysnmp is proved in test_usm_netsnmp.py and test_wire_usm.py); the
responder is a recording stand-in, so these tests are about the security
decisions, the shared engine clock and the message around the PDU.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from tests.support.agent_support import LOCAL_GUID, V3_USERS, agent_settings, make_backend
from tests.support.set_support import FakeClock

from ibsnmp.agent.engine import build_engine
from ibsnmp.agent.fast_v3 import Answer, FastV3, Principal
from ibsnmp.agent.pending_counts import PendingCounts
from ibsnmp.agent.prefilter import Drop, Reply, ToResponders
from ibsnmp.wire.ber import OBJECT_IDENTIFIER, OCTET_STRING, SEQUENCE, element, length_octets, oid_octets
from ibsnmp.wire.header import GET, GET_BULK, INFORM, REPORT, RESPONSE, SET, V3Message, read_header
from ibsnmp.wire.request import (
    Request,
    encode_response_pdu,
    largest_content,
    varbind_room,
)
from ibsnmp.wire.usm_inbound import TIME_WINDOW, Accepted, accept, localize_users
from ibsnmp.wire.usm_message import (FLAG_AUTH, FLAG_PRIV, FLAG_REPORTABLE, Outgoing,
                                     encode_scoped_pdu, encode_v3)
from ibsnmp.wire.usm_inbound import seal_message

SYS_NAME = (1, 3, 6, 1, 2, 1, 1, 5, 0)


class Recorder:
    """A responder that answers sysName.0 = "fast" and remembers what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[Request, bytes, Principal, int]] = []
        self.decline = False

    def __call__(self, request: Request, context_name: bytes, principal: Principal,
                 max_pdu_octets: int) -> Answer | None:
        self.calls.append((request, context_name, principal, max_pdu_octets))
        if self.decline:
            return None
        value = element(OCTET_STRING, b"fast")
        varbind = element(SEQUENCE, element(OBJECT_IDENTIFIER, oid_octets(SYS_NAME)) + value)
        return Answer(0, 0, varbind)


@pytest.fixture(scope="module")
def built() -> Any:
    return build_engine(agent_settings(), *make_backend(), fabric_summary="unit")


@pytest.fixture()
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture()
def fast(built: Any, recorder: Recorder) -> FastV3:
    known = {LOCAL_GUID.encode()}
    return FastV3(built.engine, V3_USERS, recorder, known.__contains__,
                  PendingCounts(built.engine.get_mib_builder()), max_varbinds=256,
                  handover=built.engine.message_dispatcher.parts.handover)


def answer(fast: FastV3, data: bytes) -> bytes | None:
    """What the agent sends back for `data` (None: nothing, or left to pysnmp)."""
    message = read_header(data)
    assert isinstance(message, V3Message)
    verdict = fast.handle(message, data)
    return verdict.datagram if isinstance(verdict, Reply) else None


def handed_over(fast: FastV3, data: bytes) -> bytes | None:
    """What pysnmp's command responders answer to `data` (agent.handover), sealed
    here; fails when the fast path answers or drops it itself."""
    message = read_header(data)
    assert isinstance(message, V3Message)
    verdict = fast.handle(message, data)
    assert isinstance(verdict, ToResponders)
    reply, _ = verdict.handing()
    return reply


def get_pdu(tag: int = GET, request_id: int = 77, fields: bytes = b"\x02\x01\x00\x02\x01\x00") -> bytes:
    varbind = element(SEQUENCE, element(OBJECT_IDENTIFIER, oid_octets(SYS_NAME)) + b"\x05\x00")
    return element(tag, element(0x02, bytes((request_id,))) + fields
                   + element(SEQUENCE, varbind))


def request(fast: FastV3, user: str, *, level: int = 3, boots: int | None = None,
            engine_time: int | None = None, context_engine_id: bytes | None = None,
            context_name: bytes = b"", pdu: bytes | None = None, max_size: int = 65507,
            engine_id: bytes | None = None, users: tuple[Any, ...] = V3_USERS,
            reportable: bool = True) -> bytes:
    """A request sealed by a manager that knows the engine (as after discovery)."""
    keys = localize_users(users, engine_id or fast.engine_id)[user.encode()]
    flags = (FLAG_REPORTABLE if reportable else 0) | FLAG_AUTH | (FLAG_PRIV if level == 3 else 0)
    out = Outgoing(message_id=4711, max_size=max_size, flags=flags,
                   engine_id=engine_id or fast.engine_id,
                   boots=fast.clock.boots() if boots is None else boots,
                   engine_time=fast.clock.time() if engine_time is None else engine_time,
                   user=user.encode(), mac_length=keys.mac.mac_length,
                   priv_params=bytes.fromhex("0011223344556677") if level == 3 else b"")
    scoped = encode_scoped_pdu(fast.engine_id if context_engine_id is None else context_engine_id,
                               context_name, pdu or get_pdu())
    return seal_message(out, keys, scoped)


def opened(fast: FastV3, response: bytes) -> Accepted:
    """The response checked and decrypted as its manager would."""
    result = accept(response, fast.engine_id, fast.users, fast.clock)
    assert isinstance(result, Accepted), result
    return result


def test_an_auth_priv_get_is_answered_sealed(fast: FastV3, recorder: Recorder) -> None:
    response = answer(fast, request(fast, "reader"))
    assert response is not None
    sent = opened(fast, response)
    assert sent.level == 3 and sent.request.flags == FLAG_AUTH | FLAG_PRIV
    assert sent.request.message_id == 4711 and sent.request.user_name == b"reader"
    assert sent.scoped.context_engine_id == fast.engine_id
    pdu = sent.scoped.pdu
    assert pdu.tag == 0xA2 and sent.scoped.octets[:pdu.varbinds[1]].endswith(b"\x04\x04fast")
    (call,) = recorder.calls
    assert call[0].pdu_type == GET and call[0].request_id == 77 and call[0].oids == (SYS_NAME,)
    assert call[1] == b"" and call[2] == Principal("read", None)


def test_the_response_carries_pysnmps_boots_and_time(fast: FastV3, built: Any) -> None:
    boots, engine_time = built.engine.get_mib_builder().import_symbols(
        "__SNMP-FRAMEWORK-MIB", "snmpEngineBoots", "snmpEngineTime")
    response = answer(fast, request(fast, "authonly", level=2))
    assert response is not None
    sent = read_header(response)
    assert isinstance(sent, V3Message)
    assert sent.boots == int(boots.syntax)
    assert abs(sent.engine_time - int(engine_time.syntax.clone())) <= 1
    assert sent.flags == FLAG_AUTH


def test_a_write_user_reads_with_its_own_principal(fast: FastV3, recorder: Recorder) -> None:
    assert answer(fast, request(fast, "admin")) is not None
    assert recorder.calls[0][2] == Principal("write", None)


def test_a_known_node_context_is_passed_on(fast: FastV3, recorder: Recorder) -> None:
    assert answer(fast, request(fast, "reader", context_name=LOCAL_GUID.encode())) is not None
    assert recorder.calls[0][1] == LOCAL_GUID.encode()


@pytest.mark.parametrize(("case", "answer_tag", "flags"), [
    ("foreign context engine", REPORT, 0),  # snmpUnknownPDUHandlers, unauthenticated
    ("set", RESPONSE, FLAG_AUTH | FLAG_PRIV),
    ("responder declines", RESPONSE, FLAG_AUTH | FLAG_PRIV),
])
def test_what_the_fast_responder_leaves_pysnmps_responders_answer(
        fast: FastV3, recorder: Recorder, case: str, answer_tag: int, flags: int) -> None:
    arguments: dict[str, Any] = {
        "foreign context engine": dict(context_engine_id=bytes.fromhex("8000000001020304")),
        "set": dict(pdu=get_pdu(SET)),
        "responder declines": {},
    }[case]
    recorder.decline = case == "responder declines"
    user = "admin" if case == "set" else "reader"  # a reader's SET never gets there
    reply = handed_over(fast, request(fast, user, **arguments))
    assert reply is not None
    sent = read_header(reply)
    assert isinstance(sent, V3Message) and sent.flags == flags
    if flags:
        scoped = opened(fast, reply).scoped
        assert scoped.pdu.tag == answer_tag
        assert scoped.pdu.request_id == 77
    else:
        assert sent.pdu is not None and sent.pdu.tag == answer_tag


@pytest.mark.parametrize(("case", "answer_tag", "status", "index"), [
    ("unknown context", REPORT, 0, 0),  # snmpUnknownContexts, at the request's level
    ("reader's set", RESPONSE, 6, 1),  # noAccess at the first varbind
])
def test_what_vacm_cannot_grant_is_refused_without_pysnmp(
        fast: FastV3, recorder: Recorder, case: str, answer_tag: int, status: int,
        index: int) -> None:
    arguments: dict[str, Any] = {
        "unknown context": dict(context_name=b"00000000deadbeef"),
        "reader's set": dict(pdu=get_pdu(SET)),
    }[case]
    data = request(fast, "reader", **arguments)
    message = read_header(data)
    assert isinstance(message, V3Message)
    verdict = fast.handle(message, data)
    assert isinstance(verdict, Reply) and not recorder.calls
    sent = read_header(verdict.datagram)
    assert isinstance(sent, V3Message) and sent.flags == FLAG_AUTH | FLAG_PRIV
    scoped = opened(fast, verdict.datagram).scoped
    assert (scoped.pdu.tag, scoped.pdu.request_id) == (answer_tag, 77)
    if answer_tag == RESPONSE:
        assert scoped.pdu.fields == (status, index)
        first, end = scoped.pdu.varbinds
        assert scoped.octets[first:end] == element(SEQUENCE, element(
            OBJECT_IDENTIFIER, oid_octets(SYS_NAME)) + b"\x05\x00")  # echoed
    else:
        varbinds = scoped.pdu.read_varbinds(scoped.octets)
        assert varbinds[0].oid(scoped.octets) == (1, 3, 6, 1, 6, 3, 12, 1, 5, 0)


@pytest.mark.parametrize(("reportable", "counter"), [
    (True, "snmpInvalidMsgs"),  # RFC 3412 6.4: a Response is never reportable
    (False, "snmpUnknownPDUHandlers"),  # no application here takes a Response
])
def test_an_encrypted_response_is_dropped_and_counted(built: Any, recorder: Recorder,
                                                     reportable: bool, counter: str) -> None:
    counts = PendingCounts(built.engine.get_mib_builder())
    fast = FastV3(built.engine, V3_USERS, recorder, lambda name: False, counts, max_varbinds=256,
                  handover=built.engine.message_dispatcher.parts.handover)
    data = request(fast, "reader", pdu=get_pdu(RESPONSE), reportable=reportable)
    message = read_header(data)
    assert isinstance(message, V3Message) and message.pdu is None  # the PDU is encrypted
    module = "__SNMP-MPD-MIB"
    before = {name: counts.value((module, name))
              for name in ("snmpInvalidMsgs", "snmpUnknownPDUHandlers")}
    counts.begin_message()
    verdict = fast.handle(message, data)
    counts.end_message(verdict.counters)
    assert isinstance(verdict, Drop) and not recorder.calls
    moved = {name: counts.value((module, name)) - value for name, value in before.items()}
    assert moved == {name: int(name == counter) for name in before}


def test_an_inform_gets_the_unknown_pdu_handlers_report(fast: FastV3) -> None:
    reply = handed_over(fast, request(fast, "reader", pdu=get_pdu(INFORM)))
    assert reply is not None
    sent = read_header(reply)
    # RFC 3412 4.2.2.1.2 and 7.1.3: unauthenticated, in this engine's default context.
    assert isinstance(sent, V3Message) and sent.flags == 0
    assert sent.pdu is not None and sent.pdu.tag == REPORT and sent.pdu.request_id == 77
    (varbind,) = sent.pdu.read_varbinds(reply)
    assert reply[varbind.oid_start:varbind.oid_end] == oid_octets((1, 3, 6, 1, 6, 3, 11, 2, 1, 3, 0))


def test_a_non_reportable_request_in_an_unknown_context_gets_no_report(fast: FastV3) -> None:
    data = request(fast, "reader", context_name=b"00000000deadbeef", reportable=False)
    message = read_header(data)
    assert isinstance(message, V3Message)
    verdict = fast.handle(message, data)
    assert isinstance(verdict, Drop)


def test_a_set_below_the_users_level_is_vacms_authorization_error(fast: FastV3) -> None:
    reply = answer(fast, request(fast, "admin", level=2, pdu=get_pdu(SET)))
    assert reply is not None
    scoped = opened(fast, reply).scoped
    # authorizationError, error-index 0 (RFC 3413 3.2), at the level the request came in.
    assert (scoped.pdu.tag, scoped.pdu.fields) == (RESPONSE, (16, 0))


@pytest.mark.parametrize(("case", "flags", "tag"), [
    ("wrong boots", FLAG_AUTH, REPORT), ("ahead", FLAG_AUTH, REPORT),
    ("foreign engine", 0, REPORT), ("below level", FLAG_AUTH, RESPONSE),
])
def test_usm_and_vacm_refusals_are_answered_here(fast: FastV3, recorder: Recorder, case: str,
                                                 flags: int, tag: int) -> None:
    by_case: dict[str, dict[str, Any]] = {
        "wrong boots": dict(boots=fast.clock.boots() + 1),
        # Well past the window: a second may tick between sealing and checking.
        "ahead": dict(engine_time=fast.clock.time() + TIME_WINDOW + 30),
        "foreign engine": dict(engine_id=bytes.fromhex("8000000001020304")),
        "below level": dict(level=2),
    }
    arguments = by_case[case]
    reply = answer(fast, request(fast, "reader", **arguments))
    assert reply is not None and not recorder.calls
    sent = read_header(reply)
    assert isinstance(sent, V3Message) and sent.flags == flags
    assert sent.pdu is not None and sent.pdu.tag == tag


def test_a_user_with_des_privacy_is_served_here(built: Any, recorder: Recorder) -> None:
    from ibsnmp.agent.config import User

    legacy = User(name="legacy", auth="SHA", auth_key="legacy-auth", priv="DES",
                  priv_key="legacy-priv")
    fast = FastV3(built.engine, V3_USERS + (legacy,), recorder, lambda name: False,
                  PendingCounts(built.engine.get_mib_builder()), max_varbinds=256,
                  handover=built.engine.message_dispatcher.parts.handover)
    response = answer(fast, request(fast, "legacy", users=(legacy,)))
    assert response is not None
    sent = opened(fast, response)
    assert sent.level == 3 and sent.scoped.pdu.tag == RESPONSE


def test_a_reload_replaces_the_users(fast: FastV3) -> None:
    fast.replace_users(V3_USERS[:1])
    reply = answer(fast, request(fast, "authonly", level=2))
    assert reply is not None  # now an unknown user's Report
    sent = read_header(reply)
    assert isinstance(sent, V3Message) and sent.pdu is not None and sent.pdu.tag == REPORT
    assert answer(fast, request(fast, "reader")) is not None


@pytest.mark.parametrize("max_size", [484, 1400, 65507])
def test_the_pdu_budget_fills_the_message_exactly(fast: FastV3, recorder: Recorder,
                                                  max_size: int) -> None:
    bulk = get_pdu(GET_BULK, fields=b"\x02\x01\x00\x02\x01\x0a")
    answer(fast, request(fast, "reader", pdu=bulk, max_size=max_size))
    budget = recorder.calls[0][3]
    big = element(0xA2, bytes(largest_content(budget, 0)))
    assert len(big) <= budget
    accepted = accept(request(fast, "reader", pdu=bulk, max_size=max_size), fast.engine_id,
                      fast.users, fast.clock)
    assert isinstance(accepted, Accepted)
    sealed = fast.sealer.seal(accepted, encode_scoped_pdu(fast.engine_id, b"", big))
    assert max_size - 4 <= len(sealed) <= max_size


def test_the_pdu_budget_follows_the_message_around_it(fast: FastV3, recorder: Recorder) -> None:
    """Kept by what it depends on: the msgID's octets, the context names' and the
    user's protocols (a reload may give a name a longer MAC)."""
    bulk = get_pdu(GET_BULK, fields=b"\x02\x01\x00\x02\x01\x0a")
    budgets = []
    for message_id in (5, 4711, 2147483647):
        out = Outgoing(message_id=message_id, max_size=1400,
                       flags=FLAG_REPORTABLE | FLAG_AUTH | FLAG_PRIV, engine_id=fast.engine_id,
                       boots=fast.clock.boots(), engine_time=fast.clock.time(), user=b"reader",
                       mac_length=fast.users[b"reader"].mac.mac_length,
                       priv_params=bytes(8))
        scoped = encode_scoped_pdu(fast.engine_id, b"", bulk)
        answer(fast, seal_message(out, fast.users[b"reader"], scoped))
        budgets.append(recorder.calls[-1][3])
    # msgID 5, 4711, 2^31-1: one, two, four octets of it in the message.
    assert budgets[0] - budgets[1] == 1 and budgets[1] - budgets[2] == 2
    answer(fast, request(fast, "reader", pdu=bulk, max_size=1400, context_name=LOCAL_GUID.encode()))
    assert recorder.calls[-1][3] == budgets[1] - len(LOCAL_GUID)
    longer = tuple(replace(user, auth="SHA512") if user.name == "reader" else user
                   for user in V3_USERS)
    fast.replace_users(longer)
    answer(fast, request(fast, "reader", pdu=bulk, max_size=1400, users=longer))
    assert recorder.calls[-1][3] == budgets[1] - (48 - 24)  # SHA-512's MAC, not SHA-256's


def test_largest_content_is_exact_at_length_boundaries() -> None:
    for limit in range(2, 70000, 97):
        for fixed in (0, 5, 130):
            content = largest_content(limit, fixed)

            def total(n: int) -> int:
                return 1 + length_octets(fixed + n) + fixed + n

            if content:
                assert total(content) <= limit < total(content + 1)


@pytest.mark.parametrize("request_id", [0, 127, 128, 2147483647, -5])
def test_the_varbind_room_fills_the_response_pdu_exactly(request_id: int) -> None:
    for max_pdu in (100, 127, 128, 129, 255, 256, 300, 65000, 65535, 65536, 70000):
        room = varbind_room(request_id, max_pdu)

        def pdu_size(octets: int) -> int:
            return len(encode_response_pdu(request_id, 0, 0, bytes(octets)))

        assert pdu_size(room) <= max_pdu < pdu_size(room + 1)


def test_over_the_varbind_limit_an_authenticated_request_gets_too_big(
        fast: FastV3, recorder: Recorder) -> None:
    varbind = element(SEQUENCE, element(OBJECT_IDENTIFIER, oid_octets(SYS_NAME)) + b"\x05\x00")
    many = element(GET, element(0x02, b"\x55") + b"\x02\x01\x00\x02\x01\x00"
                   + element(SEQUENCE, varbind * (fast.max_varbinds + 1)))
    for level in (2, 3):  # plaintext and encrypted
        user = "authonly" if level == 2 else "reader"
        reply = answer(fast, request(fast, user, level=level, pdu=many))
        assert reply is not None and not recorder.calls
        sent = opened(fast, reply)
        pdu = sent.scoped.pdu
        assert pdu.tag == RESPONSE and pdu.request_id == 0x55 and pdu.fields == (1, 0)
        assert pdu.varbinds[0] == pdu.varbinds[1]  # tooBig: no varbinds (RFC 3416 4.2.1)


def test_reports_beyond_the_limits_are_withheld_and_the_refusals_counted(
        built: Any, recorder: Recorder, caplog: pytest.LogCaptureFixture) -> None:
    counts = PendingCounts(built.engine.get_mib_builder())
    fast = FastV3(built.engine, V3_USERS, recorder, lambda name: False, counts, max_varbinds=256,
                  handover=built.engine.message_dispatcher.parts.handover)
    clock = FakeClock()
    fast.set_report_limits(3, 5, clock=clock)
    foreign = request(fast, "reader", engine_id=bytes.fromhex("8000000001020304"))
    message = read_header(foreign)
    assert isinstance(message, V3Message)
    unknown_engine_ids = ("__SNMP-USER-BASED-SM-MIB", "usmStatsUnknownEngineIDs")

    def refuse(sender: tuple[str, int]) -> bytes | None:
        counts.begin_message()
        verdict = fast.handle(message, foreign, None, sender)
        counts.end_message(verdict.counters)
        return verdict.datagram if isinstance(verdict, Reply) else None

    before = counts.value(unknown_engine_ids)
    # One source: three Reports (a second's worth), then none; every refusal counted.
    first = [refuse(("192.0.2.1", port)) for port in range(1000, 1006)]
    assert [reply is not None for reply in first] == [True] * 3 + [False] * 3
    assert counts.value(unknown_engine_ids) - before == 6
    assert fast.reports_withheld == 3
    # Another source has a bucket of its own, until all sources' five are taken.
    second = [refuse(("192.0.2.2", 161)) for _ in range(3)]
    assert [reply is not None for reply in second] == [True, True, False]
    # The buckets fill again with time.
    clock.now += 1.0
    assert refuse(("192.0.2.1", 1000)) is not None
    withheld = [record.getMessage() for record in caplog.records
                if "withholding SNMPv3 Reports" in record.getMessage()]
    assert len(withheld) == 1 and "3 per second per source and 5 per second in all" in withheld[0]
    # 0 turns both limits off.
    fast.set_report_limits(0, 0, clock=clock)
    assert all(refuse(("192.0.2.1", 1000)) is not None for _ in range(20))


def test_authorization_errors_to_requests_without_credentials_share_the_report_limits(
        built: Any, recorder: Recorder) -> None:
    """A user's name alone, noAuthNoPriv, gets VACM's authorizationError: as
    cheap to ask for as a Report, and limited alike. An authenticated request
    below the user's level is answered whatever the limits."""
    counts = PendingCounts(built.engine.get_mib_builder())
    fast = FastV3(built.engine, V3_USERS, recorder, lambda name: False, counts, max_varbinds=256,
                  handover=built.engine.message_dispatcher.parts.handover)
    fast.set_report_limits(2, None, clock=FakeClock())
    out = Outgoing(message_id=9, max_size=65507, flags=FLAG_REPORTABLE, engine_id=fast.engine_id,
                   boots=0, engine_time=0, user=b"reader", mac_length=0, priv_params=b"")
    name_alone = encode_v3(out, encode_scoped_pdu(fast.engine_id, b"", get_pdu()))[0]
    in_gets = ("__SNMPv2-MIB", "snmpInGetRequests")
    before = counts.value(in_gets)
    replies: list[bytes | None] = []
    for _ in range(4):
        counts.begin_message()
        header = read_header(name_alone)
        assert isinstance(header, V3Message)
        verdict = fast.handle(header, name_alone, None, ("192.0.2.7", 5000))
        counts.end_message(verdict.counters)
        replies.append(verdict.datagram if isinstance(verdict, Reply) else None)
    assert [reply is not None for reply in replies] == [True, True, False, False]
    assert counts.value(in_gets) - before == 4  # every request counted
    assert replies[0] is not None
    sent = read_header(replies[0])
    assert isinstance(sent, V3Message) and sent.pdu is not None
    assert (sent.flags, sent.pdu.tag, sent.pdu.fields) == (0, RESPONSE, (16, 0))
    authenticated = request(fast, "reader", level=2)
    header = read_header(authenticated)
    assert isinstance(header, V3Message)
    verdict = fast.handle(header, authenticated, None, ("192.0.2.7", 5000))
    assert isinstance(verdict, Reply) and opened(fast, verdict.datagram).scoped.pdu.fields == (16, 0)

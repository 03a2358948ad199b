"""SNMPv3 requests refused by the project's USM: counted once, reported as RFC 3414 says, cheaply.

Each datagram goes through the agent's dispatcher on an in-process engine:
the counters it moves and the Report it gets (its flags, PDU, request-id,
engine) must be what RFC 3412/3414 ask for, case by case (snmpd answers
the same cases alike: test_v3_reports.py). No SNMPv3 message on a
listening socket reaches pysnmp's message processing or its USM.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.support.agent_support import V3_USERS, agent_settings, make_backend

from ibsnmp.agent.config import User
from ibsnmp.agent.engine import build_engine
from ibsnmp.agent.prefilter import Reply, V3Request, Verdict
from ibsnmp.wire.ber import OBJECT_IDENTIFIER, OCTET_STRING, SEQUENCE, element, oid_octets
from ibsnmp.wire.header import GET, GET_NEXT, REPORT, RESPONSE, SET, V3Message, read_header
from ibsnmp.wire.usm_inbound import localize_users, seal_message
from ibsnmp.wire.usm_message import (FLAG_AUTH, FLAG_PRIV, FLAG_REPORTABLE, Outgoing,
                                     encode_scoped_pdu, encode_v3)

UDP = (1, 3, 6, 1, 6, 1, 1)
SOURCE = ("127.0.0.1", 40000)
SYS_NAME = (1, 3, 6, 1, 2, 1, 1, 5, 0)
FOREIGN = bytes.fromhex("8000000001020304")
COUNTER_MODULES = ("__SNMPv2-MIB", "__SNMP-MPD-MIB", "__SNMP-USER-BASED-SM-MIB")
AUTH_ONLY = next(user for user in V3_USERS if user.priv is None)  # SHA
READER = next(user for user in V3_USERS if user.priv == "AES")  # SHA256 + AES


class Sent:
    """The transport dispatcher's send_message, recording instead of sending."""

    def __init__(self) -> None:
        self.messages: list[bytes] = []

    def send_message(self, data: bytes, domain: Any, address: Any) -> None:
        self.messages.append(bytes(data))

    def get_timer_resolution(self) -> float:  # pysnmp's USM asks it on a time-window failure
        return 0.5


@pytest.fixture(scope="module")
def built() -> Iterator[Any]:
    built = build_engine(agent_settings(), *make_backend(), fabric_summary="unit")
    built.engine.transport_dispatcher = Sent()
    yield built


def engine_id(built: Any) -> bytes:
    (instance,) = built.engine.get_mib_builder().import_symbols(
        "__SNMP-FRAMEWORK-MIB", "snmpEngineID")
    return bytes(instance.syntax)


def counters(built: Any) -> dict[str, Any]:
    """Every Counter32 scalar of the snmp group, SNMP-MPD-MIB and USM statistics."""
    built.engine.message_dispatcher.parts.counts.flush()  # as any reader sees them
    symbols = built.engine.get_mib_builder().mibSymbols
    return {name: symbol for module in COUNTER_MODULES for name, symbol in symbols[module].items()
            if type(getattr(symbol, "syntax", None)).__name__ == "Counter32"}


def pdu(tag: int = GET, request_id: int = 4242) -> bytes:
    value = element(OCTET_STRING, b"x") if tag == SET else b"\x05\x00"
    varbind = element(SEQUENCE, element(OBJECT_IDENTIFIER, oid_octets(SYS_NAME)) + value)
    return element(tag, element(0x02, request_id.to_bytes(2, "big", signed=True))
                   + b"\x02\x01\x00\x02\x01\x00" + element(SEQUENCE, varbind))


def message(*, engine: bytes, user: bytes, flags: int, key_of: User | None = None,
            key_engine: bytes | None = None, context: tuple[bytes, bytes] | None = None,
            tag: int = GET, msg_id: int = 5, boots: int = 0, engine_time: int = 0) -> bytes:
    """A v3 request; signed with `key_of`'s key localized to `key_engine` (default `engine`)."""
    scoped = encode_scoped_pdu(*(context or (engine, b"")), pdu(tag))
    mac_length = 0
    keys = None
    if key_of is not None:
        keys = localize_users([key_of], key_engine or engine)[key_of.name.encode()]
        mac_length = keys.mac.mac_length
    out = Outgoing(message_id=msg_id, max_size=65507, flags=flags, engine_id=engine, boots=boots,
                   engine_time=engine_time, user=user, mac_length=mac_length,
                   priv_params=bytes(8) if flags & FLAG_PRIV else b"")
    if flags & FLAG_PRIV:
        # Ciphertext that is never decrypted: every case refuses before that step.
        return encode_v3(out, b"\x17" * 40)[0]
    if keys is None:
        return encode_v3(out, scoped)[0]
    return seal_message(out, keys, scoped)


WRONG_SHA = User(name=AUTH_ONLY.name, auth="SHA", auth_key="not-the-key")
WRONG_SHA256 = User(name=READER.name, auth="SHA256", auth_key="not-the-key")
R, A, P = FLAG_REPORTABLE, FLAG_AUTH, FLAG_PRIV


def cases(own: bytes) -> dict[str, bytes]:
    reader, auth_only = READER.name.encode(), AUTH_ONLY.name.encode()
    return {
        "discovery": message(engine=b"", user=b"", flags=R, context=(b"", b"")),
        "discovery with a user": message(engine=b"", user=b"nobody", flags=R),
        "discovery with a context": message(engine=b"", user=b"", flags=R,
                                            context=(b"\x80\x00\x01\x02\x03", b"ctx")),
        "short engine ID": message(engine=b"abc", user=reader, flags=R),
        # RFC 3414 3.2 step 3: reported at any level, as snmpd does.
        "discovery signed": message(engine=b"", user=reader, flags=R | A, key_of=WRONG_SHA256,
                                    key_engine=own),
        "discovery encrypted": message(engine=b"", user=reader, flags=R | A | P),
        "foreign engine, noAuthNoPriv": message(engine=FOREIGN, user=b"nobody", flags=R),
        "foreign engine, signed": message(engine=FOREIGN, user=reader, flags=R | A,
                                          key_of=READER),
        "foreign engine, encrypted": message(engine=FOREIGN, user=reader, flags=R | A | P),
        "foreign engine, a context": message(engine=FOREIGN, user=b"x", flags=R,
                                             context=(FOREIGN, b"ctx")),
        "unknown user, noAuthNoPriv": message(engine=own, user=b"nobody", flags=R),
        "unknown user, signed": message(engine=own, user=b"nobody", flags=R | A,
                                        key_of=WRONG_SHA),
        "unknown user, encrypted": message(engine=own, user=b"nobody", flags=R | A | P),
        "unknown user, SET": message(engine=own, user=b"nobody", flags=R, tag=SET),
        "unknown user, GETNEXT in a context": message(engine=own, user=b"nobody", flags=R,
                                                      tag=GET_NEXT, context=(b"zz", b"ctx")),
        "wrong digest": message(engine=own, user=auth_only, flags=R | A, key_of=WRONG_SHA),
        "wrong digest, SHA-256 user": message(engine=own, user=reader, flags=R | A,
                                              key_of=WRONG_SHA256),
        "wrong digest length": message(engine=own, user=reader, flags=R | A, key_of=WRONG_SHA),
        "wrong digest, encrypted": message(engine=own, user=reader, flags=R | A | P),
        "no privacy key for authPriv": message(engine=own, user=auth_only, flags=R | A | P),
    }


def deliver(built: Any, datagram: bytes) -> tuple[bytes | None, dict[str, int]]:
    """What the agent sends back and which counters moved (by how much)."""
    dispatcher = built.engine.message_dispatcher
    sent = built.engine.transport_dispatcher.messages
    sent.clear()
    before = {name: int(symbol.syntax) for name, symbol in counters(built).items()}
    dispatcher.receive_message(built.engine, UDP, SOURCE, datagram)
    moved = {name: int(symbol.syntax) - before[name] for name, symbol in counters(built).items()
             if int(symbol.syntax) != before[name]}
    assert len(sent) <= 1
    return (sent[0] if sent else None), moved


def shortcut(built: Any, datagram: bytes) -> Verdict:
    """What agent.fast_v3 does with `datagram`."""
    message = read_header(datagram)
    assert isinstance(message, V3Message)
    verdict: Verdict = built.fast_v3.handle(message, datagram)
    return verdict


def reply_pdu(verdict: Verdict) -> int:
    """The PDU type of a handled message's answer."""
    assert isinstance(verdict, Reply)
    sent = read_header(verdict.datagram)
    assert isinstance(sent, V3Message)
    if sent.pdu is not None:
        return sent.pdu.tag
    return -1  # encrypted


CASE_NAMES = list(cases(b"\x80\x00\x00\x00\x01"))
# What each case counts (besides snmpInPkts) and whether its request-id can be
# read (plaintext) and so is echoed; "no Report" cases count only.
EXPECTED: dict[str, tuple[str, bool]] = {
    "discovery": ("usmStatsUnknownEngineIDs", True),
    "discovery with a user": ("usmStatsUnknownEngineIDs", True),
    "discovery with a context": ("usmStatsUnknownEngineIDs", True),
    "short engine ID": ("usmStatsUnknownEngineIDs", True),
    "discovery signed": ("usmStatsUnknownEngineIDs", True),
    "discovery encrypted": ("usmStatsUnknownEngineIDs", False),
    "foreign engine, noAuthNoPriv": ("usmStatsUnknownEngineIDs", True),
    "foreign engine, signed": ("usmStatsUnknownEngineIDs", True),
    "foreign engine, encrypted": ("usmStatsUnknownEngineIDs", False),
    "foreign engine, a context": ("usmStatsUnknownEngineIDs", True),
    "unknown user, noAuthNoPriv": ("usmStatsUnknownUserNames", True),
    "unknown user, signed": ("usmStatsUnknownUserNames", True),
    "unknown user, encrypted": ("usmStatsUnknownUserNames", False),
    "unknown user, SET": ("usmStatsUnknownUserNames", True),
    "unknown user, GETNEXT in a context": ("usmStatsUnknownUserNames", True),
    "wrong digest": ("usmStatsWrongDigests", True),
    "wrong digest, SHA-256 user": ("usmStatsWrongDigests", True),
    "wrong digest length": ("usmStatsWrongDigests", True),
    "wrong digest, encrypted": ("usmStatsWrongDigests", False),
    "no privacy key for authPriv": ("usmStatsUnsupportedSecLevels", False),
}


def reported(answer: bytes) -> tuple[V3Message, tuple[int, ...], int]:
    """A Report's message, and the counter (OID, value) it carries."""
    from ibsnmp.wire.ber import read_oid

    sent = read_header(answer)
    assert isinstance(sent, V3Message) and sent.pdu is not None and sent.pdu.tag == REPORT
    (varbind,) = sent.pdu.read_varbinds(answer)
    name = read_oid(answer, varbind.oid_start, varbind.oid_end)
    value = int.from_bytes(answer[varbind.value_start:varbind.value_end], "big")
    return sent, name, value


def test_the_case_table_covers_every_case() -> None:
    assert sorted(EXPECTED) == sorted(CASE_NAMES)


@pytest.mark.parametrize("case", CASE_NAMES)
def test_each_refusal_counts_once_and_reports_as_rfc_3414_says(built: Any, case: str) -> None:
    counter, readable = EXPECTED[case]
    answered, moved = deliver(built, cases(engine_id(built))[case])
    if "no Report" in case:
        assert answered is None
        assert moved == {"snmpInPkts": 1, counter: 1}
        return
    assert moved == {"snmpInPkts": 1, counter: 1, "snmpOutPkts": 1}
    assert answered is not None
    sent, name, value = reported(answered)
    # Unauthenticated, never reportable (RFC 3412 6.4), from this engine with its clock.
    assert sent.flags == 0 and sent.engine_id == engine_id(built)
    assert sent.boots == built.fast_v3.clock.boots()
    assert abs(sent.engine_time - built.fast_v3.clock.time()) <= 1
    assert sent.pdu is not None and sent.pdu.request_id == (4242 if readable else 0)
    (instance,) = built.engine.get_mib_builder().import_symbols(
        "__SNMP-USER-BASED-SM-MIB", counter)
    assert name == tuple(instance.name) and value == int(instance.syntax)


def test_the_shortcut_answers_before_pysnmp_decodes(built: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Proved by taking pysnmp's message processing away: the Reports still go out."""
    dispatcher = built.engine.message_dispatcher
    mp = built.engine.message_processing_subsystems[3]

    def fail(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("pysnmp decoded a message the shortcut answers")

    monkeypatch.setattr(mp, "prepare_data_elements", fail)
    for case, datagram in cases(engine_id(built)).items():
        dropped = dispatcher.dropped
        answered, _ = deliver(built, datagram)
        assert dispatcher.dropped == dropped, case
        assert (answered is None) == ("no Report" in case), case


def test_an_authentic_request_is_answered_and_a_lower_level_refused_by_vacm(built: Any) -> None:
    own = engine_id(built)
    boots, now = built.fast_v3.clock.boots(), built.fast_v3.clock.time()
    datagram = message(engine=own, user=AUTH_ONLY.name.encode(), flags=R | A, key_of=AUTH_ONLY,
                       boots=boots, engine_time=now)
    assert reply_pdu(shortcut(built, datagram)) == RESPONSE
    known_no_auth = message(engine=own, user=AUTH_ONLY.name.encode(), flags=R)
    answered, moved = deliver(built, known_no_auth)
    sent = read_header(answered) if answered else None
    assert isinstance(sent, V3Message) and sent.pdu is not None and sent.pdu.tag == RESPONSE
    assert sent.pdu.fields == (16, 0)  # authorizationError, error-index 0 (RFC 3413 3.2)
    assert not any(name.startswith("usmStats") for name in moved)


def test_a_message_outside_the_time_window_gets_a_signed_report(built: Any) -> None:
    own = engine_id(built)
    stale = message(engine=own, user=AUTH_ONLY.name.encode(), flags=R | A, key_of=AUTH_ONLY,
                    boots=built.fast_v3.clock.boots() + 1, engine_time=5)
    answered, moved = deliver(built, stale)
    assert moved.get("usmStatsNotInTimeWindows") == 1
    assert answered is not None
    sent = read_header(answered) if answered else None
    assert isinstance(sent, V3Message) and sent.flags == FLAG_AUTH
    assert sent.pdu is not None and sent.pdu.tag == REPORT
    assert sent.boots == built.fast_v3.clock.boots()  # what the manager resynchronizes to
    keys = localize_users([AUTH_ONLY], own)[AUTH_ONLY.name.encode()]
    assert keys.mac.matches(sent.without_mac(answered), sent.mac(answered))


def test_without_the_reportable_flag_nothing_is_answered(built: Any) -> None:
    own = engine_id(built)
    datagram = message(engine=own, user=b"nobody", flags=A, key_of=WRONG_SHA)
    answered, moved = deliver(built, datagram)
    assert answered is None
    assert moved == {"snmpInPkts": 1, "usmStatsUnknownUserNames": 1}


def test_no_v3_request_reaches_pysnmps_message_processing(built: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused, read, written or in an unknown context: the project's USM takes
    every SNMPv3 request, and what pysnmp's responders answer is sealed here."""
    mp = built.engine.message_processing_subsystems[3]

    def fail(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("pysnmp's message processing saw a request")

    monkeypatch.setattr(mp, "prepare_data_elements", fail)
    monkeypatch.setattr(mp, "prepare_response_message", fail)
    own = engine_id(built)
    clock = built.fast_v3.clock
    signed = dict(engine=own, user=AUTH_ONLY.name.encode(), flags=R | A, key_of=AUTH_ONLY,
                  boots=clock.boots(), engine_time=clock.time())
    requests = {
        "unknown user": message(engine=own, user=b"nobody", flags=R | A, key_of=WRONG_SHA),
        "GET": message(**signed),
        "SET": message(**signed, tag=SET),
        "unknown context": message(**signed, context=(own, b"00000000deadbeef")),
    }
    dispatcher = built.engine.message_dispatcher
    for case, datagram in requests.items():
        dropped = dispatcher.dropped
        answered, _ = deliver(built, datagram)
        assert dispatcher.dropped == dropped, case
        assert answered is not None, case


# -- net-snmp against a running agent --------------------------------------------------

NET_SNMP_CONFIG = """
[[community]]
name = "public"

[[user]]
name = "authonly"
auth = "SHA"
auth_key = "authonly-key"
"""
USM_STATS = {"usmStatsUnknownUserNames": "3", "usmStatsUnknownEngineIDs": "4",
             "usmStatsWrongDigests": "5"}


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.support.e2e import ibsnmp_agent

    config = tmp_path_factory.mktemp("reject") / "agent.toml"
    config.write_text(NET_SNMP_CONFIG)
    with ibsnmp_agent("--config", str(config), fabric="single") as agent:
        yield agent


def usm_stats(agent: Any) -> dict[str, int]:
    oids = [f".1.3.6.1.6.3.15.1.1.{column}.0" for column in USM_STATS.values()]
    result = agent.snmp("snmpget", "-v2c", "-c", "public", "-Oqv", *oids)
    assert result.returncode == 0, result.stderr
    return dict(zip(USM_STATS, map(int, result.stdout.split())))


def snmpget_v3(agent: Any, user: str, key: str) -> Any:
    return agent.snmp("snmpget", "-v3", "-r0", "-t3", "-l", "authNoPriv", "-u", user,
                      "-a", "SHA", "-A", key, "-Oqv", ".1.3.6.1.2.1.1.5.0")


def test_net_snmp_discovers_reads_and_reads_the_reports(running: Any) -> None:
    """Each snmpget discovers the engine first (a Report the shortcut sends), then:"""
    before = usm_stats(running)
    read = snmpget_v3(running, "authonly", "authonly-key")
    assert read.returncode == 0 and read.stdout.strip(), read.stderr
    unknown = snmpget_v3(running, "nobody", "authonly-key")
    assert unknown.returncode != 0 and "Unknown user name" in unknown.stderr
    wrong = snmpget_v3(running, "authonly", "not-the-key")
    assert wrong.returncode != 0 and "Authentication failure" in wrong.stderr
    after = usm_stats(running)
    assert {name: after[name] - before[name] for name in USM_STATS} == {
        "usmStatsUnknownUserNames": 1, "usmStatsUnknownEngineIDs": 3,
        "usmStatsWrongDigests": 1}


def test_a_reload_moves_the_users_and_keeps_the_shortcut(built: Any) -> None:
    """A user added by a reload is no longer unknown; a removed one is."""
    import dataclasses

    own = engine_id(built)
    newcomer = User(name="newcomer", auth="SHA", auth_key="newcomer-key")
    settings = built.settings
    clock = built.fast_v3.clock
    signed = message(engine=own, user=b"newcomer", flags=R | A, key_of=newcomer,
                     boots=clock.boots(), engine_time=clock.time())
    assert reply_pdu(shortcut(built, signed)) == REPORT  # unknown user
    built.replace_principals(dataclasses.replace(settings, users=(newcomer,)))
    try:
        checked = built.parts.decision.prefilter.check(UDP, SOURCE, signed)
        assert isinstance(checked, V3Request)  # the new header checks: still to the USM
        assert reply_pdu(shortcut(built, signed)) != REPORT  # authentic: goes on
        gone = message(engine=own, user=AUTH_ONLY.name.encode(), flags=R | A, key_of=AUTH_ONLY)
        answered, moved = deliver(built, gone)
        assert answered is not None and moved.get("usmStatsUnknownUserNames") == 1
    finally:
        built.replace_principals(settings)


def test_a_reload_applies_new_report_limits_and_keeps_unchanged_ones(built: Any) -> None:
    import dataclasses

    settings = built.settings
    kept = built.fast_v3.report_limits
    assert kept is not None and kept.per_source is not None and kept.per_source.rate == 100
    built.replace_principals(dataclasses.replace(settings))  # the same limits: same buckets
    assert built.fast_v3.report_limits is kept
    tighter = dataclasses.replace(settings.limits, reports_per_second_per_source=7,
                                  reports_per_second=0)
    built.replace_principals(dataclasses.replace(settings, limits=tighter))
    try:
        limits = built.fast_v3.report_limits
        assert limits is not None and limits.per_source is not None
        assert (limits.per_source.rate, limits.aggregate) == (7, None)
    finally:
        built.replace_principals(settings)
    assert built.fast_v3.report_limits.describe() == (
        "100 per second per source and 1000 per second in all")


def test_the_time_window_report_is_signed_with_the_users_key(built: Any) -> None:
    own = engine_id(built)
    stale = message(engine=own, user=AUTH_ONLY.name.encode(), flags=R | A, key_of=AUTH_ONLY,
                    boots=built.fast_v3.clock.boots() + 1, engine_time=5)
    answered, moved = deliver(built, stale)
    assert moved == {"snmpInPkts": 1, "usmStatsNotInTimeWindows": 1, "snmpOutPkts": 1}
    assert answered is not None
    sent, name, value = reported(answered)
    # authNoPriv, so the manager can trust the boots and time it resynchronizes from
    # (RFC 3414 3.2 step 7b); the request-id of the plaintext request echoed.
    assert sent.flags == A and sent.pdu is not None and sent.pdu.request_id == 4242
    assert sent.boots == built.fast_v3.clock.boots()
    keys = localize_users([AUTH_ONLY], own)[AUTH_ONLY.name.encode()]
    assert keys.mac.matches(sent.without_mac(answered), sent.mac(answered))
    assert name == (1, 3, 6, 1, 6, 3, 15, 1, 1, 2, 0)  # usmStatsNotInTimeWindows

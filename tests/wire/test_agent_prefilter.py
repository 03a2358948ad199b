"""Header checks before pysnmp: communities and their source networks, node
contexts, notification sockets, the varbind bound; per-source token buckets;
[limits] and `source` in the config; optional default endpoints."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from typing import Any

import pytest
from tests.support.oversized import oversized_get, v3_plaintext_get
from pysnmp.carrier.asyncio.dgram import udp, udp6
from pysnmp.proto.api import v2c as api_v2c
from tests.support.agent_support import agent_settings, make_backend
from tests.support.wire import V1, community_request, decode_response, inform_answer

from ibsnmp.agent import ConfigError, Endpoint, ListenError
from ibsnmp.agent.config import Community, Limits, merge_settings, parse_config
from ibsnmp.agent.engine import build_engine
from ibsnmp.agent.pending_counts import (
    BAD_COMMUNITY,
    BAD_VERSION,
    NO_HANDLER,
    PARSE_ERROR,
    SILENT_DROP,
)
from ibsnmp.agent.prefilter import (INFORM_ANSWER, Drop, PassedRequest, Prefilter, Reply,
                                    V3Request)
from ibsnmp.agent.ratelimit import SourceRateLimiter
from ibsnmp.agent.transport import NOTIFICATION_DOMAINS, bind_all
from ibsnmp.wire.ber import element as tlv

LISTEN = udp.DOMAIN_NAME + (1,)
LISTEN6 = udp6.DOMAIN_NAME + (2,)
NOTIFY = NOTIFICATION_DOMAINS[0]
LOCAL = ("127.0.0.1", 40000)
NODE = b"0002c903000a1b2c"
SYS_DESCR = "1.3.6.1.2.1.1.1.0"


def prefilter(*communities: Community, max_varbinds: int = 256, rate: float | None = None,
              clock: Callable[[], float] | None = None) -> Prefilter:
    extra: dict[str, Any] = {"clock": clock} if clock is not None else {}
    return Prefilter(communities or (Community("public"),),
                     Limits(max_varbinds=max_varbinds, requests_per_second_per_source=rate),
                     lambda name: name == NODE, notification_communities=["trapcomm"], **extra)


def get(community: str = "public", **kwargs: Any) -> bytes:
    return community_request("get", [SYS_DESCR], community=community, **kwargs)


def test_known_communities_pass_others_are_bad_community_names() -> None:
    check = prefilter().check
    assert isinstance(check(LISTEN, LOCAL, get()), PassedRequest)
    assert isinstance(check(LISTEN, LOCAL, get(f"public@{NODE.decode()}")), PassedRequest)
    assert check(LISTEN, LOCAL, get("public@0002c903000a1b2d")) == Drop((BAD_COMMUNITY,))
    assert check(LISTEN, LOCAL, get("private")) == Drop((BAD_COMMUNITY,))
    # The notification communities answer informs only, on the originator's sockets.
    assert check(LISTEN, LOCAL, get("trapcomm")) == Drop((BAD_COMMUNITY,))


def test_the_flood_packet_is_rejected_by_its_header() -> None:
    assert prefilter().check(LISTEN, LOCAL, oversized_get(b"wrong")) == Drop((BAD_COMMUNITY,))


def test_parse_errors_and_versions() -> None:
    check = prefilter().check
    assert check(LISTEN, LOCAL, b"\x30\x03\x02\x01") == Drop((PARSE_ERROR,))
    truncated_pdu = bytes.fromhex("300b020102040170a0030201")
    assert check(LISTEN, LOCAL, truncated_pdu) == Drop((PARSE_ERROR,))
    assert check(LISTEN, LOCAL, bytes.fromhex("3003020102")) == Drop((BAD_VERSION,))


@pytest.mark.parametrize("sources,address,allowed", [
    (("10.0.0.0/8",), "10.1.2.3", True),
    (("10.0.0.0/8",), "127.0.0.1", False),
    (("10.0.0.0/8", "fd00::/8"), "fd12::1", True),
    (("fd00::/8",), "::1", False),
    (("127.0.0.1/32",), "::ffff:127.0.0.1", True),  # an IPv4-mapped sender is its IPv4 address
    (("::1/128",), "::1%lo", True),
])
def test_communities_limited_to_source_networks(sources: tuple[str, ...], address: str,
                                               allowed: bool) -> None:
    networks = tuple(ipaddress.ip_network(s) for s in sources)
    check = prefilter(Community("public", sources=networks)).check
    domain = LISTEN6 if ":" in address else LISTEN
    for community in ("public", f"public@{NODE.decode()}"):
        verdict = check(domain, (address, 161), get(community))
        assert isinstance(verdict, PassedRequest) == allowed
        assert allowed or verdict == Drop((BAD_COMMUNITY,))


def test_only_requests_are_taken_on_listening_sockets() -> None:
    assert prefilter().check(LISTEN, LOCAL, inform_answer("public")) == Drop((NO_HANDLER,))


def test_notification_sockets_take_only_answers() -> None:
    check = prefilter().check
    for kind in ("get", "next", "bulk", "set"):
        data = community_request(kind, [SYS_DESCR], community="trapcomm")
        assert check(NOTIFY, LOCAL, data) == Drop((NO_HANDLER,)), kind
    assert check(NOTIFY, LOCAL, get("public")) == Drop((BAD_COMMUNITY,))
    assert check(NOTIFY, LOCAL, inform_answer("trapcomm")) is INFORM_ANSWER
    assert check(NOTIFY, LOCAL, inform_answer("public")) == Drop((BAD_COMMUNITY,))
    # SNMPv3: a request (reportable), even with its flag cleared, is no answer.
    assert check(NOTIFY, LOCAL, v3_plaintext_get(b"alice")) == Drop((NO_HANDLER,))
    assert check(NOTIFY, LOCAL, v3_plaintext_get(b"alice", flags=0)) == Drop((NO_HANDLER,))
    # On a listening socket SNMPv3 goes on to the project's USM (agent.fast_v3).
    passed = prefilter().check(LISTEN, LOCAL, v3_plaintext_get(b"alice"))
    assert isinstance(passed, V3Request) and passed.message.user_name == b"alice"
    assert passed.varbinds is not None and len(passed.varbinds) == 1


def test_over_the_varbind_limit() -> None:
    check = prefilter(max_varbinds=3).check
    assert isinstance(check(LISTEN, LOCAL, community_request("get", [SYS_DESCR] * 3)),
                      PassedRequest)
    verdict = check(LISTEN, LOCAL, community_request("get", [SYS_DESCR] * 4, request_id=9))
    assert isinstance(verdict, Reply)
    assert [name for _, name in verdict.counters] == [
        "snmpOutTooBigs", "snmpOutPkts", "snmpOutGetResponses", "snmpInGetRequests"]
    assert decode_response(verdict.datagram)[:3] == (9, 1, 0)
    v1 = check(LISTEN, LOCAL, community_request("get", [SYS_DESCR] * 4, version=V1))
    assert isinstance(v1, Reply) and len(decode_response(v1.datagram)[3]) == 4
    # A wrong community is a wrong community first, whatever its size.
    assert check(LISTEN, LOCAL, oversized_get(b"nope")) == Drop((BAD_COMMUNITY,))
    # SNMPv3 goes on to the project's USM whatever its size: USM decides
    # first, then tooBig (test_fast_v3.py).
    for user, count in ((b"alice", 3), (b"alice", 4), (b"mallory", 4)):
        assert isinstance(check(LISTEN, LOCAL, v3_plaintext_get(user, count)), V3Request)


def test_over_the_limit_only_a_list_read_whole_is_answered() -> None:
    check = prefilter(max_varbinds=3).check
    # Up to twice the limit, any well-formed list is read whole and gets tooBig.
    values = [api_v2c.Null()] * 5 + [api_v2c.Integer(1)]
    verdict = check(LISTEN, LOCAL, community_request("get", [SYS_DESCR] * 6, values=values))
    assert isinstance(verdict, Reply)
    # Beyond, a list not all { OID, NULL } is not read whole, so not answered.
    values = [api_v2c.Null()] * 7 + [api_v2c.Integer(1)]
    assert check(LISTEN, LOCAL, community_request("get", [SYS_DESCR] * 8, values=values)) \
        == Drop((SILENT_DROP,))
    verdict = check(LISTEN, LOCAL, community_request("get", [SYS_DESCR] * 8))
    assert isinstance(verdict, Reply)
    # A varbind past twice the limit is never read one by one: malformed there, the
    # message is a silent drop, not a parse error (the cost stays bounded).
    varbinds = (bytes.fromhex("3006 06012b 020101") * 7 + bytes.fromhex("3007 06012b 05800000"))
    pdu = tlv(0x02, b"\x01") + tlv(0x02, b"\x00") + tlv(0x02, b"\x00") + tlv(0x30, varbinds)
    late = tlv(0x30, tlv(0x02, b"\x01") + tlv(0x04, b"public") + tlv(0xA0, pdu))
    assert check(LISTEN, LOCAL, late) == Drop((SILENT_DROP,))
    # A NULL of indefinite length among the first four: a parse error, as under the limit.
    varbinds = bytes.fromhex("3005 06012b 0500") * 3 + bytes.fromhex("3007 06012b 05800000")
    pdu = tlv(0x02, b"\x01") + tlv(0x02, b"\x00") + tlv(0x02, b"\x00") + tlv(0x30, varbinds)
    bad = tlv(0x30, tlv(0x02, b"\x01") + tlv(0x04, b"public") + tlv(0xA0, pdu))
    assert check(LISTEN, LOCAL, bad) == Drop((PARSE_ERROR,))


def _get_of(varbinds: bytes) -> bytes:
    pdu = tlv(0x02, b"\x01") + tlv(0x02, b"\x00") + tlv(0x02, b"\x00") + tlv(0x30, varbinds)
    return tlv(0x30, tlv(0x02, b"\x01") + tlv(0x04, b"public") + tlv(0xA0, pdu))


def test_long_lists_are_judged_by_their_null_prefix_as_when_read() -> None:
    """A list longer than the limit's varbinds could be, scanned in C first,
    gets what reading it would give: tooBig when all { OID, NULL }, a silent
    drop when more than twice the limit of them come before anything else,
    a parse error for a malformed varbind among the first the limit reads."""
    check = prefilter(max_varbinds=3).check
    null = bytes.fromhex("3005 06012b 0500")  # 7 octets: 200 of them are over 3 x 129
    verdict = check(LISTEN, LOCAL, _get_of(null * 200))
    assert isinstance(verdict, Reply)
    assert decode_response(verdict.datagram)[1] == 1  # tooBig
    assert check(LISTEN, LOCAL, _get_of(null * 200 + bytes.fromhex("3006 06012b 020101"))) \
        == Drop((SILENT_DROP,))
    # A sub-identifier starting 0x80 (not minimal) among them: the prefix ends
    # before it; read as before, the first seven are fine: a silent drop.
    assert check(LISTEN, LOCAL, _get_of(null * 100 + bytes.fromhex("3007 06032b8001 0500")
                                        + null * 100)) == Drop((SILENT_DROP,))
    indefinite = bytes.fromhex("3007 06012b 05800000")
    assert check(LISTEN, LOCAL, _get_of(indefinite + null * 200)) == Drop((PARSE_ERROR,))


def test_rate_limit_drops_the_excess_and_logs_once(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    check = prefilter(rate=2.0, clock=lambda: now[0]).check
    answered = [isinstance(check(LISTEN, LOCAL, get()), PassedRequest) for _ in range(5)]
    assert answered == [True, True, False, False, False]
    assert isinstance(check(LISTEN, ("127.0.0.2", 1), get()), PassedRequest)  # its own bucket
    now[0] += 0.5  # one token back
    assert isinstance(check(LISTEN, LOCAL, get()), PassedRequest)
    assert check(LISTEN, LOCAL, get()) == Drop(())
    assert len([r for r in caplog.records if "dropping requests" in r.getMessage()]) == 1


def test_rate_limiter_table_is_bounded() -> None:
    now = [0.0]
    limiter = SourceRateLimiter(1.0, max_sources=3, clock=lambda: now[0])
    for host in ("a", "b", "c", "d"):
        assert limiter.allow(host)
    assert len(limiter) == 3
    assert limiter.allow("a")  # evicted: a new full bucket
    assert not limiter.allow("d") and limiter.dropped == 1


# -- configuration ----------------------------------------------------------------------


def test_source_and_limits_in_the_config() -> None:
    config = parse_config({
        "community": [{"name": "public", "source": "10.0.0.0/8"},
                      {"name": "ops", "source": ["192.168.1.0/24", "fd00::/8", "::1"]}],
        "limits": {"max_varbinds": 64, "requests_per_second_per_source": 50},
    })
    assert config.communities is not None
    assert config.communities[0].sources == (ipaddress.ip_network("10.0.0.0/8"),)
    assert [str(n) for n in config.communities[1].sources] == ["192.168.1.0/24", "fd00::/8",
                                                               "::1/128"]
    assert config.limits == Limits(max_varbinds=64, requests_per_second_per_source=50.0)
    # --write-community keeps the file's source networks.
    settings = merge_settings(config, write_communities=["rw-secret"])
    assert settings.communities[0].sources == config.communities[0].sources
    assert settings.limits == config.limits


@pytest.mark.parametrize("data,message", [
    ({"community": [{"name": "p", "source": "10.0.0.1/8"}]},
     r"community\[0\]\.source\[0\]: not a network .*has host bits set"),
    ({"community": [{"name": "p", "source": ["10.0.0.0/8", 10]}]},
     r"community\[0\]\.source\[1\]: expected a string, got an integer"),
    ({"community": [{"name": "p", "source": ["::1", "::1/128"]}]},
     r"community\[0\]\.source\[1\]: listed twice \(also community\[0\]\.source\[0\]\)"),
    ({"community": [{"name": "p", "source": "somewhere"}]}, r"community\[0\]\.source\[0\]"),
    ({"limits": {"max_varbind": 1}}, r"limits\.max_varbind: unknown key"),
    ({"limits": {"max_varbinds": 0}}, r"limits\.max_varbinds: must be at least 1"),
    ({"limits": {"max_varbinds": 70000}}, r"limits\.max_varbinds: must be at most 65535"),
    ({"limits": {"max_varbinds": "8"}}, r"limits\.max_varbinds: expected an integer"),
    ({"limits": {"requests_per_second_per_source": -1}},
     r"limits\.requests_per_second_per_source: must be at least"),
    ({"limits": 5}, r"limits: expected a table"),
])
def test_bad_source_and_limits(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(data)


def test_defaults_listen_on_loopback_only() -> None:
    settings = merge_settings(None)
    assert settings.listen == (Endpoint("127.0.0.1", 161, False), Endpoint("::1", 161, True))
    assert settings.optional_listen == (Endpoint("::1", 161, True),)
    assert merge_settings(None, listen=["[::1]:1161"]).optional_listen == ()
    assert settings.limits == Limits(max_varbinds=64, requests_per_second_per_source=None)


def test_an_optional_endpoint_that_cannot_exist_is_left_out(
        caplog: pytest.LogCaptureFixture) -> None:
    missing = Endpoint("2001:db8::1", 0, True)  # documentation prefix: on no host
    present = Endpoint("127.0.0.1", 0, False)
    with caplog.at_level(logging.WARNING):
        socks = bind_all((present, missing), optional=(missing,))
    try:
        assert len(socks) == 1
    finally:
        for sock in socks:
            sock.close()
    assert "cannot listen on UDP [2001:db8::1]:0" in caplog.text
    with pytest.raises(ListenError):  # the same endpoint, asked for explicitly
        bind_all((present, missing))


# -- what passes the header checks: the dispatcher's own refusal ------------------------


class RecordingTransports:
    """Stands in for the transport dispatcher: keeps what the engine sends."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes, tuple[int, ...]]] = []

    def send_message(self, message: bytes, domain: tuple[int, ...], address: object) -> None:
        self.sent.append((bytes(message), tuple(domain)))


def test_a_request_reaching_pysnmp_on_a_notification_socket_is_refused() -> None:
    # An encrypted SNMPv3 request with its reportable flag cleared passes the
    # header checks to pysnmp; here the decision hands a v2c one there on a
    # listening socket too, as it does an answer to an inform.
    resolver, mib = make_backend()
    built = build_engine(agent_settings(), resolver, mib)
    engine, dispatcher = built.engine, built.engine.message_dispatcher
    # pysnmp's path, taken on purpose:
    dispatcher.parts.decision.decide = lambda *_: INFORM_ANSWER
    transports = RecordingTransports()
    engine.transport_dispatcher = transports
    request = community_request("get", [SYS_DESCR])
    dispatcher.receive_message(engine, LISTEN, LOCAL, request)
    assert len(transports.sent) == 1  # a listening socket answers
    dispatcher.receive_message(engine, NOTIFY, LOCAL, request)
    assert len(transports.sent) == 1
    (handlers,) = engine.get_mib_builder().import_symbols("__SNMP-MPD-MIB",
                                                          "snmpUnknownPDUHandlers")
    assert int(handlers.syntax) == 1
    # Nothing is kept for an answer that will never be sent.
    v2c_mp = engine.message_processing_subsystems[1]
    assert not v2c_mp._cache._Cache__stateReferenceIndex
    assert engine.security_models[2]._cache.is_empty()


def test_a_passed_request_is_handed_on_read_whole() -> None:
    check = prefilter()
    data = community_request("get", [SYS_DESCR] * 2)
    passed = check.check(LISTEN, LOCAL, data)
    assert isinstance(passed, PassedRequest)
    assert passed.message.community == b"public" and [v.oid(data) for v in passed.varbinds] == [
        (1, 3, 6, 1, 2, 1, 1, 1, 0)] * 2
    # The community it was accepted for, and the context its name selects, come with it.
    assert passed.community.name == "public" and passed.context_name == b""
    assert check.check(LISTEN, LOCAL, data) == passed  # nothing kept between datagrams


def test_a_passed_request_names_the_context_of_its_community() -> None:
    check = prefilter()
    data = community_request("get", [SYS_DESCR], community="public@" + NODE.decode())
    passed = check.check(LISTEN, LOCAL, data)
    assert isinstance(passed, PassedRequest)
    assert passed.community.name == "public" and passed.context_name == NODE

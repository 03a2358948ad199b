"""Malformed packets against a running agent: one strict reader decides
for every path, so none of them is answered, each counts in snmpInASNParseErrs,
none reaches pysnmp (whose failures would be logged) and none changes a value.

Each packet is a known hostile case, octet for octet where its octets were recorded.
"""

from __future__ import annotations

import signal
from typing import Any
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.e2e import RunningAgent, ibsnmp_agent
from tests.support.oversized import v3_plaintext_get
from tests.support.wire import decode_response, exchange

from ibsnmp.wire.ber import element, oid_octets

READ, WRITE = b"pubRO-s3cr3t", b"privRW-s3cr3t"
CONFIG = f"""
[[community]]
name = "{READ.decode()}"

[[community]]
name = "{WRITE.decode()}"
access = "write"

[system]
sysContact = "ops@example.net"
"""
PARSE_ERRORS = "SNMPv2-MIB::snmpInASNParseErrs.0"
SYS_CONTACT = "SNMPv2-MIB::sysContact.0"
NO_ANSWER_S = 0.5
VARBIND = bytes.fromhex("3005 06012b 0500")  # { 1.3, NULL }
NULL_VARBIND_OF_SYS_DESCR = bytes.fromhex("300c 06082b06010201010100 0500")


def message(pdu_tag: int, pdu_fields: bytes, *, version: int = 1, community: bytes = READ,
            after_pdu: bytes = b"") -> bytes:
    return element(0x30, element(0x02, bytes((version,))) + element(0x04, community)
                   + element(pdu_tag, pdu_fields) + after_pdu)


def request(varbinds: bytes, *, pdu_tag: int = 0xA0, request_id: bytes = b"\x07",
            error_status: bytes = b"\x00", **kwargs: Any) -> bytes:
    fields = (element(0x02, request_id) + element(0x02, error_status) + element(0x02, b"\x00")
              + element(0x30, varbinds))
    return message(pdu_tag, fields, **kwargs)


def oid_varbind(arcs: tuple[int, ...]) -> bytes:
    return element(0x30, element(0x06, oid_octets(arcs)) + b"\x05\x00")


OVER_LIMIT = 257  # one more varbind than [limits] max_varbinds allows

# Item 1: a 65 KB sub-identifier (quadratic to decode before).
HUGE_ARC = request(element(0x30, element(0x06, bytes.fromhex("2b0601") + b"\xff" * 65000
                                         + b"\x7f") + b"\x05\x00"))
# Item 3: the tooBig-from-header path answered these.
TOO_BIG_PATH = {
    "257 empty varbinds": request(b"\x30\x00" * OVER_LIMIT),
    "junk after the PDU": request(VARBIND * OVER_LIMIT, after_pdu=b"\x05\x00"),
    "error-status 99": request(VARBIND * OVER_LIMIT, error_status=b"\x63"),
    "request-id 00ffffffff": request(VARBIND * OVER_LIMIT, request_id=b"\x00\xff\xff\xff\xff"),
}
# The malformed Response the agent sent to the last one.
MALFORMED_TOO_BIG = bytes.fromhex(
    "3022020101040c707562524f2d733363723374a20f020500ffffffff0201010201003000")
# Item 4: what the fast path refused and pysnmp answered.
CONSTRUCTED_OCTET_STRING_SET = bytes.fromhex(
    "3033020101040d7072697652572d733363723374a31f02010b0201000201003014301206082b06010201"
    "0104002480040261620000")
FAST_PATH_REFUSED = {
    "GETNEXT arc 2^32": request(oid_varbind((1, 3, 6, 1, 2**32)), pdu_tag=0xA1),
    "GET of 129 arcs": request(oid_varbind((1, 3) + (1,) * 127)),
    "v1 request-id 2^31": request(NULL_VARBIND_OF_SYS_DESCR, version=0,
                                  request_id=b"\x00\x80\x00\x00\x00"),
    "indefinite length": b"\x30\x80" + request(NULL_VARBIND_OF_SYS_DESCR)[2:] + b"\x00\x00",
    "constructed OCTET STRING SET": CONSTRUCTED_OCTET_STRING_SET,
    "empty INTEGER request-id": request(NULL_VARBIND_OF_SYS_DESCR, request_id=b""),
    "multi-octet tag value": request(bytes.fromhex("300d 06082b06010201010100 1f2200")),
}
# Item 5: these raised inside pysnmp (genErr and an ERROR line, an ERROR and silence).
RAISED_IN_PYSNMP = {
    "NULL of indefinite length": bytes.fromhex(
        "302e020101040c707562524f2d733363723374a01b02010c0201000201003010300e06082b06010201"
        "01030005800000"),
    "v1 INTEGER 2^31 value": bytes.fromhex(
        "3031020100040c707562524f2d733363723374a01e0201050201000201003013301106082b06010201"
        "01030002050080000000"),
}
V3_PLAINTEXT = {
    # noAuthNoPriv, an unknown user: a well-formed one gets a Report, this nothing.
    "v3 indefinite NULL": v3_plaintext_get(b"nobody", varbind=bytes.fromhex("3007 06012b 05800000")),
}
MALFORMED = {"65 KB arc": HUGE_ARC, **TOO_BIG_PATH, **FAST_PATH_REFUSED, **RAISED_IN_PYSNMP,
             **V3_PLAINTEXT}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningAgent]:
    config = Path(tmp_path_factory.mktemp("hostile")) / "agent.toml"
    config.write_text(CONFIG)
    with ibsnmp_agent("--config", str(config)) as running:
        yield running


def snmpget(agent: RunningAgent, oid: str) -> str:
    result = agent.snmp("snmpget", "-v2c", "-c", READ.decode(), "-Oqv", "-t", "5", oid)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def parse_errors(agent: RunningAgent) -> int:
    return int(snmpget(agent, PARSE_ERRORS))


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_message_is_dropped_and_counted(agent: RunningAgent, name: str) -> None:
    before = parse_errors(agent)
    assert exchange(agent.address, MALFORMED[name], timeout=NO_ANSWER_S) is None
    assert parse_errors(agent) == before + 1


def test_a_well_formed_v3_plaintext_get_gets_its_report(agent: RunningAgent) -> None:
    assert exchange(agent.address, v3_plaintext_get(b"nobody"), timeout=5) is not None


def test_a_constructed_octet_string_set_changes_nothing(agent: RunningAgent) -> None:
    assert snmpget(agent, SYS_CONTACT) == "ops@example.net"
    assert exchange(agent.address, CONSTRUCTED_OCTET_STRING_SET, timeout=NO_ANSWER_S) is None
    assert snmpget(agent, SYS_CONTACT) == "ops@example.net"


def test_a_well_formed_request_over_the_limit_still_gets_too_big(agent: RunningAgent) -> None:
    answer = exchange(agent.address, request(VARBIND * OVER_LIMIT, request_id=b"\x7f\xff\xff\xff"),
                      timeout=5)
    assert answer is not None and answer != MALFORMED_TOO_BIG
    assert decode_response(answer)[:3] == (2**31 - 1, 1, 0)


def test_nothing_reached_pysnmp_or_the_log(agent: RunningAgent) -> None:
    """Last in the module: every packet above has been sent by now."""
    for packet in MALFORMED.values():
        exchange(agent.address, packet, timeout=0.05)
    assert parse_errors(agent) > len(MALFORMED)
    agent.process.send_signal(signal.SIGTERM)
    output, _ = agent.process.communicate(timeout=10)
    assert "ERROR" not in output and "Traceback" not in output, output
    # The dispatcher's guard logs the first message that could not be processed.
    assert "could not be processed" not in output, output

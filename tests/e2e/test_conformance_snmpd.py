"""The conformance findings, sent to the agent and to net-snmp's snmpd alike.

Each probe is a datagram that once got a wrong answer here (a drop that was
answered, an error status or index of its own); both peers must now give
the same outcome: no answer at all, or the same error-status and
error-index. The datagrams are written octet by octet, as a hostile or a
broken manager would send them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from tests.support.e2e import ibsnmp_agent, snmpd_running
from tests.support.wire import decode_response, exchange

from ibsnmp.wire.ber import element, integer_octets, oid_octets

READ, WRITE = b"pubRO-s3cr3t", b"privRW-s3cr3t"
AGENT_CONFIG = f"""
[[community]]
name = "{READ.decode()}"

[[community]]
name = "{WRITE.decode()}"
access = "write"
"""
SNMPD_CONFIG = f"""
rocommunity {READ.decode()} 127.0.0.1
rwcommunity {WRITE.decode()} 127.0.0.1
"""
SYS_CONTACT = (1, 3, 6, 1, 2, 1, 1, 4, 0)
SYS_LOCATION = (1, 3, 6, 1, 2, 1, 1, 6)  # the object, not its instance
SNMP_SET_SERIAL_NO = (1, 3, 6, 1, 6, 3, 1, 1, 6, 1, 0)
NO_ANSWER_S = 1.0
NO_ACCESS, NO_CREATION, INCONSISTENT_VALUE, NOT_WRITABLE = 6, 11, 12, 17


def message(pdu_tag: int, varbinds: bytes, community: bytes) -> bytes:
    """A v2c message of request-id 9 holding `varbinds` (their elements, joined)."""
    pdu = element(0x02, b"\x09") + element(0x02, b"\x00") + element(0x02, b"\x00")
    return element(0x30, element(0x02, b"\x01") + element(0x04, community)
                   + element(pdu_tag, pdu + element(0x30, varbinds)))


def varbind(arcs: tuple[int, ...], value: bytes = b"\x05\x00") -> bytes:
    return element(0x30, element(0x06, oid_octets(arcs)) + value)


GET, GET_NEXT, SET = 0xA0, 0xA1, 0xA3
DROPPED = {
    # RFC 2578 3.5: a sub-identifier is at most 2^32-1, an OID at most 128 of them.
    "GETNEXT of an arc of 2^32": message(GET_NEXT, varbind((1, 3, 6, 1, 2**32)), READ),
    "GET of 129 arcs": message(GET, varbind((1, 3) + (1,) * 127), READ),
    # RFC 3417 8: SNMP's BER is primitive only; 0x24 is a constructed OCTET STRING.
    "SET of a constructed OCTET STRING, indefinite": message(
        SET, varbind(SYS_CONTACT, bytes.fromhex("2480 04026162 0000")), WRITE),
    "SET of a constructed OCTET STRING, definite": message(
        SET, varbind(SYS_CONTACT, bytes.fromhex("2404 04026162")), WRITE),
}


@dataclass
class Peer:
    name: str
    address: str

    def send(self, datagram: bytes) -> tuple[int, int] | None:
        """(error-status, error-index) of the answer; None: none came."""
        answer = exchange(self.address, datagram, NO_ANSWER_S)
        if answer is None:
            return None
        request_id, status, index, _ = decode_response(answer)
        assert request_id == 9
        return status, index

    def serial_no(self) -> int:
        answer = exchange(self.address, message(GET, varbind(SNMP_SET_SERIAL_NO), READ), 5.0)
        assert answer is not None
        _, status, _, varbinds = decode_response(answer)
        assert status == 0
        return int(varbinds[0][1])


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    config = tmp_path_factory.mktemp("agent") / "agent.toml"
    config.write_text(AGENT_CONFIG)
    config.chmod(0o600)
    with ibsnmp_agent("--config", str(config)) as running:
        yield Peer("ibsnmp", running.address)


@pytest.fixture(scope="module")
def snmpd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    probe = message(GET, varbind(SYS_CONTACT), READ)
    with snmpd_running(tmp_path_factory.mktemp("snmpd"), SNMPD_CONFIG, probe) as address:
        yield Peer("snmpd", address)


@pytest.fixture(scope="module", params=["ibsnmp", "snmpd"])
def peer(request: pytest.FixtureRequest) -> Peer:
    peer: Peer = request.getfixturevalue("agent" if request.param == "ibsnmp" else "snmpd")
    return peer


@pytest.mark.parametrize("name", sorted(DROPPED))
def test_a_malformed_request_gets_no_answer(peer: Peer, name: str) -> None:
    assert peer.send(DROPPED[name]) is None
    # The peer is still there, and the SET changed nothing.
    answer = exchange(peer.address, message(GET, varbind(SYS_CONTACT), READ), 5.0)
    assert answer is not None
    assert b"ab" != bytes(decode_response(answer)[3][0][1])


def test_a_set_of_an_object_without_its_instance_creates_nothing(peer: Peer) -> None:
    """RFC 3416 4.2.5: sysLocation without .0 names no variable that could
    ever exist; snmpd says notWritable, which that step also allows."""
    outcome = peer.send(message(SET, varbind(SYS_LOCATION, element(0x04, b"x")), WRITE))
    assert outcome is not None
    status, index = outcome
    assert status in (NO_CREATION, NOT_WRITABLE) and index == 1


def test_snmp_set_serial_no_tests_and_increments(agent: Peer) -> None:
    """RFC 3418's advisory lock: a SET of the current value succeeds and moves
    it on; a SET of any other value is inconsistentValue. (snmpd 5.9.3 is no
    reference here: it answers wrongLength to every SET of it, the current
    value included.)"""
    peer = agent
    current = peer.serial_no()
    stale = element(0x02, integer_octets((current + 7) % 2**31))
    assert peer.send(message(SET, varbind(SNMP_SET_SERIAL_NO, stale), WRITE)) == (
        INCONSISTENT_VALUE, 1)
    assert peer.serial_no() == current
    fresh = element(0x02, integer_octets(current))
    assert peer.send(message(SET, varbind(SNMP_SET_SERIAL_NO, fresh), WRITE)) == (0, 0)
    assert peer.serial_no() == (current + 1) % 2**31


def test_both_peers_answer_every_probe_alike(agent: Peer, snmpd: Peer) -> None:
    """The outcomes side by side, for the record of a failure."""
    outcomes = {name: (agent.send(data), snmpd.send(data)) for name, data in DROPPED.items()}
    assert all(ours == theirs for ours, theirs in outcomes.values()), outcomes


def test_a_set_by_a_read_community_is_no_access_at_its_varbind(peer: Peer) -> None:
    assert peer.send(message(SET, varbind(SYS_CONTACT, element(0x04, b"x")), READ)) == (NO_ACCESS, 1)

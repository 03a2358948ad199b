"""SNMPv3 USM reports and dropped messages, packet by packet, as RFC 3412/3414 and snmpd answer.

Each case sends the offending message (built with pysnmp's ASN.1 classes,
tests/support/wire_v3.py) to a running `ibsnmp run` and decodes what comes back.
The USM cases run against net-snmp's snmpd too, configured with the same
users: both must answer alike (report OID, msgFlags 0, the request-id when
it could be read, authorizationError from VACM).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pysnmp.proto import rfc1902
from tests.support.e2e import RunningAgent, ibsnmp_agent, snmpd_running
from tests.support.wire import community_request, decode_response, exchange, split_address
from tests.support.wire_v3 import (
    USM_STATS_UNKNOWN_ENGINE_IDS,
    USM_STATS_UNSUPPORTED_SEC_LEVELS,
    USM_STATS_WRONG_DIGESTS,
    Auth,
    V3Answer,
    decode_v3,
    discover,
    v3_message,
)

SYS_NAME = (1, 3, 6, 1, 2, 1, 1, 5, 0)
SNMP_INVALID_MSGS = (1, 3, 6, 1, 6, 3, 11, 2, 1, 2, 0)
AUTHORIZATION_ERROR = 16
FOREIGN_ENGINE_ID = bytes.fromhex("8000000001020304")
READER = b"reader"      # SHA-256 + AES: authPriv
AUTH_ONLY = b"authonly"  # SHA: authNoPriv
READER_AUTH = Auth("SHA256", "reader-auth-key")
AUTH_ONLY_AUTH = Auth("SHA", "authonly-key")
CONFIG = """
[[community]]
name = "public"

[[user]]
name = "reader"
auth = "SHA256"
auth_key = "reader-auth-key"
priv = "AES"
priv_key = "reader-priv-key"

[[user]]
name = "authonly"
auth = "SHA"
auth_key = "authonly-key"
"""


class LoggedAgent:
    """A running agent whose output is collected all along (a full pipe would block it)."""

    def __init__(self, agent: RunningAgent) -> None:
        self.agent = agent
        self.address = agent.address
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.agent.process.stdout is not None
        try:
            for line in self.agent.process.stdout:
                self.lines.append(line)
        except (ValueError, OSError):
            pass  # the pipe was closed when the agent stopped

    @property
    def log(self) -> str:
        return self.agent.banner + "".join(self.lines)

    def rss_kib(self) -> int:
        status = Path(f"/proc/{self.agent.process.pid}/status").read_text()
        return int(next(line.split()[1] for line in status.splitlines()
                        if line.startswith("VmRSS:")))


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoggedAgent]:
    config = tmp_path_factory.mktemp("v3") / "agent.toml"
    config.write_text(CONFIG)
    with ibsnmp_agent("--config", str(config), fabric="single") as running:
        yield LoggedAgent(running)


SNMPD_CONFIG = """
createUser reader SHA-256 reader-auth-key AES reader-priv-key
createUser authonly SHA authonly-key
rouser reader authPriv
rouser authonly authNoPriv
rocommunity public 127.0.0.1
"""


@dataclass
class Peer:
    address: str


@pytest.fixture(scope="module")
def snmpd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    """net-snmp's snmpd with the same users, on a free port."""
    probe = community_request("get", [SYS_NAME])
    with snmpd_running(tmp_path_factory.mktemp("snmpd"), SNMPD_CONFIG, probe) as address:
        yield Peer(address)


@pytest.fixture(scope="module", params=["ibsnmp", "snmpd"])
def target(request: pytest.FixtureRequest) -> Peer:
    """Where a USM case is sent: the agent, and snmpd as the reference."""
    if request.param == "ibsnmp":
        return Peer(request.getfixturevalue("agent").address)
    peer: Peer = request.getfixturevalue("snmpd")
    return peer


@pytest.fixture(scope="module")
def engine(target: Peer) -> V3Answer:
    return discover(target.address)


def send(target: Peer | LoggedAgent, message: bytes) -> V3Answer | None:
    answer = exchange(target.address, message, timeout=2.0)
    return None if answer is None else decode_v3(answer)


def assert_report(answer: V3Answer | None, oid: tuple[int, ...], *, request_id: int,
                  user: bytes) -> int:
    """A Report as RFC 3412 7.1.3 wants it; returns the counter it carries."""
    assert answer is not None, "no report"
    assert answer.pdu_type == "report"
    assert [name for name, _ in answer.varbinds] == [oid]
    assert answer.flags == 0  # noAuthNoPriv, and never reportable (RFC 3412 6.4)
    assert answer.msg_id == 7001
    assert answer.request_id == request_id
    assert answer.user == user
    return int(answer.varbinds[0][1])


def get_v2c(agent: LoggedAgent, oid: tuple[int, ...]) -> object:
    answer = exchange(agent.address, community_request("get", [oid]), timeout=5.0)
    assert answer is not None, "the agent stopped answering"
    _, status, _, varbinds = decode_response(answer)
    assert status == 0
    return varbinds[0][1]


def invalid_msgs(agent: LoggedAgent) -> int:
    value = get_v2c(agent, SNMP_INVALID_MSGS)
    # Until its first event pysnmp may have no instance (noSuchInstance).
    return int(value) if isinstance(value, rfc1902.Counter32) else 0


# -- RFC 3414 3.2 step 3: a request naming another engine -------------------------------


@pytest.mark.parametrize(("user", "auth"), [(AUTH_ONLY, AUTH_ONLY_AUTH), (AUTH_ONLY, None),
                                            (b"nobody", None)],
                         ids=["known-user-authNoPriv", "known-user-noAuth", "unknown-user"])
def test_a_foreign_engine_id_is_reported_as_unknown_engine_id(
        target: Peer, user: bytes, auth: Auth | None) -> None:
    # Step 3 (engine ID) comes before step 4 (user): even a known user whose
    # key would sign correctly for that engine gets usmStatsUnknownEngineIDs.
    message = v3_message("get", [SYS_NAME], user=user, engine_id=FOREIGN_ENGINE_ID,
                         boots=3, engine_time=100, auth=auth, request_id=31)
    first = assert_report(send(target, message), USM_STATS_UNKNOWN_ENGINE_IDS,
                          request_id=31, user=user)
    again = assert_report(send(target, message), USM_STATS_UNKNOWN_ENGINE_IDS,
                          request_id=31, user=user)
    assert again == first + 1


def test_an_encrypted_request_to_a_foreign_engine_id_gets_request_id_0(
        target: Peer) -> None:
    message = v3_message("get", [SYS_NAME], user=READER, engine_id=FOREIGN_ENGINE_ID,
                         boots=3, engine_time=100, flags=0x07, ciphertext=b"\x13" * 48)
    assert_report(send(target, message), USM_STATS_UNKNOWN_ENGINE_IDS, request_id=0,
                  user=READER)


def test_discovery_still_answers_with_the_engine(target: Peer, engine: V3Answer) -> None:
    again = discover(target.address)
    assert again.engine_id == engine.engine_id and again.boots == engine.boots >= 1
    assert again.pdu_type == "report" and again.flags == 0 and again.request_id == 1
    assert [oid for oid, _ in again.varbinds] == [USM_STATS_UNKNOWN_ENGINE_IDS]


# -- wrong keys and security levels ---------------------------------------------------------


@pytest.mark.parametrize("user", [AUTH_ONLY, READER])
def test_a_wrong_key_at_auth_no_priv_is_a_wrong_digest(
        target: Peer, engine: V3Answer, user: bytes) -> None:
    protocol = "SHA" if user == AUTH_ONLY else "SHA256"
    message = v3_message("get", [SYS_NAME], user=user, engine_id=engine.engine_id,
                         boots=engine.boots, engine_time=engine.engine_time,
                         auth=Auth(protocol, "not-the-key"), request_id=52)
    assert_report(send(target, message), USM_STATS_WRONG_DIGESTS, request_id=52, user=user)


def test_the_right_key_reads(target: Peer, engine: V3Answer) -> None:
    message = v3_message("get", [SYS_NAME], user=AUTH_ONLY, engine_id=engine.engine_id,
                         boots=engine.boots, engine_time=engine.engine_time,
                         auth=AUTH_ONLY_AUTH, request_id=53)
    answer = send(target, message)
    assert answer is not None and answer.pdu_type == "response"
    assert answer.error_status == 0 and answer.request_id == 53 and answer.flags == 0x01


@pytest.mark.parametrize(("auth", "flags"), [(READER_AUTH, 0x01), (None, 0x00)],
                         ids=["authNoPriv", "noAuthNoPriv"])
def test_a_level_below_the_users_is_vacms_authorization_error(
        target: Peer, engine: V3Answer, auth: Auth | None, flags: int) -> None:
    # reader is configured for authPriv: its right key at a lower level is
    # not a USM error (the user can do that level) but VACM's refusal.
    message = v3_message("get", [SYS_NAME], user=READER, engine_id=engine.engine_id,
                         boots=engine.boots, engine_time=engine.engine_time, auth=auth,
                         request_id=61)
    answer = send(target, message)
    assert answer is not None and answer.pdu_type == "response"
    assert answer.error_status == AUTHORIZATION_ERROR
    assert answer.request_id == 61 and answer.flags == flags
    assert answer.varbinds[0][0] == SYS_NAME and not bytes(answer.varbinds[0][1])


def test_a_level_the_user_has_no_keys_for_is_unsupported(
        target: Peer, engine: V3Answer) -> None:
    # authPriv for a user without a privacy key: the PDU cannot be read.
    message = v3_message("get", [SYS_NAME], user=AUTH_ONLY, engine_id=engine.engine_id,
                         boots=engine.boots, engine_time=engine.engine_time, flags=0x07,
                         ciphertext=b"\x13" * 48)
    assert_report(send(target, message), USM_STATS_UNSUPPORTED_SEC_LEVELS, request_id=0,
                  user=AUTH_ONLY)


# -- RFC 3412 6.4: a Response (or Report) with the reportable flag ---------------------------


def reportable_responses(engine: V3Answer) -> list[bytes]:
    """Unconfirmed PDUs flagged reportable: discovery-shaped, to a user, and a Report."""
    return [
        v3_message("response", [SYS_NAME], flags=0x04),
        v3_message("response", [SYS_NAME], user=READER, engine_id=engine.engine_id,
                   boots=engine.boots, engine_time=engine.engine_time, flags=0x04),
        v3_message("report", [SYS_NAME], user=b"nobody", engine_id=engine.engine_id,
                   flags=0x04),
    ]


def test_a_reportable_response_is_dropped_and_counted(agent: LoggedAgent) -> None:
    before = invalid_msgs(agent)
    for message in reportable_responses(discover(agent.address)):
        assert send(agent, message) is None
    assert invalid_msgs(agent) == before + 3
    assert get_v2c(agent, SYS_NAME)  # still serving
    assert "Traceback" not in agent.log and "AttributeError" not in agent.log


def test_reportable_responses_hold_no_memory(agent: LoggedAgent) -> None:
    # The discovery-shaped one: pysnmp crashed on it and held its state.
    message = reportable_responses(discover(agent.address))[0]

    def flood(count: int) -> None:
        for _ in range(0, count, 100):
            for _ in range(100):
                exchange_nowait(agent.address, message)
            get_v2c(agent, SYS_NAME)  # in order: every packet before it was handled

    flood(300)  # warm-up: caches and allocator settle
    before_rss, before_count = agent.rss_kib(), invalid_msgs(agent)
    flood(2000)
    grown = agent.rss_kib() - before_rss
    assert invalid_msgs(agent) - before_count >= 1900  # UDP may lose a few
    # Measured before the fix: +4,648 KiB (about 2.3 KiB held per packet).
    assert grown < 1024, f"RSS grew by {grown} KiB over 2,000 packets"
    assert "Traceback" not in agent.log


def exchange_nowait(address: str, payload: bytes) -> None:
    """Send one datagram and do not wait for an answer."""
    host, port = split_address(address)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(payload, (host, port))

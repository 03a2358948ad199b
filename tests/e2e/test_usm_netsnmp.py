"""ibsnmp/wire's USM against net-snmp's snmpget, for every auth/priv pair both speak.

A small authoritative engine in a thread answers with nothing but
ibsnmp.wire: discovery gets a usmStatsUnknownEngineIDs Report (noAuthNoPriv,
as RFC 3414 4 has it), then snmpget's authenticated (and encrypted) GET is
checked by `accept` and answered through `Sealer`. snmpget prints the value
only if our digest, our encryption and our time values satisfy net-snmp;
we answer only if its digest and encryption satisfy us.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator

import pytest

from ibsnmp.wire.ber import (COUNTER32, INTEGER, OBJECT_IDENTIFIER, OCTET_STRING, SEQUENCE,
                             element, integer_octets, oid_octets)
from ibsnmp.wire.header import GET, REPORT, RESPONSE, V3Message, read_header
from ibsnmp.wire.usm_inbound import (Accepted, Refusal, Sealer, localize_users,
                                     process)
from ibsnmp.wire.usm_message import Outgoing, encode_scoped_pdu, encode_v3

pytestmark = pytest.mark.skipif(shutil.which("snmpget") is None, reason="net-snmp tools missing")

ENGINE_ID = bytes.fromhex("80004fb805c0ffee0102030405")
BOOTS = 9
SYS_NAME = (1, 3, 6, 1, 2, 1, 1, 5, 0)
UNKNOWN_ENGINE_IDS = (1, 3, 6, 1, 6, 3, 15, 1, 1, 4, 0)
NET_SNMP_AUTH = {"MD5": "MD5", "SHA": "SHA", "SHA224": "SHA-224", "SHA256": "SHA-256",
                 "SHA384": "SHA-384", "SHA512": "SHA-512"}
NET_SNMP_PRIV = {None: None, "AES": "AES", "AES192": "AES-192", "AES256": "AES-256",
                 "DES": "DES"}
PAIRS = [(auth, priv) for auth in NET_SNMP_AUTH for priv in NET_SNMP_PRIV]


class User:
    """An agent.config.User look-alike, one per pair."""

    def __init__(self, auth: str, priv: str | None) -> None:
        self.name = f"u-{auth}-{priv or 'none'}"
        self.auth, self.auth_key = auth, f"auth-{auth}-pass"
        self.priv = priv
        self.priv_key = f"priv-{priv}-pass" if priv else None
        self.access, self.view = "read", None


USERS = {pair: User(*pair) for pair in PAIRS}


class Clock:
    def boots(self) -> int:
        return BOOTS

    def time(self) -> int:
        return 4242


def _pdu(tag: int, request_id: int, varbind_oid: tuple[int, ...], value: bytes) -> bytes:
    varbind = element(SEQUENCE, element(OBJECT_IDENTIFIER, oid_octets(varbind_oid)) + value)
    return element(tag, element(INTEGER, integer_octets(request_id)) + element(INTEGER, b"\0")
                   + element(INTEGER, b"\0") + element(SEQUENCE, varbind))


class MiniEngine:
    """Discovery Reports and sysName.0 Responses, built by ibsnmp.wire alone."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.address = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.users = localize_users(USERS.values(), ENGINE_ID)
        self.sealer = Sealer(ENGINE_ID, Clock(), 65507)
        self.refusals: list[Refusal] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data, peer = self.sock.recvfrom(65535)
            except TimeoutError:
                continue
            answer = self._answer(data)
            if answer is not None:
                self.sock.sendto(answer, peer)

    def _answer(self, data: bytes) -> bytes | None:
        message = read_header(data)
        assert isinstance(message, V3Message)
        result = process(message, data, ENGINE_ID, self.users, Clock())
        if isinstance(result, Accepted):
            pdu = result.scoped.pdu
            assert pdu.tag == GET
            value = element(OCTET_STRING, b"fast-v3 " + result.user.name)
            response = _pdu(RESPONSE, pdu.request_id, SYS_NAME, value)
            return self.sealer.seal(result, encode_scoped_pdu(ENGINE_ID, b"", response))
        self.refusals.append(result.refusal)
        if result.refusal is not Refusal.UNKNOWN_ENGINE_ID or not result.report:
            return None
        # Discovery: the engine ID, boots and time in a Report.
        report = _pdu(REPORT, result.request_id, UNKNOWN_ENGINE_IDS, element(COUNTER32, b"\x01"))
        out = Outgoing(message_id=message.message_id, max_size=65507, flags=0,
                       engine_id=ENGINE_ID, boots=BOOTS, engine_time=4242,
                       user=message.user_name or b"", mac_length=0, priv_params=b"")
        reply, _ = encode_v3(out, encode_scoped_pdu(ENGINE_ID, b"", report))
        return reply

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture(scope="module")
def engine() -> Iterator[MiniEngine]:
    mini = MiniEngine()
    yield mini
    mini.close()


def snmpget(engine: MiniEngine, user: User, *, auth_key: str | None = None,
            priv_key: str | None = None) -> subprocess.CompletedProcess[str]:
    level = "authPriv" if user.priv else "authNoPriv"
    command = ["snmpget", "-v3", "-On", "-r0", "-t2", "-l", level, "-u", user.name,
               "-a", NET_SNMP_AUTH[user.auth], "-A", auth_key or user.auth_key]
    if user.priv:
        protocol = NET_SNMP_PRIV[user.priv]
        assert protocol is not None  # None: no privacy
        command += ["-x", protocol, "-X", priv_key or user.priv_key or ""]
    command += [engine.address, ".1.3.6.1.2.1.1.5.0"]
    return subprocess.run(command, capture_output=True, text=True, timeout=20,
                          env={"PATH": "/usr/bin:/bin", "MIBS": "", "HOME": "/nonexistent"})


@pytest.mark.parametrize(("auth", "priv"), PAIRS)
def test_net_snmp_reads_through_our_usm(engine: MiniEngine, auth: str, priv: str | None) -> None:
    user = USERS[(auth, priv)]
    result = snmpget(engine, user)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (f'.1.3.6.1.2.1.1.5.0 = STRING: "fast-v3 {user.name}"')


@pytest.mark.parametrize(("auth", "priv"), [("SHA256", None), ("SHA512", "AES256")])
def test_a_wrong_auth_key_is_refused_as_a_wrong_digest(engine: MiniEngine, auth: str,
                                                       priv: str | None) -> None:
    engine.refusals.clear()
    result = snmpget(engine, USERS[(auth, priv)], auth_key="not-the-right-key")
    assert result.returncode != 0
    assert Refusal.WRONG_DIGEST in engine.refusals


@pytest.mark.parametrize("priv", ["AES192", "DES"])
def test_a_wrong_priv_key_decrypts_to_a_parse_error(engine: MiniEngine, priv: str) -> None:
    # The digest is right, the plaintext is noise: RFC 3412 7.2 step 8 drops it
    # as a parse error (not a decryption error, which needs undecryptable data).
    engine.refusals.clear()
    result = snmpget(engine, USERS[("SHA384", priv)], priv_key="not-the-right-key")
    assert result.returncode != 0
    assert Refusal.PARSE_ERROR in engine.refusals

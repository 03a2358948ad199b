"""Mutated SNMP traffic against a running agent, every answer accounted for.

The mutants come from the project's one mutation engine (tests/support/wire_fuzz.py)
over its captured corpus plus seeds built here for the running agent:
SNMPv3 authNoPriv requests of every kind signed with its engine ID and
time, which `Resigner` signs again after each mutation (so the digest
check passes and the mutation reaches the decoder behind it), and the
PDU kinds an agent must not answer (a v1 Trap, an SNMPv2-Trap, an
InformRequest).

Attribution: every mutant is followed on the same socket by a marker GET
(sysUpTime.0, a request-id of its own); the agent handles one datagram
after the other, so what arrives between the marker of mutant n-1 and the
marker of mutant n is mutant n's answer. Markers are pipelined (a window
of WINDOW in flight), so the rate is the agent's, not a round trip's.
An answer is malformed when the project's BER reader or pysnmp's message
specs cannot read it whole, or when it answers a mutant that is not one
well-formed BER value; each such mutant is sent again alone to confirm it.
"""

from __future__ import annotations

import hashlib
import hmac
import select
import socket
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pyasn1.codec.ber import decoder
from pysnmp.proto import api
from pysnmp.proto.mpmod.rfc3412 import SNMPv3Message

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import udp_drops  # noqa: E402
from tests.support.wire import community_request  # noqa: E402
from tests.support.wire_fuzz import CORPUS_AGENT_CONFIG, is_well_formed_ber, load_corpus  # noqa: E402
from tests.support.wire_v3 import AUTH_FLAG, REPORTABLE_FLAG, Auth, decode_v3, v3_message  # noqa: E402

ENGINE_ID = bytes.fromhex("8000000001020304")  # CORPUS_AGENT_CONFIG's
# The aggregate rate cap off: the sender goes as fast as the agent answers,
# above the cap's 5,000 requests a second, and every marker it dropped would
# count as lost (the cap is tested on its own, tests/e2e/test_rate_limits.py).
AGENT_CONFIG = CORPUS_AGENT_CONFIG + """
[limits]
requests_per_second = 0

[[user]]
name = "signer"
auth = "SHA256"
auth_key = "signerpass1"
"""
# An authNoPriv user: its requests reach the PDU handling (reader's need privacy).
V3_USER = b"signer"
V3_AUTH = Auth("SHA256", "signerpass1")
SYS_UPTIME_0 = (1, 3, 6, 1, 2, 1, 1, 3, 0)
SYS_CONTACT_0 = (1, 3, 6, 1, 2, 1, 1, 4, 0)
IB_SMA = (1, 3, 6, 1, 3, 117, 3)  # SMA-MIB's subtree, as the corpus's getnext asks
# PDU tags (context class, constructed) of the kinds built here.
GET_NEXT_TAG, SET_TAG, BULK_TAG, INFORM_TAG, TRAP2_TAG, V1_TRAP_TAG = (
    0xA1, 0xA3, 0xA5, 0xA6, 0xA7, 0xA4)
MARKER_BASE = 0x40000000  # marker request-ids: MARKER_BASE + mutant number
PROBE_BASE = 0x60000000  # probe request-ids: PROBE_BASE + probe number
WINDOW = 32  # markers in flight
MARKER_TIMEOUT_S = 5.0
PROBE_TIMEOUT_S = 5.0
CONFIRM_TIMEOUT_S = 1.0
KEPT_EXAMPLES = 5
SEED_REFRESH_S = 60.0  # v3 seeds carry the engine time; the window is 150 s


# -- seeds ---------------------------------------------------------------------------------------


class Resigner:
    """Signs authNoPriv messages of V3_USER whose digest field holds zeros.

    A seed is built with its digest zeroed; after mutation, if exactly one
    run of zeros of the digest's length is left, the HMAC of the whole
    mutant is written there, as a manager with the key would sign it.
    """

    def __init__(self, engine_id: bytes, auth: Auth = V3_AUTH) -> None:
        self.key = auth.localized_key(engine_id)
        self.length = auth.mac_length
        self.zeros = b"\0" * self.length

    def sign(self, data: bytes) -> bytes:
        at = data.find(self.zeros)
        if at < 0 or data.find(self.zeros, at + 1) >= 0:
            return data  # the mutation took the digest field: sent as it is
        mac = hmac.new(self.key, data, hashlib.sha256).digest()[:self.length]
        return data[:at] + mac + data[at + self.length:]


def _unsigned_v3(tag: int, oids: list[tuple[int, ...]], boots: int, engine_time: int,
                 *, repetitions: int = 0) -> bytes:
    """An authNoPriv request of V3_USER with its digest zeroed and PDU tag `tag`."""
    signed = v3_message("get", oids, user=V3_USER, engine_id=ENGINE_ID, boots=boots,
                        engine_time=engine_time, auth=V3_AUTH,
                        flags=AUTH_FLAG | REPORTABLE_FLAG, request_id=5151)
    user = bytes([0x04, len(V3_USER)]) + V3_USER + bytes([0x04, V3_AUTH.mac_length])
    at = signed.index(user) + len(user)
    data = bytearray(signed[:at] + b"\0" * V3_AUTH.mac_length + signed[at + V3_AUTH.mac_length:])
    # The PDU follows the scoped PDU's contextEngineID and empty contextName.
    pdu = data.index(bytes([0x04, len(ENGINE_ID)]) + ENGINE_ID + b"\x04\x00\xa0") + 4 + len(
        ENGINE_ID)
    data[pdu] = tag
    if repetitions:  # GETBULK: error-index is max-repetitions
        fields = data.index(b"\x02\x01\x00\x02\x01\x00", pdu)
        data[fields + 5] = repetitions
    return bytes(data)


def v3_seeds(boots: int, engine_time: int) -> dict[str, bytes]:
    """Authenticated v3 requests of every kind, digest zeroed (Resigner signs them)."""
    return {
        "gen-v3-auth-get": _unsigned_v3(0xA0, [SYS_UPTIME_0], boots, engine_time),
        "gen-v3-auth-getnext": _unsigned_v3(GET_NEXT_TAG, [IB_SMA], boots, engine_time),
        "gen-v3-auth-getbulk": _unsigned_v3(BULK_TAG, [IB_SMA], boots, engine_time,
                                            repetitions=10),
        "gen-v3-auth-set": _unsigned_v3(SET_TAG, [SYS_CONTACT_0], boots, engine_time),
    }


def _retagged(data: bytes, tag: int) -> bytes:
    """A v1/v2c message with its PDU tag replaced (the PDU follows the community)."""
    community_length = data[6]
    at = 7 + community_length
    return data[:at] + bytes([tag]) + data[at + 1:]


def unanswerable_seeds() -> dict[str, bytes]:
    """PDU kinds an agent takes no request from: notifications sent to it."""
    v2c_get = community_request("get", [SYS_UPTIME_0, (1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0)])
    # A v1 Trap-PDU: enterprise, agent-addr, generic, specific, time-stamp, varbinds.
    v1_trap_pdu = bytes.fromhex("a41c 06062b0601040100 4004 7f000001 020106 020100 430100 3000"
                                .replace(" ", ""))
    v1_trap = b"\x30" + bytes([3 + 8 + len(v1_trap_pdu)]) + bytes.fromhex(
        "020100 0406 7075626c6963".replace(" ", "")) + v1_trap_pdu
    return {"gen-v2c-trap": _retagged(v2c_get, TRAP2_TAG),
            "gen-v2c-inform": _retagged(v2c_get, INFORM_TAG),
            "gen-v1-trap": v1_trap}


# -- answers -------------------------------------------------------------------------------------


def answer_is_well_formed(data: bytes) -> bool:
    """The project's BER reader and pysnmp's message specs both read it whole."""
    if not is_well_formed_ber(data):
        return False
    try:
        version = int(api.decodeMessageVersion(data))
        if version == 3:
            message, rest = decoder.decode(data, asn1Spec=SNMPv3Message())
            if rest:
                return False
            if message.getComponentByPosition(3).getName() == "plaintext":
                decode_v3(data)
            return True
        module = api.PROTOCOL_MODULES[version]
        message, rest = decoder.decode(data, asn1Spec=module.Message())
        return not rest
    except Exception:
        return False


def _marker_id(data: bytes) -> int | None:
    """The request-id of a v2c answer, read as far as it goes (markers only)."""
    try:
        at = 2 if data[1] < 0x80 else 2 + (data[1] & 0x7F)
        at += 3  # version
        at += 2 + data[at + 1]  # community
        at += 2 if data[at + 1] < 0x80 else 2 + (data[at + 1] & 0x7F)  # PDU header
        if data[at] != 0x02 or data[at + 1] > 4:
            return None
        return int.from_bytes(data[at + 2:at + 2 + data[at + 1]], "big")
    except IndexError:
        return None


@dataclass
class FuzzFigures:
    sent: int = 0
    malformed_sent: int = 0  # mutants that are not one well-formed BER value
    answers: int = 0
    unreadable_answers: int = 0  # answers the strict readers cannot read
    answered_malformed: int = 0  # confirmed: a malformed mutant got an answer
    markers_lost: int = 0
    # The seed of the mutant sent just before each lost marker.
    lost_after: Counter[str] = field(default_factory=Counter)
    kernel_drops: int = 0  # datagrams the agent's socket buffer had no room for
    probes_sent: int = 0
    probes_answered: int = 0
    agent_gone: bool = False
    seconds: float = 0.0
    examples: list[str] = field(default_factory=list)  # "what: label hex"
    answered_by_seed: Counter[str] = field(default_factory=Counter)

    @property
    def rate(self) -> float:
        return self.sent / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        return (f"{self.sent:,} mutants sent ({self.malformed_sent:,} not well-formed BER) in "
                f"{self.seconds:.0f} s ({self.rate:.0f}/s); {self.answers:,} answers, "
                f"{self.unreadable_answers} unreadable, {self.answered_malformed} to malformed "
                f"requests; markers lost {self.markers_lost} (the agent's socket dropped "
                f"{self.kernel_drops:,} datagrams); probes answered "
                f"{self.probes_answered}/{self.probes_sent}; agent "
                f"{'GONE' if self.agent_gone else 'alive'}")


class FuzzSender:
    """Sends mutants to one agent with markers and probes, and judges the answers."""

    def __init__(self, host: str, port: int, alive: Callable[[], bool],
                 probe_every: int = 1000) -> None:
        self.target = (host, port)
        self.alive = alive
        self.probe_every = probe_every
        self.figures = FuzzFigures()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self._pending: deque[tuple[int, str, bytes]] = deque()  # (marker id, label, mutant)
        self._held: list[bytes] = []  # answers since the last marker answer
        self._probe_answer: int | None = None

    def close(self) -> None:
        self.sock.close()

    def run(self, mutants: Iterable[tuple[str, bytes]], *, rate: float | None = None,
            deadline: float | None = None, should_stop: Callable[[], bool] = lambda: False) -> FuzzFigures:
        """Send until `mutants` ends, `deadline` (monotonic) passes or `should_stop()`."""
        started = time.monotonic()
        interval = 1.0 / rate if rate else 0.0
        drops_before = udp_drops(self.target[1])
        try:
            for number, (label, data) in enumerate(mutants):
                if should_stop() or (deadline is not None and time.monotonic() >= deadline):
                    break
                if interval:
                    wait = started + number * interval - time.monotonic()
                    if wait > 0:
                        self._collect(wait)
                while len(self._pending) >= WINDOW:
                    if not self._collect(MARKER_TIMEOUT_S):
                        self._lose_markers()
                marker = MARKER_BASE + number % 0x10000000
                self.sock.sendto(data, self.target)
                self.sock.sendto(community_request("get", [SYS_UPTIME_0], request_id=marker),
                                 self.target)
                self._pending.append((marker, label, data))
                self.figures.sent += 1
                if not is_well_formed_ber(data):
                    self.figures.malformed_sent += 1
                if self.figures.sent % self.probe_every == 0:
                    self._probe()
                    if self.figures.agent_gone:
                        break
            self._drain()
        finally:
            self.figures.seconds = time.monotonic() - started
            self.figures.kernel_drops += udp_drops(self.target[1]) - drops_before
        return self.figures

    def _collect(self, timeout: float) -> bool:
        """Read answers for up to `timeout`; False when nothing arrived at all."""
        end = time.monotonic() + timeout
        got = False
        while True:
            left = end - time.monotonic()
            readable, _, _ = select.select([self.sock], [], [], max(left, 0))
            if not readable:
                return got
            got = True
            while True:
                try:
                    data = self.sock.recv(65535, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    break
                self._answer(data)
            if not self._pending or left <= 0:
                return got

    def _answer(self, data: bytes) -> None:
        marker = _marker_id(data)
        if marker is not None and any(m == marker for m, _, _ in self._pending):
            while self._pending:
                pending_marker, label, mutant = self._pending.popleft()
                held, self._held = self._held, []
                if pending_marker == marker:
                    self._judge(label, mutant, held)
                    return
                self.figures.markers_lost += 1  # its answers went to the next mutant
                self.figures.lost_after[label.partition("#")[0]] += 1
            return
        if marker is not None and marker >= PROBE_BASE and marker < PROBE_BASE + 0x1000000:
            self._probe_answer = marker
            return
        self._held.append(data)

    def _judge(self, label: str, mutant: bytes, answers: list[bytes]) -> None:
        if answers:
            self.figures.answered_by_seed[label.partition("#")[0]] += 1
        for answer in answers:
            self.figures.answers += 1
            if not answer_is_well_formed(answer):
                self.figures.unreadable_answers += 1
                self._keep(f"unreadable answer to {label}: request {mutant.hex()} "
                           f"answer {answer.hex()}")
        if answers and not is_well_formed_ber(mutant) and self._answered_alone(mutant):
            self.figures.answered_malformed += 1
            self._keep(f"answered malformed {label}: {mutant.hex()}")

    def _answered_alone(self, mutant: bytes) -> bool:
        """Confirm on a socket of its own: does this mutant alone get an answer?"""
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.bind(("127.0.0.1", 0))
            sock.settimeout(CONFIRM_TIMEOUT_S)
            sock.sendto(mutant, self.target)
            try:
                return bool(sock.recv(65535))
            except socket.timeout:
                return False

    def _keep(self, example: str) -> None:
        if len(self.figures.examples) < KEPT_EXAMPLES:
            self.figures.examples.append(example)

    def _lose_markers(self) -> None:
        """No answer at all for MARKER_TIMEOUT_S: the window's markers are lost."""
        self.figures.markers_lost += len(self._pending)
        self._pending.clear()
        self._held.clear()
        if not self.alive():
            self.figures.agent_gone = True

    def _drain(self) -> None:
        while self._pending:
            if not self._collect(MARKER_TIMEOUT_S):
                self._lose_markers()

    def _probe(self) -> None:
        """A GET that must be answered once everything before it is handled."""
        self._drain()
        number = self.figures.probes_sent
        self.figures.probes_sent += 1
        self._probe_answer = None
        probe = PROBE_BASE + number % 0x1000000
        self.sock.sendto(community_request("get", [SYS_UPTIME_0], request_id=probe), self.target)
        end = time.monotonic() + PROBE_TIMEOUT_S
        while self._probe_answer != probe and time.monotonic() < end:
            self._collect(min(0.2, max(end - time.monotonic(), 0)))
        if self._probe_answer == probe:
            self.figures.probes_answered += 1
        elif not self.alive():
            self.figures.agent_gone = True
        self._held.clear()


class SeedSet:
    """The corpus plus this agent's v3 and notification seeds, v3 ones kept in time."""

    def __init__(self, boots: int, engine_time: int) -> None:
        self.boots, self.engine_time = boots, engine_time
        self.started = time.monotonic()
        self.refreshed = self.started
        self.resigner = Resigner(ENGINE_ID)
        self.seeds = {**load_corpus(), **unanswerable_seeds(), **self._v3()}

    def _v3(self) -> dict[str, bytes]:
        now = self.engine_time + int(time.monotonic() - self.started)
        return v3_seeds(self.boots, now)

    def finish(self, name: str, mutant: bytes) -> bytes:
        """wire_fuzz's last touch: keep v3 seeds in the time window, re-sign theirs."""
        if time.monotonic() - self.refreshed > SEED_REFRESH_S:
            self.seeds.update(self._v3())
            self.refreshed = time.monotonic()
        return self.resigner.sign(mutant) if name.startswith("gen-v3-auth") else mutant

#!/usr/bin/env python3
"""ibsnmp benchmark: what rejecting unauthenticated SNMPv3 costs, against a wrong v2c community.

    .venv/bin/python bench/v3_reject.py                  # ~3 minutes on 2 cores
    .venv/bin/python bench/v3_reject.py --rate 1500 --seconds 5 --rounds 4
    .venv/bin/python bench/v3_reject.py --unlimited-reports   # every refusal reported
    PYTHONPATH=<tree of another commit> .venv/bin/python bench/v3_reject.py  # that tree's agent

One agent (127.0.0.1, a free port, two SNMPv3 users) and, in the same run,
`--rounds` rounds of one phase per kind of rejected datagram: `--rate`
packets per second for `--seconds` seconds from one source, while a
manager sends a v2c GET of sysDescr.0 every 50 ms (1 s timeout, no
retry). In each round every v3 kind's phase lies between two phases of
the v2c one, so a change in the machine's speed (it is shared, and drifts
within a minute) falls on a kind and its reference alike. The kinds,
~50-120 octets each, none needing a credential but a user name (a replay
needs a captured request):

- v2c-wrong-community: a GET with a community the agent does not know;
- v3-discovery: the empty-engine-ID noAuthNoPriv GET every manager sends
  first (usmStatsUnknownEngineIDs Report);
- v3-unknown-user: authNoPriv GET to the agent's engine ID from a user it
  does not have (usmStatsUnknownUserNames Report);
- v3-foreign-engine: authNoPriv GET of the configured user to another
  engine ID (usmStatsUnknownEngineIDs Report);
- v3-wrong-digest: the configured user's GET signed with another key
  (usmStatsWrongDigests Report); v3-wrong-digest-des: the same for a user
  with DES privacy;
- v3-replayed: the user's GET signed with its own key but from an earlier
  boot (usmStatsNotInTimeWindows Report, signed: what a replay costs);
- v3-known-user-no-auth: noAuthNoPriv GET naming the user (VACM's
  authorizationError, unauthenticated).

The agent runs with the default `[limits]`: Reports to refused requests
beyond 100 per second to one source are withheld (the refusals counted),
so at the default rate nine refusals in ten are counted and dropped.
`--unlimited-reports` turns that limit off: every refusal is answered
with its Report, what each costs when it is sent.

Per kind, over its phases: the agent's CPU (its CPU clock,
common.cpu_seconds) per datagram it counted in snmpInPkts, less the round's
phase of the manager's GETs alone; the manager's GET latency (median, 95th
percentile) and losses.
The summary prints each v3 kind's CPU as a multiple of the v2c one (the
median over the rounds of each phase against the mean of the v2c phases
right before and after it); target: at most 2x (exit status 1 if a kind
misses it).
"""

from __future__ import annotations

import argparse
import statistics
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import (  # noqa: E402
    LOCALHOST,
    Processes,
    SnmpClient,
    SnmpError,
    cpu_seconds,
    parse_oid,
    start_ibsnmp,
    wait_until_answers,
)

from flood import Flooder  # noqa: E402

from ibsnmp.wire.ber import OBJECT_IDENTIFIER, SEQUENCE, element, oid_octets  # noqa: E402
from ibsnmp.wire.header import GET  # noqa: E402
from ibsnmp.wire.usm_inbound import localize_users, seal_message  # noqa: E402
from ibsnmp.wire.header import read_header  # noqa: E402
from ibsnmp.wire.usm_message import (FLAG_AUTH, FLAG_REPORTABLE, Outgoing,  # noqa: E402
                                     encode_scoped_pdu, encode_v3)

FABRIC = "single"
SYS_DESCR = parse_oid("1.3.6.1.2.1.1.1.0")
SNMP_IN_PKTS = parse_oid("1.3.6.1.2.1.11.1.0")
GET_INTERVAL_S = 0.05
TARGET_RATIO = 2.0
USER, AUTH_KEY = "benchuser", "bench-auth-key"
DES_USER, DES_AUTH_KEY = "legacy", "legacy-auth-key"
CONFIG = f"""
[[community]]
name = "public"

[[user]]
name = "{USER}"
auth = "SHA256"
auth_key = "{AUTH_KEY}"

[[user]]
name = "{DES_USER}"
auth = "MD5"
auth_key = "{DES_AUTH_KEY}"
priv = "DES"
priv_key = "legacy-priv-key"
"""
UNLIMITED_REPORTS = """
[limits]
reports_per_second_per_source = 0
reports_per_second = 0
"""
FOREIGN_ENGINE_ID = bytes.fromhex("80000000010203040506")
V2C = "v2c-wrong-community"


@dataclass(frozen=True)
class PhaseResult:
    cpu: float  # agent CPU seconds over the phase
    counted: int
    sent: int
    latencies: list[float]  # seconds, answered GETs
    lost: int


def get_pdu(request_id: int) -> bytes:
    varbind = element(SEQUENCE, element(OBJECT_IDENTIFIER, oid_octets(SYS_DESCR)) + b"\x05\x00")
    return element(GET, element(0x02, request_id.to_bytes(2, "big")) + b"\x02\x01\x00\x02\x01\x00"
                   + element(SEQUENCE, varbind))


def v3_get(engine_id: bytes, user: bytes, flags: int, mac_length: int = 0) -> Outgoing:
    # Boots 0: a boot before the agent's first (its boots start at 1), as a replay would be.
    return Outgoing(message_id=4711, max_size=65507, flags=flags, engine_id=engine_id, boots=0,
                    engine_time=0, user=user, mac_length=mac_length, priv_params=b"")


def plain(out: Outgoing, context_engine_id: bytes) -> bytes:
    return encode_v3(out, encode_scoped_pdu(context_engine_id, b"", get_pdu(4242)))[0]


def packets(engine_id: bytes) -> dict[str, bytes]:
    """Each kind's datagram, for the agent whose engine ID is `engine_id`."""
    from ibsnmp.agent.config import User
    from ibsnmp.wire.usm_keys import AUTH_PROTOCOLS

    v2c = element(SEQUENCE, b"\x02\x01\x01" + element(0x04, b"not-the-community")
                  + get_pdu(4242))
    auth_flags = FLAG_REPORTABLE | FLAG_AUTH
    mac_length = AUTH_PROTOCOLS["SHA256"].mac_length
    wrong_key = localize_users([User(USER, "SHA256", "not-the-key")], engine_id)
    right_key = localize_users([User(USER, "SHA256", AUTH_KEY)], engine_id)
    foreign_key = localize_users([User(USER, "SHA256", AUTH_KEY)], FOREIGN_ENGINE_ID)
    user = USER.encode()
    scoped = encode_scoped_pdu(engine_id, b"", get_pdu(4242))
    return {
        V2C: v2c,
        "v3-discovery": plain(v3_get(b"", b"", FLAG_REPORTABLE), b""),
        "v3-unknown-user": seal_message(v3_get(engine_id, b"nobody", auth_flags, mac_length),
                                        wrong_key[user], scoped),
        "v3-foreign-engine": seal_message(
            v3_get(FOREIGN_ENGINE_ID, user, auth_flags, mac_length), foreign_key[user],
            encode_scoped_pdu(FOREIGN_ENGINE_ID, b"", get_pdu(4242))),
        "v3-wrong-digest": seal_message(v3_get(engine_id, user, auth_flags, mac_length),
                                        wrong_key[user], scoped),
        # A DES user's (privacy of its own, the digest checked all the same).
        "v3-wrong-digest-des": seal_message(
            v3_get(engine_id, DES_USER.encode(), auth_flags, AUTH_PROTOCOLS["MD5"].mac_length),
            localize_users([User(DES_USER, "MD5", "not-the-key")], engine_id)[
                DES_USER.encode()], scoped),
        # A request replayed from an earlier boot: signed right, outside the time window.
        "v3-replayed": seal_message(v3_get(engine_id, user, auth_flags, mac_length),
                                    right_key[user], scoped),
        # The user name alone, noAuthNoPriv: VACM's authorizationError.
        "v3-known-user-no-auth": plain(v3_get(engine_id, user, FLAG_REPORTABLE), engine_id),
    }


def discover(port: int) -> bytes:
    """The agent's engine ID, from the Report to a discovery request."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(5.0)
        sock.sendto(plain(v3_get(b"", b"", FLAG_REPORTABLE), b""), (LOCALHOST, port))
        return read_header(sock.recv(65535)).engine_id  # type: ignore[union-attr]


def in_pkts(port: int) -> int:
    with SnmpClient(port, timeout=5.0, retries=2) as client:
        return int(client.request("get", [SNMP_IN_PKTS])[0][2])


def phase(pid: int, port: int, seconds: float, rate: float, packet: bytes | None) -> PhaseResult:
    """GETs every 50 ms for `seconds`, with `packet` at `rate` per second (None: GETs alone)."""
    latencies: list[float] = []
    lost = gets = 0
    before = in_pkts(port)
    start_cpu = cpu_seconds(pid)
    flooder = Flooder(port, rate, packet) if packet is not None else None
    with SnmpClient(port, timeout=1.0, retries=0) as client:
        if flooder is not None:
            flooder.__enter__()
        try:
            deadline = time.monotonic() + seconds
            next_at = time.monotonic()
            while time.monotonic() < deadline:
                gets += 1
                sent_at = time.monotonic()
                try:
                    client.request("get", [SYS_DESCR])
                    latencies.append(time.monotonic() - sent_at)
                except SnmpError:
                    lost += 1
                next_at += GET_INTERVAL_S
                time.sleep(max(0.0, next_at - time.monotonic()))
        finally:
            if flooder is not None:
                flooder.__exit__()
    time.sleep(0.5)  # let the agent drain its socket before the CPU is read
    cpu = cpu_seconds(pid) - start_cpu
    counted = in_pkts(port) - before - gets - 1  # less the GETs and the first counter read
    return PhaseResult(cpu, counted, flooder.sent if flooder else 0, latencies, lost)


def latency_ms(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000


def combined(runs: list[tuple[PhaseResult, float]]) -> tuple[PhaseResult, float]:
    """A kind's phases as one, and its CPU seconds per counted datagram."""
    counted = sum(result.counted for result, _ in runs)
    merged = PhaseResult(cpu=sum(result.cpu for result, _ in runs), counted=counted,
                         sent=sum(result.sent for result, _ in runs),
                         latencies=[value for result, _ in runs for value in result.latencies],
                         lost=sum(result.lost for result, _ in runs))
    return merged, sum(excess for _, excess in runs) / max(counted, 1)


def measure(name: str, packet: bytes, pid: int, port: int, args: argparse.Namespace,
            baseline: PhaseResult, phases: dict[str, list[tuple[PhaseResult, float]]]) -> None:
    """One phase of `packet`, its CPU less the round's GETs alone, kept under `name`."""
    result = phase(pid, port, args.seconds, args.rate, packet)
    excess = max(0.0, result.cpu - baseline.cpu)
    phases.setdefault(name, []).append((result, excess))
    print(f"  {name}: {len(packet)} octets, {result.sent} sent, {result.counted} "
          f"counted, {excess / max(result.counted, 1) * 1e6:.1f} us CPU each", flush=True)


def _per_packet(run: tuple[PhaseResult, float]) -> float:
    result, excess = run
    return excess / max(result.counted, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=1000.0,
                        help="datagrams per second of each kind (default %(default)s)")
    parser.add_argument("--seconds", type=float, default=5.0,
                        help="length of each phase (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="phases of each kind, interleaved (default %(default)s)")
    parser.add_argument("--unlimited-reports", action="store_true",
                        help="no limit on Reports (default: the agent's default limits)")
    args = parser.parse_args()
    phases: dict[str, list[tuple[PhaseResult, float]]] = {}  # and the CPU less the GETs'
    with Processes() as procs, tempfile.TemporaryDirectory(prefix="ibsnmp-v3-reject-") as tmp:
        config = Path(tmp) / "ibsnmp.toml"
        config.write_text(CONFIG + (UNLIMITED_REPORTS if args.unlimited_reports else ""))
        proc, port, _ = start_ibsnmp(procs, FABRIC, extra=["--config", str(config)])
        wait_until_answers(port, SYS_DESCR, timeout=60, proc=proc)
        kinds = packets(discover(port))
        reference = kinds.pop(V2C)
        for round_number in range(1, args.rounds + 1):
            baseline = phase(proc.pid, port, args.seconds, args.rate, None)
            print(f"round {round_number}: GETs alone {baseline.cpu * 1000:.0f} ms CPU, median "
                  f"{latency_ms(baseline.latencies, 0.5):.1f} ms", flush=True)
            # Each v3 kind between two phases of the v2c one: the shared machine's
            # speed drifts within a round too, and a kind is set against the
            # phases right around it.
            measure(V2C, reference, proc.pid, port, args, baseline, phases)
            for name, packet in kinds.items():
                measure(name, packet, proc.pid, port, args, baseline, phases)
                measure(V2C, reference, proc.pid, port, args, baseline, phases)
        procs.stop(proc)
    results = {name: combined(runs) for name, runs in phases.items()}
    reference_cpu = results[V2C][1]
    # Each v3 phase against the mean of the v2c phases right before and after it.
    references = phases[V2C]
    per_kind = len(kinds)
    per_round: dict[str, float] = {V2C: 1.0}
    for index, name in enumerate(kinds):
        ratios = []
        for round_index, run in enumerate(phases[name]):
            before = references[round_index * (per_kind + 1) + index]
            after = references[round_index * (per_kind + 1) + index + 1]
            around = (_per_packet(before) + _per_packet(after)) / 2
            ratios.append(_per_packet(run) / max(around, 1e-9))
        per_round[name] = statistics.median(ratios)
    reports = ("every refusal reported" if args.unlimited_reports
               else "Reports limited as by default: 100 per second per source")
    print(f"\nsummary ({args.rate:g} datagrams/s from one source, {args.rounds} x "
          f"{args.seconds:g} s per kind; {reports})")
    print(f"  {'kind':22} {'counted':>8} {'CPU/packet (us)':>16} {'x v2c':>6} "
          f"{'median x':>9} {'GET median (ms)':>16} {'GET p95 (ms)':>13} {'GETs lost':>10}")
    ok = True
    for name, (figures, cpu) in results.items():
        ratio = cpu / reference_cpu if reference_cpu else float("inf")
        if name.startswith("v3-") and per_round[name] > TARGET_RATIO:
            ok = False
        print(f"  {name:22} {figures.counted:>8} {cpu * 1e6:>16.1f} "
              f"{ratio:>6.2f} {per_round[name]:>9.2f} "
              f"{latency_ms(figures.latencies, 0.5):>16.1f} "
              f"{latency_ms(figures.latencies, 0.95):>13.1f} {figures.lost:>10}")
    print("  x v2c: over all rounds; median x: the median over the rounds of each phase against "
          "the v2c phases right before and after it")
    print(f"  target: every v3 kind at most {TARGET_RATIO:g}x the v2c one (median x): "
          f"{'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

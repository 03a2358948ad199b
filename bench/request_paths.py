#!/usr/bin/env python3
"""ibsnmp benchmark: the agent's CPU per request on each path, beside a wrong-community GET.

    .venv/bin/python bench/request_paths.py             # ~20 s on 2 cores
    .venv/bin/python bench/request_paths.py --count 2000
    PYTHONPATH=<tree of another commit> .venv/bin/python bench/request_paths.py

One engine in this process (the test backend: a small simulated fabric,
a read and a write community, SNMPv3 users); each kind of datagram is
handed to its dispatcher `--count` times per round, rounds interleaving
the kinds, and the CPU time of the process (time.process_time) per
datagram is printed, best round of `--rounds`, with its multiple of the
reference: a v2c GET with a wrong community, dropped unanswered. Every
kind must get an answer (checked). The kinds:

- v2c GET sysDescr.0, fast path; the same with `[limits] fast_path` off
  (pysnmp's GET responder answers, agent.handover); with `PYTHONPATH` set
  to an older tree, as that tree answers them;
- v2c SET sysLocation.0 (write community; pysnmp's SET responder);
- SNMPv3 authPriv (SHA-512, AES-256) GET sysDescr.0, fast path, and SET
  sysLocation.0 (the project's USM, then pysnmp's SET responder).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

from pyasn1.type.univ import OctetString

# The repository's tree, unless PYTHONPATH names another one to measure.
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from ibsnmp.agent.config import Community  # noqa: E402
from ibsnmp.agent.engine import build_engine  # noqa: E402
from ibsnmp.wire.ber import OBJECT_IDENTIFIER, OCTET_STRING, SEQUENCE, element, oid_octets  # noqa: E402
from ibsnmp.wire.usm_inbound import localize_users, seal_message  # noqa: E402
from ibsnmp.wire.usm_message import (FLAG_AUTH, FLAG_PRIV, FLAG_REPORTABLE,  # noqa: E402
                                     Outgoing, encode_scoped_pdu)
from tests.support.agent_support import V3_USERS, agent_settings, make_backend  # noqa: E402
from tests.support.wire import community_request  # noqa: E402

UDP = (1, 3, 6, 1, 6, 1, 1)
SOURCE = ("127.0.0.1", 40000)
SYS_DESCR = (1, 3, 6, 1, 2, 1, 1, 1, 0)
SYS_LOCATION = (1, 3, 6, 1, 2, 1, 1, 6, 0)
GET, SET = 0xA0, 0xA3
WRITER = "bench-rw"
ADMIN = next(user for user in V3_USERS if user.access == "write")


class Sent:
    """The transport dispatcher's send_message, counting instead of sending."""

    def __init__(self) -> None:
        self.count = 0

    def send_message(self, data: bytes, domain: Any, address: Any) -> None:
        self.count += 1

    def get_timer_resolution(self) -> float:  # pysnmp's USM asks it (an older tree's path)
        return 0.5


def pdu(tag: int, oid: tuple[int, ...], request_id: int) -> bytes:
    value = element(OCTET_STRING, b"bench") if tag == SET else b"\x05\x00"
    varbind = element(SEQUENCE, element(OBJECT_IDENTIFIER, oid_octets(oid)) + value)
    return element(tag, element(0x02, request_id.to_bytes(3, "big")) + b"\x02\x01\x00\x02\x01\x00"
                   + element(SEQUENCE, varbind))


def build(fast_path: bool) -> Any:
    settings = agent_settings()
    settings = dataclasses.replace(
        settings, communities=settings.communities + (Community(name=WRITER, access="write"),),
        # No limit of rate or CPU: every datagram of the rounds is handled.
        limits=dataclasses.replace(settings.limits, fast_path=fast_path, cpu_budget=0.0,
                                   requests_per_second=0, requests_per_second_per_source=None))
    built = build_engine(settings, *make_backend(), fabric_summary="bench")
    built.engine.transport_dispatcher = Sent()
    return built


def v3_messages(built: Any, tag: int, oid: tuple[int, ...], count: int) -> list[bytes]:
    (instance,) = built.engine.get_mib_builder().import_symbols("__SNMP-FRAMEWORK-MIB",
                                                                "snmpEngineID")
    own = bytes(instance.syntax)
    keys = localize_users([ADMIN], own)[ADMIN.name.encode()]
    clock = built.fast_v3.clock
    messages = []
    for n in range(count):
        out = Outgoing(message_id=n + 1, max_size=65507,
                       flags=FLAG_REPORTABLE | FLAG_AUTH | FLAG_PRIV, engine_id=own,
                       boots=clock.boots(), engine_time=clock.time(), user=ADMIN.name.encode(),
                       mac_length=keys.mac.mac_length, priv_params=(n + 1).to_bytes(8, "big"))
        messages.append(seal_message(out, keys, encode_scoped_pdu(own, b"", pdu(tag, oid, n + 1))))
    return messages


def cpu_per_datagram(built: Any, datagrams: list[bytes], answered: bool) -> float:
    dispatcher, sent = built.engine.message_dispatcher, built.engine.transport_dispatcher
    before = sent.count
    started = time.process_time()
    for datagram in datagrams:
        dispatcher.receive_message(built.engine, UDP, SOURCE, datagram)
    spent = time.process_time() - started
    expected = len(datagrams) if answered else 0
    if sent.count - before != expected:
        raise SystemExit(f"expected {expected} answers, got {sent.count - before}")
    return spent / len(datagrams)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=400, help="datagrams per kind and round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    fast, slow = build(True), build(False)
    count = args.count
    reads = [community_request("get", [SYS_DESCR], request_id=n) for n in range(count)]
    kinds: dict[str, tuple[Any, list[bytes], bool]] = {
        "v2c GET, wrong community (reference)": (fast, [
            community_request("get", [SYS_DESCR], community="nope", request_id=n)
            for n in range(count)], False),
        "v2c GET, fast path": (fast, reads, True),
        "v2c GET, pysnmp's GET responder": (slow, reads, True),
        "v2c SET sysLocation.0": (fast, [
            community_request("set", [SYS_LOCATION], community=WRITER, request_id=n,
                              values=[OctetString(b"bench")]) for n in range(count)], True),
        "v3 authPriv GET, fast path": (fast, v3_messages(fast, GET, SYS_DESCR, count), True),
        "v3 authPriv SET sysLocation.0": (fast, v3_messages(fast, SET, SYS_LOCATION, count), True),
    }
    best: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, (built, datagrams, answered) in kinds.items():
            spent = cpu_per_datagram(built, datagrams, answered)
            best[name] = min(best.get(name, spent), spent)
    reference = best["v2c GET, wrong community (reference)"]
    print(f"CPU per datagram, best of {args.rounds} rounds of {count} (this process):")
    for name, spent in best.items():
        print(f"  {name:40} {spent * 1e6:8.1f} us  {spent / reference:6.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

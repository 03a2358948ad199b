"""The agent under mutated packets: it never dies, never answers what is malformed.

Every mutant is followed by a legitimate GET (the probe) on the same
socket; the agent handles datagrams in order, so whatever arrives before
the probe's answer is the mutant's answer. IBSNMP_FUZZ_INPUTS raises the
count (CI runs the default).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from e2e import ibsnmp_agent
from wire import community_request, decode_response, split_address
from wire_fuzz import is_well_formed_ber, load_corpus, mutants

FUZZ_INPUTS = int(os.environ.get("IBSNMP_FUZZ_INPUTS", "3000"))
PROBE_TIMEOUT_S = 5.0
SYS_UPTIME_0 = "1.3.6.1.2.1.1.3.0"

# The corpus's v3 packets were captured from net-snmp with this user.
CONFIG = """
engine_id = "0x8000000001020304"
[[community]]
name = "public"
[[community]]
name = "private"
access = "write"
[[user]]
name = "reader"
auth = "SHA256"
auth_key = "readerpass1"
priv = "AES"
priv_key = "readerpass2"
"""


def _probe_id(number: int) -> int:
    return 0x40000000 + number


def _wait_for_probe(sock: socket.socket, probe_id: int) -> list[bytes]:
    """Datagrams received before the probe's answer (the mutant's answers)."""
    others: list[bytes] = []
    while True:
        data = sock.recv(65535)
        try:
            request_id = decode_response(data)[0]
        except Exception:
            request_id = None
        if request_id == probe_id:
            return others
        others.append(data)


def test_corpus_seeds_are_answered(tmp_path: Path) -> None:
    """The seeds themselves are good requests: the fuzzer starts from real traffic."""
    config = tmp_path / "agent.toml"
    config.write_text(CONFIG)
    seeds = load_corpus()
    assert len(seeds) >= 7
    with ibsnmp_agent("--config", str(config)) as agent:
        host, port = split_address(agent.address)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(PROBE_TIMEOUT_S)
            for name, packet in seeds.items():
                if not name.startswith(("v1-", "v2c-", "v3-discovery")):
                    continue  # replayed v3 requests may be outside the time window
                sock.sendto(packet, (host, port))
                assert sock.recv(65535), f"no answer to seed {name}"


def test_mutated_requests_never_kill_or_fool_the_agent(tmp_path: Path) -> None:
    config = tmp_path / "agent.toml"
    config.write_text(CONFIG)
    seeds = load_corpus()
    malformed = answered_malformed = 0
    with ibsnmp_agent("--config", str(config)) as agent:
        host, port = split_address(agent.address)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(PROBE_TIMEOUT_S)
            for number, (label, packet) in enumerate(mutants(seeds, FUZZ_INPUTS, seed=10)):
                sock.sendto(packet, (host, port))
                probe_id = _probe_id(number)
                sock.sendto(community_request("get", [SYS_UPTIME_0], request_id=probe_id),
                            (host, port))
                try:
                    answers = _wait_for_probe(sock, probe_id)
                except socket.timeout:
                    pytest.fail(f"agent stopped answering after mutant {label}: "
                                f"{packet.hex()}")
                if not is_well_formed_ber(packet):
                    malformed += 1
                    if answers:
                        answered_malformed += 1
                        pytest.fail(f"agent answered malformed mutant {label}: {packet.hex()}")
        assert agent.process.poll() is None, "agent exited under fuzzing"
        agent.process.terminate()
        output, _ = agent.process.communicate(timeout=10)
    assert "Traceback" not in output, output[-3000:]
    # The mutator must really produce malformed input, or this test proves nothing.
    assert malformed > FUZZ_INPUTS // 4, f"only {malformed} malformed mutants"
    assert answered_malformed == 0

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

from tests.support.e2e import ibsnmp_agent
from tests.support.wire import community_request, decode_response, split_address
from tests.support.wire_fuzz import CORPUS_AGENT_CONFIG as CONFIG
from tests.support.wire_fuzz import is_well_formed_ber, load_corpus, mutants

FUZZ_INPUTS = int(os.environ.get("IBSNMP_FUZZ_INPUTS", "3000"))
PROBE_TIMEOUT_S = 5.0
SYS_UPTIME_0 = "1.3.6.1.2.1.1.3.0"


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


# The regression packets of the wire findings, and whether the agent answers
# them (a report, an error or an empty answer) or drops them.
REGRESSION_ANSWERED = {
    "regress-getbulk-empty": True,
    "regress-getbulk-65-repeaters": True,
    "regress-getbulk-negative-non-repeaters": True,
    "regress-getbulk-negative-max-repetitions": True,
    "regress-get-oversized-bad-community": False,
    "regress-get-over-varbind-limit": True,
    "regress-v3-plaintext-get-unknown-user": True,
    "regress-v3-response-reportable": False,
    "regress-v3-foreign-engine-get": True,
    "regress-set-non-nvt-syscontact": True,
    "regress-set-duplicate-oid": True,
    "regress-set-syscontact-1-nocreation": True,
    "regress-get-sysdescr-no-instance": True,
    "regress-v1-set-read-only-community": True,
    "regress-v1-get-negative-error-index": True,
}


def test_corpus_seeds_get_their_answer(tmp_path: Path) -> None:
    """The seeds are real traffic and the findings' packets, each answered (or not) as it must be."""
    config = tmp_path / "agent.toml"
    config.write_text(CONFIG)
    config.chmod(0o600)
    seeds = load_corpus()
    assert set(REGRESSION_ANSWERED) <= set(seeds)
    with ibsnmp_agent("--config", str(config)) as agent:
        host, port = split_address(agent.address)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for name, packet in seeds.items():
                if name.startswith("v3-") and name != "v3-discovery":
                    continue  # replayed v3 requests may be outside the time window
                expected = REGRESSION_ANSWERED.get(name, True)
                sock.settimeout(PROBE_TIMEOUT_S if expected else 1.0)
                sock.sendto(packet, (host, port))
                try:
                    answered = bool(sock.recv(65535))
                except socket.timeout:
                    answered = False
                assert answered == expected, f"seed {name}: answered={answered}"


def test_mutated_requests_never_kill_or_fool_the_agent(tmp_path: Path) -> None:
    config = tmp_path / "agent.toml"
    config.write_text(CONFIG)
    config.chmod(0o600)
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

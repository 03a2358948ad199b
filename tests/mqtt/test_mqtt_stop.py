"""A stop while the broker connection is being made leaves nothing behind.

aiomqtt leaves a connect cut short half-open: its socket and the task that
serves it outlive the event loop, and the interpreter's exit then printed
a traceback (not a log record) and logged errors. Here the broker is a TCP
listener that accepts and never sends CONNACK, so the stop always comes
during the connect.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.support.mosquitto import Process
from tests.support.waiting import wait_for


CONNACK_ACCEPTED = bytes((0x20, 2, 0, 0))  # MQTT 3.1.1: session present 0, return code 0


def _answer_the_probe(broker: socket.socket) -> None:
    """Accept the start-up probe of the credentials, answer it, and see it leave."""
    probe, _ = broker.accept()
    with probe:
        probe.settimeout(30)
        assert probe.recv(1)[0] >> 4 == 1  # CONNECT
        probe.sendall(CONNACK_ACCEPTED)
        while probe.recv(4096):
            pass


def _records(publisher: Process) -> list[dict[str, str]]:
    lines = [line for line in publisher.text().splitlines() if line.strip()]
    return [json.loads(line) for line in lines]  # every line a record


def test_a_stop_while_waiting_for_connack_exits_cleanly(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as broker:
        broker.bind(("127.0.0.1", 0))
        broker.listen()
        broker.settimeout(30)
        publisher = Process(tmp_path / "publish.log", "publish", "--fabric", "single",
                            "--broker", f"mqtt://127.0.0.1:{broker.getsockname()[1]}",
                            "--log-format", "json")
        try:
            _answer_the_probe(broker)
            session, _ = broker.accept()  # the session's connect is not answered
            with session:
                session.settimeout(30)
                assert session.recv(1)[0] >> 4 == 1
                code = publisher.stop()
        finally:
            publisher.kill()
    assert code == 0
    assert not [r for r in _records(publisher) if r["level"] in ("ERROR", "CRITICAL")]


def _connecting_to(port: int) -> bool:
    """Whether a TCP connect to 127.0.0.1:`port` waits for its SYN's answer
    (SYN_SENT in /proc/net/tcp)."""
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return any(remote == f"0100007F:{port:04X}" and state == "02"
               for _, _, remote, state, *_ in (row.split() for row in rows))


def test_a_stop_while_the_socket_connects_exits_cleanly(tmp_path: Path) -> None:
    """The stop comes while the TCP connect runs in aiomqtt's executor thread:
    the listener's accept queue is full, so the connect waits for a SYN
    retransmission; it completes only after the stop."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as broker, \
            socket.socket(socket.AF_INET, socket.SOCK_STREAM) as filler:
        broker.bind(("127.0.0.1", 0))
        broker.listen(0)  # one connection waits to be accepted; the next SYN is dropped
        broker.settimeout(30)
        address = broker.getsockname()
        publisher = Process(tmp_path / "publish.log", "publish", "--fabric", "single",
                            "--broker", f"mqtt://127.0.0.1:{address[1]}", "--log-format", "json")
        try:
            probe, _ = broker.accept()
            with probe:
                probe.settimeout(30)
                assert probe.recv(1)[0] >> 4 == 1
                filler.connect(address)  # fills the accept queue before the session connects
                probe.sendall(CONNACK_ACCEPTED)
                while probe.recv(4096):
                    pass
            # The session's SYN is dropped: its connect waits (for a retransmission,
            # a second later at the earliest), and the stop comes meanwhile.
            wait_for(lambda: _connecting_to(address[1]), 30, "the session's connect")
            publisher.process.terminate()
            broker.accept()[0].close()  # the filler: room for the retransmitted SYN
            code = publisher.process.wait(timeout=30)
        finally:
            publisher.stop()
    assert code == 0, publisher.text()
    assert not [r for r in _records(publisher) if r["level"] in ("ERROR", "CRITICAL")]

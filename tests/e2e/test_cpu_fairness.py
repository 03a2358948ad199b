"""The CPU budget on a running agent: a reader flooding it with costly
GETNEXTs is dropped beyond its share, while a manager polling from another
address gets every answer (ibsnmp.agent.governor; figures: bench/fairness.py)."""

from __future__ import annotations

import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.e2e import RunningAgent, ibsnmp_agent
from tests.support.wire import community_request, split_address

from ibsnmp.wire.ber import element, oid_octets

SYS_UPTIME = "1.3.6.1.2.1.1.3.0"
# Just past IB-SM-MIB's node table: each name a lookup of its own.
NODE_COLUMN = (1, 3, 6, 1, 3, 117, 7, 1, 2, 1, 2)
FLOOD_PER_S = 1000
GOVERNED = "over the CPU budget of 0.05 of a core"


@pytest.fixture
def agent() -> Iterator[RunningAgent]:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "agent.toml"
        config.write_text("[limits]\ncpu_budget = 0.05\n")  # 50 ms of CPU a second
        with ibsnmp_agent("--config", str(config), "--community", "public") as running:
            yield running


def costly_getnext(n: int) -> bytes:
    """64 names new to the agent: a GETNEXT of a few hundred microseconds."""
    varbinds = b"".join(element(0x30, element(0x06, oid_octets(NODE_COLUMN + (256 + n, i)))
                                + b"\x05\x00") for i in range(64))
    pdu = element(0xA1, b"\x02\x01\x07\x02\x01\x00\x02\x01\x00" + element(0x30, varbinds))
    return element(0x30, b"\x02\x01\x01" + element(0x04, b"public") + pdu)


def flood(target: tuple[str, int], stop: threading.Event, counts: list[int]) -> None:
    """FLOOD_PER_S costly GETNEXTs a second from 127.0.0.2, answers drained as they come."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.2", 0))
        sock.setblocking(False)
        n = 0
        while not stop.wait(0.005):
            for _ in range(FLOOD_PER_S // 200):
                sock.sendto(costly_getnext(n), target)
                n += 1
            try:
                while True:
                    sock.recv(65535)
                    counts[1] += 1
            except BlockingIOError:
                pass
        counts[0] = n


def logged(agent: RunningAgent, text: str, lines: list[str]) -> bool:
    """Read the agent's output until a line holds `text` (False at its end)."""
    assert agent.process.stdout is not None
    for line in agent.process.stdout:
        lines.append(line)
        if text in line:
            return True
    return False


def test_a_flooding_reader_is_dropped_and_a_polling_manager_is_not(agent: RunningAgent) -> None:
    host, port = split_address(agent.address)
    counts = [0, 0]  # the flood's datagrams sent, answered
    stop = threading.Event()
    flooder = threading.Thread(target=flood, args=((host, port), stop, counts), daemon=True)
    flooder.start()
    answered = 0
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.bind(("127.0.0.3", 0))
            sock.settimeout(2.0)
            for request_id in range(1, 101):  # a GET every 20 ms or so, for two seconds
                sock.sendto(community_request("get", [SYS_UPTIME], request_id=request_id),
                            (host, port))
                sock.recv(65535)
                answered += 1
                stop.wait(0.02)
    finally:
        stop.set()
        flooder.join(timeout=5)
    assert answered == 100
    sent, flood_answered = counts
    assert sent > 1000 and flood_answered < sent / 2, counts
    lines: list[str] = []
    agent.process.terminate()  # its output ends: what it said is all there
    assert logged(agent, GOVERNED, lines), "".join(lines[-20:])

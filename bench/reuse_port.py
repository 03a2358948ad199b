#!/usr/bin/env python3
"""ibsnmp benchmark: one agent against a group of two sharing its UDP port.

    .venv/bin/python bench/reuse_port.py              # about two minutes on 2 cores
    .venv/bin/python bench/reuse_port.py --rounds 5 --managers 32

Agents started with `reuse_port = true` on one state directory share one
port (SO_REUSEPORT) and answer as one SNMPv3 engine (docs/scaling.md).
Here `--managers` UDP sockets (each its own source port, so the kernel
spreads them) keep `--window` GETBULKs each in flight (max-repetitions 25,
starting all over IB-SM-MIB's port info table) through the shared port
for `--seconds`, first with one member, then with a second one joined, in
rounds that alternate (the second member is stopped and started again).
The load comes from one Python process that only counts answers, so the
agents' work, not the managers', fills the machine. Printed: answered
varbinds per second, and the group's figure as a ratio to the lone
agent's of the same round.
"""

from __future__ import annotations

import argparse
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import (LOCALHOST, Proc, Processes, free_udp_port, parse_oid, start_ibsnmp,  # noqa: E402
                    wait_until_answers)
from tests.support.wire import community_request  # noqa: E402

FABRIC = "fat-tree:spines=4,leaves=16,hosts=16"
PORT_TABLE = ".1.3.6.1.3.117.7.1.3"  # IB-SM-MIB ibSmPortInfoTable
SYS_UP_TIME = parse_oid("1.3.6.1.2.1.1.3.0")


REPETITIONS = 25


def start_points(port: int) -> list[bytes]:
    """GETBULK requests that start every REPETITIONS rows of the port info table."""
    walk = subprocess.run(["snmpbulkwalk", "-v2c", "-c", "public", "-Cr50", "-On", "-OQ", "-t", "10",
                           f"{LOCALHOST}:{port}", PORT_TABLE], capture_output=True, text=True,
                          check=True).stdout.splitlines()
    names = [line.split(" = ", 1)[0] for line in walk][::REPETITIONS]
    return [community_request("bulk", [name.lstrip(".")], request_id=n, max_repetitions=REPETITIONS)
            for n, name in enumerate(names, start=1)]


def load(port: int, requests: list[bytes], managers: int, window: int, seconds: float) -> float:
    """Answered GETBULKs a second of `managers` sockets, each with `window` in flight."""
    selector = selectors.DefaultSelector()
    sockets = []
    for n in range(managers):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setblocking(False)
        sock.connect((LOCALHOST, port))
        selector.register(sock, selectors.EVENT_READ)
        sockets.append(sock)
    sent = 0

    def send(sock: socket.socket) -> None:
        nonlocal sent
        sock.send(requests[sent % len(requests)])
        sent += 1

    for sock in sockets:
        for _ in range(window):
            send(sock)
    answered = 0
    started = time.perf_counter()
    deadline = started + seconds
    while (now := time.perf_counter()) < deadline:
        ready = selector.select(timeout=0.5)
        if not ready:  # a datagram lost: fill every window again
            for sock in sockets:
                send(sock)
        for key, _ in ready:
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            try:
                while True:
                    sock.recv(65535)
                    answered += 1
                    send(sock)
            except BlockingIOError:
                pass
    for sock in sockets:
        sock.close()
    return answered / (now - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--managers", type=int, default=16, help="sockets (default 16)")
    parser.add_argument("--window", type=int, default=2, help="requests in flight each (default 2)")
    parser.add_argument("--seconds", type=float, default=8.0, help="per measurement (default 8)")
    args = parser.parse_args()
    with Processes() as procs, tempfile.TemporaryDirectory(prefix="ibsnmp-reuse-port-") as tmp:
        config = Path(tmp) / "group.toml"
        config.write_text("[agent]\nreuse_port = true\n")
        state = Path(tmp) / "state"
        port = free_udp_port()
        extra = ("--config", str(config), "--state-dir", str(state))

        def member(name: str) -> Proc:
            # Each member also listens on a port of its own: start_ibsnmp's.
            proc, own, _ = start_ibsnmp(procs, FABRIC, name=name, extra=(
                *extra, "--listen", f"{LOCALHOST}:{port}"))
            wait_until_answers(own, SYS_UP_TIME, timeout=60, proc=proc)
            return proc

        member("first")
        requests = start_points(port)
        measure = lambda: load(port, requests, args.managers, args.window, args.seconds) * REPETITIONS  # noqa: E731
        measure()  # the first pass over a table builds what later ones reuse
        alone, group = [], []
        for round_number in range(args.rounds):
            alone.append(measure())
            second = member("second")
            measure()  # the same for the second member
            group.append(measure())
            procs.stop(second)
            print(f"round {round_number + 1}: alone {alone[-1]:,.0f} varbinds/s, two members "
                  f"{group[-1]:,.0f} varbinds/s ({group[-1] / alone[-1]:.2f}x)", flush=True)
    ratios = [g / a for g, a in zip(group, alone)]
    print(f"\n{args.managers} managers, {args.window} GETBULKs (max-repetitions {REPETITIONS}) "
          f"in flight each, over {FABRIC}'s port info table:")
    print(f"  one agent        {statistics.median(alone):>10,.0f} varbinds/s")
    print(f"  two, one port    {statistics.median(group):>10,.0f} varbinds/s "
          f"({statistics.median(ratios):.2f}x; rounds {', '.join(f'{r:.2f}' for r in ratios)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

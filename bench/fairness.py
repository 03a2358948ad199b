#!/usr/bin/env python3
"""ibsnmp benchmark: does a well-behaved manager keep its answers under a flood?

    .venv/bin/python bench/fairness.py             # about two minutes on 2 cores
    .venv/bin/python bench/fairness.py --seconds 10

A manager GETs sysUpTime.0 every 20 ms (waiting up to 1 s for each answer)
while other sources flood one `ibsnmp run` on 127.0.0.1. Two floods:

- refusals: 500 source addresses (127.0.1.0 up) send 6,000 wrong-community
  GETs a second between them: cheap, but many;
- readers: 16 addresses with the read community send 3,000 GETNEXTs a
  second of 64 names new to the agent (a few hundred microseconds each):
  more than a core's worth.

Each flood runs against the agent as shipped (the CPU budget, agent.governor)
and against its peer in the same script, the same agent with the CPU budget
off and the former request cap of 5,000 a second on. Printed: the manager's
GETs lost and its answer times, the flood's datagrams answered, the agent's
CPU. The target: the shipped agent loses none of the manager's GETs.
"""

from __future__ import annotations

import argparse
import multiprocessing
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import (Processes, cpu_seconds, parse_oid, start_ibsnmp, udp_drops,  # noqa: E402
                    wait_until_answers)
from readers import community  # noqa: E402
from ibsnmp.wire.ber import element, oid_octets  # noqa: E402
from tests.e2e.test_hostile_packets import READ, oid_varbind  # noqa: E402

FABRIC = "fat-tree:spines=2,leaves=2,hosts=2"
SYS_UPTIME = parse_oid("1.3.6.1.2.1.1.3.0")
NODE_COLUMN = parse_oid("1.3.6.1.3.117.7.1.2.1.2")  # just past IB-SM-MIB's node table
MANAGER_EVERY_S = 0.02
ANSWER_WAIT_S = 1.0
CONFIGS = {
    "shipped (CPU budget 0.8)": "",
    "peer (request cap 5,000/s)": "[limits]\ncpu_budget = 0\nrequests_per_second = 5000\n",
}


def refusal_flood(port: int, seconds: float, rate: float, sources: int) -> None:
    """`rate` wrong-community GETs a second from `sources` addresses, paced."""
    packet = community(0xA0, oid_varbind(SYS_UPTIME), name=b"wrong-community")
    socks = []
    for i in range(sources):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((f"127.0.{1 + i // 250}.{1 + i % 250}", 0))
        socks.append(sock)
    start = time.monotonic()
    sent = 0
    while (now := time.monotonic()) - start < seconds:
        due = int((now - start) * rate)
        while sent < due:
            socks[sent % sources].sendto(packet, ("127.0.0.1", port))
            sent += 1
        time.sleep(0.001)


def reader_flood(port: int, seconds: float, sources: int, rate: float) -> None:
    """`rate` GETNEXTs a second with the read community from `sources`
    addresses, paced, each of 64 names new to the agent (a few hundred
    microseconds of lookups); answers drained and dropped. The datagrams
    are built first: building them while sending took a core of its own."""
    socks = []
    for i in range(sources):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((f"127.0.9.{1 + i}", 0))
        sock.setblocking(False)
        socks.append(sock)
    packets = [community(0xA1, _fresh_names(n), name=READ) for n in range(int(rate * seconds))]
    start, sent = time.monotonic(), 0
    while (now := time.monotonic()) - start < seconds and sent < len(packets):
        due = min(int((now - start) * rate), len(packets))
        while sent < due:
            socks[sent % sources].sendto(packets[sent], ("127.0.0.1", port))
            sent += 1
        for sock in socks:
            try:
                while True:
                    sock.recv(65535)
            except BlockingIOError:
                pass
        time.sleep(0.001)


def _fresh_names(n: int) -> bytes:
    """64 { name, NULL } just past IB-SM-MIB's node table, none asked before."""
    head = oid_octets(NODE_COLUMN + (256 + n,))
    return b"".join(element(0x30, element(0x06, head + bytes((i,))) + b"\x05\x00")
                    for i in range(64))


def manager(port: int, seconds: float) -> tuple[int, int, list[float]]:
    """(sent, lost, answer times) of a GET every MANAGER_EVERY_S."""
    request = community(0xA0, oid_varbind(SYS_UPTIME), name=b"public")
    times: list[float] = []
    sent = lost = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            asked = time.monotonic()
            sock.sendto(request, ("127.0.0.1", port))
            sent += 1
            sock.settimeout(ANSWER_WAIT_S)
            try:
                sock.recv(65535)
                times.append(time.monotonic() - asked)
            except TimeoutError:
                lost += 1
            time.sleep(max(0.0, MANAGER_EVERY_S - (time.monotonic() - asked)))
    return sent, lost, times


def run_case(config: str, flood: str, seconds: float) -> dict[str, float]:
    with Processes() as procs, tempfile.TemporaryDirectory(prefix="ibsnmp-fair-") as tmp:
        path = Path(tmp) / "agent.toml"
        path.write_text(config)
        proc, port, _ = start_ibsnmp(procs, FABRIC, extra=(
            "--config", str(path), "--community", READ.decode()))
        wait_until_answers(port, SYS_UPTIME, timeout=60, proc=proc)
        if flood == "refusals":
            target, args = refusal_flood, (port, seconds + 2, 6000.0, 500)
        else:
            target, args = reader_flood, (port, seconds + 5, 16, 3000.0)
        flooder = multiprocessing.Process(target=target, args=args, daemon=True)
        flooder.start()
        time.sleep(3.0)  # its datagrams built, the flood under way
        cpu_before, drops_before = cpu_seconds(proc.pid), udp_drops(port)
        sent, lost, times = manager(port, seconds)
        cpu = (cpu_seconds(proc.pid) - cpu_before) / seconds
        kernel_drops = udp_drops(port) - drops_before
        flooder.join(timeout=10)
        times.sort()
        return {"sent": sent, "lost": lost, "cpu": cpu, "kernel_drops": kernel_drops,
                "median_ms": statistics.median(times) * 1000 if times else float("nan"),
                "p99_ms": times[int(len(times) * 0.99)] * 1000 if times else float("nan")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="per case (default 20)")
    args = parser.parse_args()
    failed = []
    print(f"{'flood':10} {'agent':28} {'GETs':>5} {'lost':>5} {'median ms':>9} {'p99 ms':>7} "
          f"{'agent CPU':>9} {'kernel drops':>12}")
    for flood in ("refusals", "readers"):
        for name, config in CONFIGS.items():
            found = run_case(config, flood, args.seconds)
            print(f"{flood:10} {name:28} {found['sent']:>5} {found['lost']:>5} "
                  f"{found['median_ms']:>9.2f} {found['p99_ms']:>7.2f} {found['cpu']:>9.0%} "
                  f"{found['kernel_drops']:>12}",
                  flush=True)
            if name.startswith("shipped") and found["lost"]:
                failed.append(flood)
    print("the shipped agent lost none of the manager's GETs" if not failed
          else "the shipped agent LOST GETs under: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

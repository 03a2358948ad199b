#!/usr/bin/env python3
"""A fixed piece of Python work: the yardstick of bench/hostile.py's CPU budget.

    .venv/bin/python bench/yardstick.py                       # its CPU time here
    .venv/bin/python bench/yardstick.py -- run --listen ...   # the agent, with it on SIGUSR2

The budget "1 ms of CPU per packet" holds on one machine at one speed;
this machine's speed drifts within a minute and from one day to the next,
and the kinds of work drift apart (on 2026-11-28 a wrong-community GET
cost less than half of what it cost the day before, while the Python-bound
rows got 10-15% cheaper). So the budget is stated in this workload instead:
reading a fixed message of VARBINDS varbinds the way an SNMP agent reads a
request (each TLV's tag and length, each OID's arcs, a dictionary of what
was read) and writing an answer of the same size, in pure Python that no
commit of the agent changes. SIZED_MS is what it cost in the agent's
process when it was sized.

With `--` the rest are the arguments of the `ibsnmp` console script, run
in this process, and SIGUSR2 runs the workload ROUNDS times in the agent's
main thread (between two requests, as a request would run) and prints
`ibsnmp-bench yardstick: <ms>`, the median of the rounds' CPU times in ms:
the yardstick measured in the process, on the core and in the state the
agent is in.
"""

from __future__ import annotations

import os
import signal
import statistics
import sys
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from common import Proc

VARBINDS = 175
ROUNDS = 5
# Its median CPU time in the agent's process when it was sized: two runs of
# bench/hostile.py, 2026-11-28 14:39-14:40 UTC (1.031 and 1.046 ms; in the
# machine's slow spells it takes up to 2 ms, and the rows slow down with it).
SIZED_MS = 1.04
LINE = "ibsnmp-bench yardstick:"
LAUNCHER = Path(__file__).resolve()
OID, COUNTER64, SEQUENCE = 0x06, 0x46, 0x30
KINDS = {OID: "name", COUNTER64: "counter", 0x02: "integer", 0x04: "octets"}


def _tlv(tag: int, value: bytes) -> bytes:
    return bytes((tag, len(value))) + value


def _message(count: int) -> bytes:
    """`count` varbinds of a name under 1.3.6.1.3.117 and a Counter64."""
    varbinds = []
    for n in range(count):
        arcs = bytes((0x2B, 6, 1, 3, 117, 6, 1, 1, 1, 0x81, n % 128, n % 100 + 1))
        varbinds.append(_tlv(SEQUENCE, _tlv(OID, arcs) + _tlv(COUNTER64, n.to_bytes(5, "big"))))
    return b"".join(varbinds)


MESSAGE = _message(VARBINDS)


def _header(data: bytes, at: int) -> tuple[int, int, int]:
    """(tag, first octet of the value, end of the value) of the TLV at `at`."""
    return data[at], at + 2, at + 2 + data[at + 1]


def _arcs(octets: bytes) -> tuple[int, ...]:
    arcs = [octets[0] // 40, octets[0] % 40]
    value = 0
    for octet in octets[1:]:
        value = (value << 7) | (octet & 0x7F)
        if not octet & 0x80:
            arcs.append(value)
            value = 0
    return tuple(arcs)


def _octets(arcs: tuple[int, ...]) -> bytes:
    out = bytearray((arcs[0] * 40 + arcs[1],))
    for arc in arcs[2:]:
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.append(0x80 | (arc & 0x7F))
            arc >>= 7
        out += bytes(reversed(chunk))
    return bytes(out)


def workload(data: bytes = MESSAGE) -> int:
    """Read `data`'s varbinds and write an answer of them; its length."""
    read: dict[tuple[int, ...], tuple[str | None, int]] = {}
    at, end = 0, len(data)
    while at < end:
        _, start, stop = _header(data, at)
        _, name_start, name_stop = _header(data, start)
        tag, value_start, value_stop = _header(data, name_stop)
        read[_arcs(data[name_start:name_stop])] = (
            KINDS.get(tag), int.from_bytes(data[value_start:value_stop], "big"))
        at = stop
    answer = [_tlv(SEQUENCE, _tlv(OID, _octets(name)) + _tlv(COUNTER64, value.to_bytes(5, "big")))
              for name, (_, value) in sorted(read.items())]
    return len(b"".join(answer))


def measure(rounds: int = ROUNDS) -> float:
    """The median CPU time of `rounds` runs of the workload in this thread, in ms."""
    times = []
    for _ in range(rounds):
        start = time.thread_time_ns()
        workload()
        times.append(time.thread_time_ns() - start)
    return statistics.median(times) / 1e6


class AgentYardstick:
    """The workload measured in an agent started through this launcher."""

    PATTERN = rf"^{LINE} ([0-9.]+)$"

    def __init__(self, proc: Proc) -> None:
        self.proc = proc
        self.seen = 0  # the agent's output lines read so far

    def __call__(self) -> float:
        """Its CPU time in the agent, in seconds, measured now."""
        os.kill(self.proc.pid, signal.SIGUSR2)
        number, match = self.proc.next_match(self.PATTERN, 30.0, self.seen)
        self.seen = number + 1
        return float(match.group(1)) / 1000


def _on_signal(signum: int, frame: FrameType | None) -> None:
    # One write, so that no line of the agent's log lands inside it.
    sys.stderr.write(f"{LINE} {measure():.6f}\n")
    sys.stderr.flush()


def main() -> int:
    argv = sys.argv[1:]
    if "--" not in argv:
        print(f"yardstick: {measure(25):.3f} ms of CPU ({VARBINDS} varbinds)")
        return 0
    # Imported here: the module is also imported from bench/ as a package.
    from console_script import run_console_script

    signal.signal(signal.SIGUSR2, _on_signal)
    run_console_script(argv[argv.index("--") + 1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: sustained SNMPv2c notifications/s that snmptrapd receives with zero loss.

One run, one snmptrapd (net-snmp, ibsnmp's MIBs loaded, every notification
logged), two senders of the same notification (ibSmaBadPartitionKey, its
eight varbinds, a sequence number in ibSmaNodeQueuePair1 to count loss and
duplicates):

1. a loop of net-snmp's `snmptrap` command, in its fastest form (numeric
   OIDs, no MIB loading), one process per notification, as scripts do;
2. ibsnmp's TrapOriginator, the code `ibsnmp run` uses: each event goes
   through the mapping (compiled MIB types) and the per-target queue.

A rate only counts with zero loss: if snmptrapd misses notifications at
full speed, ibsnmp is run again with a rate limit 20 % below what it
reached, until nothing is lost. Target: >= 4x the snmptrap loop.

    .venv/bin/python bench/traps.py [--count N] [--loop-seconds S]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, Processes, Proc, free_udp_port  # noqa: E402

sys.path.insert(0, str(ROOT))
from pysnmp.entity.engine import SnmpEngine  # noqa: E402

from ibsnmp.agent.config import parse_trap_address  # noqa: E402
from ibsnmp.agent.trap_targets import TrapTarget
from ibsnmp.events import IbaTrap, TrapEvent  # noqa: E402
from ibsnmp.traps.mapping import map_event  # noqa: E402
from ibsnmp.traps.originator import TrapOriginator  # noqa: E402

MIB_DIRS = f"{ROOT / 'ibsnmp' / 'mib_sources' / 'base'}:{ROOT / 'ibsnmp' / 'mib_sources'}"
TARGET_RATIO = 4.0
MARK = "N "
SEQUENCE = re.compile(r"ibSmaNodeQueuePair1\.0 = INTEGER: (\d+)")
# The notification both senders send; qp1 carries the sequence number.
TEMPLATE = dict(node_guid=0x0002C90300A1B2C3, lid=7, key=0x8005, lid2=12,
                gid1=0xFE80 << 112 | 0x0002C90300A1B2C3, gid2=0xFE80 << 112 | 0x0002C90300A1B2C4,
                qp2=0x48, sl=0)


@dataclass
class Result:
    label: str
    sent: int
    seconds: float  # first send to last notification logged
    received: int  # distinct sequence numbers logged
    duplicates: int

    @property
    def rate(self) -> float:
        return self.received / self.seconds if self.seconds > 0 else 0.0

    @property
    def lost(self) -> int:
        return self.sent - self.received

    def line(self) -> str:
        return (f"  {self.label:<34} {self.sent:6d} sent, {self.received:6d} received "
                f"({self.lost} lost, {self.duplicates} duplicates) in {self.seconds:6.2f} s "
                f"= {self.rate:8.1f}/s")


def start_snmptrapd(procs: Processes, workdir: Path) -> tuple[Proc, int]:
    port = free_udp_port()
    conf = workdir / "snmptrapd.conf"
    conf.write_text("disableAuthorization yes\nauthCommunity log,execute,net public\n")
    env = dict(os.environ, MIBDIRS=MIB_DIRS, MIBS="ALL", SNMPCONFPATH=str(workdir / "none"))
    proc = procs.start("snmptrapd", ["snmptrapd", "-f", "-Lo", "-n", "-C", "-c", str(conf),
                                     "-M", MIB_DIRS, "-m", "ALL", "-F", MARK + "%v\n",
                                     f"udp:127.0.0.1:{port}"], env=env)
    proc.wait_for_line("NET-SNMP version", 20)
    return proc, port


def received_since(proc: Proc, index: int, started: float) -> tuple[list[int], float]:
    """Sequence numbers logged after line `index`, and when the last one came."""
    numbers, last = [], started
    for stamp, line in proc.lines[index:]:
        if line.startswith(MARK):
            match = SEQUENCE.search(line)
            if match:
                numbers.append(int(match[1]))
                last = stamp
    return numbers, last


def wait_quiet(proc: Proc, index: int, expected: int, timeout: float = 10.0) -> None:
    """Until `expected` notifications are logged, or nothing new came for 1 s."""
    deadline = time.monotonic() + timeout
    seen, quiet_since = -1, time.monotonic()
    while time.monotonic() < deadline:
        count = sum(1 for _s, line in proc.lines[index:] if line.startswith(MARK))
        if count >= expected:
            return
        if count != seen:
            seen, quiet_since = count, time.monotonic()
        elif time.monotonic() - quiet_since > 1.0:
            return
        time.sleep(0.05)


def summarize(label: str, proc: Proc, index: int, started: float, sent: int) -> Result:
    numbers, last = received_since(proc, index, started)
    distinct = len(set(numbers))
    return Result(label, sent, last - started, distinct, len(numbers) - distinct)


def snmptrap_argv(port: int, sequence: int) -> list[str]:
    """The same notification as ibsnmp's, numerically: what map_event would send."""
    event = TrapEvent(IbaTrap.BAD_P_KEY, qp1=sequence, **TEMPLATE)  # type: ignore[arg-type]
    notification = map_event(event)
    argv = ["snmptrap", "-v2c", "-c", "public", "-m", "", f"127.0.0.1:{port}", "",
            "." + ".".join(map(str, notification.oid))]
    for oid, value in notification.varbinds:
        name = "." + ".".join(map(str, oid))
        if hasattr(value, "asOctets"):
            argv += [name, "x", value.asOctets().hex()]
        else:
            argv += [name, "i", str(int(value))]
    return argv


def run_snmptrap_loop(proc: Proc, port: int, seconds: float, limit: int) -> Result:
    env = dict(os.environ, MIBS="", SNMPCONFPATH="/nonexistent")
    index = len(proc.lines)
    started = time.monotonic()
    sent = 0
    while time.monotonic() - started < seconds and sent < limit:
        subprocess.run(snmptrap_argv(port, sent), env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sent += 1
    wait_quiet(proc, index, sent)
    return summarize("net-snmp snmptrap loop", proc, index, started, sent)


async def run_ibsnmp(proc: Proc, port: int, count: int, rate_limit: float | None) -> Result:
    engine = SnmpEngine()
    target = TrapTarget(parse_trap_address(f"127.0.0.1:{port}"), queue_size=count,
                        rate_limit=rate_limit)
    originator = TrapOriginator(engine, [target])
    await originator.open()  # sockets and targets first, then the clock starts
    (sender,) = originator.senders
    index = len(proc.lines)
    started = time.monotonic()
    sender.task = asyncio.create_task(sender.run())
    for sequence in range(count):
        event = TrapEvent(IbaTrap.BAD_P_KEY, qp1=sequence, **TEMPLATE)  # type: ignore[arg-type]
        originator.notify(event)
    while sender.stats.sent + sender.stats.failed < count:
        await asyncio.sleep(0.01)
    await asyncio.to_thread(wait_quiet, proc, index, count)
    await originator.stop()
    engine.close_dispatcher()
    label = "ibsnmp TrapOriginator" + (f" (limit {rate_limit:.0f}/s)" if rate_limit else "")
    return summarize(label, proc, index, started, count)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=6000,
                        help="notifications ibsnmp sends per attempt (default 6000)")
    parser.add_argument("--loop-seconds", type=float, default=10.0,
                        help="how long the snmptrap loop runs (default 10 s)")
    args = parser.parse_args()
    version = subprocess.run(["snmptrapd", "--version"], capture_output=True, text=True)
    found = re.search(r"version:?\s+(\S+)", version.stdout + version.stderr, re.I)
    print(f"traps benchmark: SNMPv2c ibSmaBadPartitionKey (8 varbinds) to net-snmp snmptrapd "
          f"{found[1] if found else '?'} on 127.0.0.1, MIBs loaded, every notification "
          f"logged; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    with Processes() as procs:
        workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"ibsnmp-bench-traps-{os.getpid()}"
        workdir.mkdir(parents=True, exist_ok=True)
        proc, port = start_snmptrapd(procs, workdir)
        loop = run_snmptrap_loop(proc, port, args.loop_seconds, limit=100_000)
        print(loop.line(), flush=True)
        rate_limit: float | None = None
        attempts = []
        for _attempt in range(6):
            result = asyncio.run(run_ibsnmp(proc, port, args.count, rate_limit))
            attempts.append(result)
            print(result.line(), flush=True)
            if result.lost == 0 and result.duplicates == 0:
                break
            rate_limit = 0.8 * (result.rate if rate_limit is None else min(rate_limit,
                                                                            result.rate))
        ours = attempts[-1]
    ok_loss = ours.lost == 0 and ours.duplicates == 0 and loop.lost == 0
    ratio = ours.rate / loop.rate if loop.rate else float("inf")
    verdict = "PASS" if ok_loss and ratio >= TARGET_RATIO else "FAIL"
    print(f"  ibsnmp {ours.rate:.0f}/s vs snmptrap loop {loop.rate:.1f}/s: {ratio:.1f}x "
          f"(target >= {TARGET_RATIO:g}x with zero loss): {verdict}")
    print()
    print("| benchmark | ibsnmp | net-snmp snmptrap loop | ratio | loss | result |")
    print("|---|---|---|---|---|---|")
    print(f"| SNMPv2c notifications/s received by snmptrapd | {ours.rate:.0f}/s | "
          f"{loop.rate:.0f}/s | {ratio:.1f}x | {ours.lost + loop.lost} | {verdict} |")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())

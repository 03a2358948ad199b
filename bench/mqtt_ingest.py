#!/usr/bin/env python3
"""ibsnmp benchmark: a 10,000-node fabric published through mosquitto into
one aggregator (`ibsnmp run --provider mqtt`).

    .venv/bin/python bench/mqtt_ingest.py              # about 5 minutes
    .venv/bin/python bench/mqtt_ingest.py --fabric fat-tree:spines=2,leaves=4,hosts=4 --idle 20

Phases, each with its own mosquitto statistics ($SYS, every second):

1. serve: `ibsnmp publish` of the simulated fabric (10,026 nodes), once;
   the time from the publisher's connection (its first publish) until the
   aggregator has logged every node joining, and an SNMP answer from the
   last node's context; the aggregator's RSS then, beside `ibsnmp run`
   serving the same fabric from the simulated provider in the same run.
2. ingest: `ibsnmp publish --interval 1`: the simulated counters move, so
   every node's counters are re-sent as fast as the publisher can (in
   counters messages, once every node joined again and `--settle` passed);
   the aggregator's CPU time per second over the window divided by the
   rate of node updates published (counted by a subscriber of the bench's
   own: a counters message carries many nodes).
3. idle: a publisher whose counters are frozen (nothing changes; only the
   full refresh every 60 s is sent): broker bytes received and sent per
   node per minute over two refresh periods, and the aggregator's CPU.

The machine is shared: figures are one run's, printed with what they are.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import LOCALHOST, VENV_BIN, Proc, Processes, free_udp_port, start_ibsnmp, vm_status  # noqa: E402

SPEC = "fat-tree:spines=18,leaves=72,hosts=138"
MOSQUITTO = "/usr/sbin/mosquitto"
_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def free_tcp_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind((LOCALHOST, 0))
        return int(sock.getsockname()[1])


def broker_stats(port: int) -> dict[str, float]:
    """mosquitto's $SYS counters now (published retained, every second)."""
    import aiomqtt

    async def read() -> dict[str, float]:
        values: dict[str, float] = {}
        async with aiomqtt.Client(LOCALHOST, port, identifier=f"bench-stats-{time.monotonic_ns()}") as client:
            await client.subscribe("$SYS/broker/#")
            try:
                async with asyncio.timeout(1.5):
                    async for message in client.messages:
                        try:
                            values[str(message.topic)] = float(bytes(message.payload).split()[0])  # type: ignore[arg-type]
                        except (ValueError, IndexError):
                            pass
            except TimeoutError:
                pass
        return values

    return asyncio.run(read())


def node_updates(port: int, seconds: float) -> int:
    """Node updates published on the broker for `seconds`: a state is one,
    a counters message one per node it carries (counted by a subscriber of
    its own, beside the aggregator)."""
    import json

    import aiomqtt

    async def count() -> int:
        seen = 0
        async with aiomqtt.Client(LOCALHOST, port, identifier=f"bench-count-{time.monotonic_ns()}") as client:
            # One SUBSCRIBE: a second one's acknowledgement would wait behind
            # every retained state the first brings (48,896 on the largest fabric).
            await client.subscribe([("ibsnmp/v2/+/+/+/node/+/state", 0),
                                    ("ibsnmp/v2/+/+/+/counters", 0)], timeout=60)
            try:
                async with asyncio.timeout(seconds):
                    async for message in client.messages:
                        if message.retain:
                            continue  # what the broker kept from before the window
                        if str(message.topic).endswith("/counters"):
                            seen += len(json.loads(bytes(message.payload))["nodes"])  # type: ignore[arg-type]
                        else:
                            seen += 1
            except TimeoutError:
                pass
        return seen

    return asyncio.run(count())


def _delta(before: dict[str, float], after: dict[str, float], key: str) -> float:
    return after.get(f"$SYS/broker/{key}", 0.0) - before.get(f"$SYS/broker/{key}", 0.0)


def idle_publisher(url: str, spec: str) -> int:
    """A publisher of `spec` whose simulated counters stand still."""
    import logging

    from ibsnmp.mqtt.broker import BrokerSettings, parse_broker_url
    from ibsnmp.mqtt.publisher import Publisher
    from ibsnmp.providers.simulated import SimulatedProvider

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    host, port, tls, _, _ = parse_broker_url(url)
    provider = SimulatedProvider(spec, 1, watch_interval=0)
    publisher = Publisher(provider, BrokerSettings(host, port, tls, None, client_id="bench-idle"), "default",
                          interval=30.0, refresh=60.0, elapsed=lambda: 100.0)

    async def run() -> None:
        task = asyncio.create_task(publisher.run())
        while True:
            await asyncio.sleep(1)
            print(f"bench-idle: {publisher.states_sent} states sent", flush=True)
            if task.done():
                task.result()

    asyncio.run(run())
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fabric", default=SPEC)
    parser.add_argument("--ingest", type=float, default=30.0, help="seconds of the ingest window")
    parser.add_argument("--idle", type=float, default=120.0, help="seconds of the idle window")
    parser.add_argument("--settle", type=float, default=10.0,
                        help="seconds between every node's joining again and the ingest window")
    parser.add_argument("--idle-publisher", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.idle_publisher:
        return idle_publisher(args.idle_publisher, args.fabric)

    from ibsnmp.fabric.generators import build_fabric

    fabric = build_fabric(args.fabric, seed=1)
    nodes = len(fabric.nodes)
    last = f"{max(fabric.nodes):016x}"
    ibsnmp = str(VENV_BIN / "ibsnmp")
    print(f"fabric {args.fabric}: {nodes} nodes")
    with tempfile.TemporaryDirectory() as tmp, Processes() as procs:
        port = free_tcp_port()
        config = Path(tmp) / "mosquitto.conf"
        lines = [f"listener {port} {LOCALHOST}", "allow_anonymous true", "sys_interval 1",
                 "max_queued_messages 0", "max_inflight_messages 0"]
        if os.getuid() == 0:
            lines.append("user root")
        config.write_text("\n".join(lines) + "\n")
        broker = procs.start("mosquitto", [MOSQUITTO, "-c", str(config)])
        time.sleep(0.5)
        url = f"mqtt://{LOCALHOST}:{port}"
        snmp_port = free_udp_port()
        aggregator = procs.start("aggregator", [ibsnmp, "run", "--provider", "mqtt", "--broker", url,
                                                "--listen", f"{LOCALHOST}:{snmp_port}", "--client-id", "bench-agg"])
        aggregator.wait_for_line(r"^ibsnmp: serving", 60)
        aggregator.wait_for_line(r"connected to", 30)

        # 1. every node served
        publisher = procs.start("publisher", [ibsnmp, "publish", "--fabric", args.fabric, "--broker", url,
                                              "--client-id", "bench-pub", "--interval", "3600",
                                              "--refresh", "3600"])
        connected = publisher.started_at + publisher.wait_for_line(r"connected to", 120)
        joined = _Tally(aggregator, "joins the fabric")
        joined.wait(nodes)
        served = time.monotonic() - connected
        answer = _snmp_get(snmp_port, last)
        rss_agg = vm_status(aggregator.pid)["VmRSS"] / 1024
        print(f"1. all {nodes} nodes served {served:.1f} s after the publisher connected "
              f"(target < 30 s); node {last} answers: {answer}")
        simulated, sim_port, _ = start_ibsnmp(procs, args.fabric)
        _snmp_get(sim_port, last)
        rss_sim = vm_status(simulated.pid)["VmRSS"] / 1024
        procs.stop(simulated)
        print(f"   RSS: aggregator {rss_agg:.1f} MB, simulated provider serving the same fabric "
              f"{rss_sim:.1f} MB: {rss_agg / rss_sim:.2f}x (target <= 1.5x)")
        procs.stop(publisher)  # says offline: the nodes leave
        _Tally(aggregator, "leaves the fabric").wait(nodes)

        # 2. ingest
        loader = procs.start("loader", [ibsnmp, "publish", "--fabric", args.fabric, "--broker", url,
                                        "--client-id", "bench-load", "--interval", "1", "--refresh", "3600"])
        loader.wait_for_line(r"connected to", 120)
        # Past the first pass (every node's state, joining again), then `--settle`
        # more seconds: counters messages only. A fixed wait alone would, on a
        # large fabric, measure the first pass's rebuilds as ingest.
        joined.wait(2 * nodes)
        rejoined = time.monotonic() - loader.started_at
        time.sleep(args.settle)
        print(f"   every node joined again {rejoined:.1f} s after the loader started")
        cpu0, t0 = cpu_seconds(aggregator.pid), time.monotonic()
        updates = node_updates(port, args.ingest)
        cpu1, t1 = cpu_seconds(aggregator.pid), time.monotonic()
        window = t1 - t0
        rate = updates / window
        if not rate:
            raise RuntimeError("no node update was published in the window")
        cpu = (cpu1 - cpu0) / window
        print(f"2. ingest: {rate:.0f} node updates/s published (the aggregator is subscribed to them), "
              f"aggregator CPU {100 * cpu:.1f}% of one core: {100 * cpu / (rate / 1000):.1f}% of a core per "
              f"1,000 updates/s, {1000 * cpu / rate:.3f} ms per update (target <= 0.1 ms)")
        procs.stop(loader)

        # 3. idle
        idle = procs.start("idle", [sys.executable, __file__, "--idle-publisher", url, "--fabric", args.fabric])
        idle.wait_for_line(rf"bench-idle: {nodes} states sent", 300)
        time.sleep(2)
        before, cpu0, t0 = broker_stats(port), cpu_seconds(aggregator.pid), time.monotonic()
        time.sleep(args.idle)
        after, cpu1, t1 = broker_stats(port), cpu_seconds(aggregator.pid), time.monotonic()
        minutes = (t1 - t0) / 60
        received = _delta(before, after, "bytes/received") / nodes / minutes
        sent = _delta(before, after, "bytes/sent") / nodes / minutes
        cpu = (cpu1 - cpu0) / (t1 - t0)
        print(f"3. idle (full refresh every 60 s, nothing changes): broker bytes per node per minute: "
              f"{received:.0f} received, {sent:.0f} sent; aggregator CPU {100 * cpu:.2f}% of one core "
              f"(target < 5%)")
        if not broker.alive():
            print("warning: mosquitto exited", broker.tail())
    return 0


class _Tally:
    """Lines of a process that hold `text`, counted as they come (a large
    fabric logs a line per node)."""

    def __init__(self, process: Proc, text: str) -> None:
        self.process, self.text, self.count, self._read = process, text, 0, 0

    def wait(self, count: int) -> None:
        while True:
            lines = self.process.lines
            self.count += sum(self.text in line for _, line in lines[self._read:])
            self._read = len(lines)
            if self.count >= count:
                return
            if not self.process.alive():
                raise RuntimeError(self.process.tail())
            time.sleep(0.1)


def _snmp_get(port: int, context: str) -> str:
    import subprocess

    for _ in range(10):
        result = subprocess.run(["snmpget", "-v2c", "-c", f"public@{context}", "-t", "5", "-r", "0", "-Oqv",
                                 f"{LOCALHOST}:{port}", ".1.3.6.1.3.117.3.1.1.1.0"],
                                capture_output=True, text=True, check=False)
        if result.returncode == 0:
            return result.stdout.strip()
    raise RuntimeError(f"no answer for {context}: {result.stderr}")


if __name__ == "__main__":
    sys.exit(main())

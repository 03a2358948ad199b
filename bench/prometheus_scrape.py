#!/usr/bin/env python3
"""ibsnmp benchmark: a Prometheus-style scrape of every switch's context
through Debian's snmp_exporter (0.21) against snmpbulkwalk of the same OIDs.

    .venv/bin/python bench/prometheus_scrape.py [--fabric SPEC] [--rounds N] [--module M]

One agent serves a simulated fabric (default 10,026 nodes, the size of the
other benches). `ibsnmp fabric targets --kinds switch` writes the per-node
modules of examples/prometheus/snmp.yml; the exporter loads them. A round
reads the module (default ib_if) in every switch's context, one request
stream per context, 4 contexts at a time, as a Prometheus server scraping
several targets through one exporter does:

- exporter: HTTP GET /snmp?module=<module>@<guid>&target=<agent>; varbinds
  are the exporter's own count (snmp_scrape_pdus_returned);
- peer: `snmpbulkwalk -v2c -Cr25` (the exporter's max_repetitions) of each
  OID the module walks, one after the other, in the same context;
  varbinds are the lines printed.

Both must read the same number of varbinds in a round, or the figures
would not compare like with like. Rounds alternate which goes first;
medians are printed: scrapes/s (a scrape: one context read whole),
varbinds/s, their ratio exporter/snmpbulkwalk, and the agent's CPU seconds
(/proc/<pid>/stat, user + system) per varbind for each, with the date and
the load average. Then one scrape of each fabric-wide module (ib_sm_nodes,
ib_sm_ports) in the default context: time, varbinds, agent CPU. Last, the
exporter loads the modules of every node's context (switches and CAs) to
show what that costs. Every process listens
on 127.0.0.1 only and is stopped before the script exits.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    LOCALHOST,
    ROOT,
    VENV_BIN,
    Processes,
    cpu_seconds,
    median,
    start_ibsnmp,
    vm_status,
)

LARGE_FABRIC = "fat-tree:spines=18,leaves=72,hosts=138"  # 10,026 nodes, as bench/walk.py
SHIPPED = ROOT / "examples" / "prometheus" / "snmp.yml"
EXPORTER = "/usr/bin/prometheus-snmp-exporter"
STREAMS = 4
MAX_REPETITIONS = 25  # snmp_exporter's default, which the shipped modules keep
PDUS_RETURNED = re.compile(r"^snmp_scrape_pdus_returned (\d+)$", re.M)


class BenchError(RuntimeError):
    """A check failed: the figures would not compare like with like."""


@dataclass
class Side:
    name: str
    seconds: list[float] = field(default_factory=list)
    varbinds: list[int] = field(default_factory=list)
    agent_cpu: list[float] = field(default_factory=list)

    def scrapes_per_s(self, contexts: int) -> float:
        return median([contexts / s for s in self.seconds])

    def varbinds_per_s(self) -> float:
        return median([v / s for v, s in zip(self.varbinds, self.seconds)])

    def cpu_us_per_varbind(self) -> float:
        return median([c / v * 1e6 for c, v in zip(self.agent_cpu, self.varbinds)])


def free_tcp_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOCALHOST, 0))
        return int(sock.getsockname()[1])


def module_walk(module: str) -> list[str]:
    """The OIDs a shipped module walks, read from its `walk:` list."""
    text = SHIPPED.read_text()
    body = text.split(f"\n{module}:\n", 1)[1]
    walk = body.split("  walk:\n", 1)[1].split("  metrics:", 1)[0]
    return [line.strip()[2:] for line in walk.splitlines() if line.strip().startswith("- ")]


def write_targets(fabric: str, agent: str, work: Path, kinds: str = "switch") -> list[str]:
    """Per-node modules for every node of these kinds; their GUIDs."""
    config, targets = work / "snmp.yml", work / "targets.json"
    subprocess.run(
        [str(VENV_BIN / "ibsnmp"), "fabric", "targets", "--fabric", fabric, "--kinds", kinds,
         "--agent", agent, "--snmp-yml", str(SHIPPED), "--config-out", str(config),
         "--targets-out", str(targets)], check=True, stdout=subprocess.DEVNULL)
    return [group["labels"]["node_guid"] for group in json.loads(targets.read_text())]


def wait_for_http(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def exporter_scrape(exporter: str, agent: str, module: str) -> Callable[[str], int]:
    def scrape(guid: str) -> int:
        query = urllib.parse.urlencode({"module": f"{module}@{guid}", "target": agent})
        with urllib.request.urlopen(f"{exporter}/snmp?{query}", timeout=120) as answer:
            text = answer.read().decode()
        found = PDUS_RETURNED.search(text)
        if answer.status != 200 or found is None:
            raise BenchError(f"scrape of {guid} failed:\n{text[:500]}")
        return int(found[1])
    return scrape


def bulkwalk(agent: str, oids: Sequence[str]) -> Callable[[str], int]:
    # No MIB is loaded: numeric OIDs in and out, as the exporter works.
    env = dict(os.environ, MIBS="", MIBDIRS="/nonexistent", SNMPCONFPATH="/nonexistent")

    def walk(guid: str) -> int:
        count = 0
        for oid in oids:
            result = subprocess.run(
                ["snmpbulkwalk", "-v2c", "-c", f"public@{guid}", f"-Cr{MAX_REPETITIONS}",
                 "-On", "-OQ", agent, oid], capture_output=True, text=True, env=env,
                check=False)
            if result.returncode or result.stderr:
                raise BenchError(f"snmpbulkwalk {oid} in {guid}: {result.stderr.strip()}")
            count += len(result.stdout.splitlines())
        return count
    return walk


def start_exporter(procs: Processes, config: Path) -> tuple[str, int, float]:
    """The exporter on a free port: (its URL, pid, seconds until it answers)."""
    port = free_tcp_port()
    started = time.monotonic()
    proc = procs.start("snmp_exporter", [EXPORTER, f"--config.file={config}",
                                         f"--web.listen-address={LOCALHOST}:{port}"])
    url = f"http://{LOCALHOST}:{port}"
    wait_for_http(url, 300)
    return url, proc.pid, time.monotonic() - started


def every_node_load(procs: Processes, fabric: str, agent: str, module: str,
                    work: Path) -> None:
    """What the per-node scheme costs the exporter when every node's
    context gets its modules (ib_if and ib_pma each): file size, load time,
    RSS; and one scrape of a CA's context through it."""
    work.mkdir()
    guids = write_targets(fabric, agent, work, kinds="switch,ca,router")
    size = (work / "snmp.yml").stat().st_size
    url, pid, load = start_exporter(procs, work / "snmp.yml")
    varbinds = exporter_scrape(url, agent, module)(guids[0])
    print(f"every node's context: {len(guids)} nodes, {2 * len(guids)} per-node modules, "
          f"snmp.yml {size / 1e6:.1f} MB, exporter answering after {load:.1f} s, "
          f"RSS {vm_status(pid).get('VmRSS', 0) / 1024:.0f} MB; a scrape of {guids[0]}: "
          f"{varbinds} varbinds", flush=True)


def fabric_wide(exporter: str, agent: str, agent_pid: int) -> None:
    """One scrape of each fabric-wide module in the default context."""
    for module in ("ib_sm_nodes", "ib_sm_ports"):
        cpu_before = cpu_seconds(agent_pid)
        start = time.monotonic()
        query = urllib.parse.urlencode({"module": module, "target": agent})
        with urllib.request.urlopen(f"{exporter}/snmp?{query}", timeout=600) as answer:
            text = answer.read().decode()
        seconds = time.monotonic() - start
        found = PDUS_RETURNED.search(text)
        if found is None:
            raise BenchError(f"scrape of {module} failed:\n{text[:500]}")
        samples = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
        print(f"{module} (default context): {seconds:.1f} s, {int(found[1]):,} varbinds, "
              f"{samples:,} samples, {len(text) / 1e6:.1f} MB, agent CPU "
              f"{cpu_seconds(agent_pid) - cpu_before:.1f} s", flush=True)


def timed_round(side: Side, read: Callable[[str], int], guids: Sequence[str],
                agent_pid: int) -> None:
    cpu_before = cpu_seconds(agent_pid)
    start = time.monotonic()
    with ThreadPoolExecutor(STREAMS) as pool:
        counts = list(pool.map(read, guids))
    side.seconds.append(time.monotonic() - start)
    side.agent_cpu.append(cpu_seconds(agent_pid) - cpu_before)
    side.varbinds.append(sum(counts))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fabric", default=LARGE_FABRIC)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--module", default="ib_if")
    parser.add_argument("--no-every-node", dest="every_node", action="store_false",
                        help="skip loading modules for every node's context (~1.4 GB at 10k)")
    args = parser.parse_args(argv)

    print(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs", flush=True)
    oids = module_walk(args.module)
    with Processes() as procs, tempfile.TemporaryDirectory(prefix="ibsnmp-prom-") as tmp:
        agent_proc, port, startup = start_ibsnmp(procs, args.fabric, timeout=180)
        agent = f"{LOCALHOST}:{port}"
        guids = write_targets(args.fabric, agent, Path(tmp))
        exporter, exporter_pid, load = start_exporter(procs, Path(tmp) / "snmp.yml")
        print(f"fabric {args.fabric}: agent up in {startup:.1f} s; {len(guids)} switch contexts, "
              f"module {args.module} ({len(oids)} OIDs walked); exporter answering "
              f"{load:.1f} s after start with {len(guids)} x 2 per-node modules", flush=True)

        sides = (Side("snmp_exporter"), Side("snmpbulkwalk"))
        reads = (exporter_scrape(exporter, agent, args.module), bulkwalk(agent, oids))
        timed_round(sides[0], reads[0], guids, agent_proc.pid)  # warm-up: row indexes built
        sides[0].seconds.clear()
        sides[0].agent_cpu.clear()
        sides[0].varbinds.clear()
        for round_number in range(args.rounds):
            order = (0, 1) if round_number % 2 == 0 else (1, 0)
            for i in order:
                timed_round(sides[i], reads[i], guids, agent_proc.pid)
            if sides[0].varbinds[-1] != sides[1].varbinds[-1]:
                raise BenchError(f"round {round_number}: the exporter read "
                                 f"{sides[0].varbinds[-1]} varbinds, snmpbulkwalk "
                                 f"{sides[1].varbinds[-1]}")
            print(f"  round {round_number + 1}: " + ", ".join(
                f"{s.name} {s.seconds[-1]:.2f} s" for s in sides), flush=True)
        exporter_rss = vm_status(exporter_pid).get("VmRSS", 0) / 1024
        fabric_wide(exporter, agent, agent_proc.pid)
        if args.every_node:
            every_node_load(procs, args.fabric, agent, args.module, Path(tmp) / "all")

    contexts = len(guids)
    print(f"\n{sides[0].varbinds[0]} varbinds a round, {STREAMS} streams, median of "
          f"{args.rounds} rounds; exporter RSS {exporter_rss:.0f} MB")
    print("| reader | scrapes/s | varbinds/s | agent CPU per varbind |")
    print("|---|---|---|---|")
    for side in sides:
        print(f"| {side.name} | {side.scrapes_per_s(contexts):.1f} | "
              f"{side.varbinds_per_s():,.0f} | {side.cpu_us_per_varbind():.1f} us |")
    ratio = median([b / a for a, b in zip(sides[0].seconds, sides[1].seconds)])
    print(f"ratio exporter/snmpbulkwalk (rate, paired rounds): {ratio:.2f}x; agent CPU per "
          f"varbind exporter/snmpbulkwalk: "
          f"{sides[0].cpu_us_per_varbind() / sides[1].cpu_us_per_varbind():.2f}x")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

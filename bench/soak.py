#!/usr/bin/env python3
"""ibsnmp soak bench: one agent under mixed load for half an hour, its memory watched.

    .venv/bin/python bench/soak.py               # 30 minutes
    .venv/bin/python bench/soak.py --minutes 10

One `ibsnmp run` on 127.0.0.1 (simulated fat-tree 2/4/4, seed 1) with a
scenario that keeps the fabric changing the whole time (the uplink of
examples/link-flaps.toml flapping every 20 s, the marginal cable's error
bursts every 2 s) and an snmptrapd counting the traps it raises, and, all at
once until the end:
- walker "fabric": snmpbulkwalk of IB-SM-MIB (default context), in a loop
  (its count moves by the flapping link's ibSmLinkTable rows, scripted);
- walker "leaf03": snmpbulkwalk of SMA-MIB, PMA-MIB and IF-MIB in the
  context of the switch whose uplink flaps (public@GUID), in a loop;
- a GET loop: snmpget of 50 varbinds spread over the first IB-SM-MIB walk;
- SETs: sysContact, and an IB-SM-MIB path request created (createAndGo)
  and destroyed; the fabric walker never runs while a request row exists,
  so its count must not move;
- fuzz at 500 mutants/s from tests/support/wire_fuzz.py through bench/fuzz_traffic.py
  (answers judged, a probe GET after every 1,000).

Every minute it prints the agent's RSS; at the end the RSS slope after
the first 5 minutes (MB per 10 minutes, target < 1), the varbind counts of
each walker's walks (target: one count per walk root), the agent's ERROR
log lines (target 0), the traps received and the fuzz figures. Every loop
is bounded in count and in time; every process is stopped at the end.

`--heap` starts the agent through bench/heap_launcher.py, which samples the
Python heap every 2 s in the agent's process: the table then shows, beside
RSS, the bytes the allocators hand out (live: pymalloc's blocks plus glibc
malloc's chunks in use; with the minute's lowest and highest) and the bytes
they hold, and the end gives the live and held figures' slopes too. RSS
that steps or climbs while live bytes stay flat is memory the allocators
keep after a peak, not objects that stay.
`--tracemalloc FIRST LAST` (with --heap, a diagnostic run: it slows the
agent) prints the tracebacks whose memory grew most between those minutes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import (LOCALHOST, VENV_BIN, Proc, Processes,  # noqa: E402
                    start_ibsnmp, vm_status)
from fuzz_traffic import AGENT_CONFIG, FuzzSender, SeedSet  # noqa: E402
from tests.support.trapd import TrapReceiver  # noqa: E402
from tests.support.wire_fuzz import mutants  # noqa: E402
from tests.support.wire_v3 import discover  # noqa: E402

from ibsnmp.fabric.generators import build_fabric  # noqa: E402
from ibsnmp.fabric.model import Node  # noqa: E402
from ibsnmp.mib.loader import definitions  # noqa: E402

FABRIC, SEED = "fat-tree:spines=2,leaves=4,hosts=4", 1
FLAPPING_SWITCH = "leaf03"  # examples/link-flaps.toml's flapping uplink: leaf03 port 6
IB_SM_MIB = ".1.3.6.1.3.117.7"
NODE_ROOTS = {"SMA-MIB": ".1.3.6.1.3.117.3", "PMA-MIB": ".1.3.6.1.3.117.6",
              "IF-MIB interfaces": ".1.3.6.1.2.1.2", "IF-MIB ifMIB": ".1.3.6.1.2.1.31"}
PREFIX = "254.128.0.0.0.0.0.0"  # fe80::/64 as index octets
# ibSmLinkTable: the flapping link's rows leave it while the link is down,
# the one count change the scenario scripts.
SCRIPTED_ROWS = IB_SM_MIB + ".1.9."
CREATE_AND_GO, DESTROY = 4, 6
SESSION = 4242
GET_VARBINDS = 50
SET_PERIOD_S = 2.0
GET_PERIOD_S = 0.5
FUZZ_RATE = 500.0
WARM_UP_MIN = 5.0
TOOL_TIMEOUT_S = 120.0
# Per loop iteration caps, far above what the time allows, so no loop runs away.
MAX_ITERATIONS = 1_000_000
HEAP_LAUNCHER = Path(__file__).resolve().parent / "heap_launcher.py"
HEAP_PERIOD_S = 2.0
MB = 2**20


def scenario(minutes: float) -> str:
    """link-flaps.toml's flapping uplink and marginal cable, repeated for the whole run."""
    seconds = minutes * 60
    return f"""
[scenario]
name = "soak: flapping uplink and a marginal cable for {minutes:g} minutes"
watch_interval = 1.0

[[event]]
at = 5
action = "port-down"
node = "{FLAPPING_SWITCH}"
port = 6
up_after = 4
repeat = {int(seconds // 20)}
period = 20
jitter = 3

[[event]]
at = 3
action = "error-burst"
node = "host009"
port = 1
errors = {{ local_link_integrity = 3, symbol = 40 }}
repeat = {int(seconds // 2)}
period = 2
"""


def snmp_tool(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A net-snmp client with no MIB loaded (numeric OIDs in and out, -On)."""
    env = dict(os.environ, MIBS="", MIBDIRS="/nonexistent", SNMPCONFPATH="/nonexistent")
    return subprocess.run([tool, "-m", "", "-On", "-t", "10", "-r", "1", *args],
                          capture_output=True, text=True, env=env, timeout=TOOL_TIMEOUT_S,
                          check=False)


def varbind_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if " = " in line]


@dataclass
class Load:
    """What the load threads did, read by the reporter."""

    address: str
    stop: threading.Event = field(default_factory=threading.Event)
    walk_counts: dict[str, Counter[int]] = field(default_factory=dict)
    walk_oids: dict[str, dict[int, frozenset[str]]] = field(default_factory=dict)
    walk_failures: Counter[str] = field(default_factory=Counter)
    gets_ok: int = 0
    gets_failed: int = 0
    sets_ok: int = 0
    sets_failed: int = 0
    failures: list[str] = field(default_factory=list)  # first few tool errors
    no_request_rows: threading.Lock = field(default_factory=threading.Lock)
    get_oids: list[str] = field(default_factory=list)
    first_walk: threading.Event = field(default_factory=threading.Event)

    def note_failure(self, what: str, result: subprocess.CompletedProcess[str]) -> None:
        if len(self.failures) < 10:
            self.failures.append(f"{what}: exit {result.returncode} "
                                 f"{(result.stderr or result.stdout).strip()[:300]}")

    def walk(self, name: str, community: str, root: str) -> list[str] | None:
        result = snmp_tool("snmpbulkwalk", "-v2c", "-c", community, "-Cr25", self.address, root)
        lines = varbind_lines(result.stdout)
        if result.returncode != 0 or result.stderr.strip():
            self.walk_failures[name] += 1
            self.note_failure(f"walk {name}", result)
            return None
        self.walk_counts.setdefault(name, Counter())[len(lines)] += 1
        kept = self.walk_oids.setdefault(name, {})
        if len(lines) not in kept and len(kept) < 4:  # what a new count adds or misses
            kept[len(lines)] = frozenset(line.split(" = ")[0] for line in lines)
        return lines


def fabric_walker(load: Load) -> None:
    for _ in range(MAX_ITERATIONS):
        if load.stop.is_set():
            return
        with load.no_request_rows:  # outside the SETs' scripted rows
            lines = load.walk("fabric IB-SM-MIB", "public", IB_SM_MIB)
        if lines and not load.get_oids:
            step = max(len(lines) // GET_VARBINDS, 1)
            load.get_oids = [line.split(" = ")[0] for line in lines[::step]][:GET_VARBINDS]
            load.first_walk.set()


def node_walker(load: Load, guid: str) -> None:
    for _ in range(MAX_ITERATIONS):
        for name, root in NODE_ROOTS.items():
            if load.stop.is_set():
                return
            load.walk(f"{FLAPPING_SWITCH} {name}", f"public@{guid}", root)


def get_loop(load: Load) -> None:
    load.first_walk.wait(TOOL_TIMEOUT_S)
    for _ in range(MAX_ITERATIONS):
        if load.stop.wait(GET_PERIOD_S) or not load.get_oids:
            return
        result = snmp_tool("snmpget", "-v2c", "-c", "public", load.address, *load.get_oids)
        if result.returncode == 0 and len(varbind_lines(result.stdout)) == len(load.get_oids):
            load.gets_ok += 1
        else:
            load.gets_failed += 1
            load.note_failure("get", result)


def count_set(load: Load, result: subprocess.CompletedProcess[str]) -> None:
    if result.returncode == 0:
        load.sets_ok += 1
    else:
        load.sets_failed += 1
        load.note_failure("set", result)


def contact_loop(load: Load) -> None:
    for number in range(MAX_ITERATIONS):
        if load.stop.wait(SET_PERIOD_S):
            return
        count_set(load, snmp_tool("snmpset", "-v2c", "-c", "private", load.address,
                                  ".1.3.6.1.2.1.1.4.0", "s", f"soak {number}"))


def path_request_loop(load: Load, src_lid: int, dst_lid: int) -> None:
    """A path request created and destroyed, between two walks of the fabric walker."""
    row = f"{PREFIX}.{SESSION}"
    columns = path_request_columns()
    for _ in range(MAX_ITERATIONS):
        if load.stop.wait(SET_PERIOD_S):
            return
        with load.no_request_rows:
            count_set(load, snmp_tool(
                "snmpset", "-v2c", "-c", "private", load.address,
                f"{columns['RowStatus']}.{row}", "i", str(CREATE_AND_GO),
                f"{columns['SrcLID']}.{row}", "i", str(src_lid),
                f"{columns['DstLID']}.{row}", "i", str(dst_lid)))
            count_set(load, snmp_tool("snmpset", "-v2c", "-c", "private", load.address,
                                      f"{columns['RowStatus']}.{row}", "i", str(DESTROY)))


def path_request_columns() -> dict[str, str]:
    """ibSmPathReq{RowStatus,SrcLID,DstLID} as numeric OIDs, from the compiled MIB."""
    objects = definitions().objects
    return {column: "." + ".".join(map(str, objects[f"ibSmPathReq{column}"].oid))
            for column in ("RowStatus", "SrcLID", "DstLID")}


def slope_mb_per_10_min(samples: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (minutes, MB) samples, in MB per 10 minutes."""
    if len(samples) < 2:
        return None
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_m = sum(m for _, m in samples) / n
    spread = sum((t - mean_t) ** 2 for t, _ in samples)
    if not spread:
        return None
    return 10 * sum((t - mean_t) * (m - mean_m) for t, m in samples) / spread


@dataclass(frozen=True)
class HeapSample:
    """One line of heap_launcher.py's samples, in bytes."""

    seconds: float
    blocks: int
    pymalloc_used: int
    pymalloc_held: int
    malloc_used: int
    malloc_held: int
    frozen: int

    @property
    def live(self) -> int:
        return self.pymalloc_used + self.malloc_used

    @property
    def held(self) -> int:
        return self.pymalloc_held + self.malloc_held


def read_heap_samples(path: Path) -> list[HeapSample]:
    samples = []
    with open(path, encoding="ascii") as fh:
        lines = fh.read().splitlines()
    if not lines:
        return []
    columns = lines[0].split("\t")
    for line in lines[1:]:
        values = line.split("\t")
        if len(values) != len(columns):  # a line being written
            continue
        row = dict(zip(columns, values))
        samples.append(HeapSample(
            float(row["seconds"]), int(row["blocks"]), int(row["pymalloc_used"]),
            int(row["pymalloc_held"]), int(row["malloc_used"]), int(row["malloc_held"]),
            int(row["frozen"])))
    return samples


def host_lid(node: Node) -> int:
    port = node.port(1)
    assert port is not None, f"{node.description}: no port 1"
    return port.lid


def start_agent(procs: Processes, extra: list[str], heap_samples: Path | None,
                trace_at: list[float] | None) -> tuple[Proc, int]:
    """`ibsnmp run`, through the heap launcher when its heap is sampled."""
    launcher: list[str] = []
    if heap_samples is not None:
        launcher = [str(VENV_BIN / "python"), str(HEAP_LAUNCHER), str(heap_samples),
                    "--period", str(HEAP_PERIOD_S)]
        if trace_at:
            launcher += ["--tracemalloc", *map(str, trace_at)]
    agent, port, _ = start_ibsnmp(procs, FABRIC, seed=SEED, extra=extra, launcher=launcher)
    return agent, port


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--fuzz-rate", type=float, default=FUZZ_RATE)
    parser.add_argument("--without", nargs="*", default=[], metavar="LOAD",
                        choices=("fabric-walker", "node-walker", "gets", "contact-sets",
                                 "path-sets", "fuzz"),
                        help="leave these loads out (to find which one a defect needs)")
    parser.add_argument("--walk-cache", type=int, metavar="STEPS",
                        help="[limits] walk_cache for the agent (default: the agent's)")
    parser.add_argument("--heap", action="store_true",
                        help="sample the agent's Python heap and allocators beside its RSS")
    parser.add_argument("--heap-samples", type=Path, metavar="FILE",
                        help="keep the 2-second heap samples in FILE (implies --heap)")
    parser.add_argument("--tracemalloc", type=float, nargs=2, metavar=("FIRST", "LAST"),
                        help="diagnostic (slows the agent; implies --heap): the tracebacks "
                             "that grew most between these minutes")
    args = parser.parse_args()
    args.heap = args.heap or args.heap_samples is not None or args.tracemalloc is not None
    fabric = build_fabric(FABRIC, seed=SEED)
    by_name = {(node.description or "").split()[0]: node for node in fabric.nodes.values()}
    guid = f"{by_name[FLAPPING_SWITCH].guid:016x}"
    src_lid, dst_lid = (host_lid(by_name[name]) for name in ("host001", "host016"))

    with Processes() as procs, tempfile.TemporaryDirectory(prefix="ibsnmp-soak-") as tmp:
        work = Path(tmp)
        config, scenario_file = work / "agent.toml", work / "soak.toml"
        config.write_text(AGENT_CONFIG if args.walk_cache is None else AGENT_CONFIG.replace(
            "[limits]\n", f"[limits]\nwalk_cache = {args.walk_cache}\n", 1))
        config.chmod(0o600)
        scenario_file.write_text(scenario(args.minutes))
        receiver = TrapReceiver(work / "trapd").start()
        heap_samples = (args.heap_samples or work / "heap.tsv") if args.heap else None
        try:
            agent, port = start_agent(procs, [
                "--config", str(config), "--write-community", "private",
                "--trap-target", receiver.address, "--scenario", str(scenario_file)],
                heap_samples, args.tracemalloc)
            return soak(args, agent, port, guid, src_lid, dst_lid, receiver, heap_samples)
        finally:
            receiver.stop()


def soak(args: argparse.Namespace, agent: Proc, port: int, guid: str, src_lid: int,
         dst_lid: int, receiver: TrapReceiver, heap_samples: Path | None) -> int:
    address = f"{LOCALHOST}:{port}"
    load = Load(address)
    engine = discover(address)
    seeds = SeedSet(engine.boots, engine.engine_time)
    started = time.monotonic()
    deadline = started + args.minutes * 60
    sender = FuzzSender(LOCALHOST, port, agent.alive)
    stream = mutants(seeds.seeds, int(args.fuzz_rate * args.minutes * 60) + 1, seed=30,
                     finish=seeds.finish)
    loads = {
        "fabric-walker": threading.Thread(target=fabric_walker, args=(load,), daemon=True),
        "node-walker": threading.Thread(target=node_walker, args=(load, guid), daemon=True),
        "gets": threading.Thread(target=get_loop, args=(load,), daemon=True),
        "contact-sets": threading.Thread(target=contact_loop, args=(load,), daemon=True),
        "path-sets": threading.Thread(target=path_request_loop, args=(load, src_lid, dst_lid),
                                      daemon=True),
        "fuzz": threading.Thread(target=sender.run, args=(stream,), daemon=True,
                                 kwargs={"rate": args.fuzz_rate, "deadline": deadline,
                                         "should_stop": load.stop.is_set}),
    }
    if "fabric-walker" in args.without and "gets" not in args.without:
        # No walk to pick from: SMA-MIB's node scalars (ibSmaNode*).
        load.get_oids = [f"{NODE_ROOTS['SMA-MIB']}.1.1.{n}.0" for n in range(1, 13)]
        load.first_walk.set()
    threads = [thread for name, thread in loads.items() if name not in args.without]
    for thread in threads:
        thread.start()
    samples: list[tuple[float, float]] = []
    heap: list[tuple[float, float, float, float]] = []  # (minute, live, lowest live, held MB)
    print(f"soak: agent pid {agent.pid} on {address}, {args.minutes:g} min, fuzz "
          f"{args.fuzz_rate:g}/s, node context {FLAPPING_SWITCH} public@{guid}"
          + (f", without {' '.join(args.without)}" if args.without else ""), flush=True)
    print(" min   RSS MB  walks  gets  sets  traps  fuzz sent  lost  load"
          + (HEAP_HEADER if heap_samples else ""), flush=True)
    for minute in range(int(args.minutes) + 1):
        if minute:
            time.sleep(max(started + minute * 60 - time.monotonic(), 0))
        if not agent.alive():
            print("agent exited", flush=True)
            break
        rss = vm_status(agent.pid)["VmRSS"] / 1024
        samples.append((minute, rss))
        walks = sum(sum(c.values()) for c in load.walk_counts.values())
        heap_columns = ""
        if heap_samples:
            heap_columns, figures = heap_row(heap_samples, minute)
            if figures:
                heap.append((minute, *figures))
        print(f"{minute:4d} {rss:8.1f} {walks:6d} {load.gets_ok:5d} {load.sets_ok:5d} "
              f"{len(receiver.received()):6d} {sender.figures.sent:10,d} "
              f"{sender.figures.markers_lost:5d}  {os.getloadavg()[0]:4.2f}" + heap_columns,
              flush=True)
    load.stop.set()
    for thread in threads:
        thread.join(TOOL_TIMEOUT_S)
    sender.close()
    return report(load, agent, samples, sender, receiver, time.monotonic() - started,
                  heap_slopes(heap) if heap_samples else [],
                  traced_growth(heap_samples) if heap_samples else [])


HEAP_HEADER = ("   live MB (low-peak)  held MB  pymalloc used/held  malloc used/held"
               "  blocks k  frozen k")


def heap_row(path: Path, minute: int) -> tuple[str, tuple[float, float, float] | None]:
    """The table's heap columns at `minute`: the newest sample, and the lowest and
    highest live figures since the previous minute. The lowest is what stays between
    requests; the highest, a transient peak whose memory the allocators may keep."""
    samples = read_heap_samples(path)
    if not samples:
        return "  (no heap sample yet)", None
    now = samples[-1]
    since = [s for s in samples if s.seconds > now.seconds - 60] or [now]
    low, peak = min(s.live for s in since), max(s.live for s in since)
    return (f"  {now.live / MB:7.1f} ({low / MB:5.1f}-{peak / MB:5.1f}) {now.held / MB:7.1f}"
            f"  {now.pymalloc_used / MB:8.1f} /{now.pymalloc_held / MB:6.1f}"
            f"  {now.malloc_used / MB:7.1f} /{now.malloc_held / MB:6.1f}"
            f"  {now.blocks / 1000:8.0f}  {now.frozen / 1000:8.0f}",
            (now.live / MB, low / MB, now.held / MB))


def heap_slopes(heap: list[tuple[float, float, float, float]]) -> list[str]:
    """The live and held figures' first and last values and slopes, as for RSS."""
    lines = []
    late = [row for row in heap if row[0] >= WARM_UP_MIN]
    # The lowest live figure of each minute is the one that tells growth: the
    # sample at the minute mark moves by tens of MB with the requests in flight.
    for name, column in (("live heap, each minute's lowest", 2),
                         ("live heap at the minute mark", 1), ("held by the allocators", 3)):
        slope = slope_mb_per_10_min([(row[0], row[column]) for row in late])
        if heap:
            lines.append(f"{name}: {heap[0][column]:.1f} MB at start, {heap[-1][column]:.1f} MB "
                         f"at the end; slope after {WARM_UP_MIN:g} min: "
                         + (f"{slope:+.2f} MB per 10 min" if slope is not None else "n/a"))
    return lines


def traced_growth(samples_path: Path) -> list[str]:
    """heap_launcher.py's tracemalloc comparison, if it made one."""
    trace = Path(f"{samples_path}.tracemalloc")
    return trace.read_text(encoding="utf-8").splitlines() if trace.exists() else []


def report(load: Load, agent: Proc, samples: list[tuple[float, float]], sender: FuzzSender,
           receiver: TrapReceiver, seconds: float, heap_lines: list[str],
           trace_lines: list[str]) -> int:
    late = [(t, m) for t, m in samples if t >= WARM_UP_MIN]
    slope = slope_mb_per_10_min(late)
    errors = [line for _, line in agent.lines if "ERROR" in line or "Traceback" in line]
    traps = Counter(r.trap_oid.rpartition("::")[2] or r.kind for r in receiver.received())
    figures = sender.figures
    print(f"\nsoak: {seconds / 60:.1f} min, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"RSS: {samples[0][1]:.1f} MB at start, {samples[-1][1]:.1f} MB at the end; slope after "
          f"{WARM_UP_MIN:g} min: " + (f"{slope:+.2f} MB per 10 min" if slope is not None
                                      else "n/a (run too short)"))
    for line in heap_lines:
        print(line)
    steady = True
    for name, counts in sorted(load.walk_counts.items()):
        listed = ", ".join(f"{count} varbinds x{times}" for count, times in sorted(counts.items()))
        print(f"walker {name}: {sum(counts.values())} walks, {len(counts)} distinct count(s): "
              f"{listed}; failed {load.walk_failures[name]}")
        kept = load.walk_oids.get(name, {})
        first = kept.get(min(kept)) if kept else None
        scripted = len(kept) == len(counts)  # every count's OIDs were kept
        for count, oids in sorted(kept.items()):
            if first is not None and oids is not first:
                changed = oids ^ first
                print(f"  {count} varbinds vs {min(kept)}: + {sorted(oids - first)[:6]} "
                      f"- {sorted(first - oids)[:6]}")
                scripted = scripted and all(oid.startswith(SCRIPTED_ROWS) for oid in changed)
        steady = steady and (len(counts) == 1 or scripted)
    print(f"GETs of {len(load.get_oids)} varbinds: {load.gets_ok} ok, {load.gets_failed} failed; "
          f"SETs: {load.sets_ok} ok, {load.sets_failed} failed")
    print(f"traps received: {sum(traps.values())} ({', '.join(f'{k} {v}' for k, v in traps.most_common())})")
    print(f"agent log: {len(agent.lines)} lines, {len(errors)} ERROR/Traceback")
    for line in errors[:10]:
        print("  " + line)
    print("fuzz: " + figures.summary())
    for example in figures.examples + load.failures:
        print("  " + example)
    clean = (slope is not None and slope < 1.0 and steady and not errors
             and not figures.unreadable_answers and not figures.answered_malformed
             and figures.probes_answered == figures.probes_sent and not figures.agent_gone)
    for line in trace_lines:
        print(line)
    print("soak: " + ("clean" if clean else "NOT clean"))
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())

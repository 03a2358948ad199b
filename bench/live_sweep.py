"""Directed-route discovery sweep vs ibnetdiscover, and a counter poll of
every port vs a perfquery loop, on ibsim fabrics.

    python bench/live_sweep.py [--sizes 100,1000] [--window 64] [--rounds 5]
                               [--perfquery-sample 200] [--no-counters]

For each size a two-level fat tree of about that many nodes is written as
an ibsim net file; ibsim serves it on a private socket name, and in the
same run, under the same preload library and attached to the same node,
ibnetdiscover and ibsnmp's sweep (`ibsnmp.mad.discovery`) take turns to
discover it `--rounds` times. Printed per side, as medians: the whole
process; its start-up, measured by a process of the same kind that opens
the port and reads one NodeInfo (`smpquery -D nodeinfo 0` for the C tools;
python, imports, port and one SMP for ibsnmp); the sweep, which for
ibnetdiscover is the whole process less that start-up and for ibsnmp is
timed inside the process; the SMPs each sends (ibnetdiscover's counted
from its own debug output in one extra run) and what they read. The
ratios that decide the target are sweep to sweep: the agent sweeps from
a process that is already running. Whole-process ratios are printed too.

Then OpenSM brings the subnet up and every connected port's counters are
read once through one window (`ibsnmp.mad.counters`: ClassPortInfo once
per LID, then PortCounters and, where ClassPortInfo offers it,
PortCountersExtended), against `perfquery -x LID PORT` run once per port
as exporters do; that loop runs over at most `--perfquery-sample` ports
and its per-port time is scaled to all of them (printed as such). Needs
ibsim-utils, opensm, infiniband-diags and libibumad3 (`make setup`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.support.ibsim import Fabric, ibsim_fabric, opensm_running  # noqa: E402

SWEEP = """
import json, time
from ibsnmp.mad.discovery import discover
from ibsnmp.mad.umad import UmadPort
from ibsnmp.mad.window import MadWindow
with UmadPort() as port:
    window = MadWindow(port, size={window})
    start = time.perf_counter()
    subnet = discover(window)
    elapsed = time.perf_counter() - start
print(json.dumps({{"nodes": len(subnet.nodes), "links": len(subnet.links) // 2,
                  "seconds": elapsed, "stats": vars(window.stats),
                  "unanswered": len(subnet.unanswered)}}))
"""

# ibsnmp's start-up as the sweep process pays it: interpreter, the sweep's
# imports, the port, one SMP (the local NodeInfo).
STARTUP = """
from ibsnmp.mad.attributes import NODE_INFO
from ibsnmp.mad.discovery import discover
from ibsnmp.mad.packets import directed_route_get
from ibsnmp.mad.umad import DIRECTED_ROUTE, UmadPort
from ibsnmp.mad.window import MadWindow
with UmadPort() as port:
    port.query(directed_route_get(NODE_INFO, (), 0), DIRECTED_ROUTE)
"""
# The same for the C tools: process, libibumad and libibmad set-up, one SMP.
C_STARTUP = ["smpquery", "-D", "nodeinfo", "0"]
WHAT_IBNETDISCOVER_READS = "NodeInfo, NodeDescription, PortInfo, SwitchInfo"
WHAT_IBSNMP_READS = "the same and each switch's LinearForwardingTable"

# Exit status of POLL while OpenSM has not yet made every port active.
NOT_YET = 3
POLL = """
import json, sys, time
from ibsnmp.mad.counters import extended_counter_lids, poll_counters
from ibsnmp.mad.discovery import discover
from ibsnmp.mad.umad import UmadPort
from ibsnmp.mad.window import MadWindow
with UmadPort() as port:
    window = MadWindow(port, size={window})
    subnet = discover(window)
    targets = []
    for node in subnet.nodes.values():
        for number, info in node.ports.items():
            if number == 0 or (node.guid, number) not in subnet.links:
                continue
            if info["PortState"] != 4:
                sys.exit({not_yet})
            lid = node.ports[0]["LID"] if node.is_switch else info["LID"]
            targets.append((lid, number))
    start = time.perf_counter()
    extended = extended_counter_lids(window, (lid for lid, _ in targets))
    capabilities = time.perf_counter() - start
    start = time.perf_counter()
    values, failures = poll_counters(window, targets, extended)
    elapsed = time.perf_counter() - start
print(json.dumps({{"targets": targets, "seconds": elapsed, "capabilities": capabilities,
                  "read": len(values), "failures": len(failures),
                  "extended_lids": len(extended)}}))
"""


def fat_tree(nodes: int) -> str:
    """A net file: spines, leaves and hosts, about `nodes` nodes in all."""
    spines = max(2, round(nodes ** 0.5 / 4))
    leaves = max(2, round(nodes ** 0.5))
    hosts_per_leaf = max(1, (nodes - spines - leaves) // leaves)
    lines: list[str] = []
    for s in range(spines):
        lines.append(f'Switch\t{leaves} "spine-{s}"')
        lines += [f'[{leaf + 1}]\t"leaf-{leaf}"[{hosts_per_leaf + s + 1}]' for leaf in range(leaves)]
        lines.append("")
    for leaf in range(leaves):
        lines.append(f'Switch\t{hosts_per_leaf + spines} "leaf-{leaf}"')
        lines += [f'[{h + 1}]\t"host-{leaf}-{h}"[1]' for h in range(hosts_per_leaf)]
        lines += [f'[{hosts_per_leaf + s + 1}]\t"spine-{s}"[{leaf + 1}]' for s in range(spines)]
        lines.append("")
    for leaf in range(leaves):
        for h in range(hosts_per_leaf):
            lines += [f'Hca\t1 "host-{leaf}-{h}"', f'[1]\t"leaf-{leaf}"[{h + 1}]', ""]
    # Clients attach to the first node in the file: make that a host.
    first_host = lines.index('Hca\t1 "host-0-0"')
    return "\n".join(lines[first_host:first_host + 3] + lines[:first_host]
                     + lines[first_host + 3:]) + "\n"


@dataclass(frozen=True)
class Timed:
    wall: float
    cpu: float  # the command's own CPU seconds (user and system)
    fabric_cpu: float  # ibsim's CPU seconds meanwhile: the fabric's share of the work
    stdout: str


def simulator_cpu(net: Path) -> Callable[[], float]:
    """A reader of the CPU seconds used so far by the ibsim serving `net`."""
    wanted = ["ibsim", "-s", str(net)]
    for proc in Path("/proc").iterdir():
        try:
            if (proc / "cmdline").read_bytes().split(b"\0")[:3] == [w.encode() for w in wanted]:
                stat = proc / "stat"
                break
        except OSError:
            continue  # gone, or not ours to read
    else:
        raise RuntimeError(f"no ibsim process serves {net}")
    tick = os.sysconf("SC_CLK_TCK")

    def used() -> float:
        # utime and stime are the 14th and 15th fields, after "pid (comm)".
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    return used


def timed(fabric: Fabric, command: list[str], fabric_cpu: Callable[[], float]) -> Timed:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    simulator = fabric_cpu()
    start = time.perf_counter()
    done = fabric.run(command, timeout=600)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed: {done.stderr[-500:]}")
    cpu = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    return Timed(elapsed, cpu, fabric_cpu() - simulator, done.stdout)


def counter_poll(fabric: Fabric, fabric_cpu: Callable[[], float], window: int,
                 sample: int) -> None:
    with opensm_running(fabric):
        deadline = time.monotonic() + 300
        while True:
            done = fabric.run([sys.executable, "-c",
                               POLL.format(window=window, not_yet=NOT_YET)], timeout=600)
            if done.returncode != NOT_YET:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("OpenSM did not make every port active in 300 s")
            time.sleep(1)
        if done.returncode != 0:
            raise RuntimeError(f"counter poll failed: {done.stderr[-500:]}")
        result = json.loads(done.stdout)
        targets = result["targets"]
        looped = targets[:sample]
        start = time.perf_counter()
        for lid, port in looped:
            timed(fabric, ["perfquery", "-x", str(lid), str(port)], fabric_cpu)
        per_port = (time.perf_counter() - start) / len(looped)
    loop = per_port * len(targets)
    print(f"      counters of {len(targets)} ports ({result['read']} read, "
          f"{result['failures']} failed, {result['extended_lids']} LIDs extended): "
          f"ibsnmp poll {result['seconds']:.3f} s (one window: PortCounters and "
          f"PortCountersExtended per port; before it, once, ClassPortInfo of every LID "
          f"{result['capabilities']:.3f} s), perfquery -x loop "
          f"{loop:.1f} s (a process per port: ClassPortInfo and PortCountersExtended; "
          f"{len(looped)} ports run, {per_port * 1000:.1f} ms each"
          f"{', scaled' if len(looped) < len(targets) else ''}); "
          f"speed-up {loop / result['seconds']:.0f}x "
          f"({loop / (result['seconds'] + result['capabilities']):.0f}x with ClassPortInfo)",
          flush=True)


def smps_sent(fabric: Fabric, command: list[str]) -> int:
    """How many MADs `command` sends, from libibumad's debug lines (an untimed run)."""
    done = fabric.run([*command, "-d", "-d", "-d"], timeout=600)
    return sum("umad_send" in line for line in done.stderr.splitlines())


def _difference(whole: tuple[float, float], part: tuple[float, float]) -> tuple[float, float]:
    return whole[0] - part[0], whole[1] - part[1]


def report(size: int, rounds: int, window: int, runs: dict[str, list[Timed]],
           inner: list[float], their_nodes: int, their_smps: int,
           result: dict[str, object]) -> None:
    """Print one size's sweep figures: wall and CPU, whole, start-up and sweep, each side."""
    # Medians, and in brackets the best round: on a shared machine the best is
    # the closest to what the code itself costs.
    def summary(values: list[float]) -> tuple[float, float]:
        return statistics.median(values), min(values)

    wall = {name: summary([r.wall for r in values]) for name, values in runs.items()}
    cpu = {name: summary([r.cpu for r in values]) for name, values in runs.items()}
    simulator = {name: statistics.median(r.fabric_cpu for r in values)
                 for name, values in runs.items()}
    # ibnetdiscover's sweep is its whole run less the C tools' start-up (medians
    # and bests each: round by round the noise would not cancel); ibsnmp's is
    # timed inside its process, its CPU is the whole less the start-up's.
    wall["their sweep"] = _difference(wall["their whole"], wall["their start"])
    wall["our sweep"] = summary(inner)
    cpu["their sweep"] = _difference(cpu["their whole"], cpu["their start"])
    cpu["our sweep"] = _difference(cpu["our whole"], cpu["our start"])

    def shown(figures: dict[str, tuple[float, float]], name: str) -> str:
        return f"{figures[name][0]:.3f} ({figures[name][1]:.3f})"

    def ratio(figures: dict[str, tuple[float, float]], name: str) -> str:
        ours, theirs = figures[f"our {name}"], figures[f"their {name}"]
        return " ".join(f"{o / t:.2f}" if t > 0 else "n/a (within start-up noise)"
                        for o, t in zip(ours, theirs))

    stats = result["stats"]
    assert isinstance(stats, dict)
    lines = [
        f"{size:>5} nodes asked: ibnetdiscover found {their_nodes}, ibsnmp {result['nodes']} "
        f"nodes and {result['links']} links; seconds, median (best) of {rounds} rounds",
        f"ibnetdiscover: {their_smps} SMPs ({WHAT_IBNETDISCOVER_READS}; its default number "
        f"outstanding); start-up measured by {' '.join(C_STARTUP)}",
        f"ibsnmp:        {stats['sent']} SMPs ({WHAT_IBSNMP_READS}; window {window}, "
        f"{stats['retried']} retried, {result['unanswered']} unanswered); start-up "
        f"measured by python, the imports, the port and one SMP",
    ]
    for side, label in (("their", "ibnetdiscover"), ("our", "ibsnmp")):
        lines.append(
            f"{label + ':':<14} wall: whole {shown(wall, side + ' whole')}, start-up "
            f"{shown(wall, side + ' start')}, sweep {shown(wall, side + ' sweep')}; "
            f"CPU: whole {shown(cpu, side + ' whole')}, sweep {shown(cpu, side + ' sweep')}; "
            f"ibsim CPU meanwhile {simulator[side + ' whole']:.3f}")
    lines.append(f"ratio ibsnmp/ibnetdiscover, median best: sweep wall {ratio(wall, 'sweep')} "
                 f"(target 1.5); sweep CPU {ratio(cpu, 'sweep')}; whole wall "
                 f"{ratio(wall, 'whole')}")
    print("\n      ".join(lines), flush=True)


def bench(size: int, window: int, rounds: int, sample: int, counters: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="live-sweep-") as tmp:
        net = Path(tmp) / "fabric.net"
        net.write_text(fat_tree(size))
        with ibsim_fabric(net, Path(tmp)) as fabric:
            fabric_cpu = simulator_cpu(net)
            runs: dict[str, list[Timed]] = {name: [] for name in (
                "their whole", "their start", "our whole", "our start")}
            inner: list[float] = []
            result: dict[str, object] = {}
            for _ in range(rounds):
                # Turn about, so both sides meet the same load from elsewhere.
                theirs = timed(fabric, ["ibnetdiscover"], fabric_cpu)
                runs["their whole"].append(theirs)
                their_nodes = theirs.stdout.count("\nSwitch\t") + theirs.stdout.count("\nCa\t")
                runs["their start"].append(timed(fabric, C_STARTUP, fabric_cpu))
                ours = timed(fabric, [sys.executable, "-c", SWEEP.format(window=window)],
                             fabric_cpu)
                runs["our whole"].append(ours)
                result = json.loads(ours.stdout)
                inner.append(float(result["seconds"]))  # type: ignore[arg-type]
                runs["our start"].append(timed(fabric, [sys.executable, "-c", STARTUP],
                                               fabric_cpu))
            their_smps = smps_sent(fabric, ["ibnetdiscover"])
            report(size, rounds, window, runs, inner, their_nodes, their_smps, result)
            if counters:
                counter_poll(fabric, fabric_cpu, window, sample)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--perfquery-sample", type=int, default=200)
    parser.add_argument("--no-counters", action="store_true",
                        help="the sweeps only, without OpenSM and the counter poll")
    args = parser.parse_args()
    # Others' load moves every figure here: say how busy the machine was.
    print("load average at start: " + ", ".join(f"{load:.2f}" for load in os.getloadavg()))
    for size in map(int, args.sizes.split(",")):
        bench(size, args.window, args.rounds, args.perfquery_sample, not args.no_counters)


if __name__ == "__main__":
    main()

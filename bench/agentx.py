#!/usr/bin/env python3
"""ibsnmp benchmark: a walk through net-snmp's snmpd as AgentX master, against its C subagent.

    .venv/bin/python bench/agentx.py            # 9 rounds, about 10 s on 2 cores
    .venv/bin/python bench/agentx.py --rounds 9 --root 1.3.6.1.3.117.6

One ibsnmp process serves UDP (--listen) and is a subagent of an snmpd
(`master agentx` on a socket of the bench's own). The peer is net-snmp's own
subagent, `snmpd -X`, serving the same varbinds as `override` lines, through
a second master of the same configuration. `override` has no Counter64 or
IpAddress: those are served as Counter32 (the low 32 bits) and 4-octet
strings, so both walks have the same names in the same order.

The subtree `--root` (by default IB-SM-MIB's ibSmPortInfoTable, 3,386
varbinds on the default fabric) is walked with `snmpbulkwalk -v2c -Cr50 -On
-OQ` through each master and from ibsnmp over UDP, the order turning each
round. Not the whole InfiniBand subtree by default: the C subagent registers
one instance per `override` line, and the pair had not finished registering
the subtree's 57,467 after 13 minutes. The figures are medians over the
rounds (the first round of each is the first walk of a fresh process). A
master asks a subagent for one varbind per AgentX PDU, so CPU per varbind
is CPU per PDU. Printed: varbinds per second
of each walk, the CPU per varbind of each subagent and of its master, and
the two targets of the AgentX path: the walk through the master at least
1.0x the C subagent's rate, at most 30 us of ibsnmp CPU per AgentX PDU.
Everything binds 127.0.0.1 only, on free ports, and is stopped before the
script exits.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    LOCALHOST,
    Proc,
    Processes,
    SnmpClient,
    SnmpError,
    cpu_seconds,
    free_udp_port,
    median,
    nearest_override_line,
    start_ibsnmp,
)

INFINIBAND = (1, 3, 6, 1, 3, 117)
PORT_INFO_TABLE = "1.3.6.1.3.117.7.1.3"  # ibSmPortInfoTable
SNMPD = "/usr/sbin/snmpd"
NO_MIBS = {**os.environ, "MIBS": "", "MIBDIRS": "/nonexistent", "SNMPCONFPATH": "/nonexistent"}
RATE_TARGET = 1.0  # the walk through the master, as a multiple of the C subagent's
CPU_TARGET_US = 30.0  # ibsnmp CPU per AgentX PDU


def master_config(directory: Path, name: str, port: int) -> Path:
    """An snmpd.conf for an AgentX master on its own socket: both masters alike."""
    conf = directory / f"{name}.conf"
    conf.write_text("\n".join([
        "master agentx", f"agentXSocket {directory / name}",
        f"agentaddress udp:{LOCALHOST}:{port}", f"rocommunity public {LOCALHOST}"]) + "\n")
    return conf


def start_snmpd(procs: Processes, name: str, argv: list[str]) -> Proc:
    snmpd = procs.start(name, [SNMPD, "-f", "-Lo", "-C", "-M", "/nonexistent", "-m", "",
                               *argv], env=NO_MIBS)
    snmpd.wait_for_line(r"NET-SNMP version", 60)
    return snmpd


def walk(port: int, root: tuple[int, ...]) -> tuple[int, float]:
    """(varbinds, seconds) of one snmpbulkwalk of `root`."""
    start = time.perf_counter()
    result = subprocess.run(
        ["snmpbulkwalk", "-v2c", "-c", "public", "-Cr50", "-On", "-OQ", "-r", "1", "-t", "10",
         f"{LOCALHOST}:{port}", "." + ".".join(map(str, root))],
        capture_output=True, text=True, env=NO_MIBS, check=False)
    seconds = time.perf_counter() - start
    if result.returncode != 0 or result.stderr.strip():
        raise RuntimeError(f"walk of port {port} failed: {result.stderr.strip()}")
    return len(result.stdout.splitlines()), seconds


def wait_for_walk(port: int, root: tuple[int, ...], count: int, timeout: float) -> None:
    """Until a walk of `root` through `port` has `count` varbinds (every subagent
    registration is in: the C subagent registers one instance per line)."""
    deadline = time.monotonic() + timeout
    got = 0
    while time.monotonic() < deadline:
        try:
            got = walk(port, root)[0]
        except RuntimeError:
            got = 0
        if got == count:
            return
        time.sleep(0.5)
    raise TimeoutError(f"{got} of {count} varbinds under {root} through port {port} "
                       f"after {timeout:.0f} s")


def wait_for_subtree(port: int, root: tuple[int, ...], timeout: float = 30.0) -> None:
    """Until a GETNEXT of `root` through `port` lands inside it (the subagent registered)."""
    deadline = time.monotonic() + timeout
    with SnmpClient(port, timeout=0.5, retries=0) as client:
        while time.monotonic() < deadline:
            try:
                name, _tag, _value = client.get_next(root)
                if name[:len(root)] == root:
                    return
            except SnmpError:
                pass
            time.sleep(0.05)
    raise TimeoutError(f"nothing under {root} through port {port} after {timeout:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fabric", default="fat-tree:spines=1,leaves=1,hosts=2")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--root", default=PORT_INFO_TABLE,
                        help="the subtree walked, inside .1.3.6.1.3.117 (default %(default)s)")
    args = parser.parse_args()
    root = tuple(int(arc) for arc in args.root.strip(".").split("."))
    if root[:len(INFINIBAND)] != INFINIBAND:
        parser.error("--root must lie inside .1.3.6.1.3.117, the subtree ibsnmp registers")
    with tempfile.TemporaryDirectory(prefix="ibsnmp-bench-agentx-") as tmp, Processes() as procs:
        directory = Path(tmp)
        ports = {"master": free_udp_port(), "c-master": free_udp_port()}
        masters = {name: start_snmpd(procs, name,
                                     ["-c", str(master_config(directory, name, port))]).pid
                   for name, port in ports.items()}
        agent, udp_port, _ = start_ibsnmp(procs, args.fabric,
                                          extra=["--agentx", str(directory / "master")])
        wait_for_subtree(ports["master"], INFINIBAND)
        with SnmpClient(udp_port, timeout=10.0) as client:
            varbinds = list(client.walk(root))
        sub_conf = directory / "c-subagent.conf"
        sub_conf.write_text("\n".join([f"agentXSocket {directory / 'c-master'}",
                                       *(nearest_override_line(*v) for v in varbinds)]) + "\n")
        loading = time.monotonic()
        c_subagent = procs.start("snmpd -X", [
            SNMPD, "-f", "-Lo", "-X", "-C", "-c", str(sub_conf), "-M", "/nonexistent", "-m", "",
            "-I", "override"], env=NO_MIBS)
        wait_for_walk(ports["c-master"], root, len(varbinds), timeout=1800)
        print(f"the C subagent served {len(varbinds):,} overrides after "
              f"{time.monotonic() - loading:.0f} s", flush=True)
        paths = {"ibsnmp": (ports["master"], agent.pid, masters["master"]),
                 "c": (ports["c-master"], c_subagent.pid, masters["c-master"]),
                 "udp": (udp_port, agent.pid, None)}
        rates: dict[str, list[float]] = {name: [] for name in paths}
        cpu: dict[str, list[float]] = {name: [] for name in paths}
        master_cpu: dict[str, list[float]] = {name: [] for name in paths}
        for round_number in range(args.rounds):
            order = list(paths)
            order = order[round_number % 3:] + order[:round_number % 3]
            for name in order:
                port, server, master = paths[name]
                before = cpu_seconds(server), cpu_seconds(master) if master else 0.0
                count, seconds = walk(port, root)
                if count != len(varbinds):
                    raise RuntimeError(f"the {name} walk has {count} varbinds, not "
                                       f"{len(varbinds)}")
                cpu[name].append((cpu_seconds(server) - before[0]) / count * 1e6)
                if master:
                    master_cpu[name].append((cpu_seconds(master) - before[1]) / count * 1e6)
                rates[name].append(count / seconds)
    rate = {name: median(values) for name, values in rates.items()}
    us = {name: median(values) for name, values in cpu.items()}
    ratio = rate["ibsnmp"] / rate["c"]
    print(f"fabric {args.fabric}: {len(varbinds):,} varbinds under .{args.root.strip('.')}, "
          f"{args.rounds} rounds, medians")
    print(f"  ibsnmp over UDP:                       {rate['udp']:10,.0f} varbinds/s  "
          f"({us['udp']:.1f} us ibsnmp CPU per varbind)")
    for name, label in (("ibsnmp", "ibsnmp subagent"), ("c", "net-snmp's C subagent")):
        print(f"  through snmpd, {label + ':':24s}{rate[name]:10,.0f} varbinds/s  "
              f"({us[name]:.1f} us subagent CPU, {median(master_cpu[name]):.1f} us master CPU "
              f"per PDU)")
    print(f"  the first walk through ibsnmp (nothing kept yet): {rates['ibsnmp'][0]:,.0f} "
          f"varbinds/s, {cpu['ibsnmp'][0]:.1f} us CPU per PDU; the C subagent's first: "
          f"{rates['c'][0]:,.0f} varbinds/s, {cpu['c'][0]:.1f} us")
    print(f"  ibsnmp / C subagent, walk rate:        {ratio:10.2f}  (target >= {RATE_TARGET:.1f}: "
          f"{'met' if ratio >= RATE_TARGET else 'NOT met'})")
    print(f"  ibsnmp CPU per AgentX PDU:             {us['ibsnmp']:10.1f}  us (target <= "
          f"{CPU_TARGET_US:.0f}: {'met' if us['ibsnmp'] <= CPU_TARGET_US else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

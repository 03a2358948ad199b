#!/usr/bin/env python3
"""ibsnmp benchmark: a walk through net-snmp's snmpd as AgentX master vs UDP.

    .venv/bin/python bench/agentx.py            # 3 rounds, about a minute on 2 cores
    .venv/bin/python bench/agentx.py --rounds 1 --fabric single

One ibsnmp process serves UDP (--listen) and is a subagent of snmpd
(--agentx, snmpd's `master agentx` on a socket of the bench's own). The
InfiniBand subtree is walked with `snmpbulkwalk -v2c -Cr50 -On -OQ` both
ways, alternating which goes first each round, and the varbinds per second
(median of the rounds) are compared, with ibsnmp's CPU time per varbind on
each path. Then, with the subagent stopped, snmpd's walk of its own
1.3.6.1.2.1 (mib-2) gives its speed without a subagent. Everything binds
127.0.0.1 only, on free ports, and is stopped before the script exits.
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
    Processes,
    SnmpClient,
    SnmpError,
    cpu_seconds,
    free_udp_port,
    median,
    start_ibsnmp,
)

INFINIBAND = (1, 3, 6, 1, 3, 117)
MIB_2 = (1, 3, 6, 1, 2, 1)
SNMPD = "/usr/sbin/snmpd"
NO_MIBS = {**os.environ, "MIBS": "", "MIBDIRS": "/nonexistent", "SNMPCONFPATH": "/nonexistent"}


def snmpd_config(directory: Path, port: int) -> Path:
    conf = directory / "snmpd.conf"
    conf.write_text("\n".join([
        "master agentx", f"agentXSocket {directory / 'master'}",
        f"agentaddress udp:{LOCALHOST}:{port}", f"rocommunity public {LOCALHOST}"]) + "\n")
    return conf


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
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ibsnmp-bench-agentx-") as tmp, Processes() as procs:
        directory = Path(tmp)
        master_port = free_udp_port()
        conf = snmpd_config(directory, master_port)
        snmpd = procs.start("snmpd", [SNMPD, "-f", "-Lo", "-C", "-c", str(conf),
                                      "-M", "/nonexistent", "-m", ""], env=NO_MIBS)
        snmpd.wait_for_line(r"NET-SNMP version", 30)
        agent, udp_port, _ = start_ibsnmp(procs, args.fabric,
                                          extra=["--agentx", str(directory / "master")])
        wait_for_subtree(master_port, INFINIBAND)
        rates: dict[str, list[float]] = {"udp": [], "agentx": []}
        cpu: dict[str, list[float]] = {"udp": [], "agentx": []}
        counts: dict[str, int] = {}
        for round_number in range(args.rounds):
            order = [("udp", udp_port), ("agentx", master_port)]
            if round_number % 2:
                order.reverse()
            for name, port in order:
                before = cpu_seconds(agent.pid)
                count, seconds = walk(port, INFINIBAND)
                cpu[name].append((cpu_seconds(agent.pid) - before) / count * 1e6)
                rates[name].append(count / seconds)
                counts[name] = count
        if counts["udp"] != counts["agentx"]:
            raise RuntimeError(f"the walks differ in length: {counts}")
        procs.stop(agent)  # snmpd alone now: its own speed, no subagent
        own = [walk(master_port, MIB_2) for _ in range(args.rounds)]
        own_count = own[0][0]
        own_rate = median([count / seconds for count, seconds in own])
    udp, agentx = median(rates["udp"]), median(rates["agentx"])
    print(f"fabric {args.fabric}: {counts['udp']} varbinds under .1.3.6.1.3.117, "
          f"{args.rounds} rounds, medians")
    print(f"  ibsnmp over UDP:           {udp:10,.0f} varbinds/s  "
          f"({median(cpu['udp']):.1f} us ibsnmp CPU per varbind)")
    print(f"  through snmpd (AgentX):    {agentx:10,.0f} varbinds/s  "
          f"({median(cpu['agentx']):.1f} us ibsnmp CPU per varbind)")
    print(f"  snmpd's own mib-2 walk:    {own_rate:10,.0f} varbinds/s  ({own_count} varbinds, "
          f"no subagent)")
    print(f"  AgentX / UDP:              {agentx / udp:10.2f}")
    print(f"  AgentX / snmpd's own walk: {agentx / own_rate:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

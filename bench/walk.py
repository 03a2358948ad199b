#!/usr/bin/env python3
"""ibsnmp benchmark: walk throughput against snmpsim (and net-snmp snmpd),
GETNEXT latency near the end of a large table, start-up time and memory.

    .venv/bin/python bench/walk.py            # the whole benchmark, < ~10 min on 2 cores
    .venv/bin/python bench/walk.py --quick    # fewer repetitions, no 200k walk
    .venv/bin/python bench/walk.py --v3-only  # only the v3 authPriv walks (and their peers)

Every figure that has a target is a ratio against a peer measured in the
same run, or an absolute limit (memory, start-up). Measurements are
interleaved (the order alternates each round) and repeated; medians are
reported. Every process started here listens on 127.0.0.1 only, on free
ports, and is stopped before the script exits.

1. Walk throughput. ibsnmp's IB-SM-MIB port info table (.1.3.6.1.3.117.7.1.3)
   is recorded to a .snmprec file, snmpsim serves that file, and all are
   walked with `snmpbulkwalk -v2c -Cr50 -On -OQ` at ~20,000, ~60,000 and
   ~200,000 varbinds, after checking that every walk returns the same OIDs
   and values. Servers: ibsnmp (fast read path on, the default), the same
   agent with `[limits] fast_path = false` (every request through pysnmp,
   up to --pysnmp-max varbinds), snmpsim, and net-snmp's snmpd serving the
   same varbinds (one `override` line each, up to --snmpd-max), and at
   ~20k and ~200k snmpd serving the same rows through its table helper
   (`table` and `add_row` lines, see snmpd_table.py; target at ~200k:
   ibsnmp >= 5x). Each walk also reads the server's CPU time from
   /proc/<pid>/stat (CPU per varbind) and its VmRSS. At ~20k, SNMPv3
   authPriv (SHA-256/AES-128) walks compare ibsnmp with the agent through
   pysnmp (target >= 10x) and with snmpd.
2. GETNEXT a few rows before the end of the port info table, on a small
   fabric and on a ~10,000-node fabric, over a raw UDP socket: the agent's
   CPU per request (the per-request cost, target <= 1.2x) and the round
   trip, in blocks that alternate between the two agents.
3. Start-up time (process start to the 'ibsnmp: serving' line) and VmRSS at
   10,000 nodes.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    END_OF_MIB_VIEW,
    LOCALHOST,
    ROOT,
    VENV_BIN,
    Oid,
    Proc,
    Processes,
    SnmpClient,
    Varbind,
    check_decoder,
    cpu_seconds,
    decode_response,
    free_udp_port,
    median,
    oid_text,
    parse_oid,
    snmpd_override_line,
    snmprec_line,
    start_ibsnmp,
    vm_status,
    wait_until_answers,
)
from snmpd_table import TableConfigError, table_config, table_shape, view_lines  # noqa: E402

PORT_INFO_TABLE = parse_oid(".1.3.6.1.3.117.7.1.3")  # IB-SM-MIB::ibSmPortInfo: only the table
PORT_INFO_ENTRY = PORT_INFO_TABLE + (1, 1)  # ibSmPortInfoEntry; its columns are .<col>.<index>
PORT_INFO_TABLE_NAME = "ibSmPortInfoTable"  # .1.3.6.1.3.117.7.1.3.1, for snmpd's `table`

SMALL_WALK_FABRIC = "fat-tree:spines=3,leaves=8,hosts=6"  # ~21,000 port info varbinds
MID_WALK_FABRIC = "fat-tree:spines=8,leaves=20,hosts=14"  # ~63,000 port info varbinds
LARGE_WALK_FABRIC = "fat-tree:spines=11,leaves=44,hosts=36"  # ~209,000 port info varbinds
SMALL_FABRIC = "fat-tree:spines=2,leaves=4,hosts=4"  # 22 nodes
LARGE_FABRIC = "fat-tree:spines=18,leaves=72,hosts=138"  # 10,026 nodes

WALK_TARGET = 20.0  # ibsnmp varbinds/s >= 20 x snmpsim's
SNMPD_TARGET = 1.3  # ... and >= 1.3 x snmpd's serving the same varbinds as `override`s
# Server CPU per varbind against snmpd's in the same run (median of paired rounds).
SNMPD_CPU_TARGET = 0.5  # v2c: at most half snmpd's
SNMPD_V3_CPU_TARGET = 0.7  # v3 authPriv
TABLE_TARGET = 5.0  # ... and >= 5 x snmpd's table helper (`table`/`add_row`) at ~200k
V3_TARGET = 10.0  # v3 authPriv walk >= 10 x the same agent with every request through pysnmp
LATENCY_TARGET = 1.2  # GETNEXT agent CPU at 10k nodes <= 1.2 x the small fabric's
RSS_TARGET_MB = 150.0
STARTUP_TARGET_S = 3.0

SNMPD_MAX_VARBINDS = 70_000  # snmpd loads `override`s in quadratic time: 200k take > 15 min
SNMPD_START_TIMEOUT = 400.0
TABLE_VIEW = "recorded"  # the VACM view that leaves out what the recording lacks
# snmpd's `table` reads the table's definition from these (the MIB sources).
TABLE_MIBDIRS = (ROOT / "ibsnmp" / "mib_sources", ROOT / "ibsnmp" / "mib_sources" / "base")
TABLE_MIBS = "IB-SM-MIB"

# SNMPv3 authPriv: the same user on ibsnmp and snmpd (SHA-256, AES-128).
V3_USER, V3_AUTH, V3_PRIV = "benchuser", "bench-auth-pass", "bench-priv-pass"
V3_ARGS = ["-v3", "-l", "authPriv", "-u", V3_USER, "-a", "SHA-256", "-A", V3_AUTH, "-x", "AES",
           "-X", V3_PRIV]
IBSNMP_CONFIG = f"""
[[user]]
name = "{V3_USER}"
auth = "SHA256"
auth_key = "{V3_AUTH}"
priv = "AES"
priv_key = "{V3_PRIV}"
[limits]
fast_path = {{fast_path}}
"""
WALK_TIMEOUT = 240.0  # one snmpbulkwalk, at least
WALK_TIMEOUT_RATE = 250.0  # ... or its varbinds at this many per second


class BenchError(RuntimeError):
    """A check failed: the figures would not compare like with like."""


# -- output ---------------------------------------------------------------------------------


def say(text: str = "") -> None:
    print(text, flush=True)


def fmt_rate(value: float) -> str:
    return f"{value:,.0f}"


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else "PASS" if ok else "FAIL"


@dataclass
class Row:
    """One line of the summary table."""

    measure: str
    ibsnmp: str
    peer: str = ""
    ratio: str = ""
    target: str = ""
    result: str = ""


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *args: str, **kwargs: str) -> None:
        self.rows.append(Row(*args, **kwargs))

    def markdown(self) -> str:
        head = ("| measurement | ibsnmp | peer | ratio | target | result |\n"
                "|---|---:|---:|---:|---|---|")
        lines = [head]
        for r in self.rows:
            lines.append(f"| {r.measure} | {r.ibsnmp} | {r.peer} | {r.ratio} | {r.target} "
                         f"| {r.result} |")
        return "\n".join(lines)


class Budget:
    """Wall-clock budget of the whole run: repetitions stop early when it runs out."""

    def __init__(self, seconds: float) -> None:
        self.start = time.monotonic()
        self.seconds = seconds

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def left(self) -> float:
        return self.seconds - self.elapsed()


# -- part 1: walk throughput ------------------------------------------------------------------


@dataclass
class Server:
    name: str
    port: int
    proc: Proc
    rates: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    cpu_per_varbind: list[float] = field(default_factory=list)  # server CPU seconds
    v3_rates: list[float] = field(default_factory=list)
    v3_cpu_per_varbind: list[float] = field(default_factory=list)
    speaks_v3: bool = False

    def rss_mb(self) -> float:
        return vm_status(self.proc.pid).get("VmRSS", 0) / 1024


def snmpd_access(view: str | None = None) -> str:
    """snmpd.conf lines for the bench's community and v3 user (limited to `view`)."""
    limit = f" -V {view}" if view else ""
    return (f"rocommunity public {LOCALHOST}{limit}\n"
            "dontLogTCPWrappersConnects yes\n"
            f'createUser {V3_USER} SHA-256 "{V3_AUTH}" AES "{V3_PRIV}"\n'
            f"rouser {V3_USER} priv{limit}\n")


def record(port: int, root: Oid, snmprec: Path, snmpd_conf: Path | None,
           limit: int = 2_000_000) -> tuple[int, int, str | None, list[Varbind]]:
    """Walk `root` on ibsnmp and write the .snmprec (and snmpd.conf) of it.

    The first varbind after the subtree is written too, so that every agent
    ends the walk the same way (on an OID outside the subtree, not on
    endOfMibView). Returns (varbinds in the subtree, snmpd override lines,
    why snmpd cannot serve them or None, the varbinds written).
    """
    count = 0
    overrides = 0
    problem: str | None = None
    with SnmpClient(port, timeout=10.0) as client, open(snmprec, "w", encoding="ascii") as rec:
        conf = open(snmpd_conf, "w", encoding="ascii") if snmpd_conf else None
        try:
            if conf:
                conf.write(snmpd_access())
            varbinds = list(client.walk(root, limit=limit))
            after = client.get_next(varbinds[-1][0]) if varbinds else None
            if after is not None and after[1] != END_OF_MIB_VIEW:
                varbinds.append(after)
            for oid, tag, value in varbinds:
                rec.write(snmprec_line(oid, tag, value) + "\n")
                if conf and problem is None:
                    line = snmpd_override_line(oid, tag, value)
                    if line is None:
                        problem = (f"`override` has no type for {oid_text(oid)} "
                                   f"(BER type 0x{tag:02x})")
                    else:
                        conf.write(line + "\n")
                        overrides += 1
                if oid[: len(root)] == root:
                    count += 1
        finally:
            if conf:
                conf.close()
    if count == 0:
        raise BenchError(f"ibsnmp returned nothing under {oid_text(root)}")
    return count, overrides, problem, varbinds


@dataclass
class TablePeer:
    """snmpd's table helper serving a recording: what its snmpd.conf holds."""

    rows: int
    cells: int
    view_entries: int  # excluded subtrees (snmpd checks each varbind against them)


def write_table_conf(path: Path, varbinds: list[Varbind], root: Oid, count: int) -> TablePeer:
    """An snmpd.conf serving the recorded table from `table`/`add_row` lines
    (the varbind after the subtree from one `override`); raises
    TableConfigError if snmpd's table helper cannot serve it as recorded."""
    shape = table_shape(PORT_INFO_TABLE_NAME)
    config = table_config(shape, varbinds)
    if config.cells != count:
        raise TableConfigError(f"{count - config.cells:,} of the {count:,} varbinds under "
                               f"{oid_text(root)} are outside {shape.name}")
    lines = [snmpd_access(TABLE_VIEW), *view_lines(TABLE_VIEW, config.hidden), *config.lines]
    after = varbinds[-1] if varbinds and varbinds[-1][0][: len(root)] != root else None
    if after is not None:
        line = snmpd_override_line(*after)
        if line is None:
            raise TableConfigError(f"`override` has no type for {oid_text(after[0])}")
        lines.append(line)
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    return TablePeer(config.rows, config.cells, len(config.hidden))


def start_snmpsim(procs: Processes, data_dir: Path, cache_dir: Path, root: Oid) -> Server:
    port = free_udp_port()
    argv = [str(VENV_BIN / "snmpsim-command-responder"), f"--data-dir={data_dir}",
            f"--cache-dir={cache_dir}", f"--agent-udpv4-endpoint={LOCALHOST}:{port}",
            # Per-request log lines at the default (info) level would slow it down.
            "--log-level=error"]
    env = dict(os.environ)
    if os.geteuid() == 0:
        env["SNMPSIM_ALLOW_ROOT"] = "true"  # it refuses root otherwise (drops to a user)
    proc = procs.start("snmpsim", argv, env=env)
    wait_until_answers(port, root, timeout=300.0, proc=proc)  # builds its index first
    return Server("snmpsim", port, proc)


def start_snmpd(procs: Processes, conf: Path, persist: Path, root: Oid, name: str = "snmpd",
                table: bool = False) -> tuple[Server, float]:
    """snmpd on `conf`; `table`: with the MIB its `table` lines need, and
    failing on any warning of the config reader (a row it did not add)."""
    snmpd = shutil.which("snmpd") or "/usr/sbin/snmpd"
    port = free_udp_port()
    env = dict(os.environ, SNMP_PERSISTENT_DIR=str(persist), MIBS="")
    if table:
        env.update(MIBDIRS=":".join(map(str, TABLE_MIBDIRS)), MIBS=TABLE_MIBS)
    # -C: only this config file; -I -smux: no SMUX listener on 0.0.0.0:199.
    argv = [snmpd, "-f", "-Lo", "-C", "-c", str(conf), "-I", "-smux", f"udp:{LOCALHOST}:{port}"]
    start = time.monotonic()
    proc = procs.start(name, argv, env=env)
    try:
        wait_until_answers(port, root, timeout=SNMPD_START_TIMEOUT, proc=proc)
        seconds = time.monotonic() - start
        if table:
            proc.wait_for_line(r"^NET-SNMP version", 10.0)  # printed once the config is read
            complaints = [line for _, line in list(proc.lines)
                          if re.search(r": line \d+: (Warning|Error)|Cannot find module", line)]
            if complaints:
                raise BenchError(f"{name} did not read {conf.name} cleanly: {len(complaints)} "
                                 "complaints, the first: " + " | ".join(complaints[:3]))
    except BaseException:
        procs.stop(proc)
        raise
    return Server(name, port, proc), seconds


def bulkwalk(port: int, root: Oid, out: Path, v3: bool = False,
             expected: int = 0) -> tuple[float, int]:
    """One timed `snmpbulkwalk` (v2c, or v3 authPriv); returns (seconds, varbinds under root).

    The time limit grows with the walk: snmpsim walks ~1,000 varbinds/s here.
    """
    security = V3_ARGS if v3 else ["-v2c", "-c", "public"]
    argv = ["snmpbulkwalk", *security, "-Cr50", "-On", "-OQ", "-t", "5", "-r", "2",
            f"{LOCALHOST}:{port}", oid_text(root)]
    with open(out, "wb") as fh:
        start = time.perf_counter()
        done = subprocess.run(argv, stdout=fh, stderr=subprocess.PIPE,
                              timeout=max(WALK_TIMEOUT, expected / WALK_TIMEOUT_RATE))
        seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise BenchError(f"snmpbulkwalk on port {port} failed ({done.returncode}): "
                         f"{done.stderr.decode(errors='replace').strip()}")
    return seconds, len(walk_oids(out, root))


def walk_oids(path: Path, root: Oid) -> list[str]:
    """The OIDs of an `-On -OQ` walk output (continuation lines skipped)."""
    prefix = oid_text(root) + "."
    oids: list[str] = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith(prefix):
                oid, sep, _ = line.partition(" = ")
                if sep:
                    oids.append(oid)
    return oids


def compare_walks(reference: Path, other: Path, root: Oid, names: tuple[str, str]) -> str:
    """Raise unless both walks list the same OIDs; say whether values match too."""
    ref_oids, oth_oids = walk_oids(reference, root), walk_oids(other, root)
    if len(ref_oids) != len(oth_oids):
        raise BenchError(f"{names[0]} walked {len(ref_oids)} varbinds, {names[1]} "
                         f"{len(oth_oids)}: not the same data")
    if ref_oids != oth_oids:
        first = next(i for i, (a, b) in enumerate(zip(ref_oids, oth_oids)) if a != b)
        raise BenchError(f"{names[0]} and {names[1]} differ at varbind {first}: "
                         f"{ref_oids[first]} vs {oth_oids[first]}")
    ref_text = reference.read_bytes().splitlines()
    oth_text = other.read_bytes().splitlines()
    differing = sum(1 for a, b in zip(ref_text, oth_text) if a != b)
    differing += abs(len(ref_text) - len(oth_text))
    if differing:
        return f"same {len(ref_oids):,} OIDs, {differing} output lines differ in value"
    return f"same {len(ref_oids):,} OIDs and values"


def _ibsnmp_config(path: Path, fast_path: bool) -> list[str]:
    path.write_text(IBSNMP_CONFIG.format(fast_path=str(fast_path).lower()), encoding="ascii")
    return ["--config", str(path)]


def timed_walk(server: Server, root: Oid, out: Path, count: int, v3: bool = False) -> float:
    """One walk of `server`, checked for `count` varbinds; returns its seconds."""
    cpu_before = cpu_seconds(server.proc.pid)
    seconds, got = bulkwalk(server.port, root, out, v3=v3, expected=count)
    if got != count:
        raise BenchError(f"{server.name} walked {got:,} varbinds, recorded {count:,}")
    if v3:
        server.v3_rates.append(got / seconds)
        server.v3_cpu_per_varbind.append((cpu_seconds(server.proc.pid) - cpu_before) / got)
    else:
        server.cpu_per_varbind.append((cpu_seconds(server.proc.pid) - cpu_before) / got)
        server.seconds.append(seconds)
        server.rates.append(got / seconds)
    return seconds


def walk_size(label: str, fabric: str, args: argparse.Namespace, budget: Budget,
              procs: Processes, work: Path, report: Report, *, rounds: int,
              with_snmpd: bool, snmpd_loads: list[tuple[int, float]],
              v3_rounds: int = 0, with_table: bool = False, v3_only: bool = False) -> None:
    root = PORT_INFO_TABLE
    say(f"\n== walk {label}: IB-SM-MIB port info table {oid_text(root)}, "
        f"fabric {fabric} ==")
    size_dir = work / f"walk-{label}"
    data_dir = size_dir / "data"
    data_dir.mkdir(parents=True)
    started: list[Proc] = []
    try:
        ib_proc, ib_port, _ = start_ibsnmp(
            procs, fabric, seed=args.seed, extra=_ibsnmp_config(size_dir / "fast.toml", True))
        started.append(ib_proc)
        check_decoder(ib_port, root)
        snmprec = data_dir / "public.snmprec"
        conf = size_dir / "snmpd.conf" if with_snmpd else None
        t0 = time.monotonic()
        count, overrides, snmpd_problem, varbinds = record(ib_port, root, snmprec, conf)
        say(f"recorded {count:,} varbinds (+1 past the end) from ibsnmp to {snmprec.name} "
            f"in {time.monotonic() - t0:.1f} s")
        servers = [Server("ibsnmp", ib_port, ib_proc, speaks_v3=True)]
        if count <= args.pysnmp_max:
            # The same agent with every request through pysnmp: the path before the fast one.
            slow_proc, slow_port, _ = start_ibsnmp(
                procs, fabric, seed=args.seed, name="ibsnmp-pysnmp",
                extra=_ibsnmp_config(size_dir / "slow.toml", False))
            started.append(slow_proc)
            servers.append(Server("ibsnmp-pysnmp", slow_port, slow_proc, speaks_v3=True))
        if not v3_only:
            sim = start_snmpsim(procs, data_dir, size_dir / "cache", root)
            started.append(sim.proc)
            servers.append(sim)
        if with_snmpd and snmpd_problem:
            say(f"snmpd: not measured: {snmpd_problem}")
            report.notes.append(f"snmpd at {label}: not measured: {snmpd_problem}")
        elif with_snmpd and count > args.snmpd_max:
            loaded = snmpd_loads[-1] if snmpd_loads else None
            why = (f"{count:,} `override` lines are over --snmpd-max {args.snmpd_max:,}: snmpd "
                   "registers each one in its sorted list of subtrees, so loading grows with "
                   "the square of their number")
            if loaded:
                estimate = loaded[1] * (count / loaded[0]) ** 2
                why += (f" ({loaded[0]:,} took {loaded[1]:.1f} s here, so at least "
                        f"~{estimate:.0f} s to start)")
            say(f"snmpd: not measured: {why}")
            report.notes.append(f"snmpd at {label}: not measured: {why}")
        elif with_snmpd:
            try:
                snmpd, snmpd_start = start_snmpd(procs, conf, size_dir / "snmpd-persist", root)
                snmpd.speaks_v3 = True
                started.append(snmpd.proc)
                servers.append(snmpd)
                snmpd_loads.append((overrides, snmpd_start))
                say(f"snmpd answers with {overrides:,} `override` lines after {snmpd_start:.1f} s")
            except (BenchError, TimeoutError, RuntimeError, OSError) as exc:
                say(f"snmpd: not measured: {exc}")
                report.notes.append(f"snmpd at {label}: not measured "
                                    f"({str(exc).splitlines()[0]})")
        if with_snmpd and with_table:
            table_peers = start_table_peer(procs, size_dir, varbinds, root, count, label, report)
            started.extend(peer.proc for peer in table_peers)
            servers.extend(table_peers)
        del varbinds

        # Timed rounds, the order rotating each round. The first round's
        # outputs are checked: every server must walk the same OIDs as ibsnmp.
        outputs = {s.name: size_dir / f"{s.name}.walk" for s in servers}
        done_rounds = 0
        for rnd in range(rounds):
            expect = sum(s.seconds[-1] if s.seconds else 0.0 for s in servers)
            if done_rounds >= 1 and budget.left() < expect * 1.2 + args.reserve:
                say(f"(time budget: stopping after {done_rounds} rounds)")
                break
            order = servers[rnd % len(servers):] + servers[: rnd % len(servers)]
            parts = []
            for server in order:
                seconds = timed_walk(server, root, outputs[server.name], count)
                parts.append(f"{server.name} {fmt_rate(count / seconds)}/s ({seconds:.2f} s, "
                             f"{server.cpu_per_varbind[-1] * 1e6:.1f} us CPU/varbind)")
            if rnd == 0:
                for server in servers[1:]:
                    same = compare_walks(outputs["ibsnmp"], outputs[server.name], root,
                                         ("ibsnmp", server.name))
                    say(f"check ibsnmp vs {server.name}: {same}")
            done_rounds += 1
            say(f"round {rnd + 1}: " + ", ".join(parts))
        speakers = [s for s in servers if s.speaks_v3]
        if v3_only and len(speakers) > 1:
            # Untimed: what the v2c rounds do in a whole run (ibsnmp's first walk of
            # a snapshot fills its walk cache; every timed round finds it filled).
            for server in speakers:
                bulkwalk(server.port, root, size_dir / f"{server.name}.v3walk", v3=True,
                         expected=count)
        for rnd in range(v3_rounds if len(speakers) > 1 else 0):
            if rnd >= 1 and budget.left() < args.reserve * 2:
                break
            order = speakers if rnd % 2 == 0 else speakers[::-1]
            for server in order:
                timed_walk(server, root, size_dir / f"{server.name}.v3walk", count, v3=True)
            if rnd == 0:
                for server in speakers[1:]:
                    same = compare_walks(size_dir / "ibsnmp.v3walk",
                                         size_dir / f"{server.name}.v3walk", root,
                                         ("ibsnmp", server.name))
                    say(f"check ibsnmp vs {server.name}, v3 authPriv: {same}")
            say(f"v3 authPriv round {rnd + 1}: " + ", ".join(
                f"{s.name} {fmt_rate(s.v3_rates[-1])}/s" for s in speakers))
        _report_walks(label, count, servers, report)
    finally:
        for proc in reversed(started):
            procs.stop(proc)


def start_table_peer(procs: Processes, size_dir: Path, varbinds: list[Varbind], root: Oid,
                     count: int, label: str, report: Report) -> list[Server]:
    """snmpd serving the recording through its table helper ([] if it cannot)."""
    conf = size_dir / "snmpd-table.conf"
    try:
        t0 = time.monotonic()
        peer = write_table_conf(conf, varbinds, root, count)
        written = time.monotonic() - t0
        server, start = start_snmpd(procs, conf, size_dir / "snmpd-table-persist", root,
                                    name="snmpd-table", table=True)
    except (TableConfigError, BenchError, TimeoutError, RuntimeError, OSError) as exc:
        say(f"snmpd-table: not measured: {exc}")
        report.notes.append(f"snmpd-table at {label}: not measured "
                            f"({str(exc).splitlines()[0]})")
        return []
    say(f"snmpd-table answers with {peer.rows:,} `add_row` lines ({peer.cells:,} cells; its "
        f"view excludes {peer.view_entries} subtrees the recording lacks) after {start:.2f} s "
        f"(config written in {written:.1f} s)")
    report.add(f"snmpd-table start, {peer.rows:,} rows = {count:,} varbinds, s", "",
               f"{start:.2f}", "", "(info)", "")
    return [server]


def _target(peer: str, label: str) -> float | None:
    """The ratio ibsnmp/peer targeted at this size (None: information only)."""
    if peer == "snmpsim":
        return WALK_TARGET
    if peer == "snmpd" and label != "~200k":
        return SNMPD_TARGET
    if peer == "snmpd-table" and label == "~200k":
        return TABLE_TARGET
    return None


def _report_walks(label: str, count: int, servers: list[Server], report: Report) -> None:
    ib = servers[0]
    for peer in servers[1:]:
        paired = [a / b for a, b in zip(ib.rates, peer.rates)]
        if not paired:
            continue
        ratio = median(paired)
        target = _target(peer.name, label)
        ok = ratio >= target if target is not None else None
        say(f"{label}: ibsnmp {fmt_rate(median(ib.rates))} varbinds/s, {peer.name} "
            f"{fmt_rate(median(peer.rates))} varbinds/s, ratio ibsnmp/{peer.name} "
            f"{ratio:.2f} (median of {len(paired)} paired rounds)"
            + (f" -> target >= {target}x: {verdict(ok)}" if target is not None else ""))
        report.add(f"v2c bulkwalk {count:,} varbinds, vs {peer.name} (varbinds/s)",
                   fmt_rate(median(ib.rates)), fmt_rate(median(peer.rates)),
                   f"{ratio:.2f}x", f">= {target}x" if target is not None else "(info)",
                   verdict(ok))
    by_name = {s.name: s for s in servers}
    if "snmpd" in by_name and "snmpd-table" in by_name:
        table, override = by_name["snmpd-table"], by_name["snmpd"]
        cross = median([a / b for a, b in zip(table.rates, override.rates)])
        say(f"{label}: cross-check: snmpd-table walks at {cross:.2f}x the rate of snmpd "
            f"serving the same varbinds as `override`s")
        report.add(f"v2c bulkwalk {count:,} varbinds, snmpd-table vs snmpd (varbinds/s)",
                   "", f"{fmt_rate(median(table.rates))} / {fmt_rate(median(override.rates))}",
                   f"{cross:.2f}x", "(info)", "")
    for server in servers:
        if server.cpu_per_varbind:
            cpu = median(server.cpu_per_varbind) * 1e6
            rss = server.rss_mb()
            say(f"{label}: {server.name}: {cpu:.1f} us server CPU per varbind (median), "
                f"VmRSS {rss:.1f} MB")
            report.add(f"server CPU per varbind at {count:,}, us ({server.name})", f"{cpu:.1f}",
                       "", "", "(info)", "")
            report.add(f"VmRSS after the walks at {count:,}, MB ({server.name})", f"{rss:.1f}",
                       "", "", "(info)", "")
    for peer in servers[1:]:
        _report_cpu(label, count, ib, peer, report)
    v3_peers = [s for s in servers[1:] if s.v3_rates]
    for peer in v3_peers:
        ratio = median([a / b for a, b in zip(ib.v3_rates, peer.v3_rates)])
        # The v3 target is against the agent before the fast path (every request via pysnmp).
        target = V3_TARGET if peer.name == "ibsnmp-pysnmp" else None
        ok = ratio >= target if target is not None else None
        say(f"{label}: v3 authPriv ibsnmp {fmt_rate(median(ib.v3_rates))} varbinds/s, "
            f"{peer.name} {fmt_rate(median(peer.v3_rates))}: ratio {ratio:.2f}"
            + (f" -> target >= {target}x: {verdict(ok)}" if target is not None else ""))
        report.add(f"v3 authPriv bulkwalk {count:,} varbinds, vs {peer.name} (varbinds/s)",
                   fmt_rate(median(ib.v3_rates)), fmt_rate(median(peer.v3_rates)),
                   f"{ratio:.2f}x", f">= {target}x" if target is not None else "(info)",
                   verdict(ok))
    for server in servers:
        if server.v3_cpu_per_varbind:
            cpu = median(server.v3_cpu_per_varbind) * 1e6
            say(f"{label}: {server.name}: {cpu:.1f} us server CPU per varbind, v3 authPriv")
            report.add(f"server CPU per varbind at {count:,}, v3 authPriv, us ({server.name})",
                       f"{cpu:.1f}", "", "", "(info)", "")


def _report_cpu(label: str, count: int, ib: Server, peer: Server, report: Report) -> None:
    """ibsnmp's server CPU per varbind against snmpd's, v2c and v3 authPriv:
    the median of the rounds' ratios (each round walks both)."""
    if peer.name != "snmpd":
        return
    for kind, ours, theirs, target in (
            ("v2c", ib.cpu_per_varbind, peer.cpu_per_varbind, SNMPD_CPU_TARGET),
            ("v3 authPriv", ib.v3_cpu_per_varbind, peer.v3_cpu_per_varbind,
             SNMPD_V3_CPU_TARGET)):
        paired = [a / b for a, b in zip(ours, theirs) if b > 0]
        if not paired:
            continue
        ratio = median(paired)
        ok = ratio <= target
        say(f"{label}: {kind} server CPU per varbind, ibsnmp/snmpd {ratio:.2f} (median of "
            f"{len(paired)} paired rounds; each: {', '.join(f'{r:.2f}' for r in paired)}) "
            f"-> target <= {target}x: {verdict(ok)}")
        report.add(f"{kind} server CPU per varbind at {count:,}, vs snmpd (us)",
                   f"{median(ours) * 1e6:.1f}", f"{median(theirs) * 1e6:.1f}", f"{ratio:.2f}x",
                   f"<= {target}x", verdict(ok))


# -- part 2 and 3: GETNEXT latency, start-up, RSS -------------------------------------------------


@dataclass
class LatencyAgent:
    name: str
    fabric: str
    proc: Proc
    port: int
    startup: float
    rows: int = 0
    near_end: Oid = ()
    expect_end: Oid = ()
    near_start: Oid = ()
    expect_start: Oid = ()
    samples_end: list[float] = field(default_factory=list)
    samples_start: list[float] = field(default_factory=list)
    cpu_end: list[float] = field(default_factory=list)  # server CPU seconds per GETNEXT, a block's
    cpu_start: list[float] = field(default_factory=list)


def last_column(client: SnmpClient, entry: Oid) -> int:
    """The highest column of a table that has an instance (one GETNEXT per column)."""
    column = 0
    for _ in range(256):
        oid, _tag, _value = client.get_next(entry + (column + 1,))
        if oid[: len(entry)] != entry:
            break
        column = oid[len(entry)]
    if not column:
        raise BenchError(f"no row in {oid_text(entry)}")
    return column


def prepare_latency(agent: LatencyAgent, rows_back: int) -> None:
    """Walk the table's last column; pick an OID `rows_back` rows before its end."""
    with SnmpClient(agent.port, timeout=30.0) as client:
        column = last_column(client, PORT_INFO_ENTRY)
        col_oid = PORT_INFO_ENTRY + (column,)
        oids = [oid for oid, _t, _v in client.walk(col_oid, max_repetitions=50, limit=200_000)]
    if len(oids) < 2 * rows_back + 2:
        raise BenchError(f"{agent.name}: only {len(oids)} rows in {oid_text(col_oid)}")
    agent.rows = len(oids)
    agent.near_end, agent.expect_end = oids[-rows_back - 1], oids[-rows_back]
    agent.near_start, agent.expect_start = oids[rows_back - 1], oids[rows_back]


def getnext_block(client: SnmpClient, oid: Oid, expect: Oid, count: int,
                  samples: list[float]) -> None:
    """`count` GETNEXTs of one pre-encoded request, each timed send -> receive."""
    request_id = client.next_request_id()
    request = client.encode("next", [oid], request_id)
    sock = client.sock
    sock.settimeout(5.0)
    clock = time.perf_counter
    answer = b""
    for _ in range(count):
        start = clock()
        sock.send(request)
        answer = sock.recv(65535)
        samples.append(clock() - start)
    rid, status, _index, varbinds = decode_response(answer)
    if rid != request_id or status or not varbinds or varbinds[0][0] != expect:
        got = oid_text(varbinds[0][0]) if varbinds else "nothing"
        raise BenchError(f"GETNEXT {oid_text(oid)} answered {got} (status {status}), "
                         f"expected {oid_text(expect)}")


def latency_and_memory(args: argparse.Namespace, budget: Budget, procs: Processes,
                       report: Report) -> None:
    say(f"\n== GETNEXT latency {args.rows_back} rows before the end of the port info table, "
        f"start-up and memory ==")
    agents: list[LatencyAgent] = []
    try:
        for name, fabric in (("small", args.small_fabric), ("10k", args.large_fabric)):
            proc, port, startup = start_ibsnmp(procs, fabric, seed=args.seed)
            agent = LatencyAgent(name, fabric, proc, port, startup)
            agents.append(agent)
            if name == "10k":
                rss_start = vm_status(proc.pid)
        for agent in agents:
            t0 = time.monotonic()
            prepare_latency(agent, args.rows_back)
            say(f"{agent.name} ({agent.fabric}): {agent.rows:,} rows; walked the last column "
                f"in {time.monotonic() - t0:.1f} s; GETNEXT {oid_text(agent.near_end)}")

        with SnmpClient(agents[0].port) as c0, SnmpClient(agents[1].port) as c1:
            clients = [c0, c1]
            for agent, client in zip(agents, clients):  # warm-up
                getnext_block(client, agent.near_end, agent.expect_end, 50, [])
                getnext_block(client, agent.near_start, agent.expect_start, 20, [])
            deadline = time.monotonic() + args.latency_seconds
            for rnd in range(args.latency_rounds):
                if rnd >= 3 and time.monotonic() > deadline:
                    break
                pairs = list(zip(agents, clients))
                if rnd % 2:
                    pairs.reverse()
                for agent, client in pairs:
                    for oid, expect, count, samples, cpu in (
                            (agent.near_end, agent.expect_end, args.latency_block, agent.samples_end,
                             agent.cpu_end),
                            (agent.near_start, agent.expect_start, max(args.latency_block // 5, 1),
                             agent.samples_start, agent.cpu_start)):
                        before = cpu_seconds(agent.proc.pid)
                        getnext_block(client, oid, expect, count, samples)
                        cpu.append((cpu_seconds(agent.proc.pid) - before) / count)
        small, large = agents
        end_small, end_large = median(small.samples_end) * 1e6, median(large.samples_end) * 1e6
        start_small = median(small.samples_start) * 1e6
        start_large = median(large.samples_start) * 1e6
        # The per-request cost is the agent's CPU per GETNEXT; the round trip
        # adds the client's and the kernel's, and whatever else the shared
        # machine does meanwhile (identical runs moved by up to 2x here).
        cpu_small, cpu_large = median(small.cpu_end) * 1e6, median(large.cpu_end) * 1e6
        cpu_start_small, cpu_start_large = median(small.cpu_start) * 1e6, median(large.cpu_start) * 1e6
        ratio = cpu_large / cpu_small
        ok = ratio <= LATENCY_TARGET
        say(f"GETNEXT near the end, agent CPU per request: small {cpu_small:.0f} us ({small.rows:,} rows), "
            f"10k {cpu_large:.0f} us ({large.rows:,} rows), median of {len(small.cpu_end)} blocks each; "
            f"ratio 10k/small {ratio:.2f} -> target <= {LATENCY_TARGET}x: {verdict(ok)}")
        say(f"GETNEXT near the start, agent CPU (info): small {cpu_start_small:.0f} us, 10k "
            f"{cpu_start_large:.0f} us, ratio {cpu_start_large / cpu_start_small:.2f}")
        say(f"round trips (info): near the end small {end_small:.0f} us, 10k {end_large:.0f} us "
            f"({end_large / end_small:.2f}x); near the start {start_small:.0f} / {start_large:.0f} us")
        report.add(f"GETNEXT {args.rows_back} rows before the end of port info, agent CPU per request, "
                   f"median us (10k nodes vs {small.rows:,}-row fabric)",
                   f"{cpu_large:.0f}", f"{cpu_small:.0f}", f"{ratio:.2f}x",
                   f"<= {LATENCY_TARGET}x", verdict(ok))
        report.add(f"GETNEXT {args.rows_back} rows after the start of port info, agent CPU per request "
                   "(10k vs small)", f"{cpu_start_large:.0f}", f"{cpu_start_small:.0f}",
                   f"{cpu_start_large / cpu_start_small:.2f}x", "(info)", "")
        report.add("GETNEXT near the end, round trip median us (10k vs small)", f"{end_large:.0f}",
                   f"{end_small:.0f}", f"{end_large / end_small:.2f}x", "(info)", "")

        rss_after = vm_status(large.proc.pid)
        startups = [large.startup]
    finally:
        for agent in reversed(agents):
            procs.stop(agent.proc)

    # More cold starts of the 10k-node agent, for a median start-up time.
    for _ in range(args.starts - 1):
        if budget.left() < 20:
            break
        proc, _port, startup = start_ibsnmp(procs, args.large_fabric, seed=args.seed)
        try:
            startups.append(startup)
        finally:
            procs.stop(proc)
    startup = median(startups)
    ok_start = startup <= STARTUP_TARGET_S
    say(f"start-up at 10k nodes (process start -> 'ibsnmp: serving'): median {startup:.2f} s of "
        f"{len(startups)} ({', '.join(f'{s:.2f}' for s in startups)}) -> target <= "
        f"{STARTUP_TARGET_S:.0f} s: {verdict(ok_start)}")
    rss0, rss1 = rss_start["VmRSS"] / 1024, rss_after["VmRSS"] / 1024
    peak = rss_after.get("VmHWM", 0) / 1024
    ok0, ok1 = rss0 <= RSS_TARGET_MB, rss1 <= RSS_TARGET_MB
    say(f"VmRSS at 10k nodes: {rss0:.1f} MB right after start -> {verdict(ok0)}; "
        f"{rss1:.1f} MB after the GETNEXT test (peak VmHWM {peak:.1f} MB) -> {verdict(ok1)} "
        f"(target <= {RSS_TARGET_MB:.0f} MB)")
    report.add("start-up at 10k nodes, s (median)", f"{startup:.2f}", "", "",
               f"<= {STARTUP_TARGET_S:.0f} s", verdict(ok_start))
    report.add("VmRSS at 10k nodes right after start, MB", f"{rss0:.1f}", "", "",
               f"<= {RSS_TARGET_MB:.0f} MB", verdict(ok0))
    report.add("VmRSS at 10k nodes after the GETNEXT test, MB", f"{rss1:.1f}", "", "",
               f"<= {RSS_TARGET_MB:.0f} MB", verdict(ok1))
    report.add("VmHWM (peak RSS) at 10k nodes after the GETNEXT test, MB", f"{peak:.1f}",
               "", "", "(info)", "")


# -- main -------------------------------------------------------------------------------------------


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for package in ("ibsnmp", "pysnmp", "pyasn1", "snmpsim"):
        try:
            parts.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            parts.append(f"{package} (not installed)")
    try:
        out = subprocess.run(["snmpbulkwalk", "-V"], capture_output=True, text=True, timeout=10)
        parts.append(f"net-snmp {(out.stdout + out.stderr).strip().split()[-1]}")
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return ", ".join(parts)


def require_tools(need_snmpsim: bool) -> None:
    problems = []
    if need_snmpsim and (importlib.util.find_spec("snmpsim") is None
                         or not (VENV_BIN / "snmpsim-command-responder").exists()):
        problems.append("snmpsim is not installed in .venv: install the bench extra "
                        "(.venv/bin/pip install -e '.[bench]') or "
                        "`.venv/bin/pip install snmpsim==1.2.2`")
    if shutil.which("snmpbulkwalk") is None:
        problems.append("snmpbulkwalk (net-snmp) is not installed: apt-get install snmp")
    if not (VENV_BIN / "ibsnmp").exists():
        problems.append(f"{VENV_BIN / 'ibsnmp'} is missing: make setup")
    if problems:
        for problem in problems:
            print(f"bench/walk.py: {problem}", file=sys.stderr)
        raise SystemExit(2)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="fewer repetitions and no 200,000-varbind walk (a smoke test)")
    p.add_argument("--budget", type=float, default=1500.0,
                   help="seconds the whole run may take; repetitions stop early (default 1500)")
    p.add_argument("--reserve", type=float, default=60.0,
                   help="seconds kept for the later parts when deciding on another walk round")
    p.add_argument("--small-walk-fabric", default=SMALL_WALK_FABRIC)
    p.add_argument("--mid-walk-fabric", default=MID_WALK_FABRIC)
    p.add_argument("--large-walk-fabric", default=LARGE_WALK_FABRIC)
    p.add_argument("--small-fabric", default=SMALL_FABRIC, help="small fabric for GETNEXT")
    p.add_argument("--large-fabric", default=LARGE_FABRIC, help="~10,000-node fabric")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--small-rounds", type=int, default=5, help="0: no ~20k walk")
    p.add_argument("--mid-rounds", type=int, default=3)
    p.add_argument("--v3-rounds", type=int, default=3,
                   help="SNMPv3 authPriv walks at the ~20k size (ibsnmp vs snmpd)")
    p.add_argument("--pysnmp-max", type=int, default=70_000,
                   help="largest walk also measured with the fast path off (default %(default)s)")
    p.add_argument("--large-rounds", type=int, default=3)
    p.add_argument("--rows-back", type=int, default=5)
    p.add_argument("--latency-rounds", type=int, default=10)
    p.add_argument("--latency-block", type=int, default=200)
    p.add_argument("--latency-seconds", type=float, default=40.0)
    p.add_argument("--starts", type=int, default=3, help="cold starts at 10k nodes")
    p.add_argument("--no-snmpd", action="store_true", help="leave net-snmp snmpd out")
    p.add_argument("--snmpd-max", type=int, default=SNMPD_MAX_VARBINDS,
                   help="largest walk served by snmpd too (default %(default)s)")
    p.add_argument("--no-snmpd-table", action="store_true",
                   help="leave out snmpd's table helper (at ~20k and ~200k)")
    p.add_argument("--skip-walk", action="store_true", help="only GETNEXT, start-up, memory")
    p.add_argument("--v3-only", action="store_true",
                   help="only the SNMPv3 authPriv walks at ~20k (--v3-rounds of them): ibsnmp "
                        "vs snmpd and the pysnmp path (--pysnmp-max 0: without it); no v2c "
                        "rounds, snmpsim, GETNEXT or start-up")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    args = p.parse_args(argv)
    if args.quick:
        args.small_rounds, args.mid_rounds, args.large_rounds, args.v3_rounds = 2, 0, 0, 1
        args.latency_rounds, args.starts = 4, 1
    if args.v3_only and (args.skip_walk or args.no_snmpd or not args.v3_rounds):
        p.error("--v3-only compares v3 walks with snmpd: not with --skip-walk, --no-snmpd "
                "or --v3-rounds 0")
    return args


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through the `finally`s: agents are stopped


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminated)
    require_tools(not args.skip_walk and not args.v3_only)
    budget = Budget(args.budget)
    report = Report()
    work = Path(tempfile.mkdtemp(prefix="ibsnmp-bench-"))
    os.chmod(work, 0o755)
    say(f"ibsnmp benchmark: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"work directory {work}")
    say(versions())
    snmpd_ok = not args.no_snmpd and (shutil.which("snmpd") or Path("/usr/sbin/snmpd").exists())
    if not args.no_snmpd and not snmpd_ok:
        note = "snmpd: not measured: net-snmp snmpd is not installed (apt-get install snmpd)"
        say(note)
        report.notes.append(note)
    failed = False
    try:
        with Processes() as procs:
            if args.v3_only:
                walk_size("~20k", args.small_walk_fabric, args, budget, procs, work, report,
                          rounds=0, with_snmpd=bool(snmpd_ok), snmpd_loads=[],
                          v3_rounds=args.v3_rounds, v3_only=True)
            elif not args.skip_walk:
                snmpd_loads: list[tuple[int, float]] = []
                if args.small_rounds:
                    walk_size("~20k", args.small_walk_fabric, args, budget, procs, work, report,
                              rounds=args.small_rounds, with_snmpd=bool(snmpd_ok),
                              snmpd_loads=snmpd_loads, v3_rounds=args.v3_rounds,
                              with_table=not args.no_snmpd_table)
                if args.mid_rounds:
                    walk_size("~60k", args.mid_walk_fabric, args, budget, procs, work, report,
                              rounds=args.mid_rounds, with_snmpd=bool(snmpd_ok),
                              snmpd_loads=snmpd_loads)
                if args.large_rounds:
                    walk_size("~200k", args.large_walk_fabric, args, budget, procs, work, report,
                              rounds=args.large_rounds, with_snmpd=bool(snmpd_ok),
                              snmpd_loads=snmpd_loads, with_table=not args.no_snmpd_table)
            if not args.v3_only:
                latency_and_memory(args, budget, procs, report)
    except (BenchError, TimeoutError, RuntimeError, OSError, subprocess.SubprocessError) as exc:
        failed = True
        say(f"\nbench/walk.py: error: {exc}")
    finally:
        if args.keep:
            say(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    say(f"\n## ibsnmp benchmark summary ({os.cpu_count()} CPUs, {budget.elapsed():.0f} s)\n")
    say(report.markdown())
    for note in report.notes:
        say(f"\n- {note}")
    say("\nWalks: `snmpbulkwalk -v2c -c public -Cr50 -On -OQ` (v3: -l authPriv, SHA-256/AES) of "
        "IB-SM-MIB ibSmPortInfoTable; ibsnmp-pysnmp is ibsnmp with `[limits] fast_path = false`; "
        "snmpsim serves ibsnmp's recording of the same table, snmpd the same varbinds as "
        "`override` lines, snmpd-table the same rows from `table`/`add_row` (its table helper, "
        "with a VACM view leaving out the cells the recording lacks). Ratios are medians of "
        "paired, interleaved rounds.")
    if failed:
        return 1
    return 0 if all(r.result != "FAIL" for r in report.rows) else 3


if __name__ == "__main__":
    sys.exit(main())

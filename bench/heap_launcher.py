#!/usr/bin/env python3
"""Run the `ibsnmp` console script in this process with a heap sampler beside it.

    .venv/bin/python bench/heap_launcher.py SAMPLES [--period S] -- run --listen ...

A daemon thread appends one tab-separated line to SAMPLES every `--period`
seconds: the process's RSS, pymalloc's blocks and bytes in use and the
bytes its arenas hold, glibc malloc's bytes in use and held (mallinfo2),
the collector's generation counts and frozen objects. Live bytes that grow
mean objects that stay; RSS or held bytes that grow while live bytes do not
mean the allocators keep memory freed after a peak. One sample costs well
under a millisecond (no walk of the objects), so the agent's load stays
what it was.

`--tracemalloc FIRST LAST` (minutes) is for a separate diagnostic run: it
traces every allocation from the start (which slows the agent), snapshots
the heap at FIRST and LAST and writes the 25 tracebacks that grew most
between them to `SAMPLES.tracemalloc`. While it traces, pymalloc's figures
read 0 (its hooks stand in front of the allocator pymalloc reports on) and
malloc's include the traces themselves.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import re
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import TextIO

from console_script import run_console_script

from ibsnmp.malloc_threshold import mallinfo

FIELDS = ("seconds", "rss_kb", "blocks", "pymalloc_used", "pymalloc_held", "malloc_used",
          "malloc_held", "gc0", "gc1", "gc2", "frozen")
TRACE_FRAMES = 8
TRACE_TOP = 25


class Allocators:
    """pymalloc's and glibc's own accounting, read through ctypes.

    sys._debugmallocstats prints the same pymalloc figures but to the C
    stderr, which the agent's log shares; the C function it calls takes any
    FILE *, here an in-memory one."""

    PYMALLOC_HELD = re.compile(r"^\d+ arenas \* \d+ bytes/arena\s*=\s*([\d,]+)", re.M)
    PYMALLOC_USED = re.compile(r"^# bytes in allocated blocks\s*=\s*([\d,]+)", re.M)

    def __init__(self) -> None:
        self.libc = ctypes.CDLL(None)
        self.libc.open_memstream.restype = ctypes.c_void_p
        self.libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_char_p),
                                             ctypes.POINTER(ctypes.c_size_t)]
        self.libc.fclose.argtypes = [ctypes.c_void_p]
        self.libc.free.argtypes = [ctypes.c_void_p]
        self.stats = ctypes.pythonapi._PyObject_DebugMallocStats
        self.stats.argtypes = [ctypes.c_void_p]
        self.stats.restype = ctypes.c_int

    def pymalloc(self) -> tuple[int, int]:
        """(bytes in allocated blocks, bytes of the arenas held) of pymalloc."""
        text, size = ctypes.c_char_p(), ctypes.c_size_t()
        stream = self.libc.open_memstream(ctypes.byref(text), ctypes.byref(size))
        try:
            self.stats(stream)
        finally:
            self.libc.fclose(stream)
        try:
            report = ctypes.string_at(text, size.value).decode("ascii", "replace")
        finally:
            self.libc.free(text)
        used, held = self.PYMALLOC_USED.search(report), self.PYMALLOC_HELD.search(report)
        if used is None or held is None:
            return 0, 0
        return int(used[1].replace(",", "")), int(held[1].replace(",", ""))

    def malloc(self) -> tuple[int, int]:
        """(bytes in use, bytes held) of glibc malloc, its mmapped chunks included."""
        info = mallinfo()
        return info.uordblks + info.hblkhd, info.arena + info.hblkhd


def rss_kb() -> int:
    with open("/proc/self/statm", encoding="ascii") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def sample(allocators: Allocators, started: float) -> str:
    pymalloc_used, pymalloc_held = allocators.pymalloc()
    malloc_used, malloc_held = allocators.malloc()
    values = (round(time.monotonic() - started, 1), rss_kb(), sys.getallocatedblocks(),
              pymalloc_used, pymalloc_held, malloc_used, malloc_held, *gc.get_count(),
              gc.get_freeze_count())
    return "\t".join(map(str, values))


def trace_report(first: tracemalloc.Snapshot, last: tracemalloc.Snapshot,
                 first_min: float, last_min: float, out: TextIO) -> None:
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
    first, last = first.filter_traces(ignore), last.filter_traces(ignore)
    stats = last.compare_to(first, "traceback")
    out.write(f"tracemalloc: minute {first_min:g} to {last_min:g}, "
              f"{sum(s.size_diff for s in stats) / 2**20:+.2f} MB traced in all; "
              f"top {TRACE_TOP} tracebacks by growth\n")
    for stat in sorted(stats, key=lambda s: s.size_diff, reverse=True)[:TRACE_TOP]:
        out.write(f"\n{stat.size_diff / 1024:+.1f} KiB ({stat.count_diff:+d} blocks), "
                  f"{stat.size / 1024:.1f} KiB now\n")
        for line in stat.traceback.format(most_recent_first=True):
            out.write(line + "\n")
    out.flush()


def sampler(path: Path, period: float, trace_at: tuple[float, float] | None) -> None:
    allocators = Allocators()
    started = time.monotonic()
    first: tracemalloc.Snapshot | None = None
    with open(path, "w", encoding="ascii", buffering=1) as out:
        out.write("\t".join(FIELDS) + "\n")
        while True:
            out.write(sample(allocators, started) + "\n")
            minutes = (time.monotonic() - started) / 60
            if trace_at is not None and first is None and minutes >= trace_at[0]:
                first = tracemalloc.take_snapshot()
            elif trace_at is not None and first is not None and minutes >= trace_at[1]:
                with open(f"{path}.tracemalloc", "w", encoding="utf-8") as report:
                    trace_report(first, tracemalloc.take_snapshot(), *trace_at, report)
                tracemalloc.stop()
                trace_at = None
            time.sleep(period)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("samples", type=Path)
    parser.add_argument("--period", type=float, default=2.0, help="seconds between samples")
    parser.add_argument("--tracemalloc", type=float, nargs=2, metavar=("FIRST", "LAST"),
                        help="minutes of the two snapshots to compare (slows the agent)")
    parser.epilog = "after --: the arguments of the ibsnmp command"
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    agent_args = argv[split + 1:]
    if args.tracemalloc:
        tracemalloc.start(TRACE_FRAMES)
    threading.Thread(target=sampler, name="heap-sampler", daemon=True,
                     args=(args.samples, args.period, args.tracemalloc)).start()
    run_console_script(agent_args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""An ibsim fabric for tests, and commands run on it under ibsim's preload library.

Each fabric listens on its own abstract Unix socket name (IBSIM_SOCKNAME),
so tests and engineers running ibsim in parallel never meet. ibsim reads
console commands from stdin and spins a core at end of file, so its stdin
is a pipe from a sleeping process that lives as long as the fabric.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

from tests.support.paths import DATA_DIR, PROJECT_ROOT

NET_DIR = DATA_DIR / "ibsim"
PRELOAD = Path("/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so")
LIBIBUMAD = "libibumad.so.3"
READY_TIMEOUT = 10.0


def skip_without_ibsim() -> None:
    """Skip the calling test unless ibsim, its preload library and libibumad are installed."""
    if shutil.which("ibsim") is None or not PRELOAD.exists():
        pytest.skip("ibsim is not installed (Debian package ibsim-utils; `make setup`)")
    import ctypes.util

    if ctypes.util.find_library("ibumad") is None:
        pytest.skip("libibumad is not installed (Debian package libibumad3; `make setup`)")


@dataclass(frozen=True)
class Fabric:
    """A running ibsim: the socket name its clients attach with."""

    socket_name: str
    log: Path
    # Clients run here: the preload library keeps its emulated sysfs in
    # ./sys-PID and leaves it behind when a client crashes.
    workdir: Path
    # ibsim's stdin when the fabric was started with a console (else None).
    console: IO[bytes] | None = None

    def command(self, line: str) -> None:
        """One ibsim console command (`Unlink "S-2"[1]`): links change, switches trap."""
        if self.console is None:
            raise RuntimeError("this fabric was started without a console")
        self.console.write(line.encode() + b"\n")
        self.console.flush()

    def environment(self, host: str | None = None) -> dict[str, str]:
        env = dict(os.environ, LD_PRELOAD=str(PRELOAD), IBSIM_SOCKNAME=self.socket_name)
        # The probes in tests/support run as scripts from the workdir and
        # import tests.support: the project root goes on their path.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT),
                                                          os.environ.get("PYTHONPATH")]))
        if host is not None:
            env["SIM_HOST"] = host  # the node the client attaches to
        return env

    def run(self, command: Sequence[str], host: str | None = None,
            timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """`command` under the preload library, attached to this fabric; output captured."""
        return subprocess.run(list(command), env=self.environment(host), cwd=self.workdir,
                              capture_output=True, text=True, timeout=timeout, check=False)


def _listening(socket_name: str) -> bool:
    # Abstract names show with a leading "@" (and their NUL padding as "@"s).
    wanted = f" @{socket_name}:ctl"
    with open("/proc/net/unix", encoding="ascii", errors="replace") as table:
        return any(wanted in line for line in table)


@contextmanager
def ibsim_fabric(net_file: Path, workdir: Path, console: bool = False) -> Iterator[Fabric]:
    """ibsim started on `net_file`, stopped (with its stdin feeder) on exit. With
    `console` the test holds ibsim's stdin itself, for `Fabric.command`."""
    skip_without_ibsim()
    socket_name = f"ibsnmp-{uuid.uuid4().hex[:12]}"
    log = workdir / "ibsim.log"
    feeder = subprocess.Popen(["sleep", "100000"], stdout=subprocess.PIPE)
    with open(log, "wb") as log_file:
        sim = subprocess.Popen(["ibsim", "-s", str(net_file)],
                               stdin=subprocess.PIPE if console else feeder.stdout,
                               stdout=log_file, stderr=subprocess.STDOUT,
                               env=dict(os.environ, IBSIM_SOCKNAME=socket_name))
    assert feeder.stdout is not None
    feeder.stdout.close()  # ibsim holds the read end now
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while not _listening(socket_name):
            if sim.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ibsim did not start: {log.read_text(errors='replace')}")
            time.sleep(0.05)
        yield Fabric(socket_name, log, workdir, sim.stdin)
    finally:
        for process in (sim, feeder):
            process.terminate()
        for process in (sim, feeder):
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if sim.stdin is not None:
            sim.stdin.close()


@contextmanager
def opensm_running(fabric: Fabric, *options: str,
                   host: str | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """OpenSM on the fabric's first node (or on `host`), without periodic sweeps (so
    counters stay still between reads), stopped on exit; `options` are added (e.g.
    "--lmc", "1"). The caller waits for the ports it needs."""
    if shutil.which("opensm") is None:
        pytest.skip("opensm is not installed (Debian package opensm)")
    # Its own cache and log per node: a standby SM beside the master needs its own.
    cache = fabric.workdir / ("opensm" if host is None else f"opensm-{host}")
    cache.mkdir(exist_ok=True)
    env = dict(fabric.environment(host), OSM_CACHE_DIR=str(cache))
    with open(cache / "console.log", "wb") as console:
        sm = subprocess.Popen(["opensm", "--sweep", "0", "--log_file", str(cache / "opensm.log"),
                               *options],
                              env=env, cwd=fabric.workdir, stdin=subprocess.DEVNULL,
                              stdout=console, stderr=subprocess.STDOUT)
    try:
        yield sm
    finally:
        sm.terminate()
        try:
            sm.wait(timeout=10)
        except subprocess.TimeoutExpired:
            sm.kill()
            sm.wait()

"""Booting Debian's systemd in systemd-nspawn, for tests of the shipped unit.

A Debian root (debootstrap minbase with PACKAGES: systemd and dbus to boot,
udev for `udevadm test`, procps for the /bin/kill of the unit's ExecReload,
python3-venv to install ibsnmp, libibumad3 for the live provider) is made
once and cached under ROOTFS_CACHE; every boot runs it with
`--volatile=overlay`, so the cache stays pristine and whatever a test
writes lives in a tmpfs that goes with the container. The container shares
the host's network (no --private-network): a UDP port bound to 127.0.0.1
inside it is reachable from the host's net-snmp tools.

Commands run inside through `nsenter -a` into the namespaces of the
container's init (the nspawn process's child), with a clean environment.
`Machine.stop` powers the container off and, should that not finish in
time, kills its init, which ends every process of its PID namespace.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.container import apt_mirror
from tests.support.waiting import wait_for

SUITE = "bookworm"
PACKAGES = ("systemd", "systemd-sysv", "dbus", "udev", "procps", "python3", "python3-venv",
            "libibumad3")
ROOTFS_CACHE = Path("/var/tmp/ibsnmp-nspawn-bookworm")
TOOLS = ("systemd-nspawn", "debootstrap", "nsenter")
# The environment of every command run inside: nothing of the host's.
INSIDE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
              "LANG": "C.UTF-8", "SYSTEMD_PAGER": "", "SYSTEMD_COLORS": "0", "TERM": "dumb"}

_BOOTS = itertools.count(1)


def missing_prerequisite() -> str | None:
    """Why a container cannot be booted here, or None."""
    if os.geteuid() != 0:
        return "systemd-nspawn boots a container as root only"
    for tool in TOOLS:
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install systemd-container debootstrap)"
    return None


def ensure_rootfs(cache: Path = ROOTFS_CACHE, timeout: float = 900) -> Path:
    """The cached Debian root with PACKAGES, made by debootstrap on first use.

    The root is built beside the cache's final place and renamed into it, with
    a stamp naming its packages written last: an interrupted build is never
    taken for a complete one, and a change of PACKAGES builds again. A lock
    file keeps two test runs from building at once.
    """
    cache.mkdir(parents=True, exist_ok=True)
    root, stamp = cache / "root", cache / "stamp"
    wanted = f"{SUITE} {' '.join(PACKAGES)}\n"
    with open(cache / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if root.is_dir() and stamp.is_file() and stamp.read_text() == wanted:
            return root
        stamp.unlink(missing_ok=True)
        build = cache / f"build-{os.getpid()}"
        shutil.rmtree(build, ignore_errors=True)
        result = subprocess.run(
            ["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE,
             str(build), apt_mirror()],
            capture_output=True, text=True, timeout=timeout, check=False)
        if result.returncode != 0:
            shutil.rmtree(build, ignore_errors=True)
            raise AssertionError(f"debootstrap failed ({result.returncode}):\n"
                                 f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        shutil.rmtree(root, ignore_errors=True)
        build.rename(root)
        stamp.write_text(wanted)
        return root


@dataclass(frozen=True)
class Bind:
    """A host path seen inside the container at `target` (read-only unless told)."""

    source: Path
    target: str
    read_only: bool = True

    def option(self) -> str:
        flag = "--bind-ro" if self.read_only else "--bind"
        return f"{flag}={self.source}:{self.target}"


class CommandFailed(AssertionError):
    """A command inside the container exited non-zero (when it was not allowed to)."""


class Machine:
    """One booted container: `run` commands in it, read its files, `stop` it.

    Made by `booted()`; the methods may be called from the test's thread only.
    """

    def __init__(self, process: subprocess.Popen[bytes], init_pid: int, console: Path) -> None:
        self.process = process
        self.init_pid = init_pid
        self.console = console

    def run(self, *argv: str, input: str | None = None, check: bool = True,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """`argv` inside the container as root; CommandFailed on a non-zero
        exit when `check`."""
        result = subprocess.run(
            ["nsenter", "-t", str(self.init_pid), "-a", *argv], input=input,
            capture_output=True, text=True, env=INSIDE_ENV, timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise CommandFailed(f"{shlex.join(argv)} exited {result.returncode}:\n"
                                f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return result

    def sh(self, script: str, check: bool = True,
           timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A POSIX shell script inside the container, `set -eu` on."""
        return self.run("/bin/sh", "-c", f"set -eu\n{script}", check=check, timeout=timeout)

    def write_file(self, path: str, text: str, mode: int = 0o644, owner: str = "root:root") -> None:
        """`path` inside the container holds `text`, with `mode` and `owner`
        (set before the text is written, so it is never readable by others)."""
        quoted = shlex.quote(path)
        self.sh(f"install -m {mode:o} -o {owner.split(':')[0]} -g {owner.split(':')[1]} "
                f"/dev/null {quoted}")
        self.run("/bin/sh", "-c", f"cat > {quoted}", input=text)

    def read_file(self, path: str) -> str:
        return self.run("cat", path).stdout

    def wait_until_booted(self, timeout: float) -> str:
        """The system state once boot has finished (`running` or `degraded`)."""
        def state() -> str | None:
            result = self.run("systemctl", "is-system-running", "--wait", check=False,
                              timeout=timeout)
            answer = result.stdout.strip()
            return answer if answer in ("running", "degraded") else None

        return wait_for(state, timeout, "the container's boot to finish", interval=0.5)

    def stop(self, timeout: float = 30) -> None:
        """Power the container off; kill its init if that takes longer than `timeout`."""
        if self.process.poll() is None:
            self.run("systemctl", "poweroff", "--no-block", check=False, timeout=10)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                _kill(self.init_pid)  # PID 1 of the namespace: every process in it goes
                try:
                    self.process.wait(10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(10)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _init_pid(nspawn: subprocess.Popen[bytes]) -> int | None:
    """The host PID of the container's init: the nspawn process's child once
    it runs systemd in a PID namespace of its own."""
    try:
        children = Path(f"/proc/{nspawn.pid}/task/{nspawn.pid}/children").read_text().split()
        for child in children:
            if (Path(f"/proc/{child}/comm").read_text().strip() == "systemd"
                    and os.readlink(f"/proc/{child}/ns/pid") != os.readlink("/proc/self/ns/pid")):
                return int(child)
    except OSError:
        pass
    return None


@contextmanager
def booted(root: Path, binds: Sequence[Bind], console: Path,
           timeout: float = 120) -> Iterator[Machine]:
    """`root` booted with `--volatile=overlay` and `binds`; the console's output
    goes to `console`. Yields once boot has finished; powers it off after."""
    # A name of its own: nspawn keeps per-machine files under /run/systemd/nspawn.
    name = f"ibsnmp-test-{os.getpid()}-{next(_BOOTS)}"
    command = ["systemd-nspawn", "--quiet", "-D", str(root), f"--machine={name}",
               "--volatile=overlay", "--boot", "--register=no", "--keep-unit",
               "--console=read-only",
               *(bind.option() for bind in binds)]
    with open(console, "wb") as output:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    machine: Machine | None = None
    try:
        def started() -> int | None:
            if process.poll() is not None:
                raise AssertionError(f"systemd-nspawn exited {process.returncode}:\n"
                                     f"{console.read_text(errors='replace')[-3000:]}")
            return _init_pid(process)

        machine = Machine(process, wait_for(started, timeout, "the container's init"), console)
        machine.wait_until_booted(timeout)
        yield machine
    finally:
        if machine is not None:
            machine.stop()
        elif process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                init = _init_pid(process)
                if init is not None:
                    _kill(init)
                process.kill()
                process.wait(10)

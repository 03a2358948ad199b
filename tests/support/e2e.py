"""Support for end-to-end tests: `ibsnmp run` in a subprocess, net-snmp clients.

Every agent started here listens on 127.0.0.1 (and ::1 when asked) on a
free port and is stopped with SIGTERM when the test ends.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import AnyStr
from pathlib import Path

import pytest

from ibsnmp.mib_compiler.paths import net_snmp_mib_dirs
from tests.support.paths import PROJECT_ROOT as PROJECT_ROOT  # re-exported: tests import it here
from tests.support.wire import exchange

MIB_DIRS = net_snmp_mib_dirs()
START_TIMEOUT_S = 30.0

# The configuration most end-to-end tests run with: a read community and an
# SNMPv3 authPriv user (SHA-256, AES), and the net-snmp options of that user.
V3_USER = ("monitor", "monitor-auth-pass", "monitor-priv-pass")
# That user as a config file's [[user]] table.
V3_USER_CONFIG = f"""
[[user]]
name = "{V3_USER[0]}"
auth = "SHA256"
auth_key = "{V3_USER[1]}"
priv = "AES"
priv_key = "{V3_USER[2]}"
"""
READ_CONFIG = """
[[community]]
name = "public"
""" + V3_USER_CONFIG
V3_AUTH_PRIV = ["-v3", "-l", "authPriv", "-u", V3_USER[0], "-a", "SHA-256", "-A", V3_USER[1],
                "-x", "AES", "-X", V3_USER[2]]


def free_udp_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@contextmanager
def snmpd_running(work: Path, config: str, probe: bytes) -> Iterator[str]:
    """net-snmp's snmpd with `config` (snmpd.conf lines) on a free loopback
    port, its files in `work`: yields its address once it answers `probe`
    (a request datagram), and stops it. Skips the test without snmpd."""
    binary = shutil.which("snmpd") or ("/usr/sbin/snmpd" if Path("/usr/sbin/snmpd").exists() else None)
    if binary is None:
        pytest.skip("snmpd is not installed")
    (work / "snmpd.conf").write_text(config)
    address = f"127.0.0.1:{free_udp_port()}"
    process = subprocess.Popen(
        [binary, "-f", "-Lf", str(work / "snmpd.log"), "-C", "-c", str(work / "snmpd.conf"),
         f"--persistentDir={work / 'persist'}", f"udp:{address}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "MIBS": "", "MIBDIRS": "/nonexistent"})
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while exchange(address, probe, 0.5) is None:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail("snmpd did not start: " + (work / "snmpd.log").read_text())
        yield address
    finally:
        process.terminate()
        process.wait(10)


@dataclass
class RunningAgent:
    process: subprocess.Popen[str]
    address: str  # "127.0.0.1:PORT", as net-snmp takes it
    banner: str

    def snmp(self, tool: str, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run `tool` against this agent; the address goes before the first OID."""
        first_oid = next((i for i, a in enumerate(args) if "::" in a or a.startswith(".")),
                         len(args))
        return net_snmp(tool, *args[:first_oid], self.address, *args[first_oid:],
                        timeout=timeout)


@contextmanager
def ibsnmp_agent(*args: str, fabric: str = "fat-tree:spines=2,leaves=2,hosts=2",
                 seed: int = 1, ipv6: bool = False) -> Iterator[RunningAgent]:
    port = free_udp_port()
    listen = ["--listen", f"127.0.0.1:{port}"]
    if ipv6:
        listen += ["--listen", f"[::1]:{free_udp_port('::1')}"]
    with state_dir_args(args) as state:
        command = [sys.executable, "-m", "ibsnmp", "run", *listen, "--fabric", fabric,
                   "--seed", str(seed), *state, *args]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            cwd=PROJECT_ROOT,
        )
        try:
            banner = _wait_for_banner(process)
            yield RunningAgent(process, f"127.0.0.1:{port}", banner)
        finally:
            stop(process)


@contextmanager
def state_dir_args(args: Sequence[str]) -> Iterator[list[str]]:
    """`--state-dir TMP` unless `args` name one: no test writes the default
    state directory (/var/lib/ibsnmp as root)."""
    if "--state-dir" in args:
        yield []
        return
    with tempfile.TemporaryDirectory(prefix="ibsnmp-state-") as tmp:
        yield ["--state-dir", tmp]


def _wait_for_banner(process: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + START_TIMEOUT_S
    lines: list[str] = []
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("agent exited during start-up:\n" + "".join(lines))
        lines.append(line)
        if line.startswith("ibsnmp: serving"):
            return "".join(lines)
    raise RuntimeError("agent did not start in time:\n" + "".join(lines))


def stop(process: subprocess.Popen[AnyStr]) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout is not None:
        process.stdout.close()
    return process.returncode


def net_snmp(tool: str, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run a net-snmp client with ibsnmp's MIBs (and only those) loaded."""
    env = dict(os.environ, MIBDIRS=MIB_DIRS, MIBS="ALL", SNMPCONFPATH="/nonexistent")
    return subprocess.run([tool, *args], capture_output=True, text=True, env=env,
                          timeout=timeout, check=False)


VARBIND = re.compile(r"^(?P<name>\S+) = (?P<value>.*)$")


def varbinds(output: str) -> list[tuple[str, str]]:
    """(name, value) pairs of net-snmp output, one per line."""
    return [(m["name"], m["value"]) for m in map(VARBIND.match, output.splitlines()) if m]


def object_name(instance: str) -> str:
    """'SMA-MIB::ibSmaPortState.3' -> 'SMA-MIB::ibSmaPortState'."""
    return instance.split(".", 1)[0]


def assert_ok(result: subprocess.CompletedProcess[str], allowed_stderr: Sequence[str] = ()) -> str:
    stderr = "\n".join(
        line for line in result.stderr.splitlines()
        if line.strip() and not any(a in line for a in allowed_stderr)
    )
    assert result.returncode == 0 and not stderr, (
        f"exit {result.returncode}\nstderr:\n{result.stderr}\nstdout tail:\n{result.stdout[-2000:]}"
    )
    return result.stdout

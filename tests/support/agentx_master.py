"""Support for AgentX tests: net-snmp's snmpd as the master agent.

`SnmpdMaster` writes an snmpd.conf of its own (`master agentx`, an
agentXSocket in the test's directory, UDP on 127.0.0.1 and a free port, a
read and a write community for the default context, one community per
node context mapped to it with `com2sec -Cn`, an optional trap2sink) and
runs `snmpd -f -Lo -C -c CONF` (no system configuration, no MIB files:
numeric OIDs only), stopped with SIGTERM at the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from tests.support.e2e import PROJECT_ROOT, START_TIMEOUT_S, free_udp_port, stop

SNMPD = "/usr/sbin/snmpd"
READ_COMMUNITY, WRITE_COMMUNITY = "public", "private"
# No MIB files for snmpd and the clients: numeric OIDs, no load warnings.
NO_MIBS_ENV = {**os.environ, "MIBS": "", "MIBDIRS": "/nonexistent",
               "SNMPCONFPATH": "/nonexistent"}


def context_community(context: str) -> str:
    """The community snmpd maps to a node's context (com2sec -Cn)."""
    return f"ctx-{context}"


class SnmpdMaster:
    def __init__(self, workdir: Path, *, contexts: Iterable[str] = (),
                 trap_sink: str | None = None) -> None:
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.socket = self.dir / "master"
        self.port = free_udp_port()
        self.address = f"127.0.0.1:{self.port}"
        self.log = self.dir / "snmpd.log"
        self.conf = self.dir / "snmpd.conf"
        lines = ["master agentx", f"agentXSocket {self.socket}",
                 f"agentaddress udp:{self.address}",
                 f"rocommunity {READ_COMMUNITY} 127.0.0.1",
                 f"rwcommunity {WRITE_COMMUNITY} 127.0.0.1",
                 "view all included .1"]
        for index, context in enumerate(contexts):
            security = f"node{index}"
            lines += [f"com2sec -Cn {context} {security} 127.0.0.1 {context_community(context)}",
                      f"group g{security} v2c {security}",
                      f"access g{security} {context} any noauth exact all all none"]
        if trap_sink is not None:
            lines.append(f"trap2sink {trap_sink} {READ_COMMUNITY}")
        self.conf.write_text("\n".join(lines) + "\n")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 15.0) -> SnmpdMaster:
        self._out = open(self.log, "ab")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [SNMPD, "-f", "-Lo", "-C", "-c", str(self.conf), "-M", "/nonexistent", "-m", ""],
            stdout=self._out, stderr=subprocess.STDOUT, env=NO_MIBS_ENV, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not self.socket.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"snmpd did not start: {self.log.read_text(errors='replace')}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)  # SIGTERM, SIGKILL if it lingers
            self._out.close()
        self.process = None

    def __enter__(self) -> SnmpdMaster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def snmp(self, tool: str, *args: str, community: str = READ_COMMUNITY,
             options: tuple[str, ...] = ("-r", "0", "-t", "5"),
             timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """A net-snmp client against this snmpd (numeric OIDs in and out);
        `args` follow the address (OIDs, values)."""
        return snmp_tool(tool, "-v2c", "-c", community, "-On", *options, self.address, *args,
                         timeout=timeout)


def snmp_tool(tool: str, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool, *args], capture_output=True, text=True, env=NO_MIBS_ENV,
                          timeout=timeout, check=False)


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


class SubagentProcess:
    """`ibsnmp run --agentx SOCKET ...` in a subprocess, its output in a file."""

    def __init__(self, workdir: Path, master_socket: Path, *args: str,
                 state_dir: Path | None = None) -> None:
        self.log = workdir / f"ibsnmp-{time.monotonic_ns()}.log"
        state = state_dir or workdir / "state"
        self.command = [sys.executable, "-m", "ibsnmp", "run", "--agentx", str(master_socket),
                        "--state-dir", str(state), *args]
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = START_TIMEOUT_S) -> SubagentProcess:
        self._out = open(self.log, "ab")  # noqa: SIM115 (closed in stop)
        self.process = process = subprocess.Popen(self.command, stdout=self._out,
                                                  stderr=subprocess.STDOUT, cwd=PROJECT_ROOT,
                                                  start_new_session=True)
        if not wait_until(lambda: "ibsnmp: serving" in self.output()
                          or process.poll() is not None, timeout):
            self.stop()
            raise RuntimeError(f"ibsnmp did not start:\n{self.output()}")
        return self

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def kill(self) -> None:
        """SIGKILL: no Close reaches the master."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def stop(self) -> int | None:
        """SIGTERM (SIGKILL if it lingers); its exit code."""
        if self.process is None:
            return None
        code = stop(self.process)
        self._out.close()
        self.process = None
        return code

    def __enter__(self) -> SubagentProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

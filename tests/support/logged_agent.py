"""`ibsnmp run` in a subprocess whose log is read all along, for tests that
wait on what the agent logs (a refusal's line) as well as on what it answers.

The agent listens on 127.0.0.1 (and [::1] with `ipv6`) on free ports, its
output is read by a thread (tests.support.agent_log: a full pipe would
block it), and it is stopped with SIGTERM when the context ends.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tests.support.agent_log import AgentLog
from tests.support.e2e import PROJECT_ROOT, START_TIMEOUT_S, free_udp_port, net_snmp, state_dir_args, stop

REFUSALS = " WARNING ibsnmp.refusals: "  # a refusal line, as the text log format writes it


@dataclass
class LoggedAgent:
    process: subprocess.Popen[str]
    log: AgentLog
    port: int
    address6: str | None  # "udp6:[::1]:PORT" with ipv6

    @property
    def address(self) -> str:
        """"127.0.0.1:PORT", as net-snmp takes it."""
        return f"127.0.0.1:{self.port}"

    @property
    def lines(self) -> list[str]:
        return list(self.log.lines)

    @property
    def output(self) -> str:
        return self.log.text()

    def snmp(self, tool: str, *args: str, ipv6: bool = False,
             timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Run `tool` against this agent; the address goes before the first OID."""
        first_oid = next((i for i, a in enumerate(args) if "::" in a or a.startswith(".")),
                         len(args))
        address = self.address6 if ipv6 else self.address
        assert address is not None
        return net_snmp(tool, *args[:first_oid], address, *args[first_oid:], timeout=timeout)

    def refusals(self) -> list[str]:
        """The refusal lines logged so far, without their time stamps."""
        return [line.split(REFUSALS, 1)[1] for line in self.lines if REFUSALS in line]

    def wait_until(self, condition: Callable[[], bool], timeout: float = 15.0) -> bool:
        """Whether `condition` holds within `timeout` (asked again every 50 ms)."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline or self.process.poll() is not None:
                return condition()
            time.sleep(0.05)
        return True

    def wait_for_refusal(self, line: str, timeout: float = 15.0) -> bool:
        try:
            self.log.wait_for(lambda text: REFUSALS in text and text.endswith(REFUSALS + line),
                              timeout)
        except AssertionError:
            return False
        return True


@contextmanager
def logged_agent(*args: str, fabric: str = "single", ipv6: bool = False) -> Iterator[LoggedAgent]:
    """`ibsnmp run --listen 127.0.0.1:PORT --fabric FABRIC ARGS`, a temporary
    state directory unless ARGS name one, started (its banner printed)."""
    port = free_udp_port()
    listen = ["--listen", f"127.0.0.1:{port}"]
    address6 = None
    if ipv6:
        port6 = free_udp_port("::1")
        listen += ["--listen", f"[::1]:{port6}"]
        address6 = f"udp6:[::1]:{port6}"
    with state_dir_args(args) as state:
        process = subprocess.Popen(
            [sys.executable, "-m", "ibsnmp", "run", *listen, "--fabric", fabric, *state, *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=PROJECT_ROOT)
        try:
            agent = LoggedAgent(process, AgentLog(process), port, address6)
            try:
                agent.log.wait_for(lambda text: text.startswith("ibsnmp: serving"), START_TIMEOUT_S)
            except AssertionError as exc:
                raise RuntimeError(f"agent did not start: {exc}") from None
            yield agent
        finally:
            stop(process)

"""Support for the agent tests (no tests here): a fake fabric, agents, clients.

`agent_backend` is the one fixture that provides the resolver and the
VirtualMib; when the real MIB bindings exist, only it needs to change.
Run as a script, this module serves the fake fabric (for subprocess tests
and benchmarks):  python tests/support/agent_support.py --listen 127.0.0.1:0
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from pysnmp.proto import rfc1902

from ibsnmp.agent import AgentSettings, Community, Endpoint, SystemInfo, User
from ibsnmp.agent.config import Limits
from ibsnmp.agent.runner import (
    Agent,
    add_run_arguments,
    run,
    serve,
    settings_from_args,
)
from ibsnmp.agent.pysnmp_cells import cell_of
from ibsnmp.fabric.iba import NodeType
from ibsnmp.fabric.lineage import Lineage
from ibsnmp.mib.api import (
    INFINIBAND_MIB,
    NO_SUCH_INSTANCE,
    NO_SUCH_OBJECT,
    Cell,
    ContextTarget,
    Missing,
    Oid,
)
from ibsnmp.mib.subtrees import Subtrees

# -- the fake fabric ----------------------------------------------------------------

LOCAL_GUID = "0002c90300000001"
NODE_GUIDS = (LOCAL_GUID, "0002c90300000002", "0002c90300000003")
UNKNOWN_GUID = "0002c903deadbeef"

SMA = INFINIBAND_MIB + (3,)
NODE_DESC = SMA + (1, 1, 0)      # OctetString, "node-<n>"
NODE_NUMBER = SMA + (1, 2, 0)    # Integer32, n
PORT_XMIT = SMA + (2, 1, 1)      # Counter64 column, ports 1..2 (hidden from v1)
PORT_STATE = SMA + (2, 1, 2)     # Integer32 column, ports 1..2
BULK_TABLE = SMA + (9, 1)        # extra rows for benchmarks: BULK_TABLE.<col>.<row>


@dataclass(frozen=True)
class FakeNode:
    """What a node context reads of its node (its system group), nothing more."""

    guid: str
    number: int
    node_type: NodeType = NodeType.CA
    model_name: str = ""
    vendor_id: int | None = None
    device_id: int | None = None
    revision: int | None = None
    firmware_version: str | None = None

    @property
    def description(self) -> str:
        return f"node-{self.number} HCA-1"  # sysName "node-<n>" in its context


class FakeMib:
    """A sorted dict of OIDs per node: what VirtualMib promises, nothing more."""

    subtrees = Subtrees((INFINIBAND_MIB,))

    def __init__(self, rows: int = 0) -> None:
        self._tables: dict[str, tuple[list[Oid], dict[Oid, Any]]] = {}
        for number, guid in enumerate(NODE_GUIDS, start=1):
            values: dict[Oid, Any] = {
                NODE_DESC: rfc1902.OctetString(f"node-{number}"),
                NODE_NUMBER: rfc1902.Integer32(number),
            }
            for port in (1, 2):
                values[PORT_XMIT + (port,)] = rfc1902.Counter64(2**40 + number * 10 + port)
                values[PORT_STATE + (port,)] = rfc1902.Integer32(4)
            for row in range(1, rows // 4 + 1):
                for col in range(1, 5):
                    values[BULK_TABLE + (col, row)] = rfc1902.Unsigned32(row * 10 + col)
            self._tables[guid] = (sorted(values), values)

    def get(self, target: ContextTarget, oid: Oid) -> Any | Missing:
        keys, values = self._tables[target.node.guid]
        value = values.get(oid)
        if value is not None:
            return value
        objects = {key[:-1] for key in keys}
        return NO_SUCH_INSTANCE if oid[:-1] in objects else NO_SUCH_OBJECT

    def get_next(self, target: ContextTarget, oid: Oid) -> tuple[Oid, Any] | None:
        keys, values = self._tables[target.node.guid]
        i = bisect_right(keys, oid)
        if i == len(keys):
            return None
        return keys[i], values[keys[i]]

    # The same values as plain cells, for the fast responder.

    def get_cell(self, target: ContextTarget, oid: Oid) -> Cell | Missing:
        value = self.get(target, oid)
        return value if isinstance(value, Missing) else cell_of(value)

    def next_cell(self, target: ContextTarget, oid: Oid) -> tuple[Oid, Cell] | None:
        found = self.get_next(target, oid)
        return None if found is None else (found[0], cell_of(found[1]))

    def next_step(self, target: ContextTarget, oid: Oid) -> tuple[Oid, Cell, bool, None] | None:
        found = self.next_cell(target, oid)
        return None if found is None else (*found, True, None)  # nothing here moves

    def version(self, target: ContextTarget) -> int:
        return 0  # nothing here is written

    def get_step(self, target: ContextTarget, oid: Oid) -> tuple[Cell | Missing, bool, None]:
        return self.get_cell(target, oid), True, None

    def instance_arcs(self, target: ContextTarget, oid: Oid) -> int:
        return max(map(len, self._tables[target.node.guid][0]))

    @property
    def object_oids(self) -> list[Oid]:
        return sorted({key[:-1] for keys, _ in self._tables.values() for key in keys})


@dataclass(frozen=True, eq=False)
class FakeFabric:
    """What the agent reads of a snapshot besides the MIB's answers: its
    structure's lineage (one: nothing here changes)."""

    lineage: Lineage = field(default_factory=Lineage)


def make_backend(rows: int = 0) -> tuple[Any, FakeMib]:
    fabric = FakeFabric()
    targets = {
        guid.encode(): ContextTarget(fabric=fabric, node=FakeNode(guid, n), serves_sm=(n == 1))
        for n, guid in enumerate(NODE_GUIDS, start=1)
    }
    # The default context speaks for the local node, with the agent's own system group.
    targets[b""] = replace(targets[LOCAL_GUID.encode()], default_context=True)
    return targets.get, FakeMib(rows)


@dataclass(frozen=True)
class Backend:
    resolver: Any
    mib: Any


@pytest.fixture(scope="module")
def agent_backend() -> Backend:
    """The seam: resolver + VirtualMib the agent serves (fake fabric for now)."""
    resolver, mib = make_backend()
    return Backend(resolver, mib)


# -- credentials used by every agent test -------------------------------------------

READ_COMMUNITY = "public"
WRITE_COMMUNITY = "private-rw"
V3_USERS = (
    User(name="reader", auth="SHA256", auth_key="reader-auth-key", priv="AES",
         priv_key="reader-priv-key", access="read"),
    User(name="admin", auth="SHA512", auth_key="admin-auth-key", priv="AES256",
         priv_key="admin-priv-key", access="write"),
    User(name="authonly", auth="SHA", auth_key="authonly-key", access="read"),
)


def agent_settings(listen: tuple[str, ...] = ("127.0.0.1:0", "[::1]:0")) -> AgentSettings:
    from ibsnmp.agent import parse_endpoint

    return AgentSettings(
        listen=tuple(parse_endpoint(text) for text in listen),
        system=SystemInfo(sys_name="ibsnmp-test", sys_contact="ops@example.org",
                          sys_location="rack 7"),
        communities=(Community(READ_COMMUNITY, "read"), Community(WRITE_COMMUNITY, "write")),
        users=V3_USERS,
        limits=Limits(getbulk_fill_ms=0),  # GETBULK answers as whole as the message and count allow
    )


# -- an agent in a thread of this process -------------------------------------------

class AgentThread:
    """The agent on its own event loop in a thread, so tests can block."""

    def __init__(self, settings: AgentSettings, backend: Backend) -> None:
        self.settings = settings
        self.backend = backend
        self.agent: Agent | None = None
        self.error: BaseException | None = None
        self._started = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, name="agent", daemon=True)

    def start(self) -> AgentThread:
        self._thread.start()
        if not self._started.wait(30):
            raise RuntimeError("agent did not start within 30 s")
        if self.error is not None:
            raise self.error
        return self

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # reported by start()
            self.error = exc
            self._started.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()

        def started(agent: Agent) -> None:
            self.agent = agent
            self._started.set()

        await serve(self.settings, self.backend.resolver, self.backend.mib,
                    fabric_summary="fake fabric, 3 nodes", stop=self._stop, on_started=started)

    def endpoint(self, ipv6: bool = False) -> Endpoint:
        assert self.agent is not None
        return next(e for e in self.agent.endpoints if e.ipv6 == ipv6)

    def close(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


@pytest.fixture(scope="module")
def agent(agent_backend: Backend) -> Iterator[AgentThread]:
    thread = AgentThread(agent_settings(), agent_backend).start()
    try:
        yield thread
    finally:
        thread.close()


# -- net-snmp command-line clients --------------------------------------------------

NET_SNMP = shutil.which("snmpget")
needs_net_snmp = pytest.mark.skipif(NET_SNMP is None, reason="net-snmp tools not installed")
# No MIB loading: numeric OIDs in and out, no warnings about missing modules.
NET_SNMP_ENV = {**os.environ, "MIBS": "", "MIBDIRS": "/nonexistent"}


def target(endpoint: Endpoint) -> str:
    return f"udp6:[{endpoint.host}]:{endpoint.port}" if endpoint.ipv6 \
        else f"udp:{endpoint.host}:{endpoint.port}"


def net_snmp(tool: str, endpoint: Endpoint, options: list[str], *oids: str,
             timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run a net-snmp tool (-On numeric, 1 s timeout, 1 retry) against the agent."""
    cmd = [tool, "-On", "-t", "1", "-r", "1", *options, target(endpoint), *oids]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=NET_SNMP_ENV, check=False)


def parse_varbinds(stdout: str) -> list[tuple[str, str]]:
    """`.1.3.6... = TYPE: value` lines -> [(oid without leading dot, 'TYPE: value')]."""
    result = []
    for line in stdout.splitlines():
        if " = " not in line:
            continue
        oid, _, value = line.partition(" = ")
        result.append((oid.strip().lstrip("."), value.strip()))
    return result


def dotted(oid: Oid) -> str:
    return ".".join(map(str, oid))


# -- the agent as a subprocess -----------------------------------------------------

def spawn_agent(*args: str, rows: int = 0) -> tuple[subprocess.Popen[str], list[Endpoint]]:
    """Start this module as an agent process; return it and its endpoints.

    Its stderr goes to a file (`proc.stderr_path`), never to a pipe nobody
    reads: a full pipe would block the agent's logging and make it deaf.
    """
    err = tempfile.NamedTemporaryFile("w+", prefix="ibsnmp-agent-", suffix=".log", delete=False)
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--rows", str(rows), *args],
        stdout=subprocess.PIPE, stderr=err, text=True)
    err.close()
    proc.stderr_path = err.name  # type: ignore[attr-defined]  # an attribute of our own
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("READY"):
        proc.kill()
        proc.wait(10)
        raise RuntimeError(f"agent did not start: {line!r} {agent_stderr(proc)}")
    from ibsnmp.agent import parse_endpoint

    return proc, [parse_endpoint(text) for text in line.split()[1:]]


def agent_stderr(proc: subprocess.Popen[str]) -> str:
    """What a spawned agent wrote to stderr (and remove the file once it exited)."""
    path = Path(proc.stderr_path)  # type: ignore[attr-defined]  # set by spawn_agent
    text = path.read_text() if path.exists() else ""
    if proc.poll() is not None:
        path.unlink(missing_ok=True)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="serve the fake test fabric")
    add_run_arguments(parser)
    parser.add_argument("--rows", type=int, default=0, help="extra table rows per node")
    args = parser.parse_args(argv)
    resolver, mib = make_backend(args.rows)

    def started(agent: Agent) -> None:
        print("READY", *agent.endpoints, flush=True)

    try:
        settings = settings_from_args(args)
    except Exception as exc:
        print(f"ibsnmp: {exc}", file=sys.stderr)
        return 2
    return run(settings, resolver, mib, fabric_summary="fake fabric", on_started=started)


if __name__ == "__main__":
    sys.exit(main())

"""ibsnmp as an AgentX subagent of net-snmp's snmpd (RFC 2741), end to end.

snmpd runs as the master with a socket of the test's own (agentx_master).
The walk comparison serves one frozen instant of a fabric over UDP and
through snmpd from the same agent, so every value must be equal; the other
tests run `ibsnmp run --agentx` as operators would.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from tests.support.agentx_master import (
    WRITE_COMMUNITY,
    SnmpdMaster,
    SubagentProcess,
    context_community,
    snmp_tool,
    wait_until,
)
from tests.support.narrow import present
from tests.support.set_support import instance
from tests.support.trapd import TrapReceiver

from ibsnmp.agent import Agent, serve
from ibsnmp.agent.config import AgentSettings, AgentxSettings, Community
from ibsnmp.agent.transport import parse_endpoint
from ibsnmp.agent.agentx_master import MasterAddress
from ibsnmp.agentx.service import build_subagent, subagent_running, sys_up_time
from ibsnmp.mib.api import INFINIBAND_MIB, ContextTarget
from ibsnmp.mib.registry import build_mib
from ibsnmp.mib.subtrees import IF_MIB_INTERFACES
from ibsnmp.mib.targets import FabricContexts
from ibsnmp.providers.topology import TopologyProvider
from tests.support.paths import DATA_DIR

TOPOLOGY = DATA_DIR / "hand_trimmed.topo"
ELAPSED = 4321.0  # the one instant every read of the walk test sees
SET_SPEC = "fat-tree:spines=2,leaves=3,hosts=2,faults=0,lmc=1"
SET_PREFIX = (0xFE80 << 48).to_bytes(8, "big")  # the simulated subnet prefix, fe80::/64


def dotted(oid: tuple[int, ...]) -> str:
    return "." + ".".join(map(str, oid))


class FrozenAgent:
    """One agent in a thread: UDP on 127.0.0.1 and a subagent of `master`, both
    answering from one frozen instant of the topology's fabric."""

    def __init__(self, master: Path) -> None:
        self.provider = TopologyProvider(TOPOLOGY)
        contexts = FabricContexts(self.provider)

        def frozen(name: bytes) -> ContextTarget | None:
            target = contexts(name)
            return None if target is None else dataclasses.replace(target, elapsed=ELAPSED)

        self.resolver = frozen
        self.mib = build_mib()
        self.settings = AgentSettings(
            listen=(parse_endpoint("127.0.0.1:0"),), communities=(Community("public"),),
            agentx=AgentxSettings(MasterAddress(path=str(master)), ping_interval=1.0))
        self.agent: Agent | None = None
        self._started = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)

    def __enter__(self) -> FrozenAgent:
        self._thread.start()
        assert self._started.wait(30), "the agent did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    async def _serve(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        agentx = self.settings.agentx
        assert agentx is not None

        def services(agent: Agent) -> AbstractAsyncContextManager[Any]:  # serve ignores it
            return subagent_running(build_subagent(
                agentx, self.resolver, self.mib, lambda: self.provider.snapshot,
                sys_up_time(agent.engine.engine)))

        def started(agent: Agent) -> None:
            self.agent = agent
            self._started.set()

        await serve(self.settings, self.resolver, self.mib, stop=self._stop,
                    on_started=started, services=services)

    @property
    def address(self) -> str:
        assert self.agent is not None
        return str(self.agent.endpoints[0])

    def walk(self, community: str, root: tuple[int, ...]) -> list[str]:
        result = snmp_tool("snmpbulkwalk", "-v2c", "-c", community, "-On", "-r", "1", "-t", "5",
                           self.address, dotted(root))
        assert result.returncode == 0 and not result.stderr, result.stderr
        return result.stdout.splitlines()


END_OF_VIEW = "No more variables left in this MIB View"


def master_walk(master: SnmpdMaster, community: str, root: tuple[int, ...]) -> list[str]:
    """The walk through snmpd; in a node context nothing follows the subagent's
    subtrees, so it may end on endOfMibView (the UDP agent has its own objects
    after them), which is left out."""
    result = master.snmp("snmpbulkwalk", dotted(root), community=community,
                         options=("-r", "1", "-t", "5"))
    assert result.returncode == 0 and not result.stderr, result.stderr
    lines = result.stdout.splitlines()
    if lines and END_OF_VIEW in lines[-1]:
        lines.pop()
    assert not any(END_OF_VIEW in line for line in lines)
    return lines


def answered(master: SnmpdMaster, community: str, oid: str) -> bool:
    result = master.snmp("snmpget", oid, community=community, options=("-r", "0", "-t", "2"))
    return result.returncode == 0 and "No Such" not in result.stdout and oid in result.stdout


def test_walks_through_snmpd_equal_the_udp_walks(tmp_path: Path) -> None:
    guids = sorted(TopologyProvider(TOPOLOGY).snapshot.nodes)
    contexts = [f"{guid:016x}" for guid in guids]
    with SnmpdMaster(tmp_path, contexts=contexts) as master, FrozenAgent(master.socket) as agent:
        first = dotted(present(agent.mib.next_cell(present(agent.resolver(b"")),
                                                   INFINIBAND_MIB))[0])
        assert wait_until(lambda: all(answered(master, c, first) for c in
                                      ["public", *map(context_community, contexts)]), 15)
        default = master_walk(master, "public", INFINIBAND_MIB)
        assert len(default) > 100 and default == agent.walk("public", INFINIBAND_MIB)
        # A switch (its own forwarding tables) and a CA: the two kinds of node context.
        walked = 0
        for context in (contexts[0], contexts[-1]):
            for root in (INFINIBAND_MIB, IF_MIB_INTERFACES):
                through_master = master_walk(master, context_community(context), root)
                assert through_master == agent.walk(f"public@{context}", root), (context, root)
                walked += len(through_master)
        assert walked > 100


@pytest.fixture()
def trap_receiver(tmp_path: Path) -> Iterator[TrapReceiver]:
    with TrapReceiver(tmp_path / "trapd") as receiver:
        yield receiver


SCENARIO = """
[scenario]
name = "one bad P_Key"

[[event]]
at = 0.5
action = "bad-p-key"
from = "host001"
to = "host002"
sl = 3
key = 0x8123
repeat = 40
period = 0.5
"""


def test_master_late_and_restarted_traps_through_it(tmp_path: Path,
                                                     trap_receiver: TrapReceiver) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    master = SnmpdMaster(tmp_path / "snmpd", trap_sink=trap_receiver.address)
    sys_name = ".1.3.6.1.3.117.3.1.1.1.0"  # ibSmaNodeString
    # The subagent starts first: no socket yet, a clear line, no traceback, no UDP.
    with SubagentProcess(tmp_path, master.socket, "--fabric", "fat-tree:spines=1,leaves=1,hosts=2",
                         "--scenario", str(scenario)) as agent:
        assert wait_until(lambda: "the socket does not exist" in agent.output(), 10)
        assert "try: snmpbulkwalk" not in agent.output()  # no UDP endpoint announced
        with master:
            assert wait_until(lambda: answered(master, "public", sys_name), 15), agent.output()
            # Notifications go through the master to its trap2sink.
            assert wait_until(lambda: any("ibSmaBad" in r.trap_oid
                                          for r in trap_receiver.received()), 15), \
                trap_receiver.log.read_text()
        assert not answered(master, "public", sys_name)  # the master is down
        with master:  # restarted: the subagent reconnects and registers again
            assert wait_until(lambda: answered(master, "public", sys_name), 20), agent.output()
        assert agent.stop() == 0
    output = agent.output()
    assert "Traceback" not in output
    assert output.count("AgentX session") >= 2 and "reconnecting in" in output


def test_set_through_snmpd_persists_and_a_killed_subagent_is_replaced(tmp_path: Path) -> None:
    state = tmp_path / "state"
    sweep = dotted(instance("ibSmConfigSweepInterval", SET_PREFIX))
    priority = dotted(instance("ibSmConfigPriority", SET_PREFIX))
    with SnmpdMaster(tmp_path / "snmpd") as master:
        first = SubagentProcess(tmp_path, master.socket, "--fabric", SET_SPEC, state_dir=state)
        with first:
            assert wait_until(lambda: answered(master, "public", sweep), 15), first.output()
            result = master.snmp("snmpset", sweep, "i", "47",
                                 community=WRITE_COMMUNITY)
            assert result.returncode == 0 and "INTEGER: 47" in result.stdout, result
            # The same validation as over UDP: wrongValue, at the varbind that failed.
            refused = master.snmp("snmpset", sweep, "i", "48", priority,
                                  "i", "99", community=WRITE_COMMUNITY)
            assert "wrongValue" in refused.stderr and "ibSmConfig" not in refused.stdout
            assert "Failed object: " + priority in refused.stderr, refused.stderr
            get = master.snmp("snmpget", sweep)
            assert "INTEGER: 47" in get.stdout, get
            first.kill()  # no Close: snmpd finds the connection gone
        assert wait_until(lambda: not answered(master, "public", sweep), 10)
        with SubagentProcess(tmp_path, master.socket, "--fabric", SET_SPEC,
                             state_dir=state) as second:
            assert wait_until(lambda: answered(master, "public", sweep), 15), second.output()
            assert "INTEGER: 47" in master.snmp("snmpget", sweep).stdout  # persisted
            assert second.stop() == 0
            assert "AgentX session closed" in second.output()  # Close answered at SIGTERM

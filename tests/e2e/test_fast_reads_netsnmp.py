"""net-snmp's snmpbulkwalk of the five MIBs prints the same with and without the fast path.

One `ibsnmp run` per fabric; its [limits] fast_path is switched by a
configuration reload (SIGHUP) between walks of each context type: the
default context (the SM's host), a switch, a CA. The topology fabric has
no value that changes with time, so its walks must be equal byte for
byte, and a second fast walk (answered from the kept steps) too. The simulated fabric's counters grow while the walks run: it is
walked fast, slow, fast, and every line the two fast walks agree on must
be in the slow walk as it is.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.e2e import RunningAgent, ibsnmp_agent
from tests.support.agent_support import needs_net_snmp

from ibsnmp.fabric.model import Fabric
from ibsnmp.providers.simulated import SimulatedProvider
from ibsnmp.providers.topology import TopologyProvider
from tests.support.paths import DATA_DIR

pytestmark = needs_net_snmp

TOPOLOGY = DATA_DIR / "edr_hdr_router.topo"
SM_PORT_GUID = "0x248a070300a0b101"
INFINIBAND = ".1.3.6.1.3.117"
RELOAD_TIMEOUT_S = 20.0
# A node's walk of a topology dump: its node, port and counter groups at least
# (a dump holds few values: what it does not carry has no instance).
WALK_LINES_AT_LEAST = 30


class Toggle:
    def __init__(self, agent: RunningAgent, config: Path,
                 render: Callable[[bool], str] | None = None) -> None:
        self.agent, self.config = agent, config
        self.render = render or _config  # the configuration with fast_path on or off

    def set_fast(self, on: bool) -> None:
        self.config.write_text(self.render(on))
        self.agent.process.send_signal(signal.SIGHUP)
        stdout = self.agent.process.stdout
        assert stdout is not None
        deadline = time.monotonic() + RELOAD_TIMEOUT_S
        while time.monotonic() < deadline:
            line = stdout.readline()
            assert line, "the agent stopped"
            if "configuration reloaded" in line:
                return
        raise AssertionError("no reload")

    def walk(self, context: str) -> str:
        community = "public" + (f"@{context}" if context else "")
        result = self.agent.snmp("snmpbulkwalk", "-v2c", "-c", community, "-Cr50", INFINIBAND,
                                 timeout=300)
        assert result.returncode == 0, result.stderr
        assert result.stdout.count("\n") > WALK_LINES_AT_LEAST
        return result.stdout


def _config(fast: bool) -> str:
    return f'[[community]]\nname = "public"\n[limits]\nfast_path = {str(fast).lower()}\n'


@contextmanager
def toggled_agent(tmp_path: Path, *args: str, fabric: str = "single") -> Iterator[Toggle]:
    config = tmp_path / "ibsnmp.toml"
    config.write_text(_config(True))
    with ibsnmp_agent("--config", str(config), *args, fabric=fabric) as agent:
        yield Toggle(agent, config)


def _contexts(fabric: Fabric) -> list[str]:
    """The default context, a switch's and a CA's (those a fabric has)."""
    names = [""]
    for want_switch in (True, False):
        node = next((n for n in fabric.nodes.values() if n.is_switch == want_switch
                     and n is not fabric.local_node), None)
        if node is not None:
            names.append(f"{node.guid:016x}")
    return names


def test_topology_walks_are_equal_byte_for_byte(tmp_path: Path) -> None:
    fabric = TopologyProvider(TOPOLOGY, sm_guid=int(SM_PORT_GUID, 16), sm_priority=14).snapshot
    with toggled_agent(tmp_path, "--provider", "topology", "--topology", str(TOPOLOGY),
                       "--sm-guid", SM_PORT_GUID) as agent:
        for context in _contexts(fabric):
            fast = agent.walk(context)
            assert agent.walk(context) == fast, context  # the second from the kept steps
            agent.set_fast(False)
            slow = agent.walk(context)
            agent.set_fast(True)
            assert fast == slow, context


def test_simulated_walks_agree_but_for_what_grows(tmp_path: Path) -> None:
    # One host: a switch's context would add its SL-to-VL tables, 26,000
    # rows each, walked three times; the topology test covers switches.
    fabric = SimulatedProvider("single", 1, watch_interval=0).snapshot
    with toggled_agent(tmp_path, fabric="single") as agent:
        for context in _contexts(fabric):
            before = agent.walk(context).splitlines()
            agent.set_fast(False)
            slow = agent.walk(context).splitlines()
            agent.set_fast(True)
            after = agent.walk(context).splitlines()
            assert len(before) == len(slow) == len(after), context
            steady = [i for i, (a, b) in enumerate(zip(before, after)) if a == b]
            assert len(steady) > len(before) // 2
            assert [slow[i] for i in steady] == [before[i] for i in steady], context

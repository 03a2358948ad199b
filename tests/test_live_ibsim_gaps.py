"""`ibsnmp run --provider live` on an ibsim fabric whose console the test
holds: a node whose SMA drops NodeDescription (ibsim's `Error` command) is
served without a description, and PortCounters set through ibsim's
`PerformanceSet` raise traps 129 and 130 from the polls."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_live_ibsim import PORT_ACTIVE, port_state, until

from e2e import free_udp_port, net_snmp, stop
from ibsim import NET_DIR, Fabric, ibsim_fabric, opensm_running
from trapd import TrapReceiver

POLL_S = 1.0
SWEEP_S = 4.0
H6, S3 = 0x10000F, 0x200002
ATTR_NODE_DESCRIPTION = 16


@dataclass
class Agent:
    fabric: Fabric
    address: str
    traps: TrapReceiver
    log: Path

    def get(self, guid: int | None, oid: str) -> str:
        community = "public" if guid is None else f"public@{guid:016x}"
        done = net_snmp("snmpget", "-v2c", "-c", community, "-OQ", "-Os", self.address, oid)
        assert done.returncode == 0, done.stderr
        return done.stdout.partition(" = ")[2].strip()

    def column(self, name: str) -> dict[str, str]:
        done = net_snmp("snmpwalk", "-v2c", "-c", "public", "-OQ", "-Os", "-Ob", self.address,
                        f"IB-SM-MIB::{name}")
        assert done.returncode == 0, done.stderr
        return {key.partition(".")[2]: value.strip('"') for key, _, value in
                (line.partition(" = ") for line in done.stdout.splitlines())}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agent]:
    workdir = tmp_path_factory.mktemp("ibsim-live-gaps")
    with ibsim_fabric(NET_DIR / "live.net", workdir, console=True) as fabric, \
            ExitStack() as stack:
        stack.enter_context(opensm_running(fabric))
        until("H-6 port 1", lambda: port_state(fabric, "0,1,8,2", 1), lambda s: s == PORT_ACTIVE)
        # From now on H-6's SMA drops every NodeDescription request.
        fabric.command(f'Error "H-6" 100 {ATTR_NODE_DESCRIPTION}')
        traps = stack.enter_context(TrapReceiver(tmp_path_factory.mktemp("trapd")))
        state = stack.enter_context(tempfile.TemporaryDirectory(prefix="ibsnmp-state-"))
        address = f"127.0.0.1:{free_udp_port()}"
        log = workdir / "agent.log"
        process = subprocess.Popen(
            [sys.executable, "-m", "ibsnmp", "run", "--provider", "live", "--listen", address,
             "--state-dir", state, "--poll-interval", str(POLL_S),
             "--sweep-interval", str(SWEEP_S), "--trap-target", traps.address],
            env=fabric.environment(), cwd=fabric.workdir,
            stdout=stack.enter_context(open(log, "wb")), stderr=subprocess.STDOUT)
        stack.callback(stop, process)
        until("the agent's banner", lambda: (process.poll(), log.read_text(errors="replace")),
              lambda seen: seen[0] is not None or "ibsnmp: serving" in seen[1])
        assert process.poll() is None, log.read_text(errors="replace")
        yield Agent(fabric, address, traps, log)


def test_a_node_description_that_is_not_answered_is_served_as_no_instance(agent: Agent) -> None:
    assert agent.get(H6, "SMA-MIB::ibSmaNodeString.0") == "No Such Instance currently exists " \
        "at this OID"
    assert agent.get(S3, "SMA-MIB::ibSmaNodeString.0") == "S-3"
    guids = agent.column("ibSmNodeInfoNodeGUID")
    descriptions = agent.column("ibSmNodeInfoDescription")
    assert len(guids) == 9 and len(descriptions) == 8
    assert sorted(descriptions.values()) == ["H-1", "H-2", "H-3", "H-4", "H-5", "S-1", "S-2",
                                             "S-3"]
    assert "Traceback" not in agent.log.read_text(errors="replace")


def trap_ports(agent: Agent, name: str, since: int) -> list[str]:
    return [received.value("SMA-MIB::ibSmaNodePortNum.0").split()[-1] for received in
            agent.traps.received()[since:] if received.trap_oid.endswith(f"SMA-MIB::{name}")]


def test_port_counters_that_cross_their_threshold_raise_129_and_130(agent: Agent) -> None:
    since = len(agent.traps.received())
    # ibsim's ports hold thresholds of 0 (the watcher takes 1): any growth crosses.
    agent.fabric.command('PerformanceSet "S-3"[1] PortCounters.LocalLinkIntegrityErrors=3')
    agent.fabric.command('PerformanceSet "S-3"[8] PortCounters.ExcessiveBufferOverrunErrors=2')
    until("trap 129 from S-3 port 1",
          lambda: trap_ports(agent, "ibSmaLinkIntegrityThresReached", since),
          lambda ports: ports == ["1"])
    until("trap 130 from S-3 port 8",
          lambda: trap_ports(agent, "ibSmaExcessBuffOverrunThres", since),
          lambda ports: ports == ["8"])
    (raised,) = [r for r in agent.traps.received()[since:]
                 if r.trap_oid.endswith("SMA-MIB::ibSmaLinkIntegrityThresReached")]
    assert raised.value("SMA-MIB::ibSmaNodeLid.0").split()[-1] == agent.get(S3, "SMA-MIB::ibSmaPortLid.0")
    # Counters that stand still raise nothing more.
    seen = len(agent.traps.received())
    time.sleep(3 * POLL_S)
    assert len(agent.traps.received()) == seen, agent.traps.received()[seen:]

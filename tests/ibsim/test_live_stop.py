"""SIGTERM and SIGINT end `ibsnmp run --provider live` within 2 s on an ibsim
fabric, whatever MADs or SA queries are outstanding: with OpenSM answering;
with OpenSM killed (-9) once the agent's SA queries time out, or just before
the signal (its SA not yet known silent); while a path request waits for
that silent SA; while SMPs to a switch go unanswered (ibsim's `Error`).
Each exit is 0, says "stopping" and no traceback, and leaves the state
directory whole: its files parse, a value SET before the signal is there,
and no temporary file is left.

Each test has an OpenSM and an agent of its own (the agent attaches at H-1,
as the SA client does); the time is measured from the signal to the exit."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ibsim.test_live_ibsim import SubnetManager, live_agent, subnet_up, until
from tests.support.e2e import free_udp_port, net_snmp
from tests.support.ibsim import NET_DIR, Fabric, ibsim_fabric
from tests.support.infiniband_diags import run_diag

STOP_LIMIT_S = 2.0
# How long a stop is waited for before the agent is killed: past the limit,
# so that a slow stop is measured rather than cut short.
HANG_S = 30.0
POLL_S = 1.0
SWEEP_S = 4.0
SUBNET_PREFIX = "254.128.0.0.0.0.0.0"  # fe80::/64 as IB-SM-MIB index octets
ATTR_PORT_INFO = 21  # ibsim's `Error` drops a node's SMPs of this attribute
CONTACT = "stop-test@example.net"
OPENSM_SM_KEY = 1  # OpenSM's default: the SA lists InformInfoRecords to its holder


@dataclass
class Agent:
    """An agent started by a test: its process, address, log and state directory."""

    process: subprocess.Popen[bytes]
    address: str
    log: Path
    state: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, what: str, line: str) -> None:
        until(what, self.text, lambda seen: line in seen)

    def snmpset(self, *varbinds: str) -> None:
        done = net_snmp("snmpset", "-v2c", "-c", "private", self.address, *varbinds)
        assert done.returncode == 0, done.stderr

    def stopped_in(self, sig: signal.Signals) -> float:
        """Seconds from `sig` to the process's exit (exit code 0)."""
        sent = time.monotonic()
        self.process.send_signal(sig)
        try:
            code = self.process.wait(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail(f"still running {HANG_S} s after {sig.name}:\n{self.text()[-3000:]}")
        took = time.monotonic() - sent
        assert code == 0, self.text()[-3000:]
        return took


@pytest.fixture(scope="module")
def fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fabric]:
    with ibsim_fabric(NET_DIR / "live.net", tmp_path_factory.mktemp("ibsim-stop"),
                      console=True) as running:
        yield running


@pytest.fixture
def sm(fabric: Fabric) -> Iterator[SubnetManager]:
    """OpenSM of the test's own, the subnet up; stopped (if still running) after it."""
    with ExitStack() as stack:
        yield subnet_up(stack, fabric)


@pytest.fixture
def agent(fabric: Fabric, sm: SubnetManager, tmp_path: Path) -> Iterator[Agent]:
    """An agent (debug log), subscribed to the SA's traps; killed if a test leaves it running."""
    state = tmp_path / "state"
    log = tmp_path / "agent.log"
    address = f"127.0.0.1:{free_udp_port()}"
    with ExitStack() as stack:
        process = live_agent(stack, fabric, log, "--listen", address, "--state-dir", str(state),
                             "--poll-interval", str(POLL_S), "--sweep-interval", str(SWEEP_S),
                             "--write-community", "private", "--verbose")
        running = Agent(process, address, log, state)
        running.wait_for("the agent's SA subscriptions", "SA subscriptions: traps [1")
        # A SET that the state file keeps: it must be whole after the stop.
        running.snmpset("SNMPv2-MIB::sysContact.0", "s", CONTACT)
        yield running


def assert_stopped_cleanly(agent: Agent, took: float) -> None:
    text = agent.text()
    assert took < STOP_LIMIT_S, f"stopped in {took:.2f} s:\n{text[-3000:]}"
    assert "stopping" in text
    assert "Traceback" not in text, text
    names = sorted(path.name for path in agent.state.iterdir())
    assert not [name for name in names if name.endswith(".tmp")], names
    json.loads((agent.state / "ibsnmp-engine.json").read_text())
    saved = json.loads((agent.state / "ibsnmp-state.json").read_text())
    assert CONTACT in json.dumps(saved)


def sa_subscriptions(fabric: Fabric) -> set[int]:
    """The traps of the InformInfoRecords the SA lists (under ibsim the first two only)."""
    listed = run_diag(fabric, "saquery", "--smkey", str(OPENSM_SM_KEY), "-I")
    return {int(n) for n in re.findall(r"trap_num\.+(\d+)", listed)}


def test_with_the_sm_answering_the_agent_stops_at_once(fabric: Fabric, agent: Agent) -> None:
    assert sa_subscriptions(fabric)
    took = agent.stopped_in(signal.SIGTERM)
    assert_stopped_cleanly(agent, took)
    assert "SA unsubscribe" not in agent.text()  # the SM answered it
    assert not sa_subscriptions(fabric)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_with_the_sm_killed_the_agent_stops_within_2_s(agent: Agent, sm: SubnetManager,
                                                       sig: signal.Signals) -> None:
    sm.kill()
    # A poll's subscription check timed out: the SA is known silent.
    agent.wait_for("an SA query that timed out", "no answer after 3 tries")
    assert_stopped_cleanly(agent, agent.stopped_in(sig))
    assert "SA unsubscribe skipped" in agent.text()


def test_with_the_sm_killed_just_before_the_agent_stops_within_2_s(
        agent: Agent, sm: SubnetManager) -> None:
    sm.kill()  # nothing has timed out yet: the agent still takes the SA for answering
    assert_stopped_cleanly(agent, agent.stopped_in(signal.SIGTERM))


def test_while_a_path_request_waits_for_a_killed_sm_the_agent_stops_within_2_s(
        agent: Agent, sm: SubnetManager) -> None:
    sm.kill()
    request = "IB-SM-MIB::ibSmPathReq"
    agent.snmpset(f"{request}RowStatus.{SUBNET_PREFIX}.401", "i", "4",
                  f"{request}SrcLID.{SUBNET_PREFIX}.401", "i", "1",
                  f"{request}DstLID.{SUBNET_PREFIX}.401", "i", "2")
    agent.wait_for("the PathRecord query asking again", "SA PathRecord: no answer within")
    assert_stopped_cleanly(agent, agent.stopped_in(signal.SIGTERM))


def test_while_smps_go_unanswered_the_agent_stops_within_2_s(
        fabric: Fabric, agent: Agent, sm: SubnetManager) -> None:
    sm.kill()
    # S-3 answers no PortInfo: each poll waits out its retries, then a sweep does.
    fabric.command(f'Error "S-3" 100 {ATTR_PORT_INFO}')
    try:
        agent.wait_for("a poll with unanswered SMPs", "live: poll: ")
        assert_stopped_cleanly(agent, agent.stopped_in(signal.SIGTERM))
    finally:
        fabric.command(f'Error "S-3" 0 {ATTR_PORT_INFO}')


# Under ibsim's preload: a thread waiting in umad_recv (a 30 s receive, in
# slices) while another interrupts the port. Prints how the receive ended and
# how long after the interruption.
INTERRUPT_PROBE = """
import json, sys, threading, time
from ibsnmp.mad.umad import PortClosing, UmadPort

ended = {}

def receive(port):
    try:
        ended["by"] = repr(port.receive(30.0))
    except PortClosing:
        ended["by"] = "PortClosing"
    ended["at"] = time.monotonic()

def in_a_receive(thread):
    frame = sys._current_frames().get(thread.ident)
    return frame is not None and frame.f_code.co_name == "receive"

with UmadPort() as port:
    reader = threading.Thread(target=receive, args=(port,))
    reader.start()
    deadline = time.monotonic() + 10
    while not in_a_receive(reader) and time.monotonic() < deadline:
        time.sleep(0.01)
    interrupted = time.monotonic()
    port.interrupt()
    reader.join(60)
print(json.dumps({"by": ended.get("by"), "after": ended.get("at", 0.0) - interrupted}))
"""


def test_an_interrupted_port_ends_a_receive_under_way_within_a_slice(fabric: Fabric) -> None:
    from ibsnmp.mad.umad import RECEIVE_SLICE_S

    done = fabric.run([sys.executable, "-c", INTERRUPT_PROBE])
    assert done.returncode == 0, done.stderr
    ended = json.loads(done.stdout)
    assert ended["by"] == "PortClosing"
    assert ended["after"] < RECEIVE_SLICE_S + 0.5, ended

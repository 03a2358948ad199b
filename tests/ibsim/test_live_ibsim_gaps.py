"""`ibsnmp run --provider live` on an ibsim fabric whose console the test
holds: a node whose SMA drops NodeDescription (ibsim's `Error` command) is
served without a description, PortCounters set through ibsim's
`PerformanceSet` raise traps 129 and 130 from the polls, and an SM that
takes over on another node (another LID) gets the agent's SA questions."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from tests.ibsim.test_live_ibsim import (
    Live,
    agent_listening,
    ca_lid,
    request_path,
    session_rows,
    subnet_up,
    subscribed_traps,
    until,
    wait_for_polls,
)

from tests.support.e2e import net_snmp
from tests.support.ibsim import NET_DIR, ibsim_fabric
from tests.support.trapd import TrapReceiver

POLL_S = 1.0
SWEEP_S = 4.0
H6, S3 = 0x10000F, 0x200002
ATTR_NODE_DESCRIPTION = 16
NO_INSTANCE = "No Such Instance currently exists at this OID"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    workdir = tmp_path_factory.mktemp("ibsim-live-gaps")
    with ibsim_fabric(NET_DIR / "live.net", workdir, console=True) as fabric, \
            ExitStack() as stack:
        sm = subnet_up(stack, fabric)
        # Until the test that needs it ends, H-6's SMA drops every NodeDescription request.
        fabric.command(f'Error "H-6" 100 {ATTR_NODE_DESCRIPTION}')
        traps = stack.enter_context(TrapReceiver(tmp_path_factory.mktemp("trapd")))
        agent, address, log = agent_listening(
            stack, fabric, "--poll-interval", str(POLL_S), "--sweep-interval", str(SWEEP_S),
            "--trap-target", traps.address, "--write-community", "private", "--verbose")
        yield Live(fabric, sm, agent, address, traps, log)


def snmpget(live: Live, guid: int | None, oid: str) -> str:
    community = "public" if guid is None else f"public@{guid:016x}"
    done = net_snmp("snmpget", "-v2c", "-c", community, "-OQ", "-Os", live.address, oid)
    assert done.returncode == 0, done.stderr
    return done.stdout.partition(" = ")[2].strip()


def test_a_node_description_that_is_not_answered_is_served_as_no_instance(live: Live) -> None:
    try:
        assert snmpget(live, H6, "SMA-MIB::ibSmaNodeString.0") == NO_INSTANCE
        assert snmpget(live, S3, "SMA-MIB::ibSmaNodeString.0") == "S-3"
        table = "IB-SM-MIB::ibSmNodeInfoTable"
        guids = live.column(None, "ibSmNodeInfoNodeGUID", table)
        descriptions = live.column(None, "ibSmNodeInfoDescription", table)
        assert len(guids) == 9
        assert sorted(descriptions.values()) == ["H-1", "H-2", "H-3", "H-4", "H-5", "S-1", "S-2",
                                                 "S-3"]
        assert "Traceback" not in live.log.read_text(errors="replace")
    finally:
        live.fabric.command(f'Error "H-6" 0 {ATTR_NODE_DESCRIPTION}')
    until("H-6's description once it answers", lambda: snmpget(live, H6, "SMA-MIB::ibSmaNodeString.0"),
          lambda value: value == "H-6")


def trap_ports(live: Live, name: str, since: int) -> list[str]:
    return [received.value("SMA-MIB::ibSmaNodePortNum.0").split()[-1] for received in
            live.traps.received()[since:] if received.trap_oid.endswith(f"SMA-MIB::{name}")]


def test_port_counters_that_cross_their_threshold_raise_129_and_130(live: Live) -> None:
    since = len(live.traps.received())
    # ibsim's ports hold thresholds of 0 (the watcher takes 1): any growth crosses.
    live.fabric.command('PerformanceSet "S-3"[1] PortCounters.LocalLinkIntegrityErrors=3')
    live.fabric.command('PerformanceSet "S-3"[8] PortCounters.ExcessiveBufferOverrunErrors=2')
    until("trap 129 from S-3 port 1",
          lambda: trap_ports(live, "ibSmaLinkIntegrityThresReached", since),
          lambda ports: ports == ["1"])
    until("trap 130 from S-3 port 8",
          lambda: trap_ports(live, "ibSmaExcessBuffOverrunThres", since),
          lambda ports: ports == ["8"])
    (raised,) = [r for r in live.traps.received()[since:]
                 if r.trap_oid.endswith("SMA-MIB::ibSmaLinkIntegrityThresReached")]
    assert raised.value("SMA-MIB::ibSmaNodeLid.0").split()[-1] == snmpget(
        live, S3, "SMA-MIB::ibSmaPortLid.0")
    # Counters that stand still raise nothing more: after two polls, the
    # next trap to arrive is the one a further growth raises.
    seen = len(live.traps.received())
    wait_for_polls(live.log, 2)
    live.fabric.command('PerformanceSet "S-3"[1] PortCounters.LocalLinkIntegrityErrors=6')
    until("trap 129 from S-3 port 1 again",
          lambda: trap_ports(live, "ibSmaLinkIntegrityThresReached", seen), bool)
    after = live.traps.received()[seen:]
    assert [r.trap_oid.rpartition(":")[2] for r in after] == ["ibSmaLinkIntegrityThresReached"], after


def ask_for_a_path(live: Live, session: int) -> dict[int, dict[str, str]]:
    """A PathRecord request from the agent's port to H-6; the rows the SA answered."""
    request_path(live, session, ca_lid(live, None), ca_lid(live, H6))
    deadline = time.monotonic() + 2 * POLL_S  # an SA answers in milliseconds; one not there, never
    while not (rows := session_rows(live, "ibSmPathResultTable", session)):
        if time.monotonic() > deadline:
            break
    return rows


def master_sm_lid(live: Live) -> int:
    return int(snmpget(live, None, "SMA-MIB::ibSmaPortMasterSmLid.0"))


def test_the_sa_client_follows_an_sm_that_takes_over_on_another_node(live: Live) -> None:
    before = master_sm_lid(live)
    assert len(ask_for_a_path(live, 301)) == 1
    subscribed = subscribed_traps(live)
    assert subscribed
    live.sm.stop()
    live.sm.start(host="H-3")
    moved = until("the new master SM's LID served", lambda: master_sm_lid(live),
                  lambda lid: lid != before)
    until("the SA client reopened", lambda: live.log.read_text(errors="replace"),
          lambda text: f"the master SM answers at LID {moved} now (the SA client asked {before})"
          in text)
    until("the agent's subscriptions at the new SM", lambda: subscribed_traps(live),
          lambda traps: traps == subscribed)
    sessions = iter(range(302, 400))  # a session per try
    rows = until("a path from the new SA", lambda: ask_for_a_path(live, next(sessions)),
                 lambda found: len(found) == 1)
    (row,) = rows.values()
    assert int(row["ibSmPathResultDstLID"]) == ca_lid(live, H6)
    assert live.agent.poll() is None

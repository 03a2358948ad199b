"""`ibsnmp run --provider live` through an SM failover on ibsim: a master
OpenSM and a standby; the master is killed (-9); the agent's SMInfo table
shows the standby as master within one poll of its MASTER transition, and
the dead master no longer as master."""

from __future__ import annotations

import re
import time
from contextlib import ExitStack
from pathlib import Path

from tests.ibsim.test_live_ibsim import LMC, PORT_ACTIVE, agent_listening, port_state, until
from tests.support.e2e import net_snmp
from tests.support.ibsim import NET_DIR, ibsim_fabric, opensm_running

POLL_S, SWEEP_S = 1.0, 60.0  # no sweep comes to the rescue: the polls alone must show it
MASTER, STANDBY = "3", "2"  # IbSmState codes as SMInfo.SMState
STANDBY_HOST = "H-2"  # reached by a route out of the agent's own port (H-1 port 1)
# A standby polls the master this often (ms) and takes over after this many
# unanswered polls: OpenSM's defaults (10 s, 4) made short for a test.
FAST_POLLING = "sminfo_polling_timeout 500\npolling_retry_number 2\n"


def sm_states(address: str) -> dict[str, str]:
    """ibSmSMInfoSMState by row (the index names the SM's port)."""
    done = net_snmp("snmpwalk", "-v2c", "-c", "public", "-OQ", "-Os", "-Ob", address,
                    "IB-SM-MIB::ibSmSMInfoSMState")
    assert done.returncode == 0, done.stderr
    return {name.split(".", 1)[1]: value for name, _, value in
            (line.partition(" = ") for line in done.stdout.splitlines()) if value}


def test_the_new_master_shows_within_a_poll_of_its_transition(tmp_path: Path) -> None:
    config = tmp_path / "opensm.conf"
    config.write_text(FAST_POLLING)
    with ibsim_fabric(NET_DIR / "live.net", tmp_path) as fabric, ExitStack() as stack:
        master = stack.enter_context(opensm_running(fabric, "--lmc", str(LMC), "-p", "10",
                                                    "-F", str(config)))
        until("H-6 port 1", lambda: port_state(fabric, "0,1,8,2", 1), lambda s: s == PORT_ACTIVE)
        stack.enter_context(opensm_running(fabric, "--lmc", str(LMC), "-p", "1", "-F", str(config),
                                           host=STANDBY_HOST))
        standby_log = fabric.workdir / f"opensm-{STANDBY_HOST}" / "opensm.log"
        standby_said = lambda: standby_log.read_text(errors="replace") if standby_log.exists() else ""  # noqa: E731
        until("the standby in standby", standby_said,
              lambda text: "Entering STANDBY state" in text)
        agent, address, log = agent_listening(stack, fabric, "--poll-interval", str(POLL_S),
                                               "--sweep-interval", str(SWEEP_S))
        before = until("a master and a standby served", lambda: sm_states(address),
                       lambda states: sorted(states.values()) == [STANDBY, MASTER])
        standby_row = next(row for row, state in before.items() if state == STANDBY)
        master.kill()
        master.wait()
        took_over = until("the standby entering MASTER", standby_said,
                          lambda text: "Entering MASTER state" in text)
        transition = time.monotonic()
        assert took_over
        states = until("the new master served", lambda: sm_states(address),
                       lambda states: states.get(standby_row) == MASTER)
        shown = time.monotonic() - transition
        # One poll (1 s), plus the time a poll takes and the 0.2 s steps of `until`.
        assert shown <= POLL_S + 1.5, f"{shown:.2f} s"
        assert list(states.values()).count(MASTER) == 1, states
        assert re.search(r"no longer (answers SMInfo|says IsSM)|SM at .* stopped", log.read_text()), \
            log.read_text()[-3000:]

"""SIGHUP: communities, users and trap targets re-read; the fabric keeps being served."""

from __future__ import annotations

import os
import select
import signal
import time
from pathlib import Path

from tests.support.e2e import RunningAgent, ibsnmp_agent
from tests.support.trapd import TrapReceiver

SYS_UPTIME_0 = ".1.3.6.1.2.1.1.3.0"
NODE_STRING_0 = "SMA-MIB::ibSmaNodeString.0"
# Bad Q_Key events every 0.3 s from the start: something to notify about.
SCENARIO = """
[[event]]
at = 0.5
action = "bad-q-key"
from = 1
to = "host004"
repeat = 10000
period = 0.3
"""


def write_config(path: Path, body: str) -> Path:
    path.write_text(body)
    path.chmod(0o600)
    return path


def wait_for_line(agent: RunningAgent, needle: str, timeout: float = 20.0) -> str:
    """The agent's first log line from now on that contains `needle`."""
    stream = agent.process.stdout
    assert stream is not None
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 0.2)
        if ready:
            line = stream.readline()
            seen.append(line)
            if needle in line:
                return line
    raise AssertionError(f"no log line with {needle!r}; saw:\n{''.join(seen)}")


def uptime(agent: RunningAgent, community: str) -> int | None:
    result = agent.snmp("snmpget", "-v2c", "-c", community, "-r", "0", "-t", "1", "-Ovt",
                        SYS_UPTIME_0)
    return int(result.stdout.strip()) if result.returncode == 0 else None


def reload(agent: RunningAgent) -> None:
    os.kill(agent.process.pid, signal.SIGHUP)


def test_new_communities_and_users_take_over_without_a_restart(tmp_path: Path) -> None:
    config = write_config(tmp_path / "ibsnmp.toml", '[[community]]\nname = "alpha-ro"\n')
    with ibsnmp_agent("--config", str(config)) as agent:
        before = uptime(agent, "alpha-ro")
        assert before is not None
        write_config(config, '[[community]]\nname = "beta-ro"\n'
                             '[[user]]\nname = "opsuser"\nauth = "SHA256"\n'
                             'auth_key = "ops-auth-key"\npriv = "AES"\npriv_key = "ops-priv-key"\n')
        reload(agent)
        line = wait_for_line(agent, "configuration reloaded")
        assert "communities 1 -> 1 (1 new, 1 gone)" in line and "users: added opsuser" in line
        assert "alpha-ro" not in line and "beta-ro" not in line  # secrets are never logged
        assert uptime(agent, "alpha-ro") is None
        after = uptime(agent, "beta-ro")
        assert after is not None and after >= before  # the same agent, still up
        v3 = agent.snmp("snmpget", "-v3", "-l", "authPriv", "-u", "opsuser", "-a", "SHA-256",
                        "-A", "ops-auth-key", "-x", "AES", "-X", "ops-priv-key", "-Oqv",
                        NODE_STRING_0)
        assert v3.returncode == 0 and "HCA" in v3.stdout, v3.stderr
        assert agent.process.poll() is None


def test_a_broken_file_is_refused_and_the_old_configuration_stays(tmp_path: Path) -> None:
    config = write_config(tmp_path / "ibsnmp.toml", '[[community]]\nname = "alpha-ro"\n')
    with ibsnmp_agent("--config", str(config)) as agent:
        write_config(config, '[[community]]\nname = "beta-ro\n')  # unterminated string
        reload(agent)
        line = wait_for_line(agent, "configuration not reloaded")
        assert "TOML syntax" in line and "configuration in force stays" in line
        write_config(config, '[[community]]\nname = "beta-ro"\naccess = "everything"\n')
        reload(agent)
        line = wait_for_line(agent, "configuration not reloaded")
        assert "community[0].access" in line
        assert uptime(agent, "alpha-ro") is not None
        assert uptime(agent, "beta-ro") is None
        assert agent.process.poll() is None


def test_restart_only_settings_are_reported_not_applied(tmp_path: Path) -> None:
    config = write_config(tmp_path / "ibsnmp.toml", '[[community]]\nname = "alpha-ro"\n')
    with ibsnmp_agent("--config", str(config)) as agent:
        write_config(config, 'engine_id = "0x80000000010a0b0c0d"\n'
                             '[[community]]\nname = "alpha-ro"\n')
        reload(agent)
        assert "engine_id changed" in wait_for_line(agent, "configuration reload:")
        assert "nothing changed" in wait_for_line(agent, "configuration reloaded")


def test_trap_targets_added_by_a_reload_receive_notifications(tmp_path: Path) -> None:
    config = write_config(tmp_path / "ibsnmp.toml", '[[community]]\nname = "public"\n')
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    with TrapReceiver(tmp_path / "trapd") as receiver, \
            ibsnmp_agent("--config", str(config), "--scenario", str(scenario)) as agent:
        # Raised, and sent nowhere: no target yet.
        wait_for_line(agent, "scenario: event 1 #2 bad-q-key")
        assert receiver.received() == []
        write_config(config, '[[community]]\nname = "public"\n'
                             f'[[trap_target]]\naddress = "{receiver.address}"\n')
        reload(agent)
        assert f"trap targets: added {receiver.address}" in wait_for_line(
            agent, "configuration reloaded")
        got = receiver.wait_for(3, timeout=20)
        assert len(got) >= 3
        assert {r.trap_oid for r in got} == {"OID: SMA-MIB::ibSmaBadQueueKey"}
        # Removing the target stops the notifications.
        write_config(config, '[[community]]\nname = "public"\n')
        reload(agent)
        assert f"trap targets: removed {receiver.address}" in wait_for_line(
            agent, "configuration reloaded")
        # Raised again, twice, and sent nowhere: what came before is all
        # the receiver gets.
        wait_for_line(agent, "scenario: event 1 #")
        count = len(receiver.received())
        for _ in range(2):
            wait_for_line(agent, "scenario: event 1 #")
        assert len(receiver.received()) == count


def _ignores_sighup(pid: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGHUP - 1)))
    return False


def test_sighup_while_starting_does_not_end_the_agent(tmp_path: Path) -> None:
    # A bigger fabric takes a moment to build: a SIGHUP arriving then (once
    # the command runs) is ignored, not the end of the process.
    import subprocess
    import sys

    from tests.support.e2e import PROJECT_ROOT, free_udp_port, stop

    port = free_udp_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ibsnmp", "run", "--listen", f"127.0.0.1:{port}",
         "--fabric", "fat-tree:spines=8,leaves=16,hosts=16", "--state-dir", str(tmp_path)],
        cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while not _ignores_sighup(process.pid):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.01)
        os.kill(process.pid, signal.SIGHUP)
        assert process.stdout is not None
        while "ibsnmp: serving" not in (line := process.stdout.readline()):
            assert line, "the agent ended after SIGHUP"
        os.kill(process.pid, signal.SIGHUP)  # now a reload, which says so
        while "configuration reload" not in (line := process.stdout.readline()):
            assert line, "the agent ended at a reload"
        assert process.poll() is None
    finally:
        assert stop(process) == 0

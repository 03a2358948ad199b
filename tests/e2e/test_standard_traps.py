"""coldStart and authenticationFailure (SNMPv2-MIB snmpTraps) at a real
snmptrapd: coldStart to SNMPv1 (generic-trap 0), v2c and v3 receivers when
the agent starts, first; authenticationFailure once per source and reason a
minute while snmpEnableAuthenTraps is enabled, by `[traps]
authentication_failure` (then read-only) or by a writer's SET (saved across
a restart; a reload applies the file's key)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.logged_agent import LoggedAgent, logged_agent
from tests.support.trapd import AGENT_USERS, ENGINE_ID, USER, Received, TrapReceiver

COLD_START = "OID: SNMPv2-MIB::coldStart"  # snmpTrapOID.0 as snmptrapd shows it
AUTH_FAILURE = "OID: SNMPv2-MIB::authenticationFailure"
ENABLE = "SNMPv2-MIB::snmpEnableAuthenTraps.0"
QUICK = ["-t", "0.5", "-r", "0"]
WRITER = ["-v2c", "-c", "rw-secret"]
READER = ["-v2c", "-c", "public"]


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrapReceiver]:
    with TrapReceiver(tmp_path_factory.mktemp("trapd")) as running:
        yield running


def trap_target(address: str, version: str) -> str:
    user = f'user = "{USER[0]}"\n' if version == "3" else ""
    return f'[[trap_target]]\naddress = "{address}"\nversion = "{version}"\n{user}'


def config(tmp_path: Path, receiver: TrapReceiver, traps: str = "",
           versions: tuple[str, ...] = ("2c",)) -> Path:
    path = tmp_path / "ibsnmp.toml"
    path.write_text(f'engine_id = "0x{ENGINE_ID}"\n' + traps + AGENT_USERS
                    + '[[community]]\nname = "rw-secret"\naccess = "write"\n'
                    + "".join(trap_target(receiver.address, v) for v in versions))
    path.chmod(0o600)
    return path


def named(received: list[Received], trap_oid: str) -> list[Received]:
    return [r for r in received if r.trap_oid == trap_oid]


def value_of(agent: LoggedAgent, *args: str) -> str:
    result = agent.snmp("snmpget", *READER, *args, ENABLE)
    assert result.returncode == 0, result.stderr
    return result.stdout


def wrong_community(agent: LoggedAgent, community: str = "guessed") -> None:
    agent.snmp("snmpget", "-v2c", "-c", community, *QUICK, "SNMPv2-MIB::sysDescr.0")


def test_cold_start_reaches_every_version_first(tmp_path: Path, receiver: TrapReceiver) -> None:
    since = len(receiver.received())
    with logged_agent("--config", str(config(tmp_path, receiver, versions=("1", "2c", "3")))):
        got = receiver.wait_for(3, since=since)
    assert len(got) == 3, got
    by_version = {r.version: r for r in got}
    assert set(by_version) == {"v1", "v2c", "v3"}, got
    v1 = by_version["v1"]
    assert (v1.generic, v1.specific) == ("0", "0"), v1
    assert v1.enterprise == "SNMPv2-MIB::snmpTraps", v1  # RFC 3584 3.2 (1)
    assert v1.varbinds == (), v1  # no extra varbinds (the agent-addr is a header field)
    for version in ("v2c", "v3"):
        received = by_version[version]
        assert received.kind == "TRAP2" and received.trap_oid == COLD_START, received
        assert [name for name, _ in received.varbinds] == [
            "SNMPv2-MIB::sysUpTime.0", "SNMPv2-MIB::snmpTrapOID.0"], received
    assert by_version["v3"].context == ""


def test_authentication_failure_when_the_file_enables_it(tmp_path: Path,
                                                         receiver: TrapReceiver) -> None:
    path = config(tmp_path, receiver, "[traps]\nauthentication_failure = true\n", ("1", "2c"))
    since = len(receiver.received())
    with logged_agent("--config", str(path), "--state-dir", str(tmp_path / "state")) as agent:
        assert len(receiver.wait_for(2, since=since)) == 2  # the coldStarts
        since += 2
        assert "enabled(1)" in value_of(agent)
        result = agent.snmp("snmpset", *WRITER, ENABLE, "i", "2")
        assert "notWritable" in result.stderr, result.stderr + result.stdout
        assert "enabled(1)" in value_of(agent)
        wrong_community(agent)
        wrong_community(agent)  # within the minute: no second notification
        # Another reason's refusal does send one: once it is in, the first
        # reason's second one would be too.
        wrong_community(agent, "public@00000000deadbeef")
        got = receiver.wait_for(4, since=since)
        assert agent.wait_for_refusal("refused a request from 127.0.0.1: unknown context")
        assert len(got) == 4, got
        v2c = [r for r in got if r.version == "v2c"]
        assert [r.trap_oid for r in v2c] == [AUTH_FAILURE] * 2, got
        assert [(r.generic, r.specific) for r in got if r.version == "v1"] == [("4", "0")] * 2
        # None for an authorization failure (a read-only community's SET), as
        # the next authentication failure's, which comes after it, proves.
        agent.snmp("snmpset", *READER, *QUICK, "SNMPv2-MIB::sysContact.0", "s", "x")
        agent.snmp("snmpget", "-v3", "-l", "authNoPriv", "-u", "nobody", "-a", "SHA-256",
                   "-A", "nobody-auth-key", *QUICK, "SNMPv2-MIB::sysDescr.0")
        got = receiver.wait_for(6, since=since)
        assert agent.wait_for_refusal("refused a request from 127.0.0.1: unknown user")
        assert len(got) == 6, got
        assert [r.trap_oid for r in got if r.version == "v2c"] == [AUTH_FAILURE] * 3, got
        assert agent.wait_for_refusal(
            "refused a request from 127.0.0.1: SET without write access")


def test_a_writers_set_enables_it_and_survives_a_restart(tmp_path: Path,
                                                         receiver: TrapReceiver) -> None:
    path = config(tmp_path, receiver)
    state = ["--state-dir", str(tmp_path / "state")]
    since = len(receiver.received())
    with logged_agent("--config", str(path), *state) as agent:
        assert len(receiver.wait_for(1, since=since)) == 1
        assert "disabled(2)" in value_of(agent)
        wrong_community(agent)  # disabled: no notification
        assert agent.wait_for_refusal("refused a request from 127.0.0.1: unknown community")
        result = agent.snmp("snmpset", *WRITER, ENABLE, "i", "1")
        assert result.returncode == 0 and "enabled(1)" in result.stdout, result.stderr
        wrong_community(agent, "public@00000000deadbeef")
        got = receiver.wait_for(2, since=since)
        assert [r.trap_oid for r in got] == [COLD_START, AUTH_FAILURE], got
    since = len(receiver.received())
    with logged_agent("--config", str(path), *state) as agent:
        assert "enabled(1)" in value_of(agent)
        wrong_community(agent)
        got = receiver.wait_for(2, since=since)
        assert [r.trap_oid for r in got] == [COLD_START, AUTH_FAILURE], got


def test_a_reload_applies_the_files_key(tmp_path: Path, receiver: TrapReceiver) -> None:
    path = config(tmp_path, receiver)
    with logged_agent("--config", str(path)) as agent:
        result = agent.snmp("snmpset", *WRITER, ENABLE, "i", "1")
        assert result.returncode == 0, result.stderr
        path.write_text(path.read_text().replace(
            "[[community]]", "[traps]\nauthentication_failure = false\n\n[[community]]", 1))
        agent.process.send_signal(signal.SIGHUP)
        assert agent.wait_until(lambda: "disabled(2)" in value_of(agent)), agent.output
        result = agent.snmp("snmpset", *WRITER, ENABLE, "i", "1")
        assert "notWritable" in result.stderr, result.stderr + result.stdout
        # Without the key again: the value the SET saved.
        path.write_text(path.read_text().replace("[traps]\nauthentication_failure = false\n",
                                                 ""))
        agent.process.send_signal(signal.SIGHUP)
        assert agent.wait_until(lambda: "enabled(1)" in value_of(agent)), agent.output

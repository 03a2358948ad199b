"""`ibsnmp run` tells the operator what it refuses: net-snmp's clients with a
wrong community, `public@<unknown node>`, a community from outside its
networks, a read-only community's SET, an unknown SNMPv3 user, a wrong
auth key, a read-only user's SET and an unknown context each leave exactly
one WARNING line (ibsnmp.refusals) naming the source and the reason, and no
secret; the same refusal again within the minute adds none."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.support.e2e import V3_USER, V3_USER_CONFIG
from tests.support.logged_agent import LoggedAgent, logged_agent

CONFIG = """
[[community]]
name = "ro-s3cret"

[[community]]
name = "rw-s3cret"
access = "write"

[[community]]
name = "lab-s3cret"
source = ["10.0.0.0/8"]
""" + V3_USER_CONFIG
UNKNOWN_NODE = "00000000deadbeef"
QUICK = ["-t", "0.5", "-r", "0"]  # a refused v1/v2c request is never answered


def v3(user: str, auth_key: str, *extra: str) -> list[str]:
    return ["-v3", "-l", "authPriv", "-u", user, "-a", "SHA-256", "-A", auth_key,
            "-x", "AES", "-X", V3_USER[2], *QUICK, *extra]


# What each refusal is: the net-snmp command, and the line it leaves.
REFUSALS = [
    (["snmpget", "-v2c", "-c", "guessed-s3cret", *QUICK, "SNMPv2-MIB::sysDescr.0"],
     "unknown community"),
    (["snmpget", "-v2c", "-c", f"ro-s3cret@{UNKNOWN_NODE}", *QUICK, "SNMPv2-MIB::sysDescr.0"],
     "unknown context"),
    (["snmpget", "-v1", "-c", "lab-s3cret", *QUICK, "SNMPv2-MIB::sysDescr.0"],
     "community not accepted from this address"),
    (["snmpset", "-v2c", "-c", "ro-s3cret", *QUICK, "SNMPv2-MIB::sysContact.0", "s", "x"],
     "SET without write access"),
    (["snmpget", *v3("intruder-name", "intruder-auth-key"), "SNMPv2-MIB::sysDescr.0"],
     "unknown user"),
    (["snmpget", *v3(V3_USER[0], "wrong-auth-s3cret"), "SNMPv2-MIB::sysDescr.0"],
     f"wrong digest for user {V3_USER[0]}"),
    (["snmpset", *v3(V3_USER[0], V3_USER[1]), "SNMPv2-MIB::sysContact.0", "s", "x"],
     f"SET without write access for user {V3_USER[0]}"),
    (["snmpget", *v3(V3_USER[0], V3_USER[1], "-n", UNKNOWN_NODE), "SNMPv2-MIB::sysDescr.0"],
     "unknown context"),
]
SECRETS = ("s3cret", "intruder", V3_USER[1], V3_USER[2], UNKNOWN_NODE)


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoggedAgent]:
    config = tmp_path_factory.mktemp("refusals") / "ibsnmp.toml"
    config.write_text(CONFIG)
    config.chmod(0o600)
    with logged_agent("--config", str(config), ipv6=True) as running:
        yield running


def line(reason: str) -> str:
    return f"refused a request from 127.0.0.1: {reason}"


def test_each_refusal_is_one_line_with_source_and_reason(agent: LoggedAgent) -> None:
    # An answered request leaves no line (a v3 manager's discovery included).
    answered = agent.snmp("snmpget", *v3(V3_USER[0], V3_USER[1]), "SNMPv2-MIB::sysDescr.0")
    assert answered.returncode == 0, answered.stderr
    for command, reason in REFUSALS:
        tool, *args = command
        for _ in range(2):  # twice within the minute: one line (the next one's proves it)
            agent.snmp(tool, *args)
        assert agent.wait_for_refusal(line(reason)), agent.output
    # After the last one's second refusal, another source's: one line more.
    agent.snmp("snmpget", "-v2c", "-c", "guessed-s3cret", *QUICK, "SNMPv2-MIB::sysDescr.0",
               ipv6=True)
    assert agent.wait_for_refusal("refused a request from ::1: unknown community"), agent.output
    expected = [line(reason) for _, reason in REFUSALS]
    expected.append("refused a request from ::1: unknown community")
    assert agent.refusals() == expected, agent.output
    refusal_lines = [text for text in agent.lines if "ibsnmp.refusals" in text]
    assert all(" WARNING " in text for text in refusal_lines)
    for secret in SECRETS:
        assert not any(secret in text for text in refusal_lines), secret
    # The name an intruder made up is nowhere in the log.
    assert "intruder" not in agent.output


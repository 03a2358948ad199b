"""docs/security.md's claims about views and sizes, each checked against a running agent.

One test per claim, named after it; the document's wording is quoted in the
docstring so a change to either shows up beside the other.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.e2e import (PROJECT_ROOT, READ_CONFIG, START_TIMEOUT_S, V3_AUTH_PRIV, RunningAgent,
                 assert_ok, free_udp_port, ibsnmp_agent, net_snmp, stop, varbinds)
from tests.support.mosquitto import Mosquitto, Process
from tests.support.wire import community_request, decode_response, exchange

from ibsnmp.agent.read_view import SECRET_SUBTREES
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.mib.loader import definitions

FABRIC = "fat-tree:spines=2,leaves=2,hosts=2"
WRITER_AUTH = "writer-auth-pass"
CONFIG = READ_CONFIG + f"""
[[community]]
name = "rw-community"
access = "write"

[[community]]
name = "rw-no-keys"
access = "write"
view = "no-keys"

[[community]]
name = "ro-keys"
view = "with-keys"

[[user]]
name = "operator"
auth = "SHA256"
auth_key = "{WRITER_AUTH}"
access = "write"

[[trap_target]]
address = "127.0.0.1:9"
version = "2c"
community = "public"

[[trap_target]]
address = "127.0.0.1:9"
version = "3"
user = "monitor"
"""
PRINCIPALS = {
    "public": ["-v2c", "-c", "public"],
    "v3 reader": V3_AUTH_PRIV,
    "v2c writer": ["-v2c", "-c", "rw-community"],
    "v3 writer": ["-v3", "-l", "authNoPriv", "-u", "operator", "-a", "SHA-256",
                  "-A", WRITER_AUTH],
    "writer with no-keys": ["-v2c", "-c", "rw-no-keys"],
    "reader with-keys": ["-v2c", "-c", "ro-keys"],
}
SNMP_MODULES = ".1.3.6.1.6.3"
USM_USER_TABLE = (1, 3, 6, 1, 6, 3, 15, 1, 2, 2)
VACM_OBJECTS = (1, 3, 6, 1, 6, 3, 16, 1)
USM_STATS = (1, 3, 6, 1, 6, 3, 15, 1, 1)
SMA_PORT_M_KEY = definitions().objects["ibSmaPortMKey"].oid
SM_CONFIG_SM_KEY = definitions().objects["ibSmConfigSMKey"].oid
FE80_PREFIX = "254.128.0.0.0.0.0.0"  # the simulated subnet prefix: ibSmConfigTable's index
# The largest message the agent sends (the largest UDP payload over IPv4).
MAX_MESSAGE_SIZE = 65_507


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningAgent]:
    config = tmp_path_factory.mktemp("config") / "ibsnmp.toml"
    config.write_text(CONFIG)
    config.chmod(0o600)
    with ibsnmp_agent("--config", str(config), fabric=FABRIC) as running:
        yield running


def walk(agent: RunningAgent, principal: str, oid: str) -> list[tuple[tuple[int, ...], str]]:
    output = assert_ok(agent.snmp("snmpwalk", "-On", *PRINCIPALS[principal], oid))
    return [(tuple(int(arc) for arc in name.strip(".").split(".")), value)
            for name, value in varbinds(output) if not value.startswith("No more variables")]


def inside(oid: tuple[int, ...], subtree: tuple[int, ...]) -> bool:
    return oid[: len(subtree)] == subtree


@pytest.mark.parametrize("principal", list(PRINCIPALS))
def test_the_read_view_leaves_out_the_security_configuration(agent: RunningAgent,
                                                             principal: str) -> None:
    """docs/security.md: "The read view of every community and user leaves out the
    agent's security configuration ... the counters beside them stay readable"."""
    rows = walk(agent, principal, SNMP_MODULES)
    names = [oid for oid, _ in rows]
    assert not [oid for oid in names if inside(oid, USM_USER_TABLE) or inside(oid, VACM_OBJECTS)]
    assert not [oid for oid in names if any(inside(oid, s) for s in SECRET_SUBTREES)]
    text = " ".join(value for _, value in rows)
    for user in ("monitor", "operator"):
        assert user not in text
    assert any(inside(oid, USM_STATS) for oid in names)


@pytest.mark.parametrize("principal", ["public", "v3 reader"])
def test_a_get_inside_the_security_configuration_is_no_such_object(agent: RunningAgent,
                                                                   principal: str) -> None:
    """docs/security.md: the same view answers GETs: usmUserStatus of "monitor" is not there."""
    user = ".".join(str(ord(c)) for c in "monitor")
    engine_id = walk(agent, principal, ".1.3.6.1.6.3.10.2.1.1")[0][1]
    octets = bytes.fromhex(engine_id.split(":", 1)[1].replace(" ", ""))
    index = f"{len(octets)}.{'.'.join(map(str, octets))}.7.{user}"
    status = f".1.3.6.1.6.3.15.1.2.2.1.13.{index}"
    output = assert_ok(agent.snmp("snmpget", *PRINCIPALS[principal], status))
    assert "No Such Object" in output


@pytest.mark.parametrize("principal,reads_keys", [("public", False), ("v3 reader", False),
                                                  ("v2c writer", True), ("v3 writer", True),
                                                  ("writer with no-keys", False),
                                                  ("reader with-keys", True)])
def test_read_only_principals_do_not_read_the_iba_keys_writers_do(agent: RunningAgent,
                                                                  principal: str,
                                                                  reads_keys: bool) -> None:
    """docs/security.md: "the read view of read-only communities and users leaves them out
    ... Communities and users with `access = "write"` read them"."""
    instance = "." + ".".join(map(str, SMA_PORT_M_KEY + (0,)))
    output = assert_ok(agent.snmp("snmpget", *PRINCIPALS[principal], instance))
    assert ("No Such" not in output) == reads_keys, output


def dotted(oid: tuple[int, ...]) -> str:
    return "." + ".".join(map(str, oid))


def test_view_no_keys_hides_the_keys_from_a_writer_which_may_still_set_them(
        agent: RunningAgent) -> None:
    """docs/security.md: "`view = "no-keys"` hides them from a writer (which may still set them)"."""
    instance = f"{dotted(SM_CONFIG_SM_KEY)}.{FE80_PREFIX}"
    no_keys = PRINCIPALS["writer with no-keys"]
    assert "No Such Object" in assert_ok(agent.snmp("snmpget", *no_keys, instance))
    assert_ok(agent.snmp("snmpset", *no_keys, instance, "x", "0102030405060708"))
    seen = assert_ok(agent.snmp("snmpget", *PRINCIPALS["v2c writer"], instance))
    assert "01 02 03 04 05 06 07 08" in seen


def test_view_with_keys_gives_a_read_only_monitor_the_keys_not_write_access(
        agent: RunningAgent) -> None:
    """docs/security.md: "`view = "with-keys"` gives a read-only monitor the keys"; access stays read."""
    instance = f"{dotted(SM_CONFIG_SM_KEY)}.{FE80_PREFIX}"
    result = agent.snmp("snmpset", *PRINCIPALS["reader with-keys"], instance, "x",
                        "0807060504030201")
    assert result.returncode != 0 and "noAccess" in result.stdout + result.stderr


def test_community_at_a_guid_has_the_rights_of_the_community(agent: RunningAgent) -> None:
    """docs/security.md: "`public@<guid>` has the rights of `public`": no keys, no security tables."""
    switch = next(n for n in build_fabric(FABRIC, seed=1).nodes.values() if n.is_switch)
    guid = f"{switch.guid:016x}"
    at_guid = ["-v2c", "-c", f"public@{guid}"]
    key = assert_ok(agent.snmp("snmpget", *at_guid, dotted(SMA_PORT_M_KEY + (0,))))
    assert "No Such Object" in key
    output = assert_ok(agent.snmp("snmpwalk", "-On", *at_guid, SNMP_MODULES))
    names = [tuple(int(arc) for arc in name.strip(".").split(".")) for name, _ in varbinds(output)]
    assert names and not [oid for oid in names if any(inside(oid, s) for s in SECRET_SUBTREES)]


@pytest.mark.parametrize("name", ["ibSmaPortMKeyLeasePeriod", "ibSmaPortMKeyProtectBits",
                                  "ibSmaPortMKeyViolations"])
def test_m_key_lease_protection_and_violations_stay_readable(agent: RunningAgent,
                                                             name: str) -> None:
    """docs/security.md: "M_Key lease periods, protection bits and violation counters are
    not keys and stay readable"."""
    instance = dotted(definitions().objects[name].oid + (0,))
    output = assert_ok(agent.snmp("snmpget", *PRINCIPALS["public"], instance))
    ((_, value),) = varbinds(output)
    assert value.split(":")[0] in ("INTEGER", "Gauge32"), value


@pytest.mark.parametrize("options,error", [
    (PRINCIPALS["public"], "noAccess"),
    (PRINCIPALS["v3 reader"], "noAccess"),
    (PRINCIPALS["reader with-keys"], "noAccess"),
    (["-v1", "-c", "public"], "noSuchName"),
])
def test_a_set_from_a_read_only_principal_gets_no_access(agent: RunningAgent,
                                                         options: list[str], error: str) -> None:
    """docs/security.md: "Access is read-only unless a community or user has `access =
    "write"`: a SET from anyone else gets noAccess (noSuchName in SNMPv1)"."""
    result = agent.snmp("snmpset", *options, "SNMPv2-MIB::sysContact.0", "s", "nobody")
    assert result.returncode != 0 and error in result.stdout + result.stderr, result


def test_a_getbulk_brings_back_at_most_100_varbinds(agent: RunningAgent) -> None:
    """docs/security.md: "a small GETBULK brings back many times its size.
    `[limits] max_getbulk_varbinds` (100, as net-snmp's maxGetbulkResponses)
    and `getbulk_fill_ms` bound what one answer holds": a 36-octet GETBULK
    (max-repetitions 10000) from the top of the tree gets 1 to 100 varbinds
    (one complete repetition at least, RFC 3416 4.2.3: the fill time may
    run out within it on a fresh agent), at most 75 times its size."""
    request = community_request("bulk", [(1, 3, 6, 1)], max_repetitions=10_000, request_id=1)
    assert len(request) == 36
    answer = exchange(agent.address, request, timeout=5.0)
    assert answer is not None
    _, error_status, _, bound = decode_response(answer)
    assert error_status == 0 and 1 <= len(bound) <= 100
    assert len(answer) / len(request) <= 75


def test_json_log_format_writes_one_record_per_line(tmp_path: Path) -> None:
    """docs/security.md: "`--log-format text|json` writes one record per line to standard
    output: ... JSON objects (`time`, `level`, `logger`, `message`)": the
    start-up banner included."""
    config = tmp_path / "ibsnmp.toml"
    config.write_text(CONFIG)
    config.chmod(0o600)
    port = free_udp_port()
    command = [sys.executable, "-m", "ibsnmp", "run", "--listen", f"127.0.0.1:{port}",
               "--config", str(config), "--state-dir", str(tmp_path / "state"),
               "--log-format", "json", "--fabric", "single"]
    with (tmp_path / "stderr").open("w") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True,
                                   cwd=PROJECT_ROOT)
    try:
        assert process.stdout is not None
        lines: list[str] = []
        deadline = time.monotonic() + START_TIMEOUT_S
        while not any("ibsnmp: serving" in line for line in lines):
            assert time.monotonic() < deadline and process.poll() is None, lines
            lines.append(process.stdout.readline())
        answered = net_snmp("snmpget", "-v2c", "-c", "public", f"127.0.0.1:{port}",
                            "SNMPv2-MIB::sysUpTime.0")
        assert answered.returncode == 0, answered.stderr
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)
        rest = process.stdout.read()  # through the buffer readline() filled
    finally:
        stop(process)
    lines += rest.splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    assert all(set(record) >= {"time", "level", "logger", "message"} for record in records)
    messages = [record["message"] for record in records]
    for banner in ("ibsnmp: serving", "try: snmpbulkwalk -v2c -c COMMUNITY",
                   "notifications to"):
        assert any(message.startswith(banner) for message in messages), "\n".join(messages)


def test_json_log_format_of_publish_writes_one_record_per_line(tmp_path: Path) -> None:
    """The same claim for `ibsnmp publish`: its start-up line is a record too."""
    broker = Mosquitto(tmp_path).start()
    try:
        publisher = Process(tmp_path / "publish.log", "publish", "--fabric", "single",
                            "--broker", broker.url, "--log-format", "json")
        try:
            publisher.wait_for('"message": "ibsnmp: publishing')
        finally:
            publisher.stop()
    finally:
        broker.stop()
    lines = [line for line in publisher.text().splitlines() if line.strip()]
    assert lines and all(set(json.loads(line)) >= {"time", "level", "logger", "message"}
                         for line in lines), lines

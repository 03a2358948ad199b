"""Secrets end to end: `ibsnmp run` with communities and keys from files and the
environment, its whole output searched for them, and the IBA key columns
walked with read-only and write principals (v2c and v3, default and node contexts).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.support.e2e import PROJECT_ROOT, START_TIMEOUT_S, RunningAgent, assert_ok, free_udp_port, stop

from ibsnmp.agent.views import KEY_OBJECTS
from ibsnmp.mib.loader import definitions

FABRIC = "fat-tree:spines=2,leaves=2,hosts=2"
# Distinctive secrets: none may appear anywhere in the agent's output.
READ_SECRET = "rd-Qx71-file"
WRITE_SECRET = "wr-Kv42-env"
KEYS_SECRET = "kv-Pw93-inline"
FLAG_SECRET = "fl-Jm55-flag"
TRAP_SECRET = "tr-Hd28-trap"
READER_AUTH, READER_PRIV = "ra-Bn64-authkey", "rp-Cz17-privkey"
ADMIN_AUTH, ADMIN_PRIV = "aa-Tg38-authkey", "ap-Ws86-privkey"
SECRETS = (READ_SECRET, WRITE_SECRET, KEYS_SECRET, FLAG_SECRET, TRAP_SECRET, READER_AUTH,
           READER_PRIV, ADMIN_AUTH, ADMIN_PRIV)

OBJECTS = definitions().objects
KEY_OIDS = {name: OBJECTS[name].oid for name in KEY_OBJECTS}
SWITCH_KEY_OBJECTS = {"ibSmaPortMKey"}  # a switch runs no SM here: its SMA port only


def dotted(oid: tuple[int, ...]) -> str:
    return "." + ".".join(map(str, oid))


@contextmanager
def logged_agent(log: Path, *args: str, env: dict[str, str] | None = None
                 ) -> Iterator[RunningAgent]:
    """`ibsnmp run` with stdout and stderr in `log`, so all it ever said can be read."""
    port = free_udp_port()
    command = [sys.executable, "-m", "ibsnmp", "run", "--listen", f"127.0.0.1:{port}",
               "--fabric", FABRIC, *args]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, text=True,
                                   cwd=PROJECT_ROOT, env=dict(os.environ, **(env or {})))
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while "ibsnmp: serving" not in log.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("agent did not start:\n" + log.read_text())
            time.sleep(0.1)
        yield RunningAgent(process, f"127.0.0.1:{port}", log.read_text())
    finally:
        stop(process)


def secret_file(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("secrets")


@pytest.fixture(scope="module")
def agent(files: Path) -> Iterator[RunningAgent]:
    """Every kind of secret source at once, and a config file others may read."""
    read = secret_file(files / "read-community", READ_SECRET + "\n", 0o644)
    auth = secret_file(files / "reader-auth", READER_AUTH + "\n")
    trap = secret_file(files / "trap-community", TRAP_SECRET + "\n")
    config = secret_file(files / "agent.toml", f"""\
[[community]]
name_file = "{read}"

[[community]]
name_env = "TEST_WRITE_COMMUNITY"
access = "write"

[[community]]
name = "{KEYS_SECRET}"
view = "with-keys"

[[user]]
name = "reader"
auth = "SHA256"
auth_key_file = "{auth}"
priv = "AES"
priv_key_env = "TEST_READER_PRIV"

[[user]]
name = "admin"
auth = "SHA512"
auth_key = "{ADMIN_AUTH}"
priv = "AES"
priv_key = "{ADMIN_PRIV}"
access = "write"

[[trap_target]]
address = "127.0.0.1:{free_udp_port()}"
community_file = "{trap}"
""", 0o644)
    env = {"TEST_WRITE_COMMUNITY": WRITE_SECRET, "TEST_READER_PRIV": READER_PRIV}
    # -v: debug logging says more, and must not say a secret either.
    with logged_agent(files / "agent.log", "-v", "--config", str(config), "--write-community",
                      FLAG_SECRET, env=env) as running:
        yield running


def agent_output(agent: RunningAgent, files: Path) -> str:
    return (files / "agent.log").read_text()


def key_objects_walked(agent: RunningAgent, *credentials: str) -> set[str]:
    """The key objects a bulk walk of each key object's table or group returns."""
    seen: set[str] = set()
    for name, oid in KEY_OIDS.items():
        parent = dotted(oid[:-1])
        output = assert_ok(agent.snmp("snmpbulkwalk", "-On", *credentials, parent))
        returned = [line.split(" ", 1)[0] for line in output.splitlines()]
        # The walk went past the key object: the objects after it are there.
        assert any(not oid_text.startswith(dotted(oid) + ".") for oid_text in returned), name
        if any(oid_text.startswith(dotted(oid) + ".") for oid_text in returned):
            seen.add(name)
    return seen


def node_guid(agent: RunningAgent) -> str:
    """The default context's node GUID (its display hint prints octets as `24:8a:7:...`)."""
    output = assert_ok(agent.snmp("snmpget", "-v2c", "-c", WRITE_SECRET, "-Oqv",
                                  "SMA-MIB::ibSmaNodeGuid.0"))
    return "".join(f"{int(octet, 16):02x}" for octet in output.strip().split(":"))


def switch_guid(agent: RunningAgent) -> str:
    match = re.search(r"-c COMMUNITY@([0-9a-f]{16}) ", agent.banner)
    assert match, agent.banner
    return match[1]


def v3(user: str, auth: str, priv: str, context: str = "") -> list[str]:
    protocol = "SHA-256" if user == "reader" else "SHA-512"
    return ["-v3", "-l", "authPriv", "-u", user, "-a", protocol, "-A", auth, "-x", "AES",
            "-X", priv, *(["-n", context] if context else [])]


# -- no secret is ever printed ---------------------------------------------------------

def test_the_banner_shows_a_placeholder(agent: RunningAgent) -> None:
    assert "  try: snmpbulkwalk -v2c -c COMMUNITY " in agent.banner
    assert re.search(r"a switch: snmpbulkwalk -v2c -c COMMUNITY@[0-9a-f]{16} ", agent.banner)


# -- the key columns ------------------------------------------------------------------------

@pytest.mark.parametrize("community,keys", [(READ_SECRET, False), (WRITE_SECRET, True),
                                            (FLAG_SECRET, True), (KEYS_SECRET, True)])
def test_v2c_key_columns_in_the_default_context(agent: RunningAgent, community: str,
                                                keys: bool) -> None:
    seen = key_objects_walked(agent, "-v2c", "-c", community)
    assert seen == (set(KEY_OBJECTS) if keys else set())


@pytest.mark.parametrize("community,keys", [(READ_SECRET, False), (WRITE_SECRET, True),
                                            (KEYS_SECRET, True)])
def test_v2c_key_columns_in_node_contexts(agent: RunningAgent, community: str,
                                          keys: bool) -> None:
    host = key_objects_walked(agent, "-v2c", "-c", f"{community}@{node_guid(agent)}")
    assert host == (set(KEY_OBJECTS) if keys else set())
    switch = key_objects_walked(agent, "-v2c", "-c", f"{community}@{switch_guid(agent)}")
    assert switch == (SWITCH_KEY_OBJECTS if keys else set())


def test_v2c_get_of_a_key_is_no_such_object_for_readers(agent: RunningAgent) -> None:
    instance = dotted(KEY_OIDS["ibSmaPortMKey"] + (0,))
    for community, answer in ((READ_SECRET, "No Such Object"), (WRITE_SECRET, "Hex-STRING")):
        output = assert_ok(agent.snmp("snmpget", "-v2c", "-c", community, instance))
        assert answer in output, (community, output)


@pytest.mark.parametrize("context", ["", "node"])
def test_v3_reader_and_writer(agent: RunningAgent, context: str) -> None:
    name = node_guid(agent) if context else ""
    assert key_objects_walked(agent, *v3("reader", READER_AUTH, READER_PRIV, name)) == set()
    assert key_objects_walked(agent, *v3("admin", ADMIN_AUTH, ADMIN_PRIV, name)) == set(KEY_OBJECTS)


def test_the_output_holds_no_secret_but_the_warnings(agent: RunningAgent, files: Path) -> None:
    """Last of the module's agent: every request above is in its output, then it stops."""
    stop(agent.process)
    output = agent_output(agent, files)
    assert [secret for secret in SECRETS if secret in output] == []
    assert (f"WARNING ibsnmp.secrets: {files / 'read-community'} holds a secret and is "
            f"readable by others (mode 0644)") in output
    assert (f"WARNING ibsnmp.secrets: {files / 'agent.toml'} holds secrets and is readable "
            f"by others (mode 0644)") in output
    assert "WARNING ibsnmp.secrets: --write-community puts a community on the command line" \
        in output


# -- communities from a file or the environment only -----------------------------------------

def test_communities_only_from_a_file_and_the_environment(files: Path) -> None:
    read = secret_file(files / "only-read", f"\n# monitors\n{READ_SECRET}\n")
    with logged_agent(files / "file-env.log", "--community-file", str(read),
                      env={"IBSNMP_WRITE_COMMUNITY": WRITE_SECRET}) as running:
        assert_ok(running.snmp("snmpget", "-v2c", "-c", READ_SECRET, ".1.3.6.1.2.1.1.1.0"))
        assert_ok(running.snmp("snmpset", "-v2c", "-c", WRITE_SECRET, ".1.3.6.1.2.1.1.6.0",
                               "s", "rack 9"))
        refused = running.snmp("snmpget", "-v2c", "-c", "public", "-r", "0", "-t", "1",
                               ".1.3.6.1.2.1.1.1.0")
        assert refused.returncode != 0  # the default community is not added
    output = (files / "file-env.log").read_text()
    assert READ_SECRET not in output and WRITE_SECRET not in output
    assert "on the command line" not in output


def test_a_community_only_from_the_environment(files: Path) -> None:
    with logged_agent(files / "env.log", env={"IBSNMP_COMMUNITY": READ_SECRET}) as running:
        output = assert_ok(running.snmp("snmpget", "-v2c", "-c", READ_SECRET,
                                        ".1.3.6.1.2.1.1.1.0"))
        assert "ibsnmp" in output
    assert READ_SECRET not in (files / "env.log").read_text()


# -- start-up errors: exit 2, the key named, the secret not ---------------------------------

def start_failure(*args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "ibsnmp", "run", "--listen", f"127.0.0.1:{free_udp_port()}",
         "--fabric", "single", *args], capture_output=True, text=True, cwd=PROJECT_ROOT,
        env=dict(os.environ, **(env or {})), timeout=60, check=False)
    assert result.returncode == 2, result.stdout + result.stderr
    output = result.stdout + result.stderr
    assert [secret for secret in SECRETS if secret in output] == []
    return result.stderr


def test_two_sources_for_one_secret_exit_2(files: Path) -> None:
    secret = secret_file(files / "both", READ_SECRET)
    config = secret_file(files / "both.toml", f'[[community]]\nname = "{READ_SECRET}"\n'
                                              f'name_file = "{secret}"\n')
    stderr = start_failure("--config", str(config))
    assert f"ibsnmp: {config}: community[0].name_file: name is given too: use one source" \
        in stderr
    stderr = start_failure("--community-file", str(secret), env={"IBSNMP_COMMUNITY": WRITE_SECRET})
    assert "ibsnmp: environment: IBSNMP_COMMUNITY: --community-file is given too" in stderr


def test_missing_secret_file_and_variable_exit_2(files: Path) -> None:
    missing = files / "missing"
    stderr = start_failure("--write-community-file", str(missing))
    assert ("ibsnmp: command line: --write-community-file: cannot read the file it names: "
            "No such file or directory") in stderr
    config = secret_file(files / "unset.toml", '[[user]]\nname = "u"\nauth = "SHA256"\n'
                                               'auth_key_env = "TEST_UNSET_VARIABLE"\n')
    stderr = start_failure("--config", str(config))
    assert (f"ibsnmp: {config}: user[0].auth_key_env: the environment variable it names "
            "is not set") in stderr

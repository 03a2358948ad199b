"""[[trap_target]] and engine_id in the TOML config: values, defaults, errors by key."""

from __future__ import annotations

import tomllib

import pytest

from ibsnmp.agent.config import ConfigError, FileConfig, merge_settings, parse_config
from ibsnmp.agent.trap_targets import TrapTarget, parse_trap_address
from ibsnmp.agent.transport import Endpoint, ListenSyntaxError

USERS = """
[[user]]
name = "ops"
auth = "SHA256"
auth_key = "ops-auth-key"
priv = "AES"
priv_key = "ops-priv-key"

[[user]]
name = "reader"
auth = "SHA256"
auth_key = "reader-auth-key"
"""


def parse(text: str) -> FileConfig:
    return parse_config(tomllib.loads(text + "\n" + USERS), source="t.toml")


def error(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse(text)
    return str(info.value)


def test_targets_and_defaults() -> None:
    config = parse("""
engine_id = "0x80:00:00:00:01:02:03:04"

[[trap_target]]
address = "192.0.2.10"

[[trap_target]]
address = "[2001:db8::1]:1162"
version = "3"
kind = "inform"
user = "ops"
timeout = 2.5
retries = 5
queue_size = 50
rate_limit = 100

[[trap_target]]
address = "127.0.0.1:1162"
version = "1"
community = "s3cret"
agent_address = "198.51.100.7"
""")
    first, second, third = config.trap_targets
    assert first == TrapTarget(address=Endpoint("192.0.2.10", 162, False))
    assert (first.version, first.kind, first.community, first.queue_size) == \
        ("2c", "trap", "public", 1000)
    assert first.rate_limit is None
    assert second.address == Endpoint("2001:db8::1", 1162, True)
    assert (second.version, second.kind, second.user) == ("3", "inform", "ops")
    assert (second.timeout, second.retries, second.queue_size, second.rate_limit) == \
        (2.5, 5, 50, 100.0)
    assert (third.version, third.community, third.agent_address) == ("1", "s3cret", "198.51.100.7")
    assert "s3cret" not in repr(third)  # a secret
    assert config.engine_id == bytes.fromhex("8000000001020304")
    settings = merge_settings(config)
    assert settings.trap_targets == config.trap_targets
    assert settings.engine_id == config.engine_id


def test_trap_target_flag_adds_v2c_traps() -> None:
    settings = merge_settings(parse('[[trap_target]]\naddress = "127.0.0.1:1162"\n'),
                              trap_targets=["[::1]", "127.0.0.2:2162"])
    assert [str(t.address) for t in settings.trap_targets] == \
        ["127.0.0.1:1162", "[::1]:162", "127.0.0.2:2162"]
    with pytest.raises(ConfigError, match="command line: --trap-target: not a receiver address"):
        merge_settings(None, trap_targets=["local_host"])


def test_parse_trap_address() -> None:
    assert parse_trap_address("10.0.0.1") == Endpoint("10.0.0.1", 162, False)
    assert parse_trap_address("[fe80::1%eth0]") == Endpoint("fe80::1%eth0", 162, True)
    assert parse_trap_address("[::1]:1162") == Endpoint("::1", 1162, True)


def test_a_receiver_may_be_named_by_host_name() -> None:
    # Resolved when the configuration loads (the first address), as trap2sink does.
    assert parse_trap_address("localhost:1162") in (Endpoint("127.0.0.1", 1162, False),
                                                    Endpoint("::1", 1162, True))
    with pytest.raises(ListenSyntaxError, match="cannot resolve its host name"):
        parse_trap_address("no-such-host.invalid")


@pytest.mark.parametrize("entry,message", [
    ('version = "2c"', "t.toml: trap_target[0].address: missing"),
    ('address = "host.invalid:162"', "trap_target[0].address: cannot resolve its host name"),
    ('address = "host_1:162"', "trap_target[0].address: not a receiver address (HOST[:PORT]"),
    ('address = "10.0.0.1:0"', "trap_target[0].address: a receiver's port cannot be 0"),
    ('address = "10.0.0.1"\nversion = "2"', "trap_target[0].version: expected "
                                            '"1", "2c" or "3"'),
    ('address = "10.0.0.1"\nkind = "notify"', "trap_target[0].kind: expected "
                                              '"trap" or "inform"'),
    ('address = "10.0.0.1"\nversion = "1"\nkind = "inform"',
     "trap_target[0].kind: SNMPv1 has no informs"),
    ('address = "10.0.0.1"\ntimeout = 2', "trap_target[0].timeout: only "
                                          "informs are retried"),
    ('address = "10.0.0.1"\nkind = "inform"\nretries = -1',
     "trap_target[0].retries: must not be negative"),
    ('address = "10.0.0.1"\nkind = "inform"\ntimeout = 0',
     "trap_target[0].timeout: must be at least 0.01"),
    ('address = "10.0.0.1"\nkind = "inform"\nretries = 1.5',
     "trap_target[0].retries: expected an integer, got a float"),
    ('address = "10.0.0.1"\nqueue_size = 0', "trap_target[0].queue_size: must "
                                             "be at least 1"),
    ('address = "10.0.0.1"\nqueue_size = true', "queue_size: expected an integer, got a "
                                                "boolean"),
    ('address = "10.0.0.1"\nrate_limit = 0', "rate_limit: must be at least 0.001"),
    ('address = "10.0.0.1"\nrate_limit = "fast"', "rate_limit: expected a number, got a string"),
    ('address = "10.0.0.1"\nversion = "3"', "trap_target[0].user: missing"),
    ('address = "10.0.0.1"\nversion = "3"\nuser = "nobody"',
     "trap_target[0].user: names no [[user]]"),
    ('address = "10.0.0.1"\nversion = "3"\nuser = "reader"',
     "trap_target[0].user: the [[user]] it names has no priv: notifications are sent "
     "authPriv"),
    ('address = "10.0.0.1"\nversion = "3"\nuser = "ops"\ncommunity = "x"',
     ".community: SNMPv3 uses user, not community"),
    ('address = "10.0.0.1"\nuser = "ops"', ".user: SNMPv2c uses community, not user"),
    ('address = "10.0.0.1"\ncommunity = ""', ".community: must not be empty"),
    ('address = "10.0.0.1"\nagent_address = "10.0.0.2"',
     ".agent_address: only SNMPv1 traps carry an agent-addr"),
    ('address = "10.0.0.1"\nversion = "1"\nagent_address = "::1"',
     ".agent_address: not an IPv4 address"),
    ('address = "10.0.0.1"\nport = 162', "trap_target[0].port: unknown key"),
])
def test_errors_name_the_key(entry: str, message: str) -> None:
    assert message in error(f"[[trap_target]]\n{entry}\n")


def test_community_is_never_quoted_in_errors() -> None:
    text = error('[[trap_target]]\naddress = "10.0.0.1"\nversion = "3"\nuser = "ops"\n'
                 'community = "top-secret"\n')
    assert "top-secret" not in text


@pytest.mark.parametrize("value,message", [
    ('"zz"', "engine_id: expected hexadecimal digits"),
    ('"0x01020304"', "engine_id: must be 5 to 32 octets, got 4"),
    ('"0x0000000000"', "engine_id: must not be all zeros"),
    ("12", "engine_id: expected a string, got an integer"),
])
def test_engine_id_errors(value: str, message: str) -> None:
    assert message in error(f"engine_id = {value}\n")

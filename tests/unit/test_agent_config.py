"""The agent's TOML config, --listen parsing and flag overrides."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from ibsnmp.agent import (
    ConfigError,
    Endpoint,
    ListenSyntaxError,
    add_run_arguments,
    load_config,
    parse_endpoint,
    settings_from_args,
)
from ibsnmp.agent.config import Community, User, merge_settings
from tests.support.paths import PROJECT_ROOT

EXAMPLE = """\
listen = ["0.0.0.0:161", "[::]:161"]

[system]
sysName = "ib-agent-1"
sysContact = "HPC operations <hpc-ops@example.org>"
sysLocation = "Machine room B, rack 12"

[[community]]
name = "public"

[[community]]
name = "s3cret-rw"
access = "write"

[[user]]
name = "monitor"
auth = "SHA256"
auth_key = "monitor-auth-pass"
priv = "AES"
priv_key = "monitor-priv-pass"

[[user]]
name = "admin"
auth = "SHA512"
auth_key = "admin-auth-pass"
priv = "AES256"
priv_key = "admin-priv-pass"
access = "write"
"""

# Loopback only by default, IPv6 optional (a host without IPv6 still starts).
DEFAULT_ENDPOINTS = (Endpoint("127.0.0.1", 161, False), Endpoint("::1", 161, True))

SECRETS = ("s3cret-rw", "monitor-auth-pass", "monitor-priv-pass", "admin-auth-pass",
           "admin-priv-pass")


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agent.toml"
    path.write_text(text)
    return path


def parse_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    return parser.parse_args(list(argv))


# -- --listen / listen syntax ---------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("127.0.0.1:1161", Endpoint("127.0.0.1", 1161, False)),
    ("0.0.0.0:161", Endpoint("0.0.0.0", 161, False)),
    ("[::1]:1161", Endpoint("::1", 1161, True)),
    ("[::]:161", Endpoint("::", 161, True)),
    ("[fe80::1%eth0]:161", Endpoint("fe80::1%eth0", 161, True)),
    ("10.0.0.1", Endpoint("10.0.0.1", 161, False)),
    ("[::1]", Endpoint("::1", 161, True)),
    ("127.0.0.1:0", Endpoint("127.0.0.1", 0, False)),
])
def test_parse_endpoint(text: str, expected: Endpoint) -> None:
    assert parse_endpoint(text) == expected


@pytest.mark.parametrize("text,problem", [
    ("", "empty address"),
    ("localhost:161", "is not an IP address"),
    ("::1", "IPv6 addresses need brackets"),
    ("[127.0.0.1]:161", "IPv6 addresses need brackets, IPv4 ones must not have them"),
    ("[::1:161", "missing ']'"),
    ("[::1]161", "expected ':PORT' after ']'"),
    ("127.0.0.1:http", "port must be a number"),
    ("127.0.0.1:65536", "port must be a number from 0 to 65535"),
    ("127.0.0.1:-1", "port must be a number"),
    ("300.1.1.1:161", "is not an IP address"),
])
def test_parse_endpoint_errors(text: str, problem: str) -> None:
    with pytest.raises(ListenSyntaxError, match=problem.replace("[", r"\[").replace("(", r"\(")):
        parse_endpoint(text)


def test_endpoint_str_round_trips() -> None:
    for text in ("127.0.0.1:1161", "[::1]:1161"):
        assert str(parse_endpoint(text)) == text


# -- the config file ----------------------------------------------------------------

def test_example_config_loads(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, EXAMPLE))
    assert config.listen == (Endpoint("0.0.0.0", 161, False), Endpoint("::", 161, True))
    assert config.system.sys_name == "ib-agent-1"
    assert config.system.sys_location == "Machine room B, rack 12"
    assert config.communities == (Community("public", "read"), Community("s3cret-rw", "write"))
    assert config.users[0] == User("monitor", "SHA256", "monitor-auth-pass", "AES",
                                   "monitor-priv-pass", "read")
    assert config.users[1].priv == "AES256" and config.users[1].access == "write"
    # Secrets stay out of reprs (and so out of logs).
    text = repr(config) + repr(merge_settings(config))
    assert not any(secret in text for secret in SECRETS)


def test_empty_config_means_defaults(tmp_path: Path) -> None:
    settings = settings_from_args(parse_args("--config", str(write(tmp_path, ""))))
    assert settings.listen == DEFAULT_ENDPOINTS
    assert settings.communities == (Community("public", "read"),)
    assert settings.users == ()
    assert settings.system.sys_name is None  # the host name, filled in by the engine


@pytest.mark.parametrize("text,message", [
    ("listen = 161", "listen: expected an array, got an integer"),
    ("listen = []", "listen: must name at least one ADDR:PORT"),
    ('listen = ["localhost:161"]', "listen[0]: 'localhost:161': 'localhost' is not an IP address"),
    ('listen = ["127.0.0.1:1", "127.0.0.1:1"]', "listen[1]: '127.0.0.1:1' is listed twice"),
    ('lisen = ["127.0.0.1:1"]', "lisen: unknown key"),
    ('[system]\nsysname = "x"', "system.sysname: unknown key"),
    ('[system]\nsysDescr = "x"', "system.sysDescr: set by the agent, not configurable"),
    ("[system]\nsysName = 5", "system.sysName: expected a string, got an integer"),
    (f'[system]\nsysLocation = "{"x" * 256}"', "system.sysLocation: longer than 255 octets"),
    ('[[community]]\naccess = "read"', "community[0].name: missing"),
    ('[[community]]\nname = ""', "community[0].name: must not be empty"),
    ('[[community]]\nname = "a@b"', "community[0].name: must not contain '@'"),
    ('[[community]]\nname = "x"\naccess = "admin"',
     'community[0].access: expected "read" or "write"'),
    ('[[community]]\nname = "x"\n[[community]]\nname = "x"',
     "community[1].name: the same community is configured twice"),
    ('[[user]]\nname = "u"\nauth_key = "12345678"', "user[0].auth: missing"),
    ('[[user]]\nname = "u"\nauth = "SHA1024"\nauth_key = "12345678"',
     "user[0].auth: unknown protocol (expected one of: SHA224,"),
    ('[[user]]\nname = "u"\nauth = "SHA256"', "user[0].auth_key: missing"),
    ('[[user]]\nname = "u"\nauth = "SHA256"\nauth_key = "1234567"',
     "user[0].auth_key: too short (at least 8 characters)"),
    ('[[user]]\nname = "u"\nauth = "SHA256"\nauth_key = "12345678"\npriv = "AES"',
     "user[0].priv_key: missing"),
    ('[[user]]\nname = "u"\nauth = "SHA256"\nauth_key = "12345678"\npriv = "AES"\n'
     'priv_key = "short"', "user[0].priv_key: too short"),
    ('[[user]]\nname = "u"\nauth = "SHA256"\nauth_key = "12345678"\npriv = "3DES"\n'
     'priv_key = "12345678"', "user[0].priv: unknown protocol (expected one of: AES,"),
    ('[[user]]\nname = "u"\nauth = "SHA256"\nauth_key = "12345678"\npriv_key = "12345678"',
     "user[0].priv_key: given without priv"),
    (f'[[user]]\nname = "{"u" * 33}"', "user[0].name: must be 1 to 32 octets"),
    ('[[user]]\nname = "u"\nauth = "MD5"\nauth_key = "12345678"\n'
     '[[user]]\nname = "u"\nauth = "MD5"\nauth_key = "12345678"',
     "user[1].name: the same user name is configured twice"),
    ("listen = [", "TOML syntax"),
])
def test_config_errors_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


@pytest.mark.parametrize("text", [
    '[[community]]\nname = "Zq@9x"',
    '[[community]]\nname = "Zq9x"\n[[community]]\nname = "Zq9x"',
    '[[user]]\nname = "u"\nauth = "SHA256"\nauth_key = "Zq9x"',
    '[[user]]\nname = "u"\nauth = "SHA256"\nauth_key = "12345678"\npriv = "AES"\n'
    'priv_key = "Zq9x"',
    'listen = ["127.0.0.1:1"]\n[[community]]\nname = "Zq9x"\naccess = 3',
])
def test_errors_never_quote_secrets(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text))
    assert "Zq" not in str(caught.value) and "9x" not in str(caught.value)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read: No such file or directory"):
        load_config(tmp_path / "nope.toml")


def test_protocol_names_are_forgiving(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, '[[user]]\nname = "u"\nauth = "sha-256"\n'
                                         'auth_key = "12345678"\npriv = "aes-128"\n'
                                         'priv_key = "12345678"'))
    assert (config.users[0].auth, config.users[0].priv) == ("SHA256", "AES")


# -- flags override the file --------------------------------------------------------

def test_flags_override_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, EXAMPLE)
    args = parse_args("--config", str(path), "--listen", "127.0.0.1:1161",
                      "--listen", "[::1]:1161", "--community", "flagged")
    settings = settings_from_args(args)
    assert settings.listen == (Endpoint("127.0.0.1", 1161, False), Endpoint("::1", 1161, True))
    assert settings.communities == (Community("flagged", "read"),)
    assert len(settings.users) == 2  # not overridden
    assert settings.system.sys_name == "ib-agent-1"


def test_file_values_apply_without_flags(tmp_path: Path) -> None:
    settings = settings_from_args(parse_args("--config", str(write(tmp_path, EXAMPLE))))
    assert len(settings.listen) == 2
    assert [c.access for c in settings.communities] == ["read", "write"]


def test_no_config_and_no_flags() -> None:
    settings = settings_from_args(parse_args())
    assert settings.listen == DEFAULT_ENDPOINTS
    assert settings.optional_listen == (Endpoint("::1", 161, True),)
    assert settings.communities == (Community("public", "read"),)


def test_users_only_means_no_default_community(tmp_path: Path) -> None:
    path = write(tmp_path, '[[user]]\nname = "u"\nauth = "SHA256"\nauth_key = "12345678"')
    assert settings_from_args(parse_args("--config", str(path))).communities == ()


def test_an_explicitly_empty_community_list_stays_empty(tmp_path: Path) -> None:
    path = write(tmp_path, "community = []")
    assert settings_from_args(parse_args("--config", str(path))).communities == ()


@pytest.mark.parametrize("argv,message", [
    (("--listen", "nowhere"), "command line: --listen: 'nowhere'"),
    (("--community", "a@b"), "command line: --community: must not contain '@'"),
    (("--community", ""), "command line: --community: must not be empty"),
])
def test_bad_flags(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings_from_args(parse_args(*argv))


def test_shipped_example_config_loads_once_its_placeholders_are_replaced(tmp_path: Path) -> None:
    example = PROJECT_ROOT / "examples" / "ibsnmp.toml"
    filled = tmp_path / "ibsnmp.toml"
    filled.write_text(example.read_text().replace("change-me-", "site-"))
    config = load_config(filled)
    settings = merge_settings(config)
    assert [c.access for c in settings.communities] == ["read", "write"]
    assert [(u.name, u.auth, u.priv) for u in settings.users] == [
        ("monitor", "SHA256", "AES"), ("admin", "SHA512", "AES256")]
    assert [(t.version, t.kind) for t in settings.trap_targets] == [("2c", "trap"), ("3", "inform")]

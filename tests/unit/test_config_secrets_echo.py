"""A secret typed into the wrong key is never echoed: errors name the key only.

Every key of a [[community]], [[user]] or [[trap_target]] table gets a
distinctive secret where it does not belong; the error must name that key
and must not contain the secret (nor any part of it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ibsnmp.agent.config import ConfigError, load_config, merge_settings, parse_config

SECRET = "Zq7-s3cr3t-Xk"
USER = {"name": "ops", "auth": "SHA256", "auth_key": "12345678", "priv": "AES",
        "priv_key": "12345678"}


def error_of(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    return str(caught.value)


def assert_names_key_not_secret(message: str, key: str) -> None:
    assert f"{key}:" in message, message
    for part in (SECRET, "Zq7", "Xk", "s3cr3t"):
        assert part not in message, message


@pytest.mark.parametrize("key", ["access", "view"])
def test_a_secret_in_a_community_key_is_not_echoed(key: str) -> None:
    message = error_of({"community": [{"name": "public", key: SECRET}]})
    assert_names_key_not_secret(message, f"community[0].{key}")


def test_a_secret_in_a_community_source_is_not_echoed() -> None:
    message = error_of({"community": [{"name": "public", "source": [SECRET]}]})
    assert_names_key_not_secret(message, "community[0].source[0]")
    assert "10.0.0.0/8" in message  # what is allowed instead


def test_a_secret_in_a_community_name_listed_twice_is_not_echoed() -> None:
    message = error_of({"community": [{"name": SECRET}, {"name": SECRET}]})
    assert_names_key_not_secret(message, "community[1].name")


@pytest.mark.parametrize("key", ["auth", "priv", "access", "view"])
def test_a_secret_in_a_user_key_is_not_echoed(key: str) -> None:
    message = error_of({"user": [dict(USER, **{key: SECRET})]})
    assert_names_key_not_secret(message, f"user[0].{key}")


def test_the_issue_case_auth_holding_the_secret() -> None:
    """`auth = "<secret>"` answered "unknown protocol '<secret>'"."""
    message = error_of({"user": [dict(USER, auth=SECRET)]})
    assert_names_key_not_secret(message, "user[0].auth")
    assert "SHA256" in message  # the protocols allowed instead


def test_a_user_name_holding_a_secret_is_not_in_later_errors() -> None:
    message = error_of({"user": [dict(USER, name=SECRET, auth="SHA1024")]})
    assert_names_key_not_secret(message, "user[0].auth")
    message = error_of({"user": [dict(USER, name=SECRET), dict(USER, name=SECRET)]})
    assert_names_key_not_secret(message, "user[1].name")


@pytest.mark.parametrize("key", ["address", "version", "kind", "user", "agent_address"])
def test_a_secret_in_a_trap_target_key_is_not_echoed(key: str) -> None:
    entry: dict[str, Any] = {"address": "127.0.0.1", "version": "3", "user": "ops"}
    if key == "agent_address":  # SNMPv1 only
        entry = {"address": "127.0.0.1", "version": "1"}
    entry[key] = SECRET
    message = error_of({"user": [USER], "trap_target": [entry]})
    assert_names_key_not_secret(message, f"trap_target[0].{key}")


def test_a_trap_address_holding_a_secret_is_not_in_later_errors() -> None:
    entry = {"address": "127.0.0.1", "kind": SECRET}
    message = error_of({"trap_target": [entry]})
    assert "127.0.0.1" not in message  # the path names the entry, not its values
    assert_names_key_not_secret(message, "trap_target[0].kind")


def test_a_trap_target_flag_holding_a_secret_is_not_echoed() -> None:
    with pytest.raises(ConfigError) as caught:
        merge_settings(None, trap_targets=[SECRET])
    assert_names_key_not_secret(str(caught.value), "--trap-target")


@pytest.mark.parametrize("source", ["name_file", "name_env"])
def test_a_secret_typed_as_a_file_or_variable_name_is_not_echoed(tmp_path: Path,
                                                                 source: str) -> None:
    config = tmp_path / "agent.toml"
    config.write_text(f'[[community]]\n{source} = "{SECRET}"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert_names_key_not_secret(str(caught.value), f"community[0].{source}")


def test_a_secret_left_unquoted_is_not_echoed_by_the_toml_error(tmp_path: Path) -> None:
    config = tmp_path / "agent.toml"
    config.write_text(f'[[user]]\nname = "ops"\nauth_key = {SECRET}\n')
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    message = str(caught.value)
    assert "TOML syntax" in message and "line 3" in message
    assert SECRET not in message and "s3cr3t" not in message

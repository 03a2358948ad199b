"""Secrets from files and environment variables, their errors and warnings."""

from __future__ import annotations

import argparse
import logging
import re
from pathlib import Path

import pytest

from ibsnmp.agent import ConfigError, add_run_arguments, load_config, settings_from_args
from ibsnmp.agent.config import Community
from ibsnmp.agent.secrets import COMMUNITY_ENV, WRITE_COMMUNITY_ENV
from ibsnmp.agent.views import KEY_OBJECTS, key_subtrees
from ibsnmp.mib.loader import READABLE, definitions

SECRET = "Zq9x-secret-4471"  # distinctive: found nowhere else in any output


@pytest.fixture(autouse=True)
def no_secret_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in (COMMUNITY_ENV, WRITE_COMMUNITY_ENV, "TEST_SECRET"):
        monkeypatch.delenv(variable, raising=False)


def parse_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    return parser.parse_args(list(argv))


def secret_file(tmp_path: Path, text: str, name: str = "secret", mode: int = 0o600) -> Path:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(mode)
    return path


def config(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "agent.toml"
    path.write_text(text)
    path.chmod(mode)
    return path


def load_error(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert SECRET not in message
    return message


# -- the config file ------------------------------------------------------------------

def test_community_from_a_file_without_its_trailing_newline(tmp_path: Path) -> None:
    path = secret_file(tmp_path, SECRET + "\n")
    loaded = load_config(config(tmp_path, f'[[community]]\nname_file = "{path}"\n'))
    assert loaded.communities == (Community(SECRET, "read"),)


def test_windows_line_ending_is_not_part_of_the_secret(tmp_path: Path) -> None:
    path = secret_file(tmp_path, SECRET + "\r\n")
    loaded = load_config(config(tmp_path, f'[[community]]\nname_file = "{path}"\n'))
    assert loaded.communities is not None
    assert loaded.communities[0].name == SECRET


def test_community_from_the_environment(tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_SECRET", SECRET)
    loaded = load_config(config(tmp_path, '[[community]]\nname_env = "TEST_SECRET"\n'
                                          'access = "write"\n'))
    assert loaded.communities == (Community(SECRET, "write"),)


def test_user_keys_from_a_file_and_the_environment(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    auth = secret_file(tmp_path, "auth-" + SECRET + "\n")
    monkeypatch.setenv("TEST_SECRET", "priv-" + SECRET)
    loaded = load_config(config(tmp_path, f'[[user]]\nname = "u"\nauth = "SHA256"\n'
                                          f'auth_key_file = "{auth}"\npriv = "AES"\n'
                                          f'priv_key_env = "TEST_SECRET"\n'))
    assert (loaded.users[0].auth_key, loaded.users[0].priv_key) == ("auth-" + SECRET,
                                                                    "priv-" + SECRET)


def test_trap_community_from_a_file(tmp_path: Path) -> None:
    path = secret_file(tmp_path, SECRET)  # no newline at all
    loaded = load_config(config(tmp_path, f'[[trap_target]]\naddress = "127.0.0.1:1162"\n'
                                          f'community_file = "{path}"\n'))
    assert loaded.trap_targets[0].community == SECRET


@pytest.mark.parametrize("entry,key", [
    ('[[community]]\nname = "{s}"\nname_file = "{f}"', "community[0].name_file: name is given"),
    ('[[community]]\nname_file = "{f}"\nname_env = "TEST_SECRET"',
     "community[0].name_env: name_file is given"),
    ('[[user]]\nname = "u"\nauth = "SHA256"\nauth_key = "{s}"\nauth_key_env = "TEST_SECRET"',
     "user[0].auth_key_env: auth_key is given"),
    ('[[user]]\nname = "u"\nauth = "SHA256"\nauth_key = "{s}"\npriv = "AES"\n'
     'priv_key = "{s}"\npriv_key_file = "{f}"', "user[0].priv_key_file: priv_key is given"),
    ('[[trap_target]]\naddress = "127.0.0.1"\ncommunity = "{s}"\ncommunity_file = "{f}"',
     "trap_target[0].community_file: community is given"),
])
def test_two_sources_for_one_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    entry: str, key: str) -> None:
    monkeypatch.setenv("TEST_SECRET", SECRET)
    path = secret_file(tmp_path, SECRET)
    message = load_error(config(tmp_path, entry.format(s=SECRET, f=path)))
    assert key in message and "use one source" in message


@pytest.mark.parametrize("content,problem", [
    (None, "cannot read the file it names: No such file or directory"),
    ("", "the file it names is empty"),
    ("\n", "the file it names is empty"),
    (f"{SECRET}\n{SECRET}\n", "the file it names holds more than one line"),
])
def test_unusable_secret_files(tmp_path: Path, content: str | None, problem: str) -> None:
    path = tmp_path / "secret"
    if content is not None:
        secret_file(tmp_path, content)
    message = load_error(config(tmp_path, f'[[community]]\nname_file = "{path}"\n'))
    assert f"community[0].name_file: {problem.format(f=path)}" in message


@pytest.mark.parametrize("value,problem", [
    (None, "the environment variable it names is not set"),
    ("", "the environment variable it names is empty"),
])
def test_unusable_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            value: str | None, problem: str) -> None:
    if value is not None:
        monkeypatch.setenv("TEST_SECRET", value)
    message = load_error(config(tmp_path, '[[user]]\nname = "u"\nauth = "SHA256"\n'
                                          'auth_key_env = "TEST_SECRET"\n'))
    assert f"user[0].auth_key_env: {problem}" in message


def test_a_secret_from_a_file_is_validated_like_an_inline_one(tmp_path: Path) -> None:
    path = secret_file(tmp_path, "Zq9x\n")
    message = load_error(config(tmp_path, f'[[user]]\nname = "u"\nauth = "SHA256"\n'
                                          f'auth_key_file = "{path}"\n'))
    assert "user[0].auth_key: too short" in message and "Zq9x" not in message


# -- warnings about who can read secrets ------------------------------------------------

def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("mode,warned", [(0o644, True), (0o604, True), (0o640, False),
                                         (0o600, False), (0o400, False)])
def test_config_with_inline_secrets_readable_by_others(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, mode: int, warned: bool) -> None:
    # Group-readable is the shipped layout (root:ibsnmp 0640, the agent in the group).
    path = config(tmp_path, f'[[community]]\nname = "{SECRET}"\n', mode)
    load_config(path)
    expected = [f"{path} holds secrets and is readable by others (mode {mode:04o}); "
                f"chmod o-r it, or move the secrets to *_file / *_env"]
    assert warnings_of(caplog) == (expected if warned else [])


def test_config_without_inline_secrets_may_be_readable(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    secret = secret_file(tmp_path, SECRET)
    load_config(config(tmp_path, f'[[community]]\nname_file = "{secret}"\n', 0o644))
    assert warnings_of(caplog) == []


@pytest.mark.parametrize("mode,warned", [(0o604, True), (0o644, True), (0o640, False),
                                         (0o600, False)])
def test_secret_file_readable_by_others(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                        mode: int, warned: bool) -> None:
    secret = secret_file(tmp_path, SECRET, mode=mode)
    load_config(config(tmp_path, f'[[community]]\nname_file = "{secret}"\n'))
    expected = [f"{secret} holds a secret and is readable by others (mode {mode:04o}); "
                f"chmod o-r it"]
    assert warnings_of(caplog) == (expected if warned else [])


# -- the command line ------------------------------------------------------------------

def test_community_files_skip_blank_and_comment_lines(tmp_path: Path) -> None:
    ro = secret_file(tmp_path, f"# readers\n\n  {SECRET}-a  \n{SECRET}-b\n", "ro")
    rw = secret_file(tmp_path, f"{SECRET}-w\n", "rw")
    settings = settings_from_args(parse_args("--community-file", str(ro),
                                             "--write-community-file", str(rw)))
    assert settings.communities == (Community(f"{SECRET}-a", "read"),
                                    Community(f"{SECRET}-b", "read"),
                                    Community(f"{SECRET}-w", "write"))


def test_communities_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(COMMUNITY_ENV, SECRET + "-r")
    monkeypatch.setenv(WRITE_COMMUNITY_ENV, SECRET + "-w")
    settings = settings_from_args(parse_args())
    assert settings.communities == (Community(SECRET + "-r", "read"),
                                    Community(SECRET + "-w", "write"))


def test_a_community_flag_warns_that_ps_shows_it(caplog: pytest.LogCaptureFixture) -> None:
    settings_from_args(parse_args("--write-community", SECRET))
    (warning,) = warnings_of(caplog)
    assert warning.startswith("--write-community puts a community on the command line")
    assert SECRET not in caplog.text


@pytest.mark.parametrize("argv,env,message", [
    (("--community", SECRET, "--community-file", "{f}"), {},
     "command line: --community-file: --community is given too: use one source"),
    (("--community", SECRET), {COMMUNITY_ENV: SECRET},
     f"environment: {COMMUNITY_ENV}: --community is given too"),
    (("--write-community-file", "{f}"), {WRITE_COMMUNITY_ENV: SECRET},
     f"environment: {WRITE_COMMUNITY_ENV}: --write-community-file is given too"),
    (("--community-file", "{f}.missing"), {},
     "command line: --community-file: cannot read the file it names: No such file or directory"),
    (("--community-file", "{comments}"), {},
     "command line: --community-file: the file it names holds no secret (only blank or # lines)"),
    ((), {COMMUNITY_ENV: ""}, f"environment: {COMMUNITY_ENV}: environment variable "
                              f"{COMMUNITY_ENV} is empty"),
    (("--community-file", "{at}"), {},
     "command line: --community-file {at}: must not contain '@'"),
])
def test_command_line_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             argv: tuple[str, ...], env: dict[str, str], message: str) -> None:
    names = dict(f=secret_file(tmp_path, SECRET), comments=secret_file(tmp_path, "# x\n\n", "c"),
                 at=secret_file(tmp_path, SECRET + "@x", "at"))
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as caught:
        settings_from_args(parse_args(*(a.format(**names) for a in argv)))
    assert str(caught.value).startswith(message.format(**names))
    assert SECRET not in str(caught.value)


# -- views ------------------------------------------------------------------------------

def test_view_of_communities_and_users(tmp_path: Path) -> None:
    loaded = load_config(config(tmp_path, f'[[community]]\nname = "{SECRET}"\nview = "with-keys"\n'
                                          '[[user]]\nname = "w"\nauth = "SHA256"\n'
                                          'auth_key = "12345678"\naccess = "write"\n'
                                          'view = "no-keys"\n'))
    assert loaded.communities is not None
    assert loaded.communities[0].view == "with-keys"
    assert loaded.users[0].view == "no-keys"
    message = load_error(config(tmp_path, f'[[community]]\nname = "{SECRET}"\nview = "all"\n'))
    assert 'community[0].view: expected "no-keys" or "with-keys"' in message


def test_every_readable_key_object_is_hidden() -> None:
    """M_Key / SM_Key objects of the compiled MIBs, found by name, are the hidden ones."""
    objects = definitions().objects
    keys = {name for name, obj in objects.items()
            if re.search(r"(M|SM|Sm)Key$", name) and obj.access in READABLE}
    assert keys == set(KEY_OBJECTS)
    assert key_subtrees() == tuple(sorted(objects[name].oid for name in KEY_OBJECTS))

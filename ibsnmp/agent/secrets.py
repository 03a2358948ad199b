"""Where secrets come from: the config file, a file of their own, or the environment.

A secret on the command line is visible to every local user in `ps`, and a
secret inline in a world-readable config file likewise; so each secret of
the configuration (community, USM key, trap community) may instead name a
file (`KEY_file`) or an environment variable (`KEY_env`), and the command
line has `--community-file` / `--write-community-file` and the variables
IBSNMP_COMMUNITY / IBSNMP_WRITE_COMMUNITY. Exactly one source per secret.
Errors name the key, the file or the variable, never the secret.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .config_error import ConfigError

log = logging.getLogger("ibsnmp.secrets")

Fail = Callable[[str, str], Exception]

COMMUNITY_ENV = "IBSNMP_COMMUNITY"
WRITE_COMMUNITY_ENV = "IBSNMP_WRITE_COMMUNITY"

# Config keys whose inline value is a secret, per table.
INLINE_SECRETS = {
    "community": ("name",),
    "user": ("auth_key", "priv_key"),
    "trap_target": ("community",),
}


def resolve_secret(entry: Mapping[str, Any], name: str, at: str, fail: Fail) -> dict[str, Any]:
    """`entry` with `name` holding the secret given by `name`, `name_file` or `name_env`.

    At most one of the three may be present; the file or variable must
    give a non-empty secret.
    """
    sources = [key for key in (name, f"{name}_file", f"{name}_env") if key in entry]
    if len(sources) > 1:
        raise fail(f"{at}.{sources[1]}", f"{sources[0]} is given too: use one source")
    resolved = dict(entry)
    if not sources or sources[0] == name:
        return resolved
    key = sources[0]
    where = resolved.pop(key)
    if not isinstance(where, str) or not where:
        raise fail(f"{at}.{key}", "expected a non-empty string")
    if key.endswith("_file"):
        resolved[name] = read_secret_file(Path(where), f"{at}.{key}", fail)
    else:
        resolved[name] = read_secret_env(where, f"{at}.{key}", fail)
    return resolved


# A secret typed into a `*_file` or `*_env` key would be echoed by naming the
# file or variable: errors name the key only.
_FILE = "the file it names"


def _variable(variable: str, key: str) -> str:
    """A flag's own variable is a key and named; a variable a key holds is not."""
    return f"environment variable {variable}" if variable == key else \
        "the environment variable it names"


def read_secret_file(path: Path, key: str, fail: Fail) -> str:
    """One secret: the file's text without its trailing newline."""
    text = _read_text(path, key, fail)
    secret = text[:-1] if text.endswith("\n") else text
    secret = secret[:-1] if secret.endswith("\r") else secret
    if not secret:
        raise fail(key, f"{_FILE} is empty")
    if "\n" in secret:
        raise fail(key, f"{_FILE} holds more than one line (one secret expected)")
    return secret


def read_secret_lines(path: Path, key: str, fail: Fail) -> list[str]:
    """Secrets one a line; blank lines, `#` comments and surrounding spaces are ignored."""
    text = _read_text(path, key, fail)
    secrets = [line.strip() for line in text.splitlines()]
    secrets = [line for line in secrets if line and not line.startswith("#")]
    if not secrets:
        raise fail(key, f"{_FILE} holds no secret (only blank or # lines)")
    return secrets


def read_secret_env(variable: str, key: str, fail: Fail) -> str:
    value = os.environ.get(variable)
    if value is None:
        raise fail(key, f"{_variable(variable, key)} is not set")
    if not value:
        raise fail(key, f"{_variable(variable, key)} is empty")
    return value


def _read_text(path: Path, key: str, fail: Fail) -> str:
    try:
        with path.open("rb") as file:
            mode = os.fstat(file.fileno()).st_mode
            raw = file.read()
    except OSError as exc:
        raise fail(key, f"cannot read {_FILE}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise fail(key, f"{_FILE} is not UTF-8 text") from None
    if mode & stat.S_IROTH:
        log.warning("%s holds a secret and is readable by others (mode %04o); "
                    "chmod o-r it", path, stat.S_IMODE(mode))
    return text


def warn_if_exposed_config(path: Path, data: Mapping[str, Any]) -> None:
    """One warning when a config file holding inline secrets is world readable.

    Its group may read it: that is how the shipped unit's dynamic user, in
    the group ibsnmp, reads a root:ibsnmp 0640 file (packaging/)."""
    if not _has_inline_secret(data):
        return
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # it was just read; a vanished file has nothing left to protect
    if mode & stat.S_IROTH:
        log.warning("%s holds secrets and is readable by others (mode %04o); "
                    "chmod o-r it, or move the secrets to *_file / *_env", path,
                    stat.S_IMODE(mode))


def _has_inline_secret(data: Mapping[str, Any]) -> bool:
    for table, keys in INLINE_SECRETS.items():
        entries = data.get(table)
        if not isinstance(entries, list):
            continue
        if any(isinstance(entry, Mapping) and key in entry for entry in entries for key in keys):
            return True
    return False


# -- the command line --------------------------------------------------------------


def flag_communities(flag: str, values: list[str] | None, file: str | None, variable: str,
                     file_origin: tuple[str, str] | None = None,
                     ) -> tuple[list[str] | None, tuple[str, str]]:
    """Communities from `--X NAME...`, `--X-file FILE` or the variable: (names, origin).

    Names are None when none of the three is given; `origin` is
    (document, key) of where they came from, for error messages
    (`file_origin`: where the file's name came from, by default its flag).
    Two sources at once are an error.
    """
    file_flag = f"{flag}-file"
    file_origin = file_origin or ("command line", file_flag)

    def fail(origin: tuple[str, str], problem: str) -> Exception:
        return ConfigError(problem, origin[1], origin[0])

    given = [(name, origin) for name, origin, present in (
        (flag, ("command line", flag), bool(values)),
        (file_flag, file_origin, file is not None),
        (variable, ("environment", variable), variable in os.environ)) if present]
    if len(given) > 1:
        raise fail(given[1][1], f"{given[0][1][1]} is given too: use one source")
    if not given:
        return None, ("command line", flag)
    name, origin = given[0]
    if name == flag:
        log.warning("%s puts a community on the command line, where ps shows it to every "
                    "local user; prefer %s FILE or the variable %s", flag, file_flag, variable)
        return list(values or ()), origin
    if name == file_flag:
        assert file is not None
        names = read_secret_lines(Path(file), origin[1], lambda key, problem: fail(origin, problem))
        return names, (origin[0], f"{origin[1]} {file}")  # which file, for what is wrong in it
    return [read_secret_env(variable, variable, lambda key, problem: fail(origin, problem))], origin

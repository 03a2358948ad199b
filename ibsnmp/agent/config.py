"""The agent's TOML configuration, validated when it is loaded.

Every error names the key and the problem. Secrets (community strings, USM
keys) never appear in error messages, reprs or logs: they are kept out of the
dataclass reprs and errors about them name only the key.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .transport import DEFAULT_LISTEN, Endpoint, ListenSyntaxError, parse_endpoint

Access = Literal["read", "write"]

# USM protocols accepted in `auth` / `priv`. SHA and MD5 are there for old
# managers only; DES likewise. AES192/AES256 use the key extension net-snmp
# uses (Blumenthal draft); the "C" variants use Cisco's (Reeder draft).
AUTH_PROTOCOLS = ("SHA224", "SHA256", "SHA384", "SHA512", "SHA", "MD5")
PRIV_PROTOCOLS = ("AES", "AES128", "AES192", "AES256", "AES192C", "AES256C", "DES")

MIN_KEY_LENGTH = 8  # RFC 3414 11.2: pass phrases of at least 8 octets
MAX_DISPLAY_STRING = 255  # SNMPv2-TC DisplayString


class ConfigError(ValueError):
    """The configuration is invalid; the message names the key and the problem."""


@dataclass(frozen=True, slots=True)
class SystemInfo:
    """The settable part of the SNMPv2-MIB system group."""

    sys_name: str | None = None  # None: the host name
    sys_contact: str = ""
    sys_location: str = ""


@dataclass(frozen=True, slots=True)
class Community:
    """An SNMPv1/v2c community; `name` is a secret."""

    name: str = field(repr=False)
    access: Access = "read"


@dataclass(frozen=True, slots=True)
class User:
    """An SNMPv3 USM user. Keys are secrets; `priv` None means authNoPriv."""

    name: str
    auth: str
    auth_key: str = field(repr=False)
    priv: str | None = None
    priv_key: str | None = field(default=None, repr=False)
    access: Access = "read"


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """Everything the engine needs, after config file and flags are merged."""

    listen: tuple[Endpoint, ...] = ()
    system: SystemInfo = SystemInfo()
    communities: tuple[Community, ...] = ()
    users: tuple[User, ...] = ()


@dataclass(frozen=True, slots=True)
class FileConfig:
    """What a config file says; None where it is silent (flags or defaults apply)."""

    listen: tuple[Endpoint, ...] | None = None
    system: SystemInfo = SystemInfo()
    communities: tuple[Community, ...] | None = None
    users: tuple[User, ...] = ()


def load_config(path: str | Path) -> FileConfig:
    """Read and validate a TOML config file; raise ConfigError on any problem."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        # The decoder's message gives line and column, never the value.
        raise ConfigError(f"{path}: TOML syntax: {exc}") from None
    return parse_config(data, source=str(path))


def parse_config(data: Mapping[str, Any], source: str = "config") -> FileConfig:
    """Validate an already decoded TOML document."""

    def fail(key: str, problem: str) -> ConfigError:
        return ConfigError(f"{source}: {key}: {problem}")

    _check_keys(data, ("listen", "system", "community", "user"), "", fail)
    listen = None
    if "listen" in data:
        listen = _parse_listen(data["listen"], fail)
    system = _parse_system(data.get("system", {}), fail)
    communities = None
    if "community" in data:
        communities = _parse_communities(data["community"], fail)
    users = _parse_users(data.get("user", []), fail)
    return FileConfig(listen=listen, system=system, communities=communities, users=users)


def merge_settings(
    file: FileConfig | None,
    listen: list[str] | None = None,
    communities: list[str] | None = None,
) -> AgentSettings:
    """Apply command-line overrides to a file config (flags win, per key).

    `listen` replaces the file's listen list; `communities` (read-only ones)
    replace the file's [[community]] entries. When neither the file nor the
    flags mention communities or users, the agent answers the read community
    "public", like most agents' packaged defaults.
    """
    file = file or FileConfig()

    def flag_fail(key: str, problem: str) -> ConfigError:
        return ConfigError(f"command line: {key}: {problem}")

    if listen:
        endpoints = _parse_listen(list(listen), flag_fail, key="--listen")
    elif file.listen is not None:
        endpoints = file.listen
    else:
        endpoints = tuple(parse_endpoint(text) for text in DEFAULT_LISTEN)
    if communities:
        entries = [{"name": name, "access": "read"} for name in communities]
        comms = _parse_communities(entries, flag_fail, key="--community")
    elif file.communities is not None:
        comms = file.communities  # may be explicitly empty: v3 only
    elif file.users:
        comms = ()
    else:
        comms = (Community(name="public", access="read"),)
    return AgentSettings(listen=endpoints, system=file.system, communities=comms, users=file.users)


# -- validation helpers ----------------------------------------------------------

_TYPE_NAMES = {str: "a string", list: "an array", dict: "a table", int: "an integer"}


def _type_name(value: Any) -> str:
    for kind, name in ((bool, "a boolean"), (str, "a string"), (int, "an integer"),
                       (float, "a float"), (list, "an array"), (dict, "a table")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _check_keys(table: Mapping[str, Any], allowed: tuple[str, ...], prefix: str, fail) -> None:
    for key in table:
        if key not in allowed:
            hint = ", ".join(allowed)
            raise fail(f"{prefix}{key}", f"unknown key (expected one of: {hint})")


def _expect(value: Any, kind: type, key: str, fail) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise fail(key, f"expected {_TYPE_NAMES[kind]}, got {_type_name(value)}")
    return value


def _parse_listen(value: Any, fail, key: str = "listen") -> tuple[Endpoint, ...]:
    if isinstance(value, str):
        value = [value]
    _expect(value, list, key, fail)
    if not value:
        raise fail(key, "must name at least one ADDR:PORT")
    endpoints: list[Endpoint] = []
    for i, item in enumerate(value):
        item_key = f"{key}[{i}]" if key == "listen" else key
        _expect(item, str, item_key, fail)
        try:
            endpoint = parse_endpoint(item)
        except ListenSyntaxError as exc:
            raise fail(item_key, str(exc)) from None
        if endpoint in endpoints:
            raise fail(item_key, f"{item!r} is listed twice")
        endpoints.append(endpoint)
    return tuple(endpoints)


def _display_string(table: Mapping[str, Any], name: str, key: str, fail) -> str | None:
    if name not in table:
        return None
    text = _expect(table[name], str, key, fail)
    if len(text.encode("utf-8")) > MAX_DISPLAY_STRING:
        raise fail(key, f"longer than {MAX_DISPLAY_STRING} octets")
    if not text.isprintable():
        raise fail(key, "contains control characters")
    return text


def _parse_system(value: Any, fail) -> SystemInfo:
    _expect(value, dict, "system", fail)
    keys = ("sysName", "sysContact", "sysLocation")
    for key in value:
        if key in ("sysDescr", "sysObjectID", "sysUpTime", "sysServices"):
            raise fail(f"system.{key}", "set by the agent, not configurable")
    _check_keys(value, keys, "system.", fail)
    name, contact, location = (_display_string(value, k, f"system.{k}", fail) for k in keys)
    return SystemInfo(sys_name=name, sys_contact=contact or "", sys_location=location or "")


def _parse_access(table: Mapping[str, Any], key: str, fail) -> Access:
    access = _expect(table.get("access", "read"), str, key, fail)
    if access not in ("read", "write"):
        raise fail(key, f'expected "read" or "write", got {access!r}')
    return access  # type: ignore[return-value]


def _parse_communities(value: Any, fail, key: str = "community") -> tuple[Community, ...]:
    _expect(value, list, key, fail)
    seen: set[str] = set()
    result: list[Community] = []
    for i, entry in enumerate(value):
        at = f"{key}[{i}]"
        _expect(entry, dict, at, fail)
        _check_keys(entry, ("name", "access"), f"{at}.", fail)
        # From a flag, the flag is the key to name; from the file, the field.
        name_key = f"{at}.name" if key == "community" else key
        if "name" not in entry:
            raise fail(name_key, "missing")
        # The community is a secret: problems are described, never quoted.
        name = _expect(entry["name"], str, name_key, fail)
        if not name:
            raise fail(name_key, "must not be empty")
        if "@" in name:
            raise fail(name_key, "must not contain '@' (it separates the node GUID context)")
        if len(name.encode("utf-8")) > MAX_DISPLAY_STRING:
            raise fail(name_key, f"longer than {MAX_DISPLAY_STRING} octets")
        if name in seen:
            raise fail(name_key, "the same community is configured twice")
        seen.add(name)
        result.append(Community(name=name, access=_parse_access(entry, f"{at}.access", fail)))
    return tuple(result)


def _parse_key(entry: Mapping[str, Any], name: str, at: str, fail) -> str:
    if name not in entry:
        raise fail(f"{at}.{name}", "missing")
    key = _expect(entry[name], str, f"{at}.{name}", fail)
    if len(key.encode("utf-8")) < MIN_KEY_LENGTH:
        raise fail(f"{at}.{name}", f"too short (at least {MIN_KEY_LENGTH} characters)")
    return key


def _parse_protocol(entry: Mapping[str, Any], name: str, allowed: tuple[str, ...], at: str,
                    fail) -> str:
    proto = _expect(entry[name], str, f"{at}.{name}", fail)
    normal = proto.upper().replace("-", "")
    if normal not in allowed:
        expected = ", ".join(allowed)
        raise fail(f"{at}.{name}", f"unknown protocol {proto!r} (expected one of: {expected})")
    return normal


def _parse_users(value: Any, fail) -> tuple[User, ...]:
    _expect(value, list, "user", fail)
    seen: set[str] = set()
    result: list[User] = []
    for i, entry in enumerate(value):
        at = f"user[{i}]"
        _expect(entry, dict, at, fail)
        _check_keys(entry, ("name", "auth", "auth_key", "priv", "priv_key", "access"), f"{at}.",
                    fail)
        if "name" not in entry:
            raise fail(f"{at}.name", "missing")
        name = _expect(entry["name"], str, f"{at}.name", fail)
        if not 1 <= len(name.encode("utf-8")) <= 32:
            raise fail(f"{at}.name", "must be 1 to 32 octets (SnmpAdminString)")
        if name in seen:
            raise fail(f"{at}.name", f"user {name!r} is configured twice")
        seen.add(name)
        at = f"user[{i}] ({name})"
        if "auth" not in entry:
            raise fail(f"{at}.auth", "missing (one of: " + ", ".join(AUTH_PROTOCOLS) + ")")
        auth = _parse_protocol(entry, "auth", AUTH_PROTOCOLS, at, fail)
        auth_key = _parse_key(entry, "auth_key", at, fail)
        priv = priv_key = None
        if "priv" in entry:
            priv = _parse_protocol(entry, "priv", PRIV_PROTOCOLS, at, fail)
            priv = "AES" if priv == "AES128" else priv
            priv_key = _parse_key(entry, "priv_key", at, fail)
        elif "priv_key" in entry:
            raise fail(f"{at}.priv_key", "given without priv")
        result.append(User(name=name, auth=auth, auth_key=auth_key, priv=priv,
                           priv_key=priv_key, access=_parse_access(entry, f"{at}.access", fail)))
    return tuple(result)

"""The agent's TOML configuration, validated when it is loaded.

Every error names the key and the problem. Secrets (community strings, USM
keys) never appear in error messages, reprs or logs: they are kept out of the
dataclass reprs and errors about them name only the key.
"""

from __future__ import annotations

import ipaddress
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ibsnmp.documents import Fail, boolean, check_keys, choice, expect, integer, number, text
from ibsnmp.sa.sessions import DEFAULT_MAX_RESULT_ROWS, DEFAULT_MAX_RESULT_ROWS_PER_REQUEST

from .agentx_master import AgentxAddressError, MasterAddress, parse_master_address
from .config_error import ConfigError as ConfigError  # raised here, known by this name
from .option_tables import OPTION_TABLES, check_option_tables
from .secrets import resolve_secret, warn_if_exposed_config
from .engine_id import parse_engine_id
from .trap_targets import (DEFAULT_INFORM_RETRIES, DEFAULT_INFORM_TIMEOUT, DEFAULT_TRAP_QUEUE,
                           TRAP_KINDS, TRAP_VERSIONS, TrapTarget, parse_trap_address)
from .transport import DEFAULT_LISTEN, Endpoint, ListenSyntaxError, parse_endpoint
from .views import View, parse_view

Access = Literal["read", "write"]
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
ACCESSES: tuple[Access, ...] = ("read", "write")

# USM protocols accepted in `auth` / `priv`. SHA and MD5 are there for old
# managers only; DES likewise. AES192/AES256 use the key extension net-snmp
# uses (Blumenthal draft); the "C" variants use Cisco's (Reeder draft).
AUTH_PROTOCOLS = ("SHA224", "SHA256", "SHA384", "SHA512", "SHA", "MD5")
PRIV_PROTOCOLS = ("AES", "AES128", "AES192", "AES256", "AES192C", "AES256C", "DES")

MIN_KEY_LENGTH = 8  # RFC 3414 11.2: pass phrases of at least 8 octets
MAX_DISPLAY_STRING = 255  # SNMPv2-TC DisplayString
MAX_CONFIG_BYTES = 1 << 20  # 1 MiB: far more than any shipped example takes

# At most this many varbinds per request unless [limits] says otherwise: half
# net-snmp's command-line tools' own limit (128 OIDs per request), so that no
# one request's decoding and answering holds the agent up for long.
DEFAULT_MAX_VARBINDS = 64
# The varbinds one GETBULK answers at most, as net-snmp's maxGetbulkResponses
# (100 by default there too): a walk asks again, and no request costs more
# than this many steps (RFC 3416 4.2.3 lets an agent answer fewer).
DEFAULT_MAX_GETBULK_VARBINDS = 100
# The time, in ms, a GETBULK's repetitions may take to fill (0: no limit):
# a kept walk's steps fill a message well within it, fresh names may not.
DEFAULT_GETBULK_FILL_MS = 0.5
MAX_VARBINDS_CEILING = 65_535
# Walk steps the fast responder keeps encoded (agent.walk_cache): a large
# table walks from it; what it holds, and in how much memory, is in docs/performance.md.
DEFAULT_WALK_CACHE = 262_144
# Requests per second from all sources together: no cap unless [limits] sets one.
# A count cannot tell a manager from a flood (it drops at random among all);
# the CPU budget below shares the agent fairly, the costliest sources dropped first.
DEFAULT_REQUESTS_PER_SECOND = 0.0
# The share of one core requests may take before the sources that cost most
# are dropped (agent.governor): the rest is the provider's and the event loop's.
DEFAULT_CPU_BUDGET = 0.8
# SNMPv3 Reports to requests USM refuses (no credentials needed to ask for one),
# per source address and in all: a manager needs one per session (discovery, a
# time-window resynchronization), a flood gets its refusals counted and no
# answer beyond these, as a host rate-limits its ICMP errors.
DEFAULT_REPORTS_PER_SECOND_PER_SOURCE = 100.0
DEFAULT_REPORTS_PER_SECOND = 1_000.0
LIMIT_KEYS = ("max_varbinds", "max_getbulk_varbinds", "getbulk_fill_ms", "requests_per_second_per_source",
              "requests_per_second", "cpu_budget", "reports_per_second_per_source", "reports_per_second",
              "fast_path", "walk_cache", "max_result_rows_per_request", "max_result_rows")
TRAPS_KEYS = ("if_mib", "authentication_failure")
AGENTX_KEYS = ("socket", "ping_interval")
DEFAULT_AGENTX_PING_INTERVAL = 15.0  # seconds between pings: a master gone silent is noticed
TRAP_TARGET_KEYS = ("address", "version", "kind", "community", "user", "timeout", "retries",
                    "queue_size", "rate_limit", "agent_address")


# Where a value came from, for messages: (document, key), e.g.
# ("command line", "--listen"), ("environment", "IBSNMP_LISTEN").
Origin = tuple[str, str]


def flag_origin(dest: str) -> Origin:
    """A value given by the flag of `dest` (the default origin)."""
    return "command line", "--" + dest.replace("_", "-")


# The example configuration's secrets start so: never a key of a real agent.
PLACEHOLDER_PREFIX = "change-me"


@dataclass(frozen=True, slots=True)
class SystemInfo:
    """The settable part of the SNMPv2-MIB system group."""

    # None: not configured (the host name for sysName, else empty text);
    # a configured object is read-only over SNMP.
    sys_name: str | None = None
    sys_contact: str | None = None
    sys_location: str | None = None


@dataclass(frozen=True, slots=True)
class Community:
    """An SNMPv1/v2c community; `name` is a secret. `view` None: the access's default."""

    name: str = field(repr=False)
    access: Access = "read"
    view: View | None = None
    # Source networks it is accepted from (the rocommunity convention); empty: any.
    sources: tuple[IPNetwork, ...] = ()


@dataclass(frozen=True, slots=True)
class Limits:
    """What one request may cost ([limits]).

    `max_varbinds` bounds the varbinds of a request (more: tooBig for
    v1/v2c, dropped for v3), `max_getbulk_varbinds` those of a GETBULK's
    answer (0: as many as the message holds), `getbulk_fill_ms` the time
    from its datagram's arrival after which no repetition is added (0: no
    limit); `requests_per_second_per_source` (None: no limit) drops a
    source's requests beyond that rate, `requests_per_second`
    (0: no limit) those of all sources together; `cpu_budget` (0: none) is the
    share of one core requests may take before the datagrams of the sources
    that cost most are dropped (agent.governor); `reports_per_second_per_source`
    and `reports_per_second` (0: no limit) do the same for the SNMPv3 Reports
    to requests USM refuses and the authorizationErrors to requests without
    credentials (the requests counted all the same). `fast_path` answers
    reads without pysnmp's per-varbind cost (agent.fast_reads; off: pysnmp's
    command responders answer them, agent.handover);
    `walk_cache` is how many walk steps it keeps encoded (0: none).
    `max_result_rows_per_request` and `max_result_rows` bound the result
    rows of one SA request and of all open ones (a request past either is
    refused: resourceUnavailable).
    """

    max_varbinds: int = DEFAULT_MAX_VARBINDS
    max_getbulk_varbinds: int = DEFAULT_MAX_GETBULK_VARBINDS
    getbulk_fill_ms: float = DEFAULT_GETBULK_FILL_MS
    requests_per_second_per_source: float | None = None
    requests_per_second: float = DEFAULT_REQUESTS_PER_SECOND
    cpu_budget: float = DEFAULT_CPU_BUDGET
    reports_per_second_per_source: float = DEFAULT_REPORTS_PER_SECOND_PER_SOURCE
    reports_per_second: float = DEFAULT_REPORTS_PER_SECOND
    fast_path: bool = True
    walk_cache: int = DEFAULT_WALK_CACHE
    max_result_rows_per_request: int = DEFAULT_MAX_RESULT_ROWS_PER_REQUEST
    max_result_rows: int = DEFAULT_MAX_RESULT_ROWS


@dataclass(frozen=True, slots=True)
class User:
    """An SNMPv3 USM user. Keys are secrets; `priv` None means authNoPriv."""

    name: str
    auth: str
    auth_key: str = field(repr=False)
    priv: str | None = None
    priv_key: str | None = field(default=None, repr=False)
    access: Access = "read"
    view: View | None = None  # None: the access's default (views.default_view)


@dataclass(frozen=True, slots=True)
class TrapSettings:
    """What is sent to every trap target ([traps]): `if_mib` adds IF-MIB
    linkDown / linkUp (RFC 2863) for a port that goes down or comes up,
    beside the IBA traps; `authentication_failure` fixes SNMPv2-MIB's
    snmpEnableAuthenTraps (read-only then; None: not set, a writer's SET
    decides, saved in the state file, disabled by default)."""

    if_mib: bool = True
    authentication_failure: bool | None = None


@dataclass(frozen=True, slots=True)
class AgentxSettings:
    """AgentX subagent mode ([agentx], --agentx): the master's socket and
    how often it is pinged (0: never)."""

    master: MasterAddress
    ping_interval: float = DEFAULT_AGENTX_PING_INTERVAL


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """Everything the engine needs, after config file and flags are merged."""

    listen: tuple[Endpoint, ...] = ()
    system: SystemInfo = SystemInfo()
    communities: tuple[Community, ...] = ()
    users: tuple[User, ...] = ()
    trap_targets: tuple[TrapTarget, ...] = ()
    engine_id: bytes | None = None  # None: pysnmp makes one per start
    limits: Limits = Limits()
    traps: TrapSettings = TrapSettings()
    # Default endpoints the agent may start without (IPv6 disabled on the host).
    optional_listen: tuple[Endpoint, ...] = ()
    engine_boots: int | None = None  # snmpEngineBoots from the state directory
    engine_booted_at: float | None = None  # when that boot began (agent.engine_group)
    reuse_port: bool = False  # listening ports shared with the agents of one group
    agentx: AgentxSettings | None = None  # None: no AgentX subagent
    # The config file's option tables as written (FileConfig.options): what
    # they give is applied at start only, so a reload compares them.
    file_options: Mapping[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, slots=True)
class FileConfig:
    """What a config file says; None where it is silent (flags or defaults apply)."""

    listen: tuple[Endpoint, ...] | None = None
    system: SystemInfo = SystemInfo()
    communities: tuple[Community, ...] | None = None
    users: tuple[User, ...] = ()
    trap_targets: tuple[TrapTarget, ...] = ()
    engine_id: bytes | None = None
    limits: Limits = Limits()
    traps: TrapSettings = TrapSettings()
    agentx: AgentxSettings | None = None
    # The tables that stand for command-line options (agent.option_tables),
    # by key ("provider.kind"), as written; `source` names the file.
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)
    source: str = ""


def _read_capped(path: Path) -> bytes:
    """The file's bytes; ConfigError if it holds more than MAX_CONFIG_BYTES.

    The size is checked before reading, and at most one byte over the cap is
    read (a file that grows meanwhile, or a device, is not read to its end).
    """
    too_large = ConfigError(f"{path}: too large: over {MAX_CONFIG_BYTES} bytes "
                            "(1 MiB), the most a config file may hold")
    with path.open("rb") as file:
        if os.fstat(file.fileno()).st_size > MAX_CONFIG_BYTES:
            raise too_large
        raw = file.read(MAX_CONFIG_BYTES + 1)
    if len(raw) > MAX_CONFIG_BYTES:
        raise too_large
    return raw


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file's document; ConfigError (naming the file, never a value) if
    unreadable or over MAX_CONFIG_BYTES."""
    try:
        raw = _read_capped(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        # The decoder's message gives line and column, never the value.
        raise ConfigError(f"{path}: TOML syntax: {exc}") from None


def load_config(path: str | Path) -> FileConfig:
    """Read and validate a TOML config file; raise ConfigError on any problem."""
    path = Path(path)
    data = read_toml(path)
    config = parse_config(data, source=str(path))
    warn_if_exposed_config(path, data)
    return config


def parse_config(data: Mapping[str, Any], source: str = "config") -> FileConfig:
    """Validate an already decoded TOML document."""

    def fail(key: str, problem: str) -> ConfigError:
        return ConfigError(problem, key, source)

    check_keys(data, ("listen", "system", "community", "user", "trap_target", "engine_id",
                      "limits", "traps", "agentx", *OPTION_TABLES), "", fail)
    options = check_option_tables(data, fail)
    listen = None
    if "listen" in data:
        listen = _parse_listen(data["listen"], fail)
    system = _parse_system(data.get("system", {}), fail)
    communities = None
    if "community" in data:
        communities = _parse_communities(data["community"], fail)
    users = _parse_users(data.get("user", []), fail)
    targets = parse_trap_targets(data.get("trap_target", []), users, fail)
    engine_id = parse_engine_id(data["engine_id"], "engine_id", fail) if "engine_id" in data \
        else None
    return FileConfig(listen=listen, system=system, communities=communities, users=users,
                      trap_targets=targets, engine_id=engine_id,
                      limits=_parse_limits(data.get("limits", {}), fail),
                      traps=_parse_traps(data.get("traps", {}), fail),
                      agentx=_parse_agentx(data["agentx"], fail) if "agentx" in data else None,
                      options=options, source=source)


def merge_settings(
    file: FileConfig | None,
    listen: list[str] | None = None,
    communities: list[str] | None = None,
    trap_targets: list[str] | None = None,
    write_communities: list[str] | None = None,
    *,
    agentx: str | None = None,
    origin: Callable[[str], Origin] = flag_origin,
) -> AgentSettings:
    """Apply command-line overrides to a file config (flags win, per key).

    `listen` replaces the file's listen list; `communities` (read-only ones)
    replace the file's [[community]] entries; `trap_targets` (ADDR[:PORT],
    SNMPv2c traps with community "public") are added to the file's;
    `write_communities` (read-write ones, --write-community) are added to
    the communities in effect. When neither the file nor the read-only flags
    mention communities or users, the agent answers the read community
    "public", like most agents' packaged defaults (also beside a
    --write-community, as net-snmp's rocommunity/rwcommunity pair).
    `origin(dest)` names where an override came from (the flag, its
    variable, a file of communities) for error messages; dests are
    "listen", "community", "write_community", "trap_target" and "agentx".
    `agentx` (--agentx: the master's socket) turns on the AgentX subagent;
    with it and no listen list from flag or file, no UDP port is bound.
    """
    file = file or FileConfig()

    def fail_for(dest: str) -> tuple[Fail, str]:
        document, key = origin(dest)

        def fail(where: str, problem: str) -> ConfigError:
            return ConfigError(problem, where, document)

        return fail, key

    agentx_settings = file.agentx
    if agentx is not None:
        fail, key = fail_for("agentx")
        try:
            master = parse_master_address(agentx)
        except AgentxAddressError as exc:
            raise fail(key, str(exc)) from None
        agentx_settings = AgentxSettings(master, file.agentx.ping_interval if file.agentx
                                         else DEFAULT_AGENTX_PING_INTERVAL)
    optional: tuple[Endpoint, ...] = ()
    if listen:
        fail, key = fail_for("listen")
        endpoints = _parse_listen(list(listen), fail, key=key)
    elif file.listen is not None:
        endpoints = file.listen
    elif agentx_settings is not None:
        endpoints = ()  # the master serves the managers
    else:
        endpoints = tuple(parse_endpoint(text) for text in DEFAULT_LISTEN)
        optional = tuple(e for e in endpoints if e.ipv6)
    if communities:
        fail, key = fail_for("community")
        comms = _parse_communities([{"name": name, "access": "read"} for name in communities],
                                   fail, key=key)
    elif file.communities is not None:
        comms = file.communities  # may be explicitly empty: v3 only
    elif file.users:
        comms = ()
    else:
        comms = (Community(name="public", access="read"),)
    if write_communities:
        entries: list[dict[str, Any]] = [
            {"name": c.name, "access": c.access, "source": [str(n) for n in c.sources]}
            | ({"view": c.view} if c.view else {})
            for c in comms]
        entries += [{"name": name, "access": "write"} for name in write_communities]
        fail, key = fail_for("write_community")
        try:
            comms = _parse_communities(entries, fail, key=key)
        except ConfigError as exc:
            problem = exc.problem.replace("the same community is configured twice",
                                          "the community is already configured")
            raise ConfigError(problem, exc.where, exc.document) from None
    targets = file.trap_targets
    if trap_targets:
        fail, key = fail_for("trap_target")
        entries = [{"address": address} for address in trap_targets]
        targets += parse_trap_targets(entries, file.users, fail, key=key)
    return AgentSettings(listen=endpoints, system=file.system, communities=comms, users=file.users,
                         trap_targets=targets, engine_id=file.engine_id, limits=file.limits,
                         optional_listen=optional, traps=file.traps, agentx=agentx_settings,
                         file_options=file.options)


# -- validation helpers ----------------------------------------------------------


def _parse_listen(value: Any, fail: Fail, key: str = "listen") -> tuple[Endpoint, ...]:
    if isinstance(value, str):
        value = [value]
    expect(value, list, key, fail)
    if not value:
        raise fail(key, "must name at least one ADDR:PORT")
    endpoints: list[Endpoint] = []
    for i, item in enumerate(value):
        item_key = f"{key}[{i}]" if key == "listen" else key
        expect(item, str, item_key, fail)
        try:
            endpoint = parse_endpoint(item)
        except ListenSyntaxError as exc:
            raise fail(item_key, str(exc)) from None
        if endpoint in endpoints:
            raise fail(item_key, f"{item!r} is listed twice")
        endpoints.append(endpoint)
    return tuple(endpoints)


def _display_string(table: Mapping[str, Any], name: str, key: str, fail: Fail) -> str | None:
    if name not in table:
        return None
    return text(table[name], key, fail, max_octets=MAX_DISPLAY_STRING, printable=True)


def _parse_system(value: Any, fail: Fail) -> SystemInfo:
    expect(value, dict, "system", fail)
    keys = ("sysName", "sysContact", "sysLocation")
    for key in value:
        if key in ("sysDescr", "sysObjectID", "sysUpTime", "sysServices"):
            raise fail(f"system.{key}", "set by the agent, not configurable")
    check_keys(value, keys, "system", fail)
    name, contact, location = (_display_string(value, k, f"system.{k}", fail) for k in keys)
    return SystemInfo(sys_name=name, sys_contact=contact, sys_location=location)


def _parse_access(table: Mapping[str, Any], key: str, fail: Fail) -> Access:
    return choice(table.get("access", "read"), key, ACCESSES, fail)


def _parse_communities(value: Any, fail: Fail, key: str = "community") -> tuple[Community, ...]:
    expect(value, list, key, fail)
    seen: set[str] = set()
    result: list[Community] = []
    for i, entry in enumerate(value):
        at = f"{key}[{i}]"
        expect(entry, dict, at, fail)
        entry = resolve_secret(entry, "name", at, fail)
        check_keys(entry, ("name", "access", "view", "source"), at, fail)
        # From a flag, the flag is the key to name; from the file, the field.
        name_key = f"{at}.name" if key == "community" else key
        if "name" not in entry:
            raise fail(name_key, "missing")
        # The community is a secret: problems are described, never quoted.
        name = text(entry["name"], name_key, fail, max_octets=MAX_DISPLAY_STRING)
        if not name:
            raise fail(name_key, "must not be empty")
        _refuse_placeholder(name, name_key, fail)
        if "@" in name:
            raise fail(name_key, "must not contain '@' (it separates the node GUID context)")
        if name in seen:
            raise fail(name_key, "the same community is configured twice")
        seen.add(name)
        access = _parse_access(entry, f"{at}.access", fail)
        view = parse_view(entry, access, f"{at}.view", fail) if "view" in entry else None
        result.append(Community(name=name, access=access, view=view,
                                sources=_parse_source(entry.get("source", []), f"{at}.source",
                                                      fail)))
    return tuple(result)


def _parse_source(value: Any, key: str, fail: Fail) -> tuple[IPNetwork, ...]:
    """`"10.0.0.0/8"` or a list of IPv4/IPv6 networks (a bare address is a /32 or /128)."""
    if isinstance(value, str):
        value = [value]
    expect(value, list, key, fail)
    networks: list[IPNetwork] = []
    for i, item in enumerate(value):
        item_key = f"{key}[{i}]"
        expect(item, str, item_key, fail)
        try:
            network = ipaddress.ip_network(item.strip(), strict=True)
        except ValueError:
            raise fail(item_key, _network_problem(item)) from None
        if network in networks:
            raise fail(item_key, f"listed twice (also {key}[{networks.index(network)}])")
        networks.append(network)
    return tuple(networks)


def _network_problem(text: str) -> str:
    """Why `text` is no network, without quoting it (ipaddress's messages do)."""
    expected = 'a network such as "10.0.0.0/8" or "fd00::/8"'
    try:
        ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return f"not {expected}"
    return f"not a network as it has host bits set (expected {expected})"


def _parse_limits(value: Any, fail: Fail) -> Limits:
    expect(value, dict, "limits", fail)
    check_keys(value, LIMIT_KEYS, "limits", fail)
    max_varbinds = _number(value, "max_varbinds", "limits", fail, integral=True, minimum=1,
                           default=DEFAULT_MAX_VARBINDS)
    if max_varbinds > MAX_VARBINDS_CEILING:
        raise fail("limits.max_varbinds", f"must be at most {MAX_VARBINDS_CEILING}")
    max_getbulk = _number(value, "max_getbulk_varbinds", "limits", fail, integral=True,
                          minimum=0, default=DEFAULT_MAX_GETBULK_VARBINDS)
    fill_ms = _number(value, "getbulk_fill_ms", "limits", fail, integral=False, minimum=0,
                      default=DEFAULT_GETBULK_FILL_MS)
    rate = None
    if "requests_per_second_per_source" in value:
        rate = _number(value, "requests_per_second_per_source", "limits", fail, integral=False,
                       minimum=0.001, default=None)
    aggregate = _number(value, "requests_per_second", "limits", fail, integral=False,
                        minimum=0, default=DEFAULT_REQUESTS_PER_SECOND)
    cpu_budget = number(value.get("cpu_budget", DEFAULT_CPU_BUDGET), "limits.cpu_budget", fail,
                        low=0, high=1)
    reports_per_source = _number(value, "reports_per_second_per_source", "limits", fail,
                                 integral=False, minimum=0,
                                 default=DEFAULT_REPORTS_PER_SECOND_PER_SOURCE)
    reports = _number(value, "reports_per_second", "limits", fail, integral=False, minimum=0,
                      default=DEFAULT_REPORTS_PER_SECOND)
    fast_path = boolean(value.get("fast_path", True), "limits.fast_path", fail)
    walk_cache = _number(value, "walk_cache", "limits", fail, integral=True, minimum=0,
                         default=DEFAULT_WALK_CACHE)
    per_request = _number(value, "max_result_rows_per_request", "limits", fail, integral=True,
                          minimum=0, default=DEFAULT_MAX_RESULT_ROWS_PER_REQUEST)
    result_rows = _number(value, "max_result_rows", "limits", fail, integral=True, minimum=0,
                          default=DEFAULT_MAX_RESULT_ROWS)
    return Limits(max_varbinds=max_varbinds, max_getbulk_varbinds=max_getbulk, getbulk_fill_ms=fill_ms,
                  requests_per_second_per_source=rate,
                  requests_per_second=aggregate, cpu_budget=cpu_budget,
                  reports_per_second_per_source=reports_per_source,
                  reports_per_second=reports, fast_path=fast_path, walk_cache=walk_cache,
                  max_result_rows_per_request=per_request, max_result_rows=result_rows)


def _parse_traps(value: Any, fail: Fail) -> TrapSettings:
    expect(value, dict, "traps", fail)
    check_keys(value, TRAPS_KEYS, "traps", fail)
    authentication_failure = value.get("authentication_failure")
    return TrapSettings(
        if_mib=boolean(value.get("if_mib", True), "traps.if_mib", fail),
        authentication_failure=None if authentication_failure is None else boolean(
            authentication_failure, "traps.authentication_failure", fail))


def _parse_agentx(value: Any, fail: Fail) -> AgentxSettings:
    expect(value, dict, "agentx", fail)
    check_keys(value, AGENTX_KEYS, "agentx", fail)
    try:
        master = parse_master_address(text(value.get("socket", ""), "agentx.socket", fail))
    except AgentxAddressError as exc:
        raise fail("agentx.socket", str(exc)) from None
    interval = number(value.get("ping_interval", DEFAULT_AGENTX_PING_INTERVAL), "agentx.ping_interval",
                      fail, low=0, high=3600)  # seconds; 0: no pings
    return AgentxSettings(master, interval)


def _parse_key(entry: Mapping[str, Any], name: str, at: str, fail: Fail) -> str:
    if name not in entry:
        raise fail(f"{at}.{name}", "missing")
    key = text(entry[name], f"{at}.{name}", fail)
    if len(key.encode("utf-8")) < MIN_KEY_LENGTH:
        raise fail(f"{at}.{name}", f"too short (at least {MIN_KEY_LENGTH} characters)")
    _refuse_placeholder(key, f"{at}.{name}", fail)
    return key


def _refuse_placeholder(secret: str, key: str, fail: Fail) -> None:
    """The example file's `change-me...` secrets are known to everyone who read it."""
    if secret.lower().startswith(PLACEHOLDER_PREFIX):
        raise fail(key, f"still the example's placeholder ({PLACEHOLDER_PREFIX}...): "
                        "set a secret of your own")


def _parse_protocol(entry: Mapping[str, Any], name: str, allowed: tuple[str, ...], at: str,
                    fail: Fail) -> str:
    proto = text(entry[name], f"{at}.{name}", fail)
    normal = proto.upper().replace("-", "")
    if normal not in allowed:
        expected = ", ".join(allowed)
        raise fail(f"{at}.{name}", f"unknown protocol (expected one of: {expected})")
    return normal


def _parse_users(value: Any, fail: Fail) -> tuple[User, ...]:
    expect(value, list, "user", fail)
    seen: set[str] = set()
    result: list[User] = []
    for i, entry in enumerate(value):
        at = f"user[{i}]"
        expect(entry, dict, at, fail)
        for secret in ("auth_key", "priv_key"):
            entry = resolve_secret(entry, secret, at, fail)
        check_keys(entry, ("name", "auth", "auth_key", "priv", "priv_key", "access", "view"), at,
                   fail)
        if "name" not in entry:
            raise fail(f"{at}.name", "missing")
        name = text(entry["name"], f"{at}.name", fail)
        if not 1 <= len(name.encode("utf-8")) <= 32:
            raise fail(f"{at}.name", "must be 1 to 32 octets (SnmpAdminString)")
        if name in seen:
            raise fail(f"{at}.name", "the same user name is configured twice")
        seen.add(name)
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
        access = _parse_access(entry, f"{at}.access", fail)
        view = parse_view(entry, access, f"{at}.view", fail) if "view" in entry else None
        result.append(User(name=name, auth=auth, auth_key=auth_key, priv=priv,
                           priv_key=priv_key, access=access, view=view))
    return tuple(result)


# -- notification targets ---------------------------------------------------------


def _number(entry: Mapping[str, Any], name: str, at: str, fail: Fail, *, integral: bool,
            minimum: float, default: Any) -> Any:
    """`entry[name]`, an integer if `integral`, of at least `minimum`; `default` when absent."""
    if name not in entry:
        return default
    key = f"{at}.{name}"
    if integral:
        return integer(entry[name], key, fail, low=int(minimum))
    return number(entry[name], key, fail, low=minimum)


def parse_trap_targets(value: Any, users: tuple[User, ...], fail: Fail,
                       key: str = "trap_target") -> tuple[TrapTarget, ...]:
    """Validate [[trap_target]] entries (or --trap-target flags)."""
    expect(value, list, key, fail)
    by_name = {user.name: user for user in users}
    result: list[TrapTarget] = []
    for i, entry in enumerate(value):
        at = f"{key}[{i}]"
        expect(entry, dict, at, fail)
        entry = resolve_secret(entry, "community", at, fail)
        check_keys(entry, TRAP_TARGET_KEYS, at, fail)
        address_key = f"{at}.address" if key == "trap_target" else key
        if "address" not in entry:
            raise fail(address_key, "missing (HOST:PORT of the receiver, port 162 by default)")
        try:
            address = parse_trap_address(text(entry["address"], address_key, fail))
        except ListenSyntaxError as exc:
            raise fail(address_key, str(exc)) from None
        spelled = text(entry.get("version", "2c"), f"{at}.version", fail)
        version = choice(spelled.lower().removeprefix("v"), f"{at}.version", TRAP_VERSIONS, fail)
        kind = choice(entry.get("kind", "trap"), f"{at}.kind", TRAP_KINDS, fail)
        if kind == "inform" and version == "1":
            raise fail(f"{at}.kind", "SNMPv1 has no informs (use version 2c or 3)")
        for name in ("timeout", "retries"):
            if name in entry and kind != "inform":
                raise fail(f"{at}.{name}", "only informs are retried (kind = \"inform\")")
        community, user = "public", None
        if version == "3":
            if "community" in entry:
                raise fail(f"{at}.community", "SNMPv3 uses user, not community")
            if "user" not in entry:
                raise fail(f"{at}.user", "missing (the name of a [[user]] with authPriv)")
            user = text(entry["user"], f"{at}.user", fail)
            if user not in by_name:
                raise fail(f"{at}.user", "names no [[user]]")
            if by_name[user].priv is None:
                raise fail(f"{at}.user", "the [[user]] it names has no priv: notifications "
                                         "are sent authPriv")
        else:
            if "user" in entry:
                raise fail(f"{at}.user", f"SNMPv{version} uses community, not user")
            if "community" in entry:
                community = text(entry["community"], f"{at}.community", fail,
                                 max_octets=MAX_DISPLAY_STRING)
                if not community:
                    raise fail(f"{at}.community", "must not be empty")
                _refuse_placeholder(community, f"{at}.community", fail)
        agent_address = None
        if "agent_address" in entry:
            if version != "1":
                raise fail(f"{at}.agent_address", "only SNMPv1 traps carry an agent-addr")
            agent_address = text(entry["agent_address"], f"{at}.agent_address", fail)
            try:
                ipaddress.IPv4Address(agent_address)
            except ValueError:
                raise fail(f"{at}.agent_address", "not an IPv4 address such as 192.0.2.1") \
                    from None
        rate = entry.get("rate_limit")
        if rate is not None:
            rate = _number(entry, "rate_limit", at, fail, integral=False, minimum=0.001,
                           default=None)
        result.append(TrapTarget(
            address=address, version=version, kind=kind,
            community=community, user=user,
            timeout=_number(entry, "timeout", at, fail, integral=False, minimum=0.01,
                            default=DEFAULT_INFORM_TIMEOUT),
            retries=_number(entry, "retries", at, fail, integral=True, minimum=0,
                            default=DEFAULT_INFORM_RETRIES),
            queue_size=_number(entry, "queue_size", at, fail, integral=True, minimum=1,
                               default=DEFAULT_TRAP_QUEUE),
            rate_limit=rate, agent_address=agent_address,
        ))
    return tuple(result)

"""The configuration file's tables that stand for command-line options.

Every option of `ibsnmp run` has a key: `[provider]` holds the provider (`kind`) and its
options under the flags' names (`--sysfs-root` is `sysfs_root`), `[publish]` the MQTT
publisher's (`broker` is `--publish`'s URL), `[agent]` the agent's own (state directory,
request sessions, logging). The other run options are the file's own tables: `listen`,
`[[community]]`, `[[trap_target]]`, `[agentx]`. A flag or its IBSNMP_* variable wins over
the key (ibsnmp.options). A `[provider]` key of another kind than the table names is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ibsnmp.documents import Fail, check_keys, expect

PROVIDER_KINDS = ("sysfs", "topology", "live", "mqtt", "simulated")
OPTION_TABLES = ("provider", "publish", "agent")


@dataclass(frozen=True, slots=True)
class FileOption:
    """A file key (`table.name`) and the option's dest it gives a value to;
    `kinds`: the provider kinds a [provider] key belongs to (empty: any)."""

    table: str
    name: str
    dest: str
    kinds: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.table}.{self.name}"


def _provider(name: str, *kinds: str, dest: str | None = None) -> FileOption:
    return FileOption("provider", name, dest or name, kinds)


_MQTT_CONNECTION = ("fabric_id", "broker_ca", "broker_cert", "broker_key", "broker_password_file",
                    "client_id", "keepalive")
_PROVIDER_OPTIONS = (
    _provider("kind", dest="provider"),
    _provider("fabric", "simulated"),
    _provider("seed", "simulated"),
    _provider("scenario", "simulated"),
    _provider("sysfs_root", "sysfs"),
    _provider("poll_interval", "sysfs", "live"),
    _provider("ca", "live"),
    _provider("port", "live"),
    _provider("sweep_interval", "live"),
    _provider("sm_key_file", "live"),
    _provider("mad_timeout", "live"),
    _provider("mad_retries", "live"),
    _provider("mad_window", "live"),
    _provider("gone_after_sweeps", "live"),
    _provider("topology", "topology"),
    _provider("lft_dump", "topology"),
    _provider("sm_guid", "topology"),
    _provider("broker", "mqtt"),
    _provider("stale_after", "mqtt"),
    _provider("max_nodes", "mqtt"),
    _provider("max_nodes_per_publisher", "mqtt"),
    *(_provider(name, "mqtt") for name in _MQTT_CONNECTION),
)
_PUBLISH_TIMING = tuple(FileOption("publish", name, name) for name in ("interval", "refresh", "queue_size"))
_PUBLISH_CONNECTION = tuple(FileOption("publish", name, name) for name in _MQTT_CONNECTION)
_LOGGING = (FileOption("agent", "log_format", "log_format"), FileOption("agent", "verbose", "verbose"))

# `ibsnmp run`: the publisher's URL is --publish.
RUN_OPTIONS: tuple[FileOption, ...] = (
    *_PROVIDER_OPTIONS,
    FileOption("publish", "broker", "publish"), *_PUBLISH_TIMING, *_PUBLISH_CONNECTION,
    FileOption("agent", "state_dir", "state_dir"),
    FileOption("agent", "session_lifetime", "session_lifetime"),
    FileOption("agent", "max_sessions", "max_sessions"),
    FileOption("agent", "reuse_port", "reuse_port"),
    *_LOGGING,
)
# `ibsnmp publish`: the same file on a host; its broker is --broker.
PUBLISH_OPTIONS: tuple[FileOption, ...] = (
    *(o for o in _PROVIDER_OPTIONS if not o.kinds or set(o.kinds) - {"live", "mqtt"}),
    FileOption("publish", "broker", "broker"), *_PUBLISH_TIMING, *_PUBLISH_CONNECTION,
    *_LOGGING,
)


def table_keys(table: str) -> tuple[str, ...]:
    """Every key a table may hold (for any command that reads the file)."""
    names: dict[str, None] = {}
    for option in RUN_OPTIONS + PUBLISH_OPTIONS:
        if option.table == table:
            names[option.name] = None
    return tuple(names)


def check_option_tables(data: Mapping[str, Any], fail: Fail) -> dict[str, Any]:
    """The option tables' values by key (`provider.kind`: "sysfs"), their
    names checked; the values are checked by the option they stand for. A
    `[provider]` key belongs to the kinds listed with it: naming another kind
    in the same table is an error, since the key would not be used."""
    values: dict[str, Any] = {}
    for table in OPTION_TABLES:
        if table not in data:
            continue
        entries = expect(data[table], dict, table, fail)
        check_keys(entries, table_keys(table), table, fail)
        values.update({f"{table}.{name}": value for name, value in entries.items()})
    kind = values.get("provider.kind")
    if kind is not None and kind not in PROVIDER_KINDS:
        raise fail("provider.kind", "expected one of: " + ", ".join(PROVIDER_KINDS))
    if kind is not None:
        for option in _PROVIDER_OPTIONS:
            if option.kinds and kind not in option.kinds and option.key in values:
                raise fail(option.key, f"an option of provider kind {' or '.join(option.kinds)}, "
                                       f"not of kind \"{kind}\" (this table's kind)")
    for option in _PUBLISH_CONNECTION:
        shared = f"provider.{option.name}"
        if option.key in values and shared in values and values[option.key] != values[shared]:
            raise fail(option.key, f"also given as {shared}, with another value "
                                   "(one set of MQTT connection options)")
    return values

"""`ibsnmp fabric targets`: snmp_exporter 0.21's and Prometheus' configuration for every node.

snmp_exporter 0.21 takes only `target` and `module` from a scrape's URL, and a node's context is
reached with community `<community>@<guid>` (v1/v2c) or context name `<guid>` (v3), so every
node gets its own copy of each per-node module (`ib_if@<guid>`) with an `auth` of its own. Out
come the exporter's configuration (the shipped modules with the chosen auth, then the copies),
a file_sd target list (a group per node, labels `node_name`, `node_guid`, `node_kind`) and, on
request, Prometheus' configuration and the alert rules (ibsnmp/prometheus/scrape_config.py).
Reference: docs/prometheus.md, 'Install and point the exporter at the agent'.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ibsnmp.atomicfile import write_atomically
from ibsnmp.fabric.model import Fabric
from ibsnmp.fabric.naming import KIND_WORDS
from ibsnmp.prometheus.scrape_config import (ALERT_RULES, DEFAULT_EXPORTER,
                                             DEFAULT_SCRAPE_INTERVAL, PrometheusSetup,
                                             check_scrape_times, default_timeout,
                                             prometheus_config)

PER_NODE_MODULES = ("ib_if", "ib_pma")
NODE_KINDS = tuple(KIND_WORDS.values())
DEFAULT_AUTH: dict[str, object] = {"version": 2, "auth": {"community": "public"}}
# The auth settings of snmp_exporter 0.21 an auth file may give; the
# context name is the targets writer's to set, per node.
AUTH_KEYS = frozenset({"community", "username", "security_level", "password",
                       "auth_protocol", "priv_protocol", "priv_password"})
_MODULE_LINE = re.compile(r"^([A-Za-z0-9_.@\-]+):\s*$")


class TargetsError(ValueError):
    """An input the writer cannot use; the message never holds a secret."""


@dataclass(frozen=True, slots=True)
class NodeTarget:
    guid: str  # 16 lower-case hex digits: the node's context name
    name: str
    kind: str  # "switch", "ca" or "router"


@dataclass(frozen=True, slots=True)
class ScrapeAuth:
    version: int
    auth: Mapping[str, str]

    def for_node(self, guid: str) -> dict[str, str]:
        """This auth pointed at one node's context."""
        own = dict(self.auth)
        if self.version == 3:
            own["context_name"] = guid
        else:
            own["community"] = f"{own.get('community', 'public')}@{guid}"
        return own


def node_targets(fabric: Fabric) -> list[NodeTarget]:
    """Every node of the fabric, by GUID."""
    return [NodeTarget(f"{node.guid:016x}", node.label, KIND_WORDS[node.node_type])
            for _guid, node in sorted(fabric.nodes.items())]


def of_kinds(nodes: Iterable[NodeTarget], kinds: Iterable[str]) -> list[NodeTarget]:
    wanted = set(check_kinds(kinds))
    return [node for node in nodes if node.kind in wanted]


def read_auth(path: Path | None) -> ScrapeAuth:
    """The auth a TOML file gives (`version` and an `[auth]` table with
    snmp_exporter's key names), or v2c community "public" without one."""
    data: Mapping[str, object] = DEFAULT_AUTH
    if path is not None:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise TargetsError(f"{path}: cannot read the auth file ({type(exc).__name__})") from None
    version = data.get("version", 2)
    auth = data.get("auth", {})
    if version not in (1, 2, 3):
        raise TargetsError("auth file: version must be 1, 2 or 3")
    if not isinstance(auth, dict) or not all(isinstance(v, str) for v in auth.values()):
        raise TargetsError("auth file: [auth] must be a table of strings")
    unknown = sorted(set(auth) - AUTH_KEYS)
    if unknown:
        raise TargetsError(f"auth file: unknown [auth] keys {unknown}; known: {sorted(AUTH_KEYS)}")
    if version == 3 and "username" not in auth:
        raise TargetsError("auth file: version 3 needs [auth] username")
    return ScrapeAuth(int(version), auth)


def _auth_lines(auth: ScrapeAuth, settings: Mapping[str, str]) -> list[str]:
    # JSON strings are YAML double-quoted scalars: any secret is written safely.
    return ([f"  version: {auth.version}", "  auth:"]
            + [f"    {key}: {json.dumps(value)}" for key, value in sorted(settings.items())])


def module_bodies(config_text: str) -> dict[str, list[str]]:
    """Each module's lines (everything under its top-level key)."""
    bodies: dict[str, list[str]] = {}
    body: list[str] | None = None
    for line in config_text.splitlines():
        match = _MODULE_LINE.match(line)
        if match:
            body = bodies.setdefault(match[1], [])
        elif body is not None:
            body.append(line)
    return bodies


def _refuse_own_auth(bodies: Mapping[str, list[str]]) -> None:
    """A second `auth` key would make the exporter refuse the whole file."""
    for name, body in bodies.items():
        for line in body:
            if re.match(r"^  (auth|version):", line):
                raise TargetsError(f"module {name} sets {line.strip()} already; give the auth "
                                   "to `ibsnmp fabric targets --auth` instead")


def exporter_config(shipped: str, auth: ScrapeAuth, nodes: Sequence[NodeTarget],
                    per_node: Iterable[str] = PER_NODE_MODULES) -> str:
    """The shipped modules with `auth` added, then a whole copy of each
    per-node module for every node (`<module>@<guid>`), with the node's auth.

    Whole copies, not YAML merge keys: 0.21's YAML reader refuses a document
    whose aliases expand to most of it ("excessive aliasing"), which a merge
    per node does on a large fabric (docs/prometheus.md).
    """
    bodies = module_bodies(shipped)
    _refuse_own_auth(bodies)
    out = ["# snmp_exporter 0.21 configuration written by `ibsnmp fabric targets`:",
           "# the shipped modules, then one copy of a per-node module for each node."]
    for name, body in bodies.items():
        out += [f"{name}:", *body, *_auth_lines(auth, auth.auth)]
    for name in per_node:
        for node in nodes:
            out += [f"{name}@{node.guid}:", *bodies[name],
                    *_auth_lines(auth, auth.for_node(node.guid))]
    return "\n".join(out) + "\n"


def file_sd_targets(nodes: Sequence[NodeTarget], agent: str) -> str:
    """Prometheus file_sd JSON: one group per node, all aimed at the agent."""
    groups = [{"targets": [agent],
               "labels": {"node_guid": node.guid, "node_name": node.name, "node_kind": node.kind}}
              for node in nodes]
    return "[\n" + ",\n".join(json.dumps(group) for group in groups) + "\n]\n"


def write_targets(nodes: Sequence[NodeTarget], *, agent: str, shipped: Path, auth: ScrapeAuth,
                  config_out: Path, targets_out: Path,
                  per_node: Sequence[str] = PER_NODE_MODULES) -> int:
    """Write both files; the number of per-node modules written. The
    configuration holds the auth's secrets: it is written mode 0600."""
    try:
        text = shipped.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TargetsError(f"{shipped}: {exc}") from None
    missing = sorted(set(per_node) - set(module_bodies(text)))
    if missing:
        raise TargetsError(f"{shipped} has no module {', '.join(missing)}")
    config = exporter_config(text, auth, nodes, per_node)
    write_atomically(config_out, config.encode("utf-8"))
    write_atomically(targets_out, file_sd_targets(nodes, agent).encode("utf-8"))
    targets_out.chmod(0o644)
    return len(nodes) * len(per_node)


@dataclass(frozen=True, slots=True)
class PrometheusFiles:
    config_out: Path  # prometheus.yml
    rules_out: Path  # the alert rules it names
    exporter: str  # HOST:PORT, as Prometheus reaches the exporter
    scrape_interval: str  # Prometheus durations (scrape_files checks them)
    scrape_timeout: str


def prometheus_path(path: Path, config_folder: Path) -> str:
    """How prometheus.yml names a file: relative to its own folder when the
    file lies inside it (Prometheus resolves a relative path from there, so
    the two may move together), else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        return str(absolute.relative_to(os.path.abspath(config_folder)))
    except ValueError:
        return str(absolute)


def scrape_files(config_out: Path, *, rules_out: Path | None, exporter: str | None,
                 scrape_interval: str | None, scrape_timeout: str | None) -> PrometheusFiles:
    """The files to write with their settings, defaults filled in; a
    TargetsError for durations Prometheus would refuse."""
    interval = scrape_interval or DEFAULT_SCRAPE_INTERVAL
    try:
        timeout = scrape_timeout or default_timeout(interval)
        check_scrape_times(interval, timeout)
    except ValueError as exc:
        raise TargetsError(str(exc)) from None
    return PrometheusFiles(config_out, rules_out or config_out.with_name(ALERT_RULES.name),
                           exporter or DEFAULT_EXPORTER, interval, timeout)


def write_prometheus(files: PrometheusFiles, *, agent: str, targets_out: Path) -> None:
    """Write prometheus.yml, reading the file_sd list at `targets_out`, and
    the shipped alert rules it names. Neither holds a secret: mode 0644."""
    folder = files.config_out.parent
    config = prometheus_config(PrometheusSetup(
        agent=agent, exporter=files.exporter, targets_file=prometheus_path(targets_out, folder),
        rules_file=prometheus_path(files.rules_out, folder),
        scrape_interval=files.scrape_interval, scrape_timeout=files.scrape_timeout))
    for path, data in ((files.rules_out, ALERT_RULES.read_bytes()),
                       (files.config_out, config.encode("utf-8"))):
        write_atomically(path, data)
        path.chmod(0o644)


def check_kinds(kinds: Iterable[str]) -> list[str]:
    kinds = list(kinds)
    unknown = sorted(set(kinds) - set(NODE_KINDS))
    if unknown:
        raise TargetsError(f"unknown node kinds {unknown}; known: {list(NODE_KINDS)}")
    return kinds

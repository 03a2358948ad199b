"""`ibsnmp config check FILE`: would `ibsnmp run --config FILE` start?

The options are resolved exactly as `ibsnmp run --config FILE` resolves
them (IBSNMP_* variables included) and every value is checked: the file's
keys, the secrets it names, the provider and the files its options name.
Nothing is started: no port is bound, no device opened, no broker asked
(a simulated, sysfs or topology provider is built, which only reads).
The effective configuration is printed as TOML, each value with where it
came from and every secret masked. Exit 0, or 2 with a one-line error.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Iterable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from ibsnmp.agent.config import AgentSettings, ConfigError, read_toml
from ibsnmp.agent.option_tables import RUN_OPTIONS
from ibsnmp.fabric.spec import SpecError
from ibsnmp.options import DEFAULT, Source, file_values, resolve, source_of
from ibsnmp.providers.simulated import DEFAULT_SPEC

EXIT_OK, EXIT_INVALID = 0, 2
MASK = "********"
# The provider options `config check` shows for each kind (the flags' names).
KIND_OPTIONS = {o.name: o.kinds for o in RUN_OPTIONS if o.table == "provider" and o.kinds}


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    config = subparsers.add_parser("config", help="check a configuration file")
    actions = config.add_subparsers(dest="config_command", required=True)
    check = actions.add_parser(
        "check", help="check FILE as `ibsnmp run --config FILE` would, without starting; "
                      "print the effective configuration (secrets masked)")
    check.add_argument("file", metavar="FILE", help="the TOML configuration file")
    check.add_argument("-q", "--quiet", action="store_true",
                       help="print nothing when the configuration is valid")
    check.set_defaults(handler=_check)


def run_options(config: str) -> argparse.Namespace:
    """The options of `ibsnmp run --config CONFIG`, as run resolves them."""
    from ibsnmp.commands import run

    parser = argparse.ArgumentParser(prog="ibsnmp")
    run.add_parser(parser.add_subparsers(dest="command"))
    return resolve(parser, ["run", "--config", config], file_options=file_values)


def _check(args: argparse.Namespace) -> int:
    warnings = _Warnings()
    try:
        with warnings:
            run_args = run_options(args.file)
            settings, kind = checked(run_args)
        text = effective_toml(run_args, settings, kind, read_toml(Path(args.file)))
    except (ConfigError, SpecError) as exc:
        print(f"ibsnmp: {exc}", file=sys.stderr)  # the one line: warnings led to it
        return EXIT_INVALID
    if not args.quiet:
        sys.stdout.write("".join(f"# warning: {line}\n" for line in warnings.lines) + text)
    return EXIT_OK


class _Warnings(logging.Handler):
    """What checking logs at WARNING and above, kept to be shown with the result."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []
        self._level = logging.WARNING

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def __enter__(self) -> _Warnings:
        root = logging.getLogger()
        self._level = root.level
        root.addHandler(self)
        root.setLevel(logging.WARNING)
        return self

    def __exit__(self, *exc: object) -> None:
        root = logging.getLogger()
        root.removeHandler(self)
        root.setLevel(self._level)


def checked(args: argparse.Namespace) -> tuple[AgentSettings, str]:
    """The agent's settings and the provider kind, every option checked
    without starting anything (ConfigError naming the value's source)."""
    from ibsnmp.agent import settings_from_args
    from ibsnmp.commands import run

    settings = settings_from_args(args)
    kind = run.provider_kind(args)
    if kind in ("simulated", "sysfs", "topology"):
        run._make_provider(args)  # reads only
    elif kind == "live":
        run.check_live_options(args)
    else:
        from ibsnmp.commands.mqtt_from_flags import broker_settings_of

        if not args.broker:
            raise ConfigError("provider mqtt needs the broker's URL: --broker URL, "
                              "IBSNMP_BROKER or [provider] broker")
        broker_settings_of(args, "aggregator")
    if args.publish:
        from ibsnmp.commands.mqtt_from_flags import broker_settings_of, check_publisher_options

        check_publisher_options(args)
        broker_settings_of(args, "publisher", args.publish, url_dest="publish")
    return settings, kind


# -- the effective configuration as TOML ------------------------------------------


def effective_toml(args: argparse.Namespace, settings: AgentSettings, kind: str,
                   written: Mapping[str, Any]) -> str:
    """`settings` and the options as a TOML document, with sources as comments."""
    from ibsnmp.statedir import default_state_dir

    path = args.config

    def of(dest: str) -> Source:
        return source_of(args, dest)

    def in_file(key: str) -> Source:
        return Source(path) if key in written else DEFAULT

    out = _Writer()
    out.line(f"# ibsnmp run --config {path}: the configuration in effect")
    listen_source = of("listen") if args.listen else in_file("listen")
    if not settings.listen and settings.agentx is not None:
        out.comment("listen: none, an AgentX subagent (add listen to serve UDP too)")
    else:
        out.key("listen", [str(e) for e in settings.listen], listen_source)
    if settings.engine_id is not None:
        out.key("engine_id", "0x" + settings.engine_id.hex(), in_file("engine_id"))
    else:
        out.comment("engine_id: made at the first start, kept in the state directory")

    out.table("agent")
    state_dir = args.state_dir or str(default_state_dir())
    out.key("state_dir", state_dir, of("state_dir"))
    for dest in ("session_lifetime", "max_sessions", "reuse_port", "log_format", "verbose"):
        out.key(dest, getattr(args, dest), of(dest))

    out.table("provider")
    out.key("kind", kind, of("provider") if args.provider else Source(
        "implied by", str(of("fabric") if args.fabric else of("scenario"))))
    for name, kinds in KIND_OPTIONS.items():
        value = getattr(args, name)
        if kind not in kinds:
            continue
        if name == "fabric" and value is None:
            value = DEFAULT_SPEC
        if value is None:
            continue
        out.key(name, MASK if name == "broker" and "@" in str(value) else value, of(name))

    if args.publish:
        out.table("publish")
        out.key("broker", MASK if "@" in args.publish else args.publish, of("publish"))
        for dest in ("interval", "refresh", "queue_size", "fabric_id", "client_id", "keepalive",
                     "broker_ca", "broker_cert", "broker_key", "broker_password_file"):
            if getattr(args, dest) is not None:
                out.key(dest, getattr(args, dest), of(dest))

    out.table("system")
    for key, attr in (("sysName", "sys_name"), ("sysContact", "sys_contact"),
                      ("sysLocation", "sys_location")):
        value = getattr(settings.system, attr)
        if value is None:
            out.comment(f"{key}: not set here; a SET may change it (the host name for sysName)")
        else:
            out.key(key, value, Source(path))
    for table, values in (("limits", settings.limits), ("traps", settings.traps)):
        out.table(table)
        section = written.get(table, {})
        for field in fields(values):
            value = getattr(values, field.name)
            if value is not None:
                out.key(field.name, value, Source(path) if field.name in section else DEFAULT)
    if settings.agentx is not None:
        out.table("agentx")
        out.key("socket", str(settings.agentx.master),
                of("agentx") if args.agentx is not None else Source(path))
        out.key("ping_interval", settings.agentx.ping_interval, in_file("agentx"))
    _principals(out, args, settings, path, written)
    return out.text()


def _principals(out: _Writer, args: argparse.Namespace, settings: AgentSettings, path: str,
                written: Mapping[str, Any]) -> None:
    from_flags = bool(args.community or args.community_file or args.write_community
                      or args.write_community_file)
    community_source = Source("flags, variables and " + path) if from_flags else (
        Source(path) if "community" in written else Source("default"))
    for community in settings.communities:
        out.array_table("community", community_source)
        out.key("name", MASK)
        out.key("access", community.access)
        if community.sources:
            out.key("source", [str(network) for network in community.sources])
        if community.view is not None:
            out.key("view", community.view)
    for user in settings.users:
        out.array_table("user", Source(path))
        out.key("name", user.name)
        out.key("auth", user.auth)
        out.key("auth_key", MASK)
        if user.priv is not None:
            out.key("priv", user.priv)
            out.key("priv_key", MASK)
        out.key("access", user.access)
        if user.view is not None:
            out.key("view", user.view)
    for target in settings.trap_targets:
        out.array_table("trap_target", Source(path))
        out.key("address", str(target.address))
        out.key("version", target.version)
        out.key("kind", target.kind)
        if target.user is not None:
            out.key("user", target.user)
        else:
            out.key("community", MASK)
        if target.kind == "inform":
            out.key("timeout", target.timeout)
            out.key("retries", target.retries)
        out.key("queue_size", target.queue_size)
        for name in ("rate_limit", "agent_address"):
            if getattr(target, name) is not None:
                out.key(name, getattr(target, name))


class _Writer:
    """TOML lines, each value followed by where it came from."""

    def __init__(self) -> None:
        self._lines: list[str] = []

    def line(self, text: str) -> None:
        self._lines.append(text)

    def comment(self, text: str) -> None:
        self._lines.append(f"# {text}")

    def table(self, name: str) -> None:
        self._lines += ["", f"[{name}]"]

    def array_table(self, name: str, source: Source) -> None:
        self._lines += ["", f"[[{name}]]  # {source}"]

    def key(self, name: str, value: Any, source: Source | None = None) -> None:
        line = f"{name} = {_toml(value)}"
        self._lines.append(f"{line:<40}  # {source}" if source is not None else line)

    def text(self) -> str:
        return "\n".join(self._lines) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string
    if isinstance(value, Iterable):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)

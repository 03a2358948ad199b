"""Command-line options from environment variables, for containers and units.

Every long option of a command has a variable: `--listen` is IBSNMP_LISTEN,
`--state-dir` IBSNMP_STATE_DIR, `--log-format` IBSNMP_LOG_FORMAT. A flag on
the command line wins over its variable. Repeatable options take a
comma-separated list (IBSNMP_LISTEN="0.0.0.0:161,[::]:161"). IBSNMP_X_FILE
names a file holding the value of IBSNMP_X (the convention of official
container images for secrets: a mounted file, never an image layer); its
trailing newline is not part of the value.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path

from ibsnmp.agent.secrets import COMMUNITY_ENV, WRITE_COMMUNITY_ENV

PREFIX = "IBSNMP_"
FILE_SUFFIX = "_FILE"
# Variables the agent's settings read themselves (secrets, with their own
# one-source-only rule): not copied into the options here.
READ_BY_SETTINGS = frozenset({COMMUNITY_ENV, WRITE_COMMUNITY_ENV})


class EnvironmentValueError(ValueError):
    """A variable's value is unusable; the message names the variable, never a secret."""


def variable_name(action: argparse.Action) -> str | None:
    """IBSNMP_LISTEN for --listen; None for positionals and short-only options."""
    long_options = [o for o in action.option_strings if o.startswith("--")]
    if not long_options:
        return None
    return PREFIX + long_options[0][2:].upper().replace("-", "_")


def _raw_value(name: str, environ: Mapping[str, str]) -> str | None:
    direct = environ.get(name)
    file_name = environ.get(name + FILE_SUFFIX)
    if direct is not None and file_name is not None:
        raise EnvironmentValueError(f"{name} and {name}{FILE_SUFFIX} are both set: use one")
    if file_name is None:
        return direct
    try:
        text = Path(file_name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise EnvironmentValueError(f"{name}{FILE_SUFFIX}: cannot read {file_name}: {why}") from None
    return text.removesuffix("\n").removesuffix("\r")


def _convert(action: argparse.Action, name: str, text: str) -> object:
    convert = action.type if callable(action.type) else str
    try:
        value = convert(text)
    except (argparse.ArgumentTypeError, ValueError) as exc:
        raise EnvironmentValueError(f"{name}: {exc}") from None
    if action.choices is not None and value not in action.choices:
        choices = ", ".join(map(str, action.choices))
        raise EnvironmentValueError(f"{name}: {text!r} is not one of: {choices}")
    return value


def _value(action: argparse.Action, name: str, text: str) -> object:
    if isinstance(action, argparse._StoreTrueAction):
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off", ""):
            return False
        raise EnvironmentValueError(f"{name}: expected true or false")
    if isinstance(action, argparse._AppendAction):
        items = [part.strip() for part in text.split(",") if part.strip()]
        return [_convert(action, name, item) for item in items]
    return _convert(action, name, text)


def relax_required(parser: argparse.ArgumentParser,
                   environ: Mapping[str, str] | None = None) -> None:
    """A required option whose variable is set may be left off the command line."""
    environ = os.environ if environ is None else environ
    for action in _all_actions(parser):
        name = variable_name(action)
        if action.required and name is not None and (
                name in environ or name + FILE_SUFFIX in environ):
            action.required = False


def _all_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    actions = list(parser._actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                actions.extend(_all_actions(sub))
    return actions


def apply_environment(parser: argparse.ArgumentParser, args: argparse.Namespace,
                      argv: list[str], environ: Mapping[str, str] | None = None) -> None:
    """Fill options not given on the command line from their variables."""
    environ = os.environ if environ is None else environ
    given = {arg.split("=", 1)[0] for arg in argv if arg.startswith("-")}
    for action in _actions_of_command(parser, args):
        name = variable_name(action)
        if name is None or name in READ_BY_SETTINGS or given.intersection(action.option_strings):
            continue
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        text = _raw_value(name, environ)
        if text is not None:
            setattr(args, action.dest, _value(action, name, text))


def _actions_of_command(parser: argparse.ArgumentParser,
                        args: argparse.Namespace) -> list[argparse.Action]:
    """The options of the sub-command that was chosen (and its parents')."""
    actions = list(parser._actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(args, action.dest, None)
            sub = action.choices.get(chosen) if chosen is not None else None
            if sub is not None:
                actions.extend(_actions_of_command(sub, args))
    return actions

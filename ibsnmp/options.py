"""Command-line options from three places, each value knowing where it came from.

`resolve(parser, argv, environ, file_options)` parses `argv` and fills every option the
command line did not give from its IBSNMP_* variable, else its key in the configuration file
(when the command reads one), else its default. `args.option_sources` maps every option's dest
to the `Source` of its value, so an error about a value names the flag, the variable or the
file's key that gave it. A wrong flag is answered with the usage of the sub-command it was
given to, not the top-level one.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ibsnmp.agent.config import ConfigError, read_toml
from ibsnmp.agent.option_tables import FileOption, check_option_tables
from ibsnmp.agent.secrets import COMMUNITY_ENV, WRITE_COMMUNITY_ENV

PREFIX = "IBSNMP_"
FILE_SUFFIX = "_FILE"
# Variables the agent's settings read themselves (secrets, with their own
# one-source-only rule): not copied into the options here.
READ_BY_SETTINGS = frozenset({COMMUNITY_ENV, WRITE_COMMUNITY_ENV})


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


# What an option holds until one of the three places gives it a value.
UNSET: Final = _Unset()


@dataclass(frozen=True, slots=True)
class Source:
    """Where a value came from: `document` is "command line", "environment",
    a configuration file's path or "default"; `where` the flag, the
    variable or the file's key."""

    document: str
    where: str = ""

    def __str__(self) -> str:
        return ": ".join(part for part in (self.document, self.where) if part)

    def error(self, problem: str) -> ConfigError:
        """A ConfigError about the value this source gave."""
        return ConfigError(problem, self.where, self.document)


DEFAULT = Source("default")


class EnvironmentValueError(ConfigError):
    """A variable's value is unusable; the message names the variable, never a secret."""


@dataclass(frozen=True, slots=True)
class FileValue:
    """A configuration file's value for an option: the TOML value and its key."""

    value: Any
    source: Source


# The configuration file's values for a parsed command's options, by dest.
FileOptions = Callable[[argparse.Namespace], Mapping[str, FileValue]]


def file_values(args: argparse.Namespace) -> Mapping[str, FileValue]:
    """The config file's values for the chosen command's options, by dest:
    the command's `file_options` default names the keys it takes
    (agent.option_tables), `config` the file."""
    path = getattr(args, "config", None)
    options: tuple[FileOption, ...] | None = getattr(args, "file_options", None)
    if not isinstance(path, str) or not path or options is None:
        return {}

    def fail(where: str, problem: str) -> ConfigError:
        return ConfigError(problem, where, path)

    written = check_option_tables(read_toml(Path(path)), fail)
    return {option.dest: FileValue(written[option.key], Source(path, option.key))
            for option in options if option.key in written}


def variable_name(action: argparse.Action) -> str | None:
    """IBSNMP_LISTEN for --listen; None for positionals and short-only options."""
    long_options = [o for o in action.option_strings if o.startswith("--")]
    if not long_options:
        return None
    return PREFIX + long_options[0][2:].upper().replace("-", "_")


def source_of(args: argparse.Namespace, dest: str) -> Source:
    """Where `args.<dest>` came from (the command line if nobody recorded it)."""
    sources: Mapping[str, Source] = getattr(args, "option_sources", {})
    return sources.get(dest, Source("command line", "--" + dest.replace("_", "-")))


def resolve(parser: argparse.ArgumentParser, argv: list[str],
            environ: Mapping[str, str] | None = None,
            file_options: FileOptions | None = None) -> argparse.Namespace:
    """Parse `argv` and fill every option it leaves out, from the first of:

    1. its IBSNMP_* variable (`--listen` is IBSNMP_LISTEN; IBSNMP_X_FILE names
       a file holding the value of IBSNMP_X, its trailing newline removed;
       a repeatable option takes a comma-separated list);
    2. its key in the configuration file, when the command reads one
       (`file_options(args)` returns those keys with their source);
    3. its default.

    Exits through argparse (status 2, the sub-command's usage) on a bad
    command line; raises ConfigError naming the variable or key of a bad
    value from the environment or the file.
    """
    environ = os.environ if environ is None else environ
    args = parse_command_line(parser, argv, environ)
    actions = [a for a in _actions_of_command(parser, args) if _is_option(a)]
    sources: dict[str, Source] = {}
    for action in actions:
        if getattr(args, action.dest, UNSET) is not UNSET:
            sources[action.dest] = Source("command line", _flag(action))
    _apply_environment(actions, args, environ, sources)
    if file_options is not None:
        chosen = {action.dest: action for action in actions}
        for dest, given in file_options(args).items():
            option = chosen.get(dest)
            if option is not None and getattr(args, dest, UNSET) is UNSET:
                setattr(args, dest, _from_file(option, given))
                sources[dest] = given.source
    for action in actions:
        if getattr(args, action.dest, UNSET) is UNSET:
            setattr(args, action.dest, _default_of(parser, action))
            sources[action.dest] = DEFAULT
    args.option_sources = sources
    return args


def parse_command_line(parser: argparse.ArgumentParser, argv: list[str],
                       environ: Mapping[str, str]) -> argparse.Namespace:
    """`argv` parsed, every option it does not give left UNSET.

    A required option whose variable is set may be left off. Unknown
    arguments are refused with the usage of the sub-command they follow.
    """
    set_aside: dict[argparse.Action, tuple[Any, bool]] = {}
    for action in _all_actions(parser):
        if not _is_option(action):
            continue
        name = variable_name(action)
        relaxed = action.required and name is not None and (
            name in environ or name + FILE_SUFFIX in environ)
        set_aside[action] = (action.default, action.required)
        if not _appends_to_none(action):  # argparse appends to a copy of the default
            action.default = UNSET
        action.required = action.required and not relaxed
    try:
        args, extras = parser.parse_known_args(argv)
    finally:
        for action, (default, required) in set_aside.items():
            action.default, action.required = default, required
    if extras:
        _chosen_parser(parser, args).error(f"unrecognized arguments: {' '.join(extras)}")
    for action in set_aside:
        if _appends_to_none(action) and getattr(args, action.dest, UNSET) is None:
            setattr(args, action.dest, UNSET)
    return args


def _appends_to_none(action: argparse.Action) -> bool:
    """A repeatable option without a default: None until the command line names it."""
    return isinstance(action, argparse._AppendAction) and action.default is None


def _is_option(action: argparse.Action) -> bool:
    """An option that holds a value (not help, version or a sub-command)."""
    return bool(action.option_strings) and action.dest != argparse.SUPPRESS and not isinstance(
        action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction))


def _flag(action: argparse.Action) -> str:
    long_options = [o for o in action.option_strings if o.startswith("--")]
    return (long_options or action.option_strings)[0]


def _default_of(parser: argparse.ArgumentParser, action: argparse.Action) -> Any:
    """The option's default, converted by its type when it is text (as argparse does)."""
    default = action.default
    if isinstance(default, str) and callable(action.type):
        return action.type(default)
    return default


def _apply_environment(actions: list[argparse.Action], args: argparse.Namespace,
                       environ: Mapping[str, str], sources: dict[str, Source]) -> None:
    for action in actions:
        name = variable_name(action)
        if name is None or name in READ_BY_SETTINGS or getattr(args, action.dest) is not UNSET:
            continue
        raw = _raw_value(name, environ)
        if raw is None:
            continue
        text, variable = raw
        setattr(args, action.dest, _from_text(action, variable, text))
        sources[action.dest] = Source("environment", variable)


def _raw_value(name: str, environ: Mapping[str, str]) -> tuple[str, str] | None:
    """The variable's text and which variable gave it (NAME or NAME_FILE)."""
    direct = environ.get(name)
    file_name = environ.get(name + FILE_SUFFIX)
    if direct is not None and file_name is not None:
        raise EnvironmentValueError(f"{name} and {name}{FILE_SUFFIX} are both set: use one",
                                    document="environment")
    if file_name is None:
        return None if direct is None else (direct, name)
    try:
        text = Path(file_name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise EnvironmentValueError(f"cannot read {file_name}: {why}", name + FILE_SUFFIX,
                                    "environment") from None
    return text.removesuffix("\n").removesuffix("\r"), name + FILE_SUFFIX


def _convert(action: argparse.Action, text: str, fail: Callable[[str], ConfigError]) -> object:
    convert = action.type if callable(action.type) else str
    try:
        value = convert(text)
    except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
        raise fail(str(exc) or f"not a valid value for {_flag(action)}") from None
    if action.choices is not None and value not in action.choices:
        raise fail(f"{text!r} is not one of: {', '.join(map(str, action.choices))}")
    return value


def _from_text(action: argparse.Action, variable: str, text: str) -> object:
    def fail(problem: str) -> ConfigError:
        return EnvironmentValueError(problem, variable, "environment")

    if isinstance(action, argparse._StoreTrueAction):
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off", ""):
            return False
        raise fail("expected true or false")
    if isinstance(action, argparse._AppendAction):
        items = [part.strip() for part in text.split(",") if part.strip()]
        return [_convert(action, item, fail) for item in items]
    return _convert(action, text, fail)


def _from_file(action: argparse.Action, given: FileValue) -> object:
    """A TOML value as the option's type takes it: true/false for a switch,
    a string or a list of strings for a repeatable option, a string or a
    number where the option converts text to a number."""
    value, source = given.value, given.source
    if isinstance(action, argparse._StoreTrueAction):
        if not isinstance(value, bool):
            raise source.error("expected true or false")
        return value
    if isinstance(action, argparse._AppendAction):
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise source.error("expected a string or an array of strings")
        return [_convert(action, item, source.error) for item in items]
    numeric = callable(action.type) and action.type is not str
    if isinstance(value, bool) or not isinstance(value, (str, int, float)) or (
            not numeric and not isinstance(value, str)):
        raise source.error("expected a string" if not numeric else "expected a number")
    return _convert(action, str(value), source.error)


def _all_actions(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _all_actions(sub)


def _actions_of_command(parser: argparse.ArgumentParser,
                        args: argparse.Namespace) -> list[argparse.Action]:
    """The options of the sub-command that was chosen (and its parents')."""
    actions = list(parser._actions)
    sub = _chosen_subparser(parser, args)
    if sub is not None:
        actions.extend(_actions_of_command(sub, args))
    return actions


def _chosen_subparser(parser: argparse.ArgumentParser,
                      args: argparse.Namespace) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(args, action.dest, None)
            if isinstance(chosen, str) and chosen in action.choices:
                sub: argparse.ArgumentParser = action.choices[chosen]  # a sub-command's parser
                return sub
    return None


def _chosen_parser(parser: argparse.ArgumentParser,
                   args: argparse.Namespace) -> argparse.ArgumentParser:
    """The deepest sub-command's parser `args` chose."""
    sub = _chosen_subparser(parser, args)
    return parser if sub is None else _chosen_parser(sub, args)

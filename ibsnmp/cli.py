"""The `ibsnmp` command line."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Mapping, Sequence

from . import __version__
from .agent.config import ConfigError
from .commands import config as config_commands
from .commands import fabric as fabric_commands
from .commands import health as health_commands
from .commands import publish as publish_commands
from .commands import run as run_commands
from .commands import trap as trap_commands
from .mib_compiler import commands as mib_commands
from .options import file_values, resolve


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ibsnmp", description="SNMP agent for InfiniBand fabrics")
    parser.add_argument("--version", action="version", version=f"ibsnmp {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    run_commands.add_parser(subparsers)
    publish_commands.add_parser(subparsers)
    trap_commands.add_parser(subparsers)
    fabric_commands.add_parser(subparsers)
    health_commands.add_parser(subparsers)
    config_commands.add_parser(subparsers)
    mib_commands.add_parser(subparsers)
    return parser


def parse(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> argparse.Namespace:
    """The command line, completed from IBSNMP_* variables and the config file."""
    return resolve(build_parser(), list(argv), environ, file_values)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse(argv)
    except ConfigError as exc:
        print(f"ibsnmp: {exc}", file=sys.stderr)
        return 2
    if not getattr(args, "daemon", False):
        # A command that prints stops quietly when its reader has gone
        # (`ibsnmp fabric show | head -1`), as other Unix tools do; the
        # daemons keep Python's EPIPE, their output goes to a journal.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    handler = args.handler
    result: int = handler(args)
    return result


if __name__ == "__main__":
    sys.exit(main())

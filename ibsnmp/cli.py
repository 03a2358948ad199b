"""The `ibsnmp` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__
from .commands import fabric as fabric_commands
from .commands import health as health_commands
from .commands import publish as publish_commands
from .commands import run as run_commands
from .commands import trap as trap_commands
from .environment import EnvironmentValueError, apply_environment, relax_required
from .mibtools import commands as mib_commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ibsnmp", description="SNMP agent for InfiniBand fabrics"
    )
    parser.add_argument("--version", action="version", version=f"ibsnmp {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    run_commands.add_parser(subparsers)
    publish_commands.add_parser(subparsers)
    trap_commands.add_parser(subparsers)
    fabric_commands.add_parser(subparsers)
    health_commands.add_parser(subparsers)
    mib_commands.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    relax_required(parser)
    args = parser.parse_args(argv)
    try:
        apply_environment(parser, args, argv)
    except EnvironmentValueError as exc:
        print(f"ibsnmp: {exc}", file=sys.stderr)
        return 2
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())

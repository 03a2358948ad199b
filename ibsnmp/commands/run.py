"""`ibsnmp run`: the SNMP agent over a fabric provider."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ibsnmp.agent import Agent, add_run_arguments, run, settings_from_args
from ibsnmp.agent.config import AgentSettings, ConfigError
from ibsnmp.fabric.spec import SpecError
from ibsnmp.providers.base import Provider
from ibsnmp.providers.simulated import DEFAULT_SPEC

EXIT_START_FAILED = 2


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="run the SNMP agent")
    add_run_arguments(parser)
    parser.add_argument(
        "--trap-target", action="append", metavar="ADDR[:PORT]",
        help="send SNMPv2c traps (community public) to this receiver, e.g. 127.0.0.1:1162; "
             "repeatable; added to the config file's [[trap_target]] entries")
    add_fabric_arguments(parser)
    parser.add_argument(
        "--provider", choices=("simulated",), default="simulated",
        help="where the fabric comes from (default: simulated)",
    )
    parser.add_argument(
        "--scenario", metavar="FILE",
        help="simulated provider: TOML file of timed fabric events (port down, error "
             "bursts, bad keys ...) that raise IBA traps, e.g. examples/all-ten.toml")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every start-up step")
    parser.set_defaults(handler=_run)


def add_fabric_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fabric", default=DEFAULT_SPEC, metavar="SPEC",
        help=f"simulated fabric: 'single' or 'fat-tree:spines=S,leaves=L,hosts=H' "
             f"(default {DEFAULT_SPEC})",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the simulated fabric")


def _make_provider(args: argparse.Namespace) -> Provider:
    from ibsnmp.providers.simulated import SimulatedProvider

    # Every event the provider emits (scenario steps, threshold crossings)
    # becomes a notification to every trap target.
    return SimulatedProvider(args.fabric, args.seed, scenario=args.scenario)


def _services(settings: AgentSettings, provider: Provider):  # type: ignore[no-untyped-def]
    """What runs beside the agent: the notification originator, then the provider."""
    from ibsnmp.traps.service import notifications

    @asynccontextmanager
    async def services(agent: Agent) -> AsyncIterator[None]:
        # Targets first, so no event of the provider's first moments is missed.
        async with notifications(agent.engine.engine, settings.trap_targets, provider):
            await provider.start()
            try:
                yield
            finally:
                await provider.stop()

    return services


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        settings = settings_from_args(args)
        from ibsnmp.contexts import FabricContexts
        from ibsnmp.mib.registry import build_mib

        from ibsnmp.providers.scenario import ScenarioError

        try:
            provider = _make_provider(args)
        except ScenarioError as exc:
            raise ConfigError(f"--scenario: {exc}") from None
    except (ConfigError, SpecError) as exc:
        print(f"ibsnmp: {exc}", file=sys.stderr)
        return EXIT_START_FAILED
    fabric = provider.snapshot
    summary = f"simulated {fabric.spec or args.fabric}, seed {args.seed}, {len(fabric.nodes)} nodes"
    mib = build_mib()

    def announce(agent) -> None:  # type: ignore[no-untyped-def]
        endpoint = agent.endpoints[0]
        community = settings.communities[0].name if settings.communities else "public"
        switch = next((n for n in fabric.nodes.values() if n.is_switch), None)
        print(f"ibsnmp: serving {summary}", flush=True)
        print(f"  try: snmpbulkwalk -v2c -c {community} {endpoint} .1.3.6.1.3.117", flush=True)
        if switch is not None:
            print(f"  a switch: snmpbulkwalk -v2c -c {community}@{switch.guid:016x} "
                  f"{endpoint} SMA-MIB::ibSmaMIB", flush=True)
        for target in settings.trap_targets:
            print(f"  notifications to {target.label}", flush=True)

    return run(settings, FabricContexts(provider), mib, fabric_summary=summary,
               on_started=announce, services=_services(settings, provider))

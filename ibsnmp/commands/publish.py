"""`ibsnmp publish`: every node a provider knows, to an MQTT broker, for
`ibsnmp run --provider mqtt` to serve (see ibsnmp.mqtt)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import TYPE_CHECKING

from ibsnmp.agent.config import ConfigError
from ibsnmp.agent.option_tables import PUBLISH_OPTIONS
from ibsnmp.fabric.spec import SpecError

from ibsnmp.logsetup import configure_logging, print_banner
from ibsnmp.providers.base import Provider

from .run import EXIT_START_FAILED, _make_provider, add_logging_arguments, add_provider_arguments

if TYPE_CHECKING:
    from ibsnmp.mqtt.publisher import Publisher

log = logging.getLogger("ibsnmp.publish")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "publish", help="publish a provider's nodes to an MQTT broker",
        description="Publish every node the provider knows (a sysfs host: its CAs; a topology or "
                    "simulated fabric: all nodes) on ibsnmp/v2/<fabric-id>/<owner>/<client-id>/node/<guid>/...")
    from ibsnmp.mqtt.arguments import add_publisher_arguments

    add_provider_arguments(parser, ("sysfs", "topology", "simulated"))
    add_publisher_arguments(parser)
    add_logging_arguments(parser)
    parser.add_argument(
        "--config", metavar="FILE",
        help="TOML configuration file whose [provider] and [publish] tables give these "
             "options (the agent's file on the same host); flags and IBSNMP_* variables win")
    parser.set_defaults(handler=_publish, daemon=True, file_options=PUBLISH_OPTIONS)


def _publish(args: argparse.Namespace) -> int:
    configure_logging(args.verbose, args.log_format)
    from ibsnmp.commands.mqtt_from_flags import make_publisher

    try:
        if not args.broker:
            raise ConfigError("publish needs a broker: --broker URL, IBSNMP_BROKER or the "
                              "config file's [publish] broker")
        provider = _make_provider(args)
        publisher = make_publisher(args, provider, args.broker)
    except (ConfigError, SpecError) as exc:
        print(f"ibsnmp: {exc}", file=sys.stderr)
        return EXIT_START_FAILED
    print_banner([f"ibsnmp: publishing {len(provider.snapshot.nodes)} node(s) to "
                  f"{publisher.settings.label} as {publisher.settings.client_id}, "
                  f"fabric {publisher.fabric_id}"], args.log_format)
    return asyncio.run(_serve(provider, publisher))


async def _serve(provider: Provider, publisher: Publisher) -> int:
    from ibsnmp.mqtt.publisher import publishing

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await provider.start()
    try:
        async with publishing(publisher):
            await stop.wait()
    finally:
        await provider.stop()
    return 0

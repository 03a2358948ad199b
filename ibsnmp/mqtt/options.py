"""Command-line flags of the MQTT parts and the objects they make: the
aggregator provider (`ibsnmp run --provider mqtt`) and the publisher
(`ibsnmp publish`, `ibsnmp run --publish URL`)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import time

from ibsnmp.agent.config import ConfigError
from ibsnmp.contexts import FabricContexts
from ibsnmp.mib.api import ContextTarget
from ibsnmp.providers.base import Provider

from . import topics
from .broker import BrokerError, BrokerRefused, BrokerSettings, add_broker_arguments, check_credentials
from .broker import settings_from_args as broker_settings
from .publisher import DEFAULT_INTERVAL_S, DEFAULT_QUEUE, DEFAULT_REFRESH_S, Publisher

__all__ = ["add_aggregator_arguments", "add_publisher_arguments", "make_aggregator", "make_publisher",
           "AggregatorContexts"]

log = logging.getLogger("ibsnmp.mqtt")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def add_aggregator_arguments(parser: argparse.ArgumentParser) -> None:
    """--broker and its connection flags, --stale-after, --publish."""
    add_broker_arguments(parser)
    parser.add_argument(
        "--stale-after", type=_seconds, metavar="S",
        help="mqtt provider: a node that sent no state for S seconds leaves the fabric (default: three "
             "of its publisher's refresh periods)")
    parser.add_argument(
        "--publish", metavar="URL",
        help="also publish every node of the provider to this MQTT broker (flags as for ibsnmp publish)")
    _add_publish_timing(parser)


def add_publisher_arguments(parser: argparse.ArgumentParser) -> None:
    add_broker_arguments(parser, required=True)
    _add_publish_timing(parser)


def _add_publish_timing(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("publishing")
    group.add_argument("--interval", type=_seconds, default=DEFAULT_INTERVAL_S, metavar="S",
                       help=f"seconds between checks for changed states (default {DEFAULT_INTERVAL_S:g})")
    group.add_argument("--refresh", type=_seconds, default=DEFAULT_REFRESH_S, metavar="S",
                       help=f"seconds between full refreshes of every state (default {DEFAULT_REFRESH_S:g})")
    group.add_argument("--queue-size", type=int, default=DEFAULT_QUEUE, metavar="N",
                       help=f"events kept while the broker is away (default {DEFAULT_QUEUE})")


def _settings(args: argparse.Namespace, role: str, url: str | None = None) -> BrokerSettings:
    """Broker settings, after one connection that proves the credentials:
    a refusal is a start-up error (exit 2); a broker that cannot be reached
    yet is retried once running."""
    try:
        topics.check_fabric_id(args.fabric_id)
        settings = broker_settings(args, role, url)
    except (BrokerError, ValueError) as exc:
        raise ConfigError(str(exc)) from None
    try:
        unreachable = asyncio.run(check_credentials(settings))
    except BrokerRefused as exc:
        raise ConfigError(str(exc)) from None
    if unreachable:
        log.warning("mqtt: the broker %s cannot be reached now (%s); retrying in the background",
                    settings.label, unreachable)
    return settings


def make_aggregator(args: argparse.Namespace) -> Provider:
    from ibsnmp.providers.mqtt import MqttAggregator

    if not args.broker:
        raise ConfigError("--provider mqtt needs --broker URL")
    return MqttAggregator(_settings(args, "aggregator"), args.fabric_id, stale_after=args.stale_after)


def make_publisher(args: argparse.Namespace, provider: Provider, url: str) -> Publisher:
    if args.refresh < args.interval:
        raise ConfigError(f"--refresh ({args.refresh:g}) must not be shorter than --interval ({args.interval:g})")
    if args.queue_size < 1:
        raise ConfigError(f"--queue-size: must be at least 1, got {args.queue_size}")
    return Publisher(provider, _settings(args, "publisher", url), args.fabric_id, interval=args.interval,
                     refresh=args.refresh, queue_size=args.queue_size)


class AggregatorContexts(FabricContexts):
    """The aggregator serves a fabric even where no SM or link is known (a
    fabric of sysfs hosts): IB-SM-MIB is answered in the default context;
    before any node has arrived there is no default context."""

    def __call__(self, name: bytes) -> ContextTarget | None:
        if name:
            return super().__call__(name)
        fabric = self._provider.snapshot
        node = fabric.nodes.get(fabric.local_node_guid)
        if node is None:
            return None
        return ContextTarget(fabric, node, True, time.monotonic() - self._provider.epoch)

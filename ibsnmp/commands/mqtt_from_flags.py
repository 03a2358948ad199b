"""The MQTT parts made from parsed command-line flags: the aggregator
provider (`ibsnmp run --provider mqtt`) and the publisher (`ibsnmp
publish`, `ibsnmp run --publish URL`). The flags themselves, and their
defaults, are declared in ibsnmp.mqtt.arguments."""

from __future__ import annotations

import argparse
import asyncio
import logging

from ibsnmp.agent.config import ConfigError
from ibsnmp.options import source_of
from ibsnmp.mib.targets import FabricContexts
from ibsnmp.mib.api import ContextTarget
from ibsnmp.providers.base import Provider

from ibsnmp.mqtt import topics
from ibsnmp.mqtt.arguments import add_aggregator_arguments, add_publisher_arguments
from ibsnmp.mqtt.broker import BrokerError, BrokerRefused, BrokerSettings, check_credentials
from ibsnmp.mqtt.broker import settings_from_args as broker_settings
from ibsnmp.mqtt.publisher import Publisher

__all__ = ["add_aggregator_arguments", "add_publisher_arguments", "make_aggregator", "make_publisher",
           "AggregatorContexts"]

log = logging.getLogger("ibsnmp.mqtt")


def broker_settings_of(args: argparse.Namespace, role: str, url: str | None = None,
                       url_dest: str = "broker", client_suffix: str = "") -> BrokerSettings:
    """Broker settings from the options, checked without connecting
    (`client_suffix`: see mqtt.broker.settings_from_args)."""
    try:
        topics.check_fabric_id(args.fabric_id)
    except ValueError as exc:
        raise source_of(args, "fabric_id").error(str(exc)) from None
    try:
        return broker_settings(args, role, url, url_dest=url_dest, client_suffix=client_suffix,
                               named=lambda dest: str(source_of(args, dest)))
    except BrokerError as exc:
        raise ConfigError(str(exc)) from None


def _settings(args: argparse.Namespace, role: str, url: str | None = None,
              url_dest: str = "broker", client_suffix: str = "") -> BrokerSettings:
    """Broker settings, after one connection that proves the credentials:
    a refusal is a start-up error (exit 2); a broker that cannot be reached
    yet is retried once running."""
    settings = broker_settings_of(args, role, url, url_dest, client_suffix)
    try:
        unreachable = asyncio.run(check_credentials(settings))
    except BrokerRefused as exc:
        raise ConfigError(str(exc)) from None
    if unreachable:
        log.warning("mqtt: the broker %s cannot be reached now (%s); retrying in the background",
                    settings.label, unreachable)
    return settings


def make_aggregator(args: argparse.Namespace, client_suffix: str = "") -> Provider:
    """The MQTT provider; `client_suffix` sets its default client ID apart
    (an agent of a group sharing a port: agent.engine_group)."""
    from ibsnmp.mqtt.aggregator import MqttAggregator

    if not args.broker:
        raise ConfigError("provider mqtt needs the broker's URL: --broker URL, IBSNMP_BROKER "
                          "or [provider] broker")
    return MqttAggregator(_settings(args, "aggregator", client_suffix=client_suffix), args.fabric_id,
                          stale_after=args.stale_after, max_nodes=args.max_nodes,
                          max_nodes_per_publisher=args.max_nodes_per_publisher)


def check_publisher_options(args: argparse.Namespace) -> None:
    """The publishing options that need no broker to check."""
    if args.refresh < args.interval:
        raise source_of(args, "refresh").error(
            f"must not be shorter than the interval ({args.refresh:g} < {args.interval:g})")
    if args.queue_size < 1:
        raise source_of(args, "queue_size").error(f"must be at least 1, got {args.queue_size}")


def make_publisher(args: argparse.Namespace, provider: Provider, url: str,
                   url_dest: str = "broker") -> Publisher:
    """The publisher to the broker at `url` (given as the option `url_dest`)."""
    check_publisher_options(args)
    # Two publishers of one host (two HCAs published apart, containers
    # sharing the host name) differ in the node they speak from.
    local = provider.snapshot.local_node_guid
    suffix = f"{local:016x}" if local is not None else ""
    return Publisher(provider, _settings(args, "publisher", url, url_dest, suffix), args.fabric_id,
                     interval=args.interval, refresh=args.refresh, queue_size=args.queue_size)


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
        return ContextTarget(fabric, node, True, self.elapsed(fabric),
                             default_context=True)

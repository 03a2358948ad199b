"""The MQTT parts' command-line flags and the defaults they show.

Only argparse here: every command builds its parser at start, and the MQTT
client library is imported by the code that connects, not by a parser.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

PASSWORD_ENV = "IBSNMP_MQTT_PASSWORD"
DEFAULT_KEEPALIVE = 30
DEFAULT_INTERVAL_S = 5.0
DEFAULT_REFRESH_S = 60.0
DEFAULT_QUEUE = 10_000
# Nodes an aggregator serves, in all and from one publisher: room for the
# largest fabric this project serves (a 3-tier fat-tree of radix-64
# switches: 70,656 nodes) published by one publisher (a topology or live
# one), twice over. Sites whose publishers are hosts set the second low.
DEFAULT_MAX_NODES = 131_072


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least `minimum`."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            problem = "must not be negative" if minimum == 0 else f"must be at least {minimum}"
            raise argparse.ArgumentTypeError(f"{problem}, got {text!r}")
        return value

    return convert


count = whole_number(1)


def add_broker_arguments(parser: argparse.ArgumentParser, *, flag: str = "--broker",
                         required: bool = False) -> None:
    group = parser.add_argument_group("MQTT broker")
    group.add_argument(
        flag, dest="broker", metavar="URL", required=required,
        help="mqtt://[user[:password]@]host[:port] or mqtts://... (TLS)")
    group.add_argument("--fabric-id", default="default", metavar="ID",
                       help="the fabric's name in the topic tree ibsnmp/v2/<ID>/... (default 'default')")
    group.add_argument("--broker-ca", metavar="FILE", help="mqtts: CA certificates to verify the broker with")
    group.add_argument("--broker-cert", metavar="FILE", help="mqtts: client certificate (PEM)")
    group.add_argument("--broker-key", metavar="FILE", help="mqtts: the client certificate's key (PEM)")
    group.add_argument(
        "--broker-password-file", metavar="FILE",
        help=f"read the broker password from FILE (first line); or set {PASSWORD_ENV}")
    group.add_argument("--client-id", metavar="ID",
                       help="MQTT client id, unique per client: the session persists under it (default: "
                            "from the host name and, for a publisher, the node it publishes from)")
    group.add_argument("--keepalive", type=int, default=DEFAULT_KEEPALIVE, metavar="S",
                       help=f"MQTT keepalive in seconds (default {DEFAULT_KEEPALIVE})")


def add_aggregator_arguments(parser: argparse.ArgumentParser) -> None:
    """--broker and its connection flags, --stale-after, --publish."""
    add_broker_arguments(parser)
    parser.add_argument(
        "--stale-after", type=seconds, metavar="S",
        help="mqtt provider: a node that sent no state for S seconds leaves the fabric (default: three "
             "of its publisher's refresh periods)")
    parser.add_argument(
        "--max-nodes", type=count, default=DEFAULT_MAX_NODES, metavar="N",
        help=f"mqtt provider: nodes served in all; states of new nodes beyond are refused "
             f"(default {DEFAULT_MAX_NODES})")
    parser.add_argument(
        "--max-nodes-per-publisher", type=count, default=DEFAULT_MAX_NODES, metavar="N",
        help=f"mqtt provider: nodes the publishers of one broker user (an anonymous publisher: "
             f"itself) may announce, e.g. a host's CAs (default {DEFAULT_MAX_NODES}: a whole fabric)")
    parser.add_argument(
        "--publish", metavar="URL",
        help="also publish every node of the provider to this MQTT broker (flags as for ibsnmp publish)")
    _add_publish_timing(parser)


def add_publisher_arguments(parser: argparse.ArgumentParser) -> None:
    # Required, but may come from IBSNMP_BROKER or the config file: checked once resolved.
    add_broker_arguments(parser)
    _add_publish_timing(parser)


def _add_publish_timing(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("publishing")
    group.add_argument("--interval", type=seconds, default=DEFAULT_INTERVAL_S, metavar="S",
                       help=f"seconds between checks for changed states (default {DEFAULT_INTERVAL_S:g})")
    group.add_argument("--refresh", type=seconds, default=DEFAULT_REFRESH_S, metavar="S",
                       help=f"seconds between full refreshes of every state (default {DEFAULT_REFRESH_S:g})")
    group.add_argument("--queue-size", type=int, default=DEFAULT_QUEUE, metavar="N",
                       help=f"events kept while the broker is away (default {DEFAULT_QUEUE})")

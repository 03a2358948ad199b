"""`ibsnmp trap NAME`: send one SMA notification now, without an agent.

For testing trap receivers: the event's fields default to what a simulated
node has (the fabric's local node, or --node), each can be overridden, and
the notification goes out exactly as `ibsnmp run` would send it. Exit 0
once sent (an inform: once acknowledged), 1 if an inform is not answered,
2 for bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from ibsnmp.agent.config import AUTH_PROTOCOLS, MIN_KEY_LENGTH, PRIV_PROTOCOLS, ConfigError
from ibsnmp.agent.engine_id import parse_engine_id
from ibsnmp.agent.trap_targets import (DEFAULT_INFORM_RETRIES, DEFAULT_INFORM_TIMEOUT, TrapTarget,
                                       parse_trap_address)
from ibsnmp.agent.transport import ListenSyntaxError
from ibsnmp.events import TrapEvent
from ibsnmp.fabric.spec import SpecError

from ibsnmp.providers.simulated import DEFAULT_SPEC

from .run import add_fabric_arguments

if TYPE_CHECKING:
    from ibsnmp.traps.mapping import Notification

EXIT_SENT = 0
EXIT_NOT_ACKNOWLEDGED = 1
EXIT_USAGE = 2


def _integer(text: str) -> int:
    """Decimal, or hex with 0x."""
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer (decimal or 0x hex)")


def _hex(text: str) -> int:
    """Hex digits, with or without 0x, `:` allowed (keys, GUIDs)."""
    digits = text.strip().lower().removeprefix("0x").replace(":", "")
    try:
        return int(digits, 16)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not hexadecimal")


def _protocol(text: str) -> str:
    """SHA-256 / sha256 / AES-128 -> the config's spelling."""
    return text.upper().replace("-", "")


def _gid(text: str) -> int:
    """A GID as IPv6 text (fe80::2:c903:a1:b2c3) or 32 hex digits."""
    try:
        return int(ipaddress.IPv6Address(text))
    except ValueError:
        return _hex(text)


# One option per TrapEvent field: (field, parser, help).
FIELD_OPTIONS: tuple[tuple[str, Callable[[str], int], str], ...] = (
    ("lid", _integer, "LID of the node raising the trap (ibSmaNodeLid)"),
    ("port", _integer, "port number (ibSmaNodePortNum; traps 129-131)"),
    ("capability_mask", _integer, "new CapabilityMask (ibSmaNodeCapMask; trap 144)"),
    ("system_image_guid", _hex, "new SystemImageGUID in hex (trap 145)"),
    ("key", _hex, "offending M_Key / P_Key / Q_Key in hex (ibSmaNodeKey; traps 256-259)"),
    ("method", _integer, "SMP method of the bad M_Key attempt (trap 256)"),
    ("attribute_id", _integer, "SMP attribute ID (trap 256)"),
    ("attribute_modifier", _integer, "SMP attribute modifier (trap 256)"),
    ("lid2", _integer, "LID of the packet's other end (ibSmaNodeLid2; traps 257-259)"),
    ("gid1", _gid, "GID 1 (IPv6 form or hex; traps 257-259)"),
    ("gid2", _gid, "GID 2 (IPv6 form or hex; traps 257-259)"),
    ("qp1", _integer, "queue pair 1 (traps 257-259)"),
    ("qp2", _integer, "queue pair 2 (traps 257-259)"),
    ("sl", _integer, "service level (traps 257-259)"),
    ("switch_lid", _integer, "the switch's LID (trap 259)"),
    ("data_valid", _integer, "DataValid bit mask (trap 259)"),
)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from ibsnmp.traps.mapping import NOTIFICATION_OF

    names = ", ".join(f"{name} ({int(trap)})" for trap, name in NOTIFICATION_OF.items())
    parser = subparsers.add_parser(
        "trap", help="send one SMA notification now (for testing trap receivers)",
        description=f"Send one SMA-MIB notification. NAME: {names}. Fields default to a "
                    f"simulated node's values.")
    parser.add_argument("name", metavar="NAME",
                        help="notification descriptor (e.g. ibSmaBadPartitionKey) or IBA trap "
                             "number (e.g. 257)")
    where = parser.add_argument_group("receiver")
    where.add_argument("--target", required=True, metavar="HOST:PORT",
                       help="receiver address, e.g. 127.0.0.1:1162 or [::1]:162 (port 162 "
                            "by default)")
    where.add_argument("--version", choices=("1", "2c", "3"), default="2c",
                       help="SNMP version (default 2c)")
    where.add_argument("--inform", action="store_true",
                       help="send an inform and wait for the answer (2c and 3)")
    where.add_argument("--community", default="public", help="v1/v2c community (default public)")
    where.add_argument("--timeout", type=float, default=DEFAULT_INFORM_TIMEOUT, metavar="S",
                       help=f"inform: seconds per try (default {DEFAULT_INFORM_TIMEOUT:g})")
    where.add_argument("--retries", type=int, default=DEFAULT_INFORM_RETRIES, metavar="N",
                       help=f"inform: re-sends (default {DEFAULT_INFORM_RETRIES})")
    where.add_argument("--agent-address", metavar="IPV4",
                       help="v1 agent-addr (default: the address sent from)")
    usm = parser.add_argument_group("SNMPv3 (authPriv)")
    usm.add_argument("--user", help="USM user name")
    usm.add_argument("--auth-protocol", default="SHA256", type=_protocol,
                     choices=AUTH_PROTOCOLS, help="default SHA256")
    usm.add_argument("--auth-key", help=f"authentication pass phrase (>= {MIN_KEY_LENGTH} chars)")
    usm.add_argument("--priv-protocol", default="AES", type=_protocol,
                     choices=PRIV_PROTOCOLS, help="default AES")
    usm.add_argument("--priv-key", help=f"privacy pass phrase (>= {MIN_KEY_LENGTH} chars)")
    usm.add_argument("--engine-id", metavar="HEX",
                     help="this sender's snmpEngineID (v3 traps: the receiver must know it; "
                          "default: a new one, printed)")
    event = parser.add_argument_group("event fields (default: from the simulated node)")
    event.add_argument("--node", type=_hex, metavar="GUID",
                       help="node GUID raising the trap (default: the fabric's local node; a "
                            "switch for switch traps); v3 context = its GUID")
    metavars: dict[Callable[[str], int], str] = {_hex: "HEX", _gid: "GID"}
    for field, parse, text in FIELD_OPTIONS:
        event.add_argument("--" + field.replace("_", "-"), dest=field, type=parse,
                           metavar=metavars.get(parse, "N"), help=text)
    add_fabric_arguments(parser, default=DEFAULT_SPEC)
    parser.set_defaults(handler=_trap)


def _fail(message: str) -> int:
    print(f"ibsnmp trap: {message}", file=sys.stderr)
    return EXIT_USAGE


def _target(args: argparse.Namespace) -> TrapTarget:
    if args.inform and args.version == "1":
        raise ConfigError("--inform: SNMPv1 has no informs (use --version 2c or 3)")
    try:
        address = parse_trap_address(args.target)
    except ListenSyntaxError as exc:
        raise ConfigError(f"--target: {exc}") from None
    if args.version == "3":
        if not args.user:
            raise ConfigError("--user: required for --version 3")
        for flag, value in (("--auth-key", args.auth_key), ("--priv-key", args.priv_key)):
            if not value or len(value.encode()) < MIN_KEY_LENGTH:
                raise ConfigError(f"{flag}: required for --version 3, at least "
                                  f"{MIN_KEY_LENGTH} characters")
    if args.timeout <= 0 or args.retries < 0:
        raise ConfigError("--timeout must be positive and --retries not negative")
    if args.agent_address is not None:
        try:
            ipaddress.IPv4Address(args.agent_address)
        except ValueError:
            raise ConfigError(f"--agent-address: {args.agent_address!r} is not an IPv4 "
                              f"address") from None
    return TrapTarget(address=address, version=args.version,
                      kind="inform" if args.inform else "trap", community=args.community,
                      user=args.user if args.version == "3" else None, timeout=args.timeout,
                      retries=args.retries, queue_size=1, agent_address=args.agent_address
                      if args.version == "1" else None)


def _trap(args: argparse.Namespace) -> int:
    from ibsnmp.fabric.generators import build_fabric
    from ibsnmp.traps.defaults import default_event
    from ibsnmp.traps.mapping import MappingError, map_event, resolve_trap

    try:
        target = _target(args)
        engine_id = parse_engine_id(args.engine_id, "--engine-id", _flag_error) \
            if args.engine_id else None
        trap = resolve_trap(args.name)
        fabric = build_fabric(args.fabric, seed=args.seed)
        overrides = {field: getattr(args, field) for field, _p, _h in FIELD_OPTIONS}
        event = default_event(fabric, trap, args.node, overrides)
        notification = map_event(event, fabric.nodes.get(event.node_guid))
    except (ConfigError, MappingError, SpecError) as exc:
        return _fail(str(exc))
    return asyncio.run(_send(args, target, engine_id, event, notification,
                             fabric.local_node.guid))


def _flag_error(key: str, problem: str) -> ConfigError:
    return ConfigError(f"{key}: {problem}")


async def _send(args: argparse.Namespace, target: TrapTarget, engine_id: bytes | None,
                event: TrapEvent, notification: Notification, local_guid: int) -> int:
    from pysnmp.entity import config as pc
    from pysnmp.entity.engine import SnmpEngine
    from pysnmp.proto.api import v2c

    from ibsnmp.agent.engine import AUTH, PRIV
    from ibsnmp.traps.originator import TrapOriginator

    engine = SnmpEngine(snmpEngineID=v2c.OctetString(engine_id) if engine_id else None)
    if target.version == "3":
        pc.add_v3_user(engine, args.user, AUTH[args.auth_protocol], args.auth_key,
                       PRIV["AES" if args.priv_protocol == "AES128" else args.priv_protocol],
                       args.priv_key)
    originator = TrapOriginator(engine, [target], local_node_guid=lambda: local_guid)
    try:
        await originator.open()
        (sender,) = originator.senders
        item = originator.submit(notification)
        sender.queue.drain()  # sent right here, not by a task
        what = (f"{notification.name} (IBA trap {int(event.trap)}) of node "
                f"{event.node_guid:016x} (LID {event.lid}) to {target.address} as SNMPv"
                f"{target.version} {target.kind}")
        if target.version == "3":
            context = item.context_name.decode() or '""'
            what += (f", user {args.user}, context {context}, engine ID "
                     f"0x{bytes(engine.snmpEngineID).hex()}")
        if target.kind == "inform":
            error = await sender.inform_once(item)
            if error is not None:
                print(f"ibsnmp trap: {notification.name} to {target.address} not acknowledged "
                      f"after {target.retries + 1} tries of {target.timeout:g} s: {error}",
                      file=sys.stderr)
                return EXIT_NOT_ACKNOWLEDGED
            print(f"acknowledged: {what}", flush=True)
            return EXIT_SENT
        if not sender.send_trap(item):
            print(f"ibsnmp trap: could not send {notification.name} to {target.address}",
                  file=sys.stderr)
            return EXIT_NOT_ACKNOWLEDGED
        await asyncio.sleep(0)  # let the transport flush the datagram
        print(f"sent: {what}", flush=True)
        return EXIT_SENT
    finally:
        await originator.stop()
        engine.close_dispatcher()

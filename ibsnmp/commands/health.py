"""`ibsnmp health`: is the running agent answering? Exit 0 if so, 1 if not.

It reads the agent's own configuration (the same --config, flags and
environment as `ibsnmp run`) and asks the first listening address for
sysUpTime.0 with the first configured community, or the first SNMPv3 user
when there is no community. A wildcard listen address is asked on its
loopback twin. Container HEALTHCHECKs and monitoring scripts use it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import warnings
from typing import Any

from ibsnmp.agent import add_run_arguments, settings_from_args
from ibsnmp.agent.config import AgentSettings, ConfigError
from ibsnmp.agent.transport import Endpoint

SYS_UPTIME_0 = (1, 3, 6, 1, 2, 1, 1, 3, 0)
EXIT_HEALTHY, EXIT_UNHEALTHY, EXIT_USAGE = 0, 1, 2
WILDCARD_TO_LOOPBACK = {"0.0.0.0": "127.0.0.1", "::": "::1"}


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "health", help="ask the running agent for sysUpTime.0; exit 0 if it answers, else 1")
    add_run_arguments(parser, writers=False)
    parser.add_argument("--timeout", type=float, default=2.0, metavar="S",
                        help="seconds to wait for the answer (default 2)")
    parser.add_argument("--retries", type=int, default=1, metavar="N",
                        help="requests re-sent before giving up (default 1)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    parser.set_defaults(handler=_health)


def probe_endpoint(settings: AgentSettings) -> Endpoint:
    """Where to ask: the first listen address, a wildcard one on loopback."""
    first = settings.listen[0]
    host = WILDCARD_TO_LOOPBACK.get(first.host, first.host)
    return Endpoint(host=host, port=first.port, ipv6=first.ipv6)


def _credentials(settings: AgentSettings) -> Any:
    with warnings.catch_warnings():  # pysnmp's hlapi imports pysmi's deprecated names
        warnings.simplefilter("ignore", DeprecationWarning)
        from pysnmp.hlapi.v3arch.asyncio import CommunityData, UsmUserData

    from ibsnmp.agent.engine import AUTH, PRIV

    if settings.communities:
        return CommunityData(settings.communities[0].name, mpModel=1)
    user = settings.users[0]
    if user.priv is None:
        return UsmUserData(user.name, user.auth_key, authProtocol=AUTH[user.auth])
    return UsmUserData(user.name, user.auth_key, user.priv_key, authProtocol=AUTH[user.auth],
                       privProtocol=PRIV[user.priv])


async def ask_uptime(settings: AgentSettings, timeout: float, retries: int) -> int:
    """sysUpTime.0 in hundredths of a second; raises RuntimeError with the reason."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from pysnmp.hlapi.v3arch.asyncio import (
            ContextData,
            ObjectIdentity,
            ObjectType,
            SnmpEngine,
            Udp6TransportTarget,
            UdpTransportTarget,
            get_cmd,
        )

    endpoint = probe_endpoint(settings)
    kind = Udp6TransportTarget if endpoint.ipv6 else UdpTransportTarget
    target = await kind.create((endpoint.host, endpoint.port), timeout=timeout, retries=retries)
    engine = SnmpEngine()
    try:
        error, status, _, varbinds = await get_cmd(
            engine, _credentials(settings), target, ContextData(),
            ObjectType(ObjectIdentity(SYS_UPTIME_0)))
    finally:
        engine.close_dispatcher()
    if error:
        raise RuntimeError(f"{endpoint}: {error}")
    if status:
        raise RuntimeError(f"{endpoint}: {status.prettyPrint()}")
    return int(varbinds[0][1])


def _health(args: argparse.Namespace) -> int:
    try:
        settings = settings_from_args(args)
    except ConfigError as exc:
        print(f"ibsnmp health: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not settings.communities and not settings.users:
        print("ibsnmp health: no community and no SNMPv3 user configured", file=sys.stderr)
        return EXIT_USAGE
    if not settings.listen:
        # An AgentX subagent without --listen: the master answers, not the agent.
        print("ibsnmp health: no UDP listen address to ask (an AgentX subagent: give it "
              "--listen 127.0.0.1:PORT too)", file=sys.stderr)
        return EXIT_USAGE
    try:
        uptime = asyncio.run(ask_uptime(settings, args.timeout, args.retries))
    except (RuntimeError, OSError) as exc:
        if not args.quiet:
            print(f"ibsnmp health: unhealthy: {exc}", file=sys.stderr)
        return EXIT_UNHEALTHY
    if not args.quiet:
        print(f"ibsnmp health: ok, up {uptime / 100:.0f} s at {probe_endpoint(settings)}")
    return EXIT_HEALTHY

"""A notification receiver ([[trap_target]]) and how its address is read.

`TrapTarget` is one receiver as the configuration gives it; `parse_trap_address` reads
`HOST[:PORT]` or `[V6HOST][:PORT]` (port 162 by default), resolving a host name when the
configuration is loaded, as net-snmp's trap2sink does. Validation of the entries, with
the rest of the file: agent.config.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass, field
from typing import Literal

from .transport import Endpoint, ListenSyntaxError, parse_endpoint

TrapVersion = Literal["1", "2c", "3"]
TrapKind = Literal["trap", "inform"]
TRAP_VERSIONS: tuple[TrapVersion, ...] = ("1", "2c", "3")
TRAP_KINDS: tuple[TrapKind, ...] = ("trap", "inform")
TRAP_PORT = 162  # RFC 3417: snmptrap
DEFAULT_TRAP_QUEUE = 1000
DEFAULT_INFORM_TIMEOUT = 1.0  # seconds per try, like net-snmp's snmpinform -t
DEFAULT_INFORM_RETRIES = 3


@dataclass(frozen=True, slots=True)
class TrapTarget:
    """One notification receiver ([[trap_target]]). `community` is a secret.

    v1/v2c use `community`; v3 uses `user`, a [[user]] with authPriv. Informs
    (2c/3) are re-sent `retries` times, `timeout` seconds apart, and, while
    unanswered, kept at the head of the queue. `queue_size` bounds what
    waits per target (the oldest is dropped and counted); `rate_limit` caps
    notifications per second. `agent_address` overrides the SNMPv1
    agent-addr (default: the address the agent sends from).
    """

    address: Endpoint
    version: TrapVersion = "2c"
    kind: TrapKind = "trap"
    community: str = field(default="public", repr=False)
    user: str | None = None
    timeout: float = DEFAULT_INFORM_TIMEOUT
    retries: int = DEFAULT_INFORM_RETRIES
    queue_size: int = DEFAULT_TRAP_QUEUE
    rate_limit: float | None = None
    agent_address: str | None = None

    @property
    def label(self) -> str:
        """How logs name the target (never with the community)."""
        return f"{self.address} (v{self.version} {self.kind})"


_RECEIVER_USAGE = ("HOST[:PORT] with HOST an IPv4 address or a host name, or [IPV6][:PORT]; "
                   "PORT 1 to 65535, 162 by default")
HOST_NAME = re.compile(r"^(?=.{1,253}$)(?!-)[A-Za-z0-9-]{1,63}(?<!-)"
                       r"(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*\.?$")


def parse_trap_address(text: str) -> Endpoint:
    """`HOST[:PORT]` / `[V6HOST][:PORT]` of a receiver; the port defaults to 162.

    HOST is an address or a host name; a name is resolved when the
    configuration is loaded (at start and at every reload), like net-snmp's
    trap2sink, and the first address it resolves to is used.
    """
    text = text.strip()
    bare_v6 = text.startswith("[") and text.endswith("]")
    bare_v4 = not text.startswith("[") and ":" not in text
    with_port = f"{text}:{TRAP_PORT}" if bare_v4 or bare_v6 else text
    name, _, port_text = with_port.rpartition(":")
    if HOST_NAME.match(name) and not _is_ip_address(name):
        with_port = f"{_resolve(name, text)}:{port_text}"
    try:
        endpoint = parse_endpoint(with_port)
    except ListenSyntaxError:
        # Quote what the user wrote, and receivers' examples with port 162.
        # The parser's message quotes the value: say what is expected instead.
        raise ListenSyntaxError(f"not a receiver address ({_RECEIVER_USAGE})") from None
    if endpoint.port == 0:
        raise ListenSyntaxError("a receiver's port cannot be 0")
    return endpoint


def _is_ip_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _resolve(name: str, text: str) -> str:
    """The first address of a receiver's host name, as `parse_endpoint` takes it."""
    try:
        infos = socket.getaddrinfo(name, None, type=socket.SOCK_DGRAM)
    except (socket.gaierror, UnicodeError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        raise ListenSyntaxError(f"cannot resolve its host name ({why})") from None
    family, address = infos[0][0], str(infos[0][4][0])
    return f"[{address}]" if family == socket.AF_INET6 else address

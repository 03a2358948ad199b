"""UDP listening endpoints: parsing `ADDR:PORT`, binding, handing to pysnmp.

pysnmp binds its sockets late (in a task it never awaits), so a port that
cannot be bound leaves the agent running deaf. We bind every socket ourselves,
synchronously and before anything else starts, and give the bound sockets to
pysnmp's asyncio transports.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import ipaddress
import logging
import socket
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any

from pysnmp.carrier.asyncio.dgram import udp, udp6
from pysnmp.entity import config as pysnmp_config
from pysnmp.entity.engine import SnmpEngine

# Loopback only, as Debian's snmpd: answering the network is a choice to make.
DEFAULT_LISTEN = ("127.0.0.1:161", "[::1]:161")
DEFAULT_PORT = 161
# Transport domains of the notification originator's client sockets (the
# listening sockets use sub-ids 1..n): only answers to informs arrive there.
NOTIFICATION_DOMAINS = (udp.DOMAIN_NAME + (1000,), udp6.DOMAIN_NAME + (1000,))
# Why an optional endpoint may be left out: its address family is missing.
_FAMILY_UNAVAILABLE = (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL)

log = logging.getLogger(__name__)


class ListenSyntaxError(ValueError):
    """A `--listen` / `listen` value is not ADDR:PORT."""


class ListenError(OSError):
    """A listening socket could not be opened; the message says which and why."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One UDP address to listen on. Port 0 picks a free port."""

    host: str
    port: int
    ipv6: bool

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if self.ipv6 else f"{self.host}:{self.port}"


def parse_endpoint(text: str) -> Endpoint:
    """Parse `1.2.3.4:161`, `[::1]:161` or `[fe80::1%eth0]:161` (port optional)."""
    text = text.strip()
    usage = "expected IPv4ADDR:PORT or [IPv6ADDR]:PORT, e.g. 127.0.0.1:1161 or [::1]:1161"
    if not text:
        raise ListenSyntaxError(f"empty address ({usage})")
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep:
            raise ListenSyntaxError(f"{text!r}: missing ']' ({usage})")
        if rest and not rest.startswith(":"):
            raise ListenSyntaxError(f"{text!r}: expected ':PORT' after ']' ({usage})")
        port_text = rest[1:] if rest else None
        ipv6 = True
    else:
        if text.count(":") > 1:
            raise ListenSyntaxError(f"{text!r}: IPv6 addresses need brackets, e.g. [::1]:161")
        host, sep, port_text = text.partition(":")
        port_text = port_text if sep else None
        ipv6 = False
    address, _, zone = host.partition("%")
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        raise ListenSyntaxError(f"{text!r}: {host!r} is not an IP address ({usage})") from None
    if (parsed.version == 6) != ipv6:
        raise ListenSyntaxError(
            f"{text!r}: IPv6 addresses need brackets, IPv4 ones must not have them")
    if zone and not ipv6:
        raise ListenSyntaxError(f"{text!r}: a %zone is only valid for IPv6")
    if port_text is None:
        port = DEFAULT_PORT
    else:
        if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
            raise ListenSyntaxError(f"{text!r}: port must be a number from 0 to 65535")
        port = int(port_text)
    return Endpoint(host=f"{parsed}%{zone}" if zone else str(parsed), port=port, ipv6=ipv6)


_WHY = {
    errno.EADDRINUSE: "address already in use (another SNMP agent running?)",
    errno.EACCES: "permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)",
    errno.EPERM: "permission denied",
    errno.EADDRNOTAVAIL: "address not available on this host",
    errno.EAFNOSUPPORT: "address family not supported (IPv6 disabled?)",
}


# Requests queued in the kernel while the agent is busy: a flood of large
# datagrams soon fills Linux's default receive buffer, and a manager's GET
# arriving then is dropped before the CPU governor sees it.
# The kernel caps this at net.core.rmem_max (docs/security.md).
RECEIVE_BUFFER = 4 * 1024 * 1024


def bind_udp(endpoint: Endpoint, reuse_port: bool = False) -> socket.socket:
    """Bind one non-blocking UDP socket now, with a receive buffer of up to
    RECEIVE_BUFFER; raise ListenError if impossible. `reuse_port`: other
    sockets with it may bind the same address (SO_REUSEPORT: the kernel
    gives each one the datagrams of some sources)."""
    family = socket.AF_INET6 if endpoint.ipv6 else socket.AF_INET
    try:
        sock = socket.socket(family, socket.SOCK_DGRAM)
    except OSError as exc:
        raise ListenError(exc.errno, f"cannot listen on UDP {endpoint}: {_why(exc)}") from None
    try:
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if endpoint.ipv6:
            # Keep [::] IPv6-only so 0.0.0.0 on the same port can coexist.
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            info = socket.getaddrinfo(endpoint.host, endpoint.port, family, socket.SOCK_DGRAM,
                                      0, socket.AI_NUMERICHOST)
            sock.bind(info[0][4])
        else:
            sock.bind((endpoint.host, endpoint.port))
        sock.setblocking(False)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    except OSError as exc:
        sock.close()
        raise ListenError(exc.errno, f"cannot listen on UDP {endpoint}: {_why(exc)}") from None
    return sock


def _why(exc: OSError) -> str:
    return _WHY.get(exc.errno or 0, exc.strerror or str(exc))


def bind_all(endpoints: tuple[Endpoint, ...] | list[Endpoint],
             optional: tuple[Endpoint, ...] = (), reuse_port: bool = False) -> list[socket.socket]:
    """Bind every endpoint or none: on failure the ones already bound are closed.

    An endpoint in `optional` whose address family the host lacks (IPv6
    disabled) is left out with a warning instead.
    """
    socks: list[socket.socket] = []
    try:
        for endpoint in endpoints:
            try:
                socks.append(bind_udp(endpoint, reuse_port))
            except ListenError as exc:
                if endpoint not in optional or exc.errno not in _FAMILY_UNAVAILABLE:
                    raise
                log.warning("%s; serving the other addresses", exc)
    except BaseException:
        for sock in socks:
            sock.close()
        raise
    return socks


def bound_endpoint(sock: socket.socket) -> Endpoint:
    """The endpoint a socket is actually bound to (resolves port 0)."""
    addr = sock.getsockname()
    ipv6 = sock.family == socket.AF_INET6
    return Endpoint(host=addr[0], port=addr[1], ipv6=ipv6)


# A datagram received on a domain from an address -> its answer (None: none).
DatagramHandler = Callable[[tuple[int, ...], Any, bytes], "bytes | None"]


class _Listening:
    """A listening socket's datagrams go straight to the agent's dispatcher
    (`handle`), its answers straight to the socket (the one this module
    bound; asyncio's transport only when the socket's buffer is full): no
    pysnmp callback chain and no extra event-loop turn per datagram.
    pysnmp's own answers (SETs) still go out through `send_message`."""

    transport: Any

    def __init__(self, domain: tuple[int, ...], handle: DatagramHandler,
                 sock: socket.socket) -> None:
        """`handle`: the dispatcher's, bound to the engine; `sock`: the bound
        socket, non-blocking, served from now on (`open_server_mode`)."""
        super().__init__()
        self.domain = domain
        self.handle = handle
        self.socket = sock

    def datagram_received(self, datagram: bytes, address: Any) -> None:
        reply = self.handle(self.domain, address, datagram)
        if reply is None or self.transport is None:
            return
        try:
            self.socket.sendto(reply, address)
        except (BlockingIOError, InterruptedError):
            self.transport.sendto(reply, address)  # queued until the socket can take it
        except OSError:
            pass  # the manager's address is unreachable: as asyncio, nothing to do


class _ListeningUdp(_Listening, udp.UdpAsyncioTransport):
    pass


class _ListeningUdp6(_Listening, udp6.Udp6AsyncioTransport):
    pass


async def open_transports(engine: SnmpEngine, socks: list[socket.socket]) -> None:
    """Register one pysnmp asyncio transport per bound socket and wait until ready."""
    dispatcher = engine.message_dispatcher
    for index, sock in enumerate(socks, start=1):
        handle = functools.partial(dispatcher.handle, engine)
        transport: _ListeningUdp | _ListeningUdp6
        if sock.family == socket.AF_INET6:
            domain = udp6.DOMAIN_NAME + (index,)
            transport = _ListeningUdp6(domain, handle, sock)
        else:
            domain = udp.DOMAIN_NAME + (index,)
            transport = _ListeningUdp(domain, handle, sock)
        transport.open_server_mode(sock=sock)
        pysnmp_config.add_transport(engine, domain, transport)
        # open_server_mode schedules the endpoint creation; wait for it so the
        # agent is really listening (and errors surface) when start returns.
        pending = getattr(transport, "_lport", None)
        if pending is not None:
            await asyncio.shield(pending)

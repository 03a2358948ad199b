"""Where the AgentX master listens: a Unix socket path or tcp:HOST:PORT.

The forms are net-snmp's `agentXSocket` ones (the default is its
/var/agentx/master), so the same text goes in snmpd.conf and here.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_SOCKET = "/var/agentx/master"
DEFAULT_TCP_PORT = 705  # RFC 2741 8.1


class AgentxAddressError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class MasterAddress:
    path: str | None = None  # a Unix socket, or
    host: str = ""  # a TCP address
    port: int = 0

    def __str__(self) -> str:
        if self.path is not None:
            return self.path
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tcp:{host}:{self.port}"


def parse_master_address(text: str) -> MasterAddress:
    """`/path/to/socket`, `unix:/path`, `tcp:HOST:PORT`, `tcp:[V6]:PORT` or `tcp:HOST`."""
    text = text.strip() or DEFAULT_SOCKET
    if text.startswith("unix:"):
        text = text[len("unix:"):]
    if not text.startswith("tcp:"):
        if not text.startswith("/"):
            raise AgentxAddressError(
                f"{text!r}: expected an absolute socket path or tcp:HOST:PORT")
        return MasterAddress(path=text)
    rest = text[len("tcp:"):]
    if rest.startswith("["):
        host, bracket, tail = rest[1:].partition("]")
        if not bracket or (tail and not tail.startswith(":")):
            raise AgentxAddressError(f"{text!r}: expected tcp:[IPV6]:PORT")
        port_text = tail[1:]
    else:
        host, _, port_text = rest.partition(":")
    if not host:
        raise AgentxAddressError(f"{text!r}: no host")
    try:
        port = int(port_text) if port_text else DEFAULT_TCP_PORT
    except ValueError:
        raise AgentxAddressError(f"{text!r}: the port is not a number") from None
    if not 0 < port < 65536:
        raise AgentxAddressError(f"{text!r}: port {port} out of range")
    return MasterAddress(host=host, port=port)

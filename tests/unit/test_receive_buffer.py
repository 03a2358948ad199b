"""The agent's UDP sockets queue a burst of requests, up to what the kernel allows."""

from __future__ import annotations

import socket
from pathlib import Path

from ibsnmp.agent.transport import RECEIVE_BUFFER, Endpoint, bind_udp


def _kernel_cap() -> int:
    return int(Path("/proc/sys/net/core/rmem_max").read_text())


def test_the_receive_buffer_is_as_large_as_the_kernel_allows() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as plain:
        default = plain.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    sock = bind_udp(Endpoint(host="127.0.0.1", port=0, ipv6=False))
    try:
        got = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    finally:
        sock.close()
    # Linux doubles what is asked (its bookkeeping), capped at rmem_max.
    assert got == 2 * min(RECEIVE_BUFFER, _kernel_cap())
    if _kernel_cap() > default // 2:
        assert got > default

#!/usr/bin/env python3
"""The floor under any UDP agent: a bare socket that receives and echoes.

    python3 bench/bare_socket.py PORT

Binds 127.0.0.1:PORT and loops on recvfrom: a datagram whose first octet
is ECHO is sent back whole, PROBE is answered by itself, any other is
dropped. No parsing, no event loop: what receiving a datagram, and
sending one of a given size, costs a process on this kernel. Used by
bench/readers.py as the peer that no agent can go below.
"""

from __future__ import annotations

import socket
import sys

ECHO, PROBE = 0x45, b"P"
RECEIVE_BUFFER = 4 * 1024 * 1024


def serve(port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    sock.bind(("127.0.0.1", port))
    print("listening", flush=True)
    receive, send = sock.recvfrom, sock.sendto
    while True:
        data, address = receive(65535)
        if data[0] == ECHO or data == PROBE:
            send(data, address)


if __name__ == "__main__":
    serve(int(sys.argv[1]))

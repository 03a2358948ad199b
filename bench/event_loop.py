#!/usr/bin/env python3
"""ibsnmp benchmark: the event loop's own CPU per request, uvloop against asyncio's.

    .venv/bin/python bench/event_loop.py             # 3 rounds, about 15 s on 2 cores

What every request pays before the agent reads a byte of it: a server
that answers each request at once with a fixed reply, on each loop, its
CPU time per round trip read with os.times() in the server process. Two
shapes, as the agent serves them: UDP datagrams (SNMP, a
DatagramProtocol answering with the socket's sendto) and a Unix stream of
small PDUs (AgentX, a Protocol answering with transport.write). The
client is a blocking socket in another process, one request in flight,
as snmpd's master and snmpbulkwalk keep it. Rounds alternate which loop
goes first; the figures are medians, the ratio is uvloop's over asyncio's.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import socket
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvloop

REQUEST, REPLY = b"q" * 60, b"r" * 48  # about an AgentX GetNext and its Response


def _stream_client(path: str, count: int) -> None:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(path)
        for _ in range(count):
            sock.sendall(REQUEST)
            sock.recv(4096)


def _datagram_client(port: int, count: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("127.0.0.1", port))
        for _ in range(count):
            sock.send(REQUEST)
            sock.recv(4096)


class _Stream(asyncio.Protocol):
    def __init__(self, done: asyncio.Future[None]) -> None:
        self.done = done

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.transport.write(REPLY)

    def connection_lost(self, exc: Exception | None) -> None:
        self.done.set_result(None)


class _Datagrams(asyncio.DatagramProtocol):
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def datagram_received(self, data: bytes, address: Any) -> None:
        self.sock.sendto(REPLY, address)  # as agent.transport answers


async def _serve(shape: str, count: int, directory: str) -> float:
    """Server CPU seconds per round trip of `count` requests of `shape`."""
    loop = asyncio.get_running_loop()
    if shape == "stream":
        path = os.path.join(directory, "socket")
        done: asyncio.Future[None] = loop.create_future()
        server = await loop.create_unix_server(lambda: _Stream(done), path)
        client = multiprocessing.Process(target=_stream_client, args=(path, count))
        before = os.times()
        client.start()
        await done
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("127.0.0.1", 0))
        sock.setblocking(False)
        transport, _ = await loop.create_datagram_endpoint(lambda: _Datagrams(sock), sock=sock)
        client = multiprocessing.Process(target=_datagram_client,
                                         args=(sock.getsockname()[1], count))
        before = os.times()
        client.start()
        while client.is_alive():
            await asyncio.sleep(0.05)
    after = os.times()
    client.join()
    if shape == "stream":
        server.close()
    else:
        transport.close()
    if client.exitcode != 0:
        raise RuntimeError(f"the {shape} client failed")
    return (after.user - before.user + after.system - before.system) / count


def measure(shape: str, factory: Callable[[], asyncio.AbstractEventLoop], count: int) -> float:
    with tempfile.TemporaryDirectory(prefix="ibsnmp-bench-loop-") as directory:
        with asyncio.Runner(loop_factory=factory) as runner:
            return runner.run(_serve(shape, count, directory))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=20_000)
    args = parser.parse_args()
    multiprocessing.set_start_method("fork")
    loops = {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
    print(f"{args.requests:,} round trips a shape, {args.rounds} rounds; server CPU per "
          "round trip, medians")
    for shape, label in (("datagram", "UDP datagrams (SNMP)"),
                         ("stream", "Unix stream (AgentX)")):
        results: dict[str, list[float]] = {name: [] for name in loops}
        for round_number in range(args.rounds):
            order = list(loops) if round_number % 2 == 0 else list(reversed(loops))
            for name in order:
                results[name].append(measure(shape, loops[name], args.requests))
        us = {name: statistics.median(values) * 1e6 for name, values in results.items()}
        print(f"  {label:22s} asyncio {us['asyncio']:6.1f} us, uvloop {us['uvloop']:6.1f} us: "
              f"uvloop/asyncio {us['uvloop'] / us['asyncio']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

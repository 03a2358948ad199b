"""Start-up failures, shutdown and robustness of the agent process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.agent_support import (
    BULK_TABLE,
    NODE_DESC,
    READ_COMMUNITY,
    agent_settings,
    dotted,
    agent_stderr,
    make_backend,
    needs_net_snmp,
    net_snmp,
    parse_varbinds,
    spawn_agent,
)

from ibsnmp.agent import EXIT_START_FAILED, ListenError, start_agent
from tests.support.paths import SUPPORT_DIR

SUPPORT = str(SUPPORT_DIR / "agent_support.py")
V2C = ["-v2c", "-c", READ_COMMUNITY]


def stop(proc: subprocess.Popen[str], sig: signal.Signals = signal.SIGTERM) -> tuple[int, str]:
    """Signal the agent (once), wait, return (exit code, stderr)."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"the agent did not stop on {sig.name}")
    finally:
        if proc.stdout is not None:
            proc.stdout.close()
    return proc.returncode, agent_stderr(proc)


@pytest.fixture
def busy_udp_port() -> Iterator[int]:
    """A UDP port on 127.0.0.1 that somebody else holds."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


async def test_start_agent_raises_listen_error_on_a_busy_port(busy_udp_port: int) -> None:
    resolver, mib = make_backend()
    settings = agent_settings(listen=("[::1]:0", f"127.0.0.1:{busy_udp_port}"))
    with pytest.raises(ListenError) as caught:
        await start_agent(settings, resolver, mib)
    message = str(caught.value)
    assert message == (f"cannot listen on UDP 127.0.0.1:{busy_udp_port}: "
                       "address already in use (another SNMP agent running?)")
    # Nothing keeps reading secrets into messages: the community is not there.
    assert READ_COMMUNITY not in message


async def test_start_agent_raises_listen_error_for_a_foreign_address() -> None:
    resolver, mib = make_backend()
    settings = agent_settings(listen=("192.0.2.1:1161",))  # TEST-NET-1, never local
    with pytest.raises(ListenError, match="address not available on this host"):
        await start_agent(settings, resolver, mib)


async def test_start_agent_binds_all_or_nothing(busy_udp_port: int) -> None:
    resolver, mib = make_backend()
    free = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    free.bind(("::1", 0))
    port = free.getsockname()[1]
    free.close()
    settings = agent_settings(listen=(f"[::1]:{port}", f"127.0.0.1:{busy_udp_port}"))
    with pytest.raises(ListenError):
        await start_agent(settings, resolver, mib)
    # The IPv6 socket bound first was released again.
    again = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    again.bind(("::1", port))
    again.close()


def test_busy_port_makes_the_process_exit_2(busy_udp_port: int) -> None:
    result = subprocess.run([sys.executable, SUPPORT, "--listen", f"127.0.0.1:{busy_udp_port}"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == EXIT_START_FAILED
    assert f"cannot listen on UDP 127.0.0.1:{busy_udp_port}: address already in use" \
        in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root may bind privileged ports")
def test_privileged_port_makes_the_process_exit_2() -> None:
    result = subprocess.run([sys.executable, SUPPORT, "--listen", "127.0.0.1:161"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == EXIT_START_FAILED
    assert "permission denied" in result.stderr


@pytest.mark.parametrize("listen,problem", [
    ("localhost:161", "is not an IP address"),
    ("::1:161", "IPv6 addresses need brackets"),
    ("127.0.0.1:99999", "port must be a number from 0 to 65535"),
])
def test_bad_listen_syntax_makes_the_process_exit_2(listen: str, problem: str) -> None:
    result = subprocess.run([sys.executable, SUPPORT, "--listen", listen],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == EXIT_START_FAILED
    assert problem in result.stderr and "--listen" in result.stderr


@needs_net_snmp
def test_sigterm_stops_the_agent_cleanly() -> None:
    proc, endpoints = spawn_agent("--listen", "127.0.0.1:0", "--listen", "[::1]:0")
    try:
        for endpoint in endpoints:
            result = net_snmp("snmpget", endpoint, V2C, dotted(NODE_DESC))
            assert 'STRING: "node-1"' in result.stdout, result.stderr
    finally:
        code, err = stop(proc)
    assert code == 0
    assert "Traceback" not in err
    # The ports are free again.
    for endpoint in endpoints:
        sock = socket.socket(socket.AF_INET6 if endpoint.ipv6 else socket.AF_INET,
                             socket.SOCK_DGRAM)
        sock.bind((endpoint.host, endpoint.port))
        sock.close()


def test_sigint_stops_the_agent_cleanly() -> None:
    proc, _ = spawn_agent("--listen", "127.0.0.1:0")
    code, err = stop(proc, signal.SIGINT)
    assert code == 0 and "Traceback" not in err


@needs_net_snmp
def test_malformed_packets_do_not_stop_the_agent() -> None:
    proc, (endpoint,) = spawn_agent("--listen", "127.0.0.1:0")
    junk = [
        os.urandom(1), os.urandom(64), os.urandom(1400), b"",
        b"\x30\x03\x02\x01\x01",                          # SEQUENCE { version 1 }, nothing more
        b"\x30\x82\xff\xff\x02\x01\x01",                  # length beyond the datagram
        b"\x30\x0e\x02\x01\x01\x04\x06public\xa0\x01\x00",  # v2c GET with a broken PDU
        b"\x30\x10\x02\x01\x03" + os.urandom(11),          # v3 header, random rest
    ]
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for _ in range(20):
                for packet in junk:
                    sock.sendto(packet, (endpoint.host, endpoint.port))
        result = net_snmp("snmpget", endpoint, V2C, dotted(NODE_DESC), "1.3.6.1.2.1.11.6.0")
        assert proc.poll() is None
        values = dict(parse_varbinds(result.stdout))
        assert values[dotted(NODE_DESC)] == 'STRING: "node-1"'
        assert int(values["1.3.6.1.2.1.11.6.0"].split()[-1]) > 0  # snmpInASNParseErrs
    finally:
        code, err = stop(proc)
    assert code == 0
    # Remote input never puts a traceback in the log.
    assert "Traceback" not in err


@needs_net_snmp
def test_bulkwalk_of_a_big_table() -> None:
    rows = 2000
    proc, (endpoint,) = spawn_agent("--listen", "127.0.0.1:0", rows=rows)
    try:
        result = net_snmp("snmpbulkwalk", endpoint, [*V2C, "-Cr50"], dotted(BULK_TABLE))
        assert result.returncode == 0, result.stderr
        values = parse_varbinds(result.stdout)
        assert len(values) == rows
        assert values[0] == (dotted(BULK_TABLE + (1, 1)), "Gauge32: 11")
    finally:
        stop(proc)

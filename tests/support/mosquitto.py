"""Support for MQTT tests: a real mosquitto on a free 127.0.0.1 port with its
own config and persistence directory, and ibsnmp processes beside it.

Persistence is saved after every change (autosave_on_changes with an
interval of 1), so a broker killed with SIGKILL and started again on the
same port comes back with every retained message, session and queued QoS 1
message it had acknowledged.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.e2e import PROJECT_ROOT, free_udp_port, net_snmp

MOSQUITTO = "/usr/sbin/mosquitto"


def free_tcp_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Mosquitto:
    def __init__(self, workdir: Path, *, users: dict[str, str] | None = None,
                 tls: tuple[Path, Path, Path] | None = None, acl: Path | None = None,
                 log_types: tuple[str, ...] = (), persistence: bool = True,
                 config: Callable[[int], str] | None = None) -> None:
        """tls: (CA, server certificate, server key); clients must then
        present a certificate the CA signed. acl: an acl_file (with users).
        log_types: mosquitto's log_type lines ("all" logs refused
        publishes too); none: its default. persistence False: retained
        messages in memory only (a flood of them is not saved after each).
        config: instead of all that, the whole configuration for the port
        given (a shipped file adapted); `log` is then wherever it says."""
        self.dir = workdir / "mosquitto"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_tcp_port()
        self.config = self.dir / "mosquitto.conf"
        self.log = self.dir / "broker.log"
        self.tls = tls is not None
        self.process: subprocess.Popen[bytes] | None = None
        if config is not None:
            self.config.write_text(config(self.port))
            return
        lines = [f"listener {self.port} 127.0.0.1"]
        if tls:
            lines += [f"cafile {tls[0]}", f"certfile {tls[1]}", f"keyfile {tls[2]}", "require_certificate true"]
        if persistence:
            lines += ["persistence true", f"persistence_location {self.dir}/",
                      "autosave_interval 1", "autosave_on_changes true"]
        lines += ["max_queued_messages 100000", f"log_dest file {self.log}"]
        lines += [f"log_type {kind}" for kind in log_types]
        if os.getuid() == 0:
            # Stay the user who owns the test's directories (mosquitto drops
            # root for the user "mosquitto", who cannot write them).
            lines.append("user root")
        if users:
            passwords = self.dir / "passwords"
            passwords.write_text("")
            for user, password in users.items():
                subprocess.run(["mosquitto_passwd", "-b", str(passwords), user, password], check=True)
            lines += ["allow_anonymous false", f"password_file {passwords}"]
        else:
            lines.append("allow_anonymous true")
        if acl is not None:
            lines.append(f"acl_file {acl}")
        self.config.write_text("\n".join(lines) + "\n")

    @property
    def url(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://127.0.0.1:{self.port}"

    def start(self) -> Mosquitto:
        # What mosquitto says before its log is open (a configuration it
        # cannot use) goes to stderr.log.
        with open(self.dir / "stderr.log", "ab") as output:
            self.process = subprocess.Popen([MOSQUITTO, "-c", str(self.config)], stdout=output,
                                            stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        said = (self.dir / "stderr.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"mosquitto did not start:\n{said}")

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, only what persistence saved survives."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def log_text(self) -> str:
        """What the broker logged so far ('' before its first line)."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


@contextmanager
def mosquitto(workdir: Path, **kw: Any) -> Iterator[Mosquitto]:
    broker = Mosquitto(workdir, **kw).start()
    try:
        yield broker
    finally:
        broker.stop()


class Process:
    """An ibsnmp subprocess whose output goes to a log file (never a pipe
    that could fill and block it)."""

    def __init__(self, log: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.log = log
        self.args = args
        self._out = open(log, "ab")
        self.process = subprocess.Popen([sys.executable, "-m", "ibsnmp", *args], stdout=self._out,
                                        stderr=subprocess.STDOUT, cwd=PROJECT_ROOT,
                                        env=dict(os.environ, **(env or {})))

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, needle: str, timeout: float = 30.0, count: int = 1) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.text().count(needle) >= count:
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.args[0]} exited ({self.process.returncode}):\n{self.text()}")
            time.sleep(0.05)
        raise AssertionError(f"{needle!r} not seen in {timeout} s:\n{self.text()[-4000:]}")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self._out.close()
        return self.process.returncode


class Agent(Process):
    """`ibsnmp run ...` on a free UDP port."""

    def __init__(self, log: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = free_udp_port()
        super().__init__(log, "run", "--listen", f"127.0.0.1:{self.port}", *args, env=env)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def warm_up(self) -> None:
        """Wait until the agent answers: its first request loads MIB modules,
        which takes seconds on a busy machine."""
        for _ in range(6):
            if net_snmp("snmpget", "-v2c", "-c", "public", "-t", "5", "-r", "0", self.address,
                        ".1.3.6.1.2.1.1.3.0").returncode == 0:
                return
        raise AssertionError(f"the agent at {self.address} does not answer:\n{self.text()[-2000:]}")

    def walk(self, context: str, oid: str = ".1.3.6.1.3.117") -> list[str]:
        community = f"public@{context}" if context else "public"
        result = net_snmp("snmpbulkwalk", "-v2c", "-c", community, "-On", "-Cr50", "-t", "10", "-r", "2",
                          self.address, oid)
        assert result.returncode == 0, result.stderr
        return result.stdout.splitlines()

    def get(self, context: str, oid: str, timeout: float = 5.0) -> str | None:
        """The value as net-snmp prints it; None if the agent did not answer
        (an unknown context is not answered)."""
        community = f"public@{context}" if context else "public"
        result = net_snmp("snmpget", "-v2c", "-c", community, "-On", "-Oqv", "-t", str(timeout), "-r", "0",
                          self.address, oid)
        return result.stdout.strip() if result.returncode == 0 else None


@contextmanager
def running(*processes: Process) -> Iterator[None]:
    try:
        yield
    finally:
        for process in processes:
            process.stop()


def make_certificates(directory: Path) -> dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate,
    as PEM files: ca, server, server_key, client, client_key."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)

    def issue(name: str, key: ec.EllipticCurvePrivateKey, issuer_name: x509.Name | None,
              issuer_key: ec.EllipticCurvePrivateKey | None, *, ca: bool,
              ip: bool = False) -> x509.Certificate:
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
                   .issuer_name(issuer_name or x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if ip:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        return builder.sign(issuer_key or key, hashes.SHA256())

    def write(name: str, data: bytes) -> Path:
        path = directory / name
        path.write_bytes(data)
        return path

    def pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    directory.mkdir(parents=True, exist_ok=True)
    ca_key, server_key, client_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
    ca = issue("ibsnmp test CA", ca_key, None, None, ca=True)
    server = issue("127.0.0.1", server_key, ca.subject, ca_key, ca=False, ip=True)
    client = issue("ibsnmp test client", client_key, ca.subject, ca_key, ca=False)
    pem = serialization.Encoding.PEM
    return {"ca": write("ca.pem", ca.public_bytes(pem)), "server": write("server.pem", server.public_bytes(pem)),
            "server_key": write("server.key", pem_key(server_key)),
            "client": write("client.pem", client.public_bytes(pem)),
            "client_key": write("client.key", pem_key(client_key))}

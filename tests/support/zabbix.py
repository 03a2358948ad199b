"""A Zabbix 6.0 server, its database and its frontend's API, from Debian's
packages, in a folder of its own.

PostgreSQL on a unix socket only, loaded with zabbix-server-pgsql's schema
and data; the frontend (zabbix-frontend-php) served by PHP's built-in
server, its configuration bind-mounted over /etc/zabbix in a mount
namespace of its own (Debian's frontend reads /etc/zabbix/zabbix.conf.php
and nothing else); zabbix_server in the foreground, its trapper on a free
port of 127.0.0.1. Needs root: PostgreSQL runs as postgres, the mount
namespace needs CAP_SYS_ADMIN.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import tempfile
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tests.support.e2e import stop
from tests.support.waiting import wait_for

FRONTEND = Path("/usr/share/zabbix")
SCHEMA = Path("/usr/share/zabbix-server-pgsql")
SERVER = Path("/usr/sbin/zabbix_server")
T = TypeVar("T")
PG_PORT = 5432  # the name of the socket only: PostgreSQL listens on no TCP port


def _postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
    return found[-1].parent if found else None


def missing() -> str | None:
    """Why a Zabbix server cannot be run here, or None."""
    if os.getuid() != 0:
        return "a Zabbix server with its database is run as root"
    for need, package in ((SERVER, "zabbix-server-pgsql"), (FRONTEND / "api_jsonrpc.php", "zabbix-frontend-php"),
                          (SCHEMA / "schema.sql.gz", "zabbix-server-pgsql")):
        if not need.exists():
            return f"{package} is not installed"
    if _postgres_bin() is None:
        return "postgresql is not installed"
    if shutil.which("php") is None:
        return "php-cli is not installed"
    return None


def free_tcp_port(highest: int = 65535) -> int:
    """A free TCP port of 127.0.0.1, at most `highest` (zabbix_server takes 1024-32767)."""
    for port in random.sample(range(10000, highest + 1), 200):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free TCP port")


@dataclass
class Zabbix:
    url: str  # the frontend's api_jsonrpc.php
    log: Path  # zabbix_server's
    session: str = ""  # Admin's, usable wherever an API token is

    def api(self, method: str, params: Any) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        if method not in ("apiinfo.version", "user.login"):
            body["auth"] = self.session
        request = urllib.request.Request(self.url, json.dumps(body).encode(),
                                         {"Content-Type": "application/json-rpc"})
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.load(response)
        if "error" in answer:
            raise AssertionError(f"{method}: {answer['error']}")
        return answer["result"]

    def wait_for(self, condition: Callable[[], T | None], timeout: float, what: str) -> T:
        """wait_for, and the end of the server's log if it times out."""
        try:
            return wait_for(condition, timeout, what)
        except AssertionError as timed_out:
            tail = "\n".join(self.log.read_text().splitlines()[-30:])
            raise AssertionError(f"{timed_out}\nzabbix_server.log:\n{tail}") from None


def _as_postgres(*command: str) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command]


@contextmanager
def _process(command: list[str], log: Path) -> Iterator[subprocess.Popen[str]]:
    with log.open("w") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, text=True)
    try:
        yield process
    finally:
        stop(process)


@contextmanager
def zabbix_server() -> Iterator[Zabbix]:
    # Outside pytest's 0700 folders: postgres must reach its data and socket.
    top = Path(tempfile.mkdtemp(prefix="ibsnmp-zabbix-"))
    try:
        top.chmod(0o755)
        with ExitStack() as stack:
            yield _start(top, stack)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _start(top: Path, stack: ExitStack) -> Zabbix:
    pg_bin = _postgres_bin()
    assert pg_bin is not None
    data, sockets = top / "pg", top / "sockets"
    sockets.mkdir(mode=0o777)
    sockets.chmod(0o777)
    data.mkdir()
    shutil.chown(data, "postgres", "postgres")
    subprocess.run(_as_postgres(str(pg_bin / "initdb"), "-D", str(data), "-U", "zabbix", "--auth=trust",
                                "-E", "UTF8", "--locale=C.UTF-8"), check=True, capture_output=True)
    stack.enter_context(_process(_as_postgres(
        str(pg_bin / "postgres"), "-D", str(data), "-k", str(sockets), "-p", str(PG_PORT),
        "-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off"), top / "postgres.log"))
    psql = [str(pg_bin / "psql"), "-q", "-h", str(sockets), "-p", str(PG_PORT), "-U", "zabbix"]
    wait_for(lambda: subprocess.run([*psql, "-c", "select 1", "postgres"], capture_output=True).returncode == 0,
             30, "PostgreSQL to answer")
    subprocess.run([*psql, "-c", "create database zabbix", "postgres"], check=True, capture_output=True)
    sql = b"".join(subprocess.run(["zcat", str(SCHEMA / f"{part}.sql.gz")], check=True,
                                  capture_output=True).stdout for part in ("schema", "images", "data"))
    subprocess.run([*psql, "-v", "ON_ERROR_STOP=1", "zabbix"], input=sql, check=True, capture_output=True)
    # Statistics for the planner: without them, linking the node template to
    # 44 discovered hosts keeps PostgreSQL busy on both cores for minutes.
    subprocess.run([*psql, "-c", "ANALYZE", "zabbix"], check=True, capture_output=True)

    trapper = free_tcp_port(highest=32767)
    etc = top / "etc-zabbix"
    etc.mkdir()
    (etc / "zabbix.conf.php").write_text(f"""<?php
$DB['TYPE'] = 'POSTGRESQL';
$DB['SERVER'] = '{sockets}';
$DB['PORT'] = '{PG_PORT}';
$DB['DATABASE'] = 'zabbix';
$DB['USER'] = 'zabbix';
$DB['PASSWORD'] = '';
$DB['SCHEMA'] = '';
$DB['DOUBLE_IEEE754'] = true;
$ZBX_SERVER = '127.0.0.1';
$ZBX_SERVER_PORT = '{trapper}';
$ZBX_SERVER_NAME = 'ibsnmp test';
$IMAGE_FORMAT_DEFAULT = IMAGE_FORMAT_PNG;
""")
    web = free_tcp_port()
    stack.enter_context(_process(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         f'mount --bind "{etc}" /etc/zabbix && exec php -S 127.0.0.1:{web} -t {FRONTEND}'],
        top / "php.log"))
    (top / "zabbix_server.conf").write_text(f"""
ListenIP=127.0.0.1
ListenPort={trapper}
LogFile={top}/zabbix_server.log
LogFileSize=0
PidFile={top}/zabbix_server.pid
SocketDir={top}
DBHost={sockets}
DBPort={PG_PORT}
DBName=zabbix
DBUser=zabbix
AllowRoot=1
CacheUpdateFrequency=1
StartPollers=2
StartPollersUnreachable=1
StartPingers=0
StartDiscoverers=0
StartHTTPPollers=0
StartLLDProcessors=2
HousekeepingFrequency=0
""")
    daemon = stack.enter_context(_process([str(SERVER), "-f", "-c", str(top / "zabbix_server.conf")],
                                          top / "zabbix_server.out"))
    server = Zabbix(f"http://127.0.0.1:{web}/api_jsonrpc.php", top / "zabbix_server.log")

    def version() -> str | None:
        try:
            return str(server.api("apiinfo.version", []))
        except OSError:
            return None

    assert wait_for(version, 30, "the Zabbix frontend to answer").startswith("6.0.")
    log = top / "zabbix_server.log"

    def pollers() -> bool:
        assert daemon.poll() is None, (top / "zabbix_server.out").read_text()
        return log.exists() and "started [poller #1]" in log.read_text()

    wait_for(pollers, 30, "zabbix_server's pollers")
    server.session = server.api("user.login", {"username": "Admin", "password": "zabbix"})
    return server

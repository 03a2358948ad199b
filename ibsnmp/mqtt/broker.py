"""The broker connection both sides use: URL and flags -> settings, and a
session that reconnects forever.

`mqtt://[user[:password]@]host[:port]` (1883) or `mqtts://...` (8883, TLS
with `--broker-ca`, optional client certificate and key).  A password in
the URL is accepted but shows in `ps`: `--broker-password-file` or the
IBSNMP_MQTT_PASSWORD environment variable keep it out; it never reaches a
log line (settings print without it).

`run_session` follows aiomqtt's reconnection pattern: a new Client per
attempt, subscribe again after every connect, capped exponential backoff
with jitter between attempts.  The session is persistent (MQTT 3.1.1
clean_session false, a fixed client id), so QoS 1 messages queued for us
while we were away are delivered when we return.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import random
import socket
import ssl
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any
from pathlib import Path
from urllib.parse import unquote, urlsplit

import aiomqtt

from . import topics
from .topics import ANONYMOUS
from aiomqtt.exceptions import MqttConnectError

from .arguments import DEFAULT_KEEPALIVE, PASSWORD_ENV

__all__ = [
    "BrokerError",
    "BrokerRefused",
    "BrokerSettings",
    "Backoff",
    "settings_from_args",
    "parse_broker_url",
    "check_credentials",
    "run_session",
    "PASSWORD_ENV",
]

# QoS 1 messages in flight at once: each waits for its PUBACK, so a large
# fabric is sent in overlapping windows of this many.
PUBLISH_WINDOW = 256
# CONNACK return codes (3.1.1) and reason codes (5) that retrying cannot fix.
_REFUSED = {4: "bad user name or password", 5: "not authorised (check the user name and password)",
            134: "bad user name or password", 135: "not authorised (check the user name and password)"}

log = logging.getLogger("ibsnmp.mqtt")


class BrokerError(ValueError):
    """A broker URL or flag that cannot be used."""


class BrokerRefused(RuntimeError):
    """The broker refused our credentials: retrying will not help."""


@dataclass(frozen=True)
class BrokerSettings:
    host: str
    port: int
    tls: bool
    username: str | None
    password: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    client_id: str = ""
    keepalive: int = DEFAULT_KEEPALIVE
    # Who the broker knows us as (topics.Publisher.owner): the user name, or
    # the client certificate's common name (mosquitto's use_identity_as_username).
    owner: str = ANONYMOUS

    @property
    def label(self) -> str:
        """Where we connect, for logs: never the password."""
        user = f"{self.username}@" if self.username else ""
        return f"{'mqtts' if self.tls else 'mqtt'}://{user}{self.host}:{self.port}"

    def tls_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        context = ssl.create_default_context(cafile=self.ca_file)
        if self.cert_file:
            context.load_cert_chain(self.cert_file, self.key_file)
        return context

    def client(self, *, will: aiomqtt.Will | None = None, queue_size: int | None = None,
               probe: bool = False, inbox: Callable[..., asyncio.Queue[aiomqtt.Message]] | None = None
               ) -> aiomqtt.Client:
        """A new aiomqtt Client (one per connection attempt).  A `probe`
        connects under another id with a clean session: under ours it would
        be handed (and would acknowledge) the messages queued for us.
        `inbox`: makes the queue incoming messages wait in."""
        client = aiomqtt.Client(
            self.host, self.port, username=self.username, password=self.password,
            identifier=f"{self.client_id}-probe" if probe else self.client_id, clean_session=probe,
            keepalive=self.keepalive,
            tls_context=self.tls_context(), will=will, timeout=10,
            protocol=aiomqtt.ProtocolVersion.V311, max_queued_incoming_messages=queue_size,
            max_inflight_messages=PUBLISH_WINDOW, queue_type=inbox)  # type: ignore[arg-type]
        # A publisher keeps a window of QoS 1 publishes in flight on purpose.
        client.pending_calls_threshold = 4 * PUBLISH_WINDOW
        return client


def parse_broker_url(url: str) -> tuple[str, int, bool, str | None, str | None]:
    """(host, port, tls, user, password) of an mqtt:// or mqtts:// URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("mqtt", "mqtts"):
        raise BrokerError(f"--broker: expected mqtt://host[:port] or mqtts://..., got scheme {parts.scheme!r}")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise BrokerError("--broker: a broker URL has no path, query or fragment")
    try:
        port = parts.port
    except ValueError:
        raise BrokerError("--broker: the port must be a number from 1 to 65535") from None
    if not parts.hostname:
        raise BrokerError("--broker: no host")
    tls = parts.scheme == "mqtts"
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    return parts.hostname, port or (8883 if tls else 1883), tls, user, password


def flag_named(dest: str) -> str:
    """How messages name an option by default: its flag."""
    return "--" + dest.replace("_", "-")


def settings_from_args(args: argparse.Namespace, role: str, url: str | None = None, *,
                       named: Callable[[str], str] = flag_named, url_dest: str = "broker",
                       client_suffix: str = "") -> BrokerSettings:
    """BrokerSettings from the flags; `role` ('publisher', 'aggregator')
    makes the default client id, which must be stable across restarts for
    the persistent session to be found again, with `client_suffix` (what
    the publisher publishes: two on one host must not share an id).  `url`:
    instead of --broker (given as the option `url_dest`). `named(dest)` says
    where an option's value came from in error messages (a flag, a
    variable, a file's key)."""
    try:
        host, port, tls, user, password = parse_broker_url(url or args.broker)
    except BrokerError as exc:
        raise BrokerError(str(exc).replace("--broker", named(url_dest), 1)) from None
    if args.broker_password_file:
        try:
            password = Path(args.broker_password_file).read_text().splitlines()[0]
        except (OSError, IndexError) as exc:
            raise BrokerError(f"{named('broker_password_file')}: cannot read a password: "
                              f"{exc}") from None
    elif os.environ.get(PASSWORD_ENV):
        password = os.environ[PASSWORD_ENV]
    if password is not None and user is None:
        raise BrokerError(f"{named(url_dest)}: a password needs a user name (mqtt://user@host)")
    if not tls and (args.broker_ca or args.broker_cert):
        dest = "broker_ca" if args.broker_ca else "broker_cert"
        raise BrokerError(f"{named(dest)}: needs an mqtts:// broker")
    if args.broker_key and not args.broker_cert:
        raise BrokerError(f"{named('broker_key')}: needs a client certificate (broker_cert)")
    for dest in ("broker_ca", "broker_cert", "broker_key"):
        path = getattr(args, dest)
        if path and not Path(path).is_file():
            raise BrokerError(f"{named(dest)}: no such file: {path}")
    if not 5 <= args.keepalive <= 65535:
        raise BrokerError(f"{named('keepalive')}: expected 5 to 65535 seconds, got {args.keepalive}")
    client_id = args.client_id or "-".join(
        part for part in ("ibsnmp", role, args.fabric_id, socket.gethostname(), client_suffix) if part)
    try:
        topics.check_name(client_id, named("client_id"))
    except ValueError as exc:
        raise BrokerError(str(exc)) from None
    owner = user or (certificate_name(args.broker_cert) if args.broker_cert else None) or ANONYMOUS
    return BrokerSettings(host, port, tls, user, password, args.broker_ca, args.broker_cert, args.broker_key,
                          client_id, args.keepalive, owner)


def certificate_name(path: str) -> str | None:
    """The common name of a PEM certificate's subject (None if it has none
    or cannot be read: the certificate itself is checked when connecting)."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    try:
        certificate = x509.load_pem_x509_certificate(Path(path).read_bytes())
    except (OSError, ValueError):
        return None
    names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    value = names[0].value if names else None
    return value if isinstance(value, str) else None


def refusal(exc: BaseException) -> str | None:
    """Why the broker refused us, if retrying cannot help."""
    if isinstance(exc, MqttConnectError):  # a CONNACK refusal, not a lost connection
        code = getattr(exc.rc, "value", exc.rc)
        if isinstance(code, int) and code in _REFUSED:
            return _REFUSED[code]
    return None


async def check_credentials(settings: BrokerSettings) -> str | None:
    """Connect once: raise BrokerRefused if the broker refuses the
    credentials; return why the broker cannot be reached (None: it can)."""
    try:
        async with settings.client(probe=True):
            return None
    except aiomqtt.MqttError as exc:
        why = refusal(exc)
        if why is not None:
            raise BrokerRefused(f"the broker {settings.label} refused the connection: {why}") from None
        return str(exc)


# How long a stop that comes during a connect waits for it, so that the
# connection is closed before the event loop is (see `connection`).
CONNECT_GRACE_S = 2.0


@contextlib.asynccontextmanager
async def connection(client: aiomqtt.Client) -> AsyncIterator[aiomqtt.Client]:
    """`async with client`, but a cancellation (a stop) during the connect
    does not leave it half made. aiomqtt connects in an executor thread and
    then waits for CONNACK; cut short, its socket and the task serving it
    outlived the event loop, and the exit logged errors and printed a
    traceback. Here the connect may go on for CONNECT_GRACE_S, then the
    connection is closed, and the cancellation goes on."""
    entering = asyncio.ensure_future(client.__aenter__())
    try:
        await asyncio.shield(entering)
    except asyncio.CancelledError:
        await _close_cut_short(client, entering)
        raise
    try:
        yield client
    finally:
        await client.__aexit__(None, None, None)


async def _close_cut_short(client: aiomqtt.Client, entering: asyncio.Future[Any]) -> None:
    # Best effort on the way out: a second stop or a broker that does not
    # answer ends a wait, and nothing raised here replaces the cancellation.
    with contextlib.suppress(BaseException):
        await asyncio.wait_for(asyncio.shield(entering), CONNECT_GRACE_S)
    if entering.done() and (entering.cancelled() or entering.exception() is not None):
        return  # it never connected: nothing is open
    # Connected, or still waiting for CONNACK: the disconnect closes the
    # socket, which ends that wait too (cancelling it instead would leave
    # aiomqtt a cancelled future that its socket callbacks trip over).
    with contextlib.suppress(BaseException):
        await asyncio.wait_for(client.__aexit__(None, None, None), CONNECT_GRACE_S)
    if not entering.done():
        entering.cancel()
    with contextlib.suppress(BaseException):
        await entering


@dataclass
class Backoff:
    """Capped exponential backoff with full jitter."""

    initial: float = 0.5
    cap: float = 30.0
    _next: float = 0.0

    def reset(self) -> None:
        self._next = self.initial

    def delay(self) -> float:
        current = self._next or self.initial
        self._next = min(self.cap, current * 2)
        return random.uniform(current / 2, current)


# A coroutine function: run_session runs it as a task.
OnConnect = Callable[[aiomqtt.Client], Coroutine[Any, Any, None]]
OnLost = Callable[[str], None]


async def run_session(settings: BrokerSettings, topics: tuple[str, ...], on_connect: OnConnect,
                      on_message: Callable[[aiomqtt.Message], None] | None, on_lost: OnLost, *,
                      will: aiomqtt.Will | None = None, backoff: Backoff | None = None) -> None:
    """Stay connected forever: subscribe to `topics` (QoS 1) after every
    connect, call `on_connect(client)` (the caller's work while connected:
    it returns when its client is lost or never), hand every message to
    `on_message`, and call `on_lost(reason)` when a connection ends."""
    backoff = backoff or Backoff()
    backoff.reset()
    said_refused = False
    while True:
        inboxes: list[asyncio.Queue[aiomqtt.Message]] = []

        def inbox(maxsize: int = 0) -> asyncio.Queue[aiomqtt.Message]:
            queue: asyncio.Queue[aiomqtt.Message] = asyncio.Queue(maxsize=maxsize)
            inboxes.append(queue)
            return queue

        client = settings.client(will=will, inbox=inbox)
        try:
            async with connection(client):
                backoff.reset()
                said_refused = False
                log.info("connected to %s as %s", settings.label, settings.client_id)
                for topic in topics:
                    await client.subscribe(topic, qos=1)
                work = asyncio.create_task(on_connect(client))
                try:
                    if on_message is not None:
                        async for message in client.messages:
                            on_message(message)
                            # The rest of a burst at once: aiomqtt's iterator
                            # costs a task and a wait per message.
                            for queue in inboxes:
                                while not queue.empty():
                                    on_message(queue.get_nowait())
                    else:
                        await work
                finally:
                    work.cancel()
                    try:
                        await work
                    except asyncio.CancelledError:
                        pass
                reason = "the connection ended"
        except aiomqtt.MqttError as exc:
            why = refusal(exc)
            if why is not None:
                if not said_refused:
                    log.error("the broker %s refused the connection: %s; retrying", settings.label, why)
                    said_refused = True
            reason = str(exc) or type(exc).__name__
        on_lost(reason)
        delay = backoff.delay()
        log.debug("reconnecting to %s in %.2f s", settings.label, delay)
        await asyncio.sleep(delay)

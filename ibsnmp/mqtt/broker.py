"""The broker connection both sides use: URL and flags -> settings, and a session that
reconnects forever.

`settings_from_args` takes `mqtt://[user[:password]@]host[:port]` or `mqtts://...` and the
flags; the password never reaches a log line (settings print without it). `run_session`
follows aiomqtt's reconnection pattern: a new Client per attempt, subscribe again after every
connect, capped exponential backoff with jitter between attempts. The session is persistent
(MQTT 3.1.1 clean_session false, a fixed client id), so QoS 1 messages queued for us while we
were away are delivered when we return. Reference: docs/providers.md, 'Broker connection'.
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
import time
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
            max_inflight_messages=PUBLISH_WINDOW,
            queue_type=inbox)  # type: ignore[arg-type]  # aiomqtt calls it: a factory serves
        # A publisher keeps a window of QoS 1 publishes in flight on purpose.
        client.pending_calls_threshold = 4 * PUBLISH_WINDOW
        return client


def parse_broker_url(url: str) -> tuple[str, int, bool, str | None, str | None]:
    """(host, port, tls, user, password) of an mqtt:// or mqtts:// URL
    (port 1883, or 8883 with TLS, unless it names one).  A password in the
    URL shows in `ps`: --broker-password-file and IBSNMP_MQTT_PASSWORD keep
    it out."""
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
OnMessage = Callable[[aiomqtt.Message], None]
OnLost = Callable[[str], None]

# A failure a remote client can cause again and again (a message that makes
# on_message raise) is said at most once a minute per kind, with a count.
FAILURE_LINE_PERIOD_S = 60.0
_SHOWN_CHARS = 200  # of an exception's text or a topic, in a log line


def _shown(text: str) -> str:
    """`text` for one log line: shortened, what is not printable escaped."""
    cut = text[:_SHOWN_CHARS]
    if not cut.isprintable():
        cut = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in cut)[:_SHOWN_CHARS]
    return cut + "..." if len(text) > _SHOWN_CHARS else cut


def _why(exc: BaseException) -> str:
    """An exception as a log line names it: its type and its message."""
    try:
        text = str(exc)
    except Exception:  # a broken __str__ must not break the handler of what raised it
        text = "(its text cannot be shown)"
    return f"{type(exc).__name__}: {_shown(text)}" if text else type(exc).__name__


class SessionFailures:
    """What a session survived: failures counted by kind (where, exception
    type), each kind said at once, then at most once per `period` seconds
    with the count since its last line; the first of a kind also logs its
    traceback at DEBUG.  A remote client decides how often a message
    fails, so no line or traceback is written per message."""

    def __init__(self, period: float = FAILURE_LINE_PERIOD_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.period = period
        self._clock = clock
        self.counts: dict[str, int] = {}  # kind -> failures in all
        self._said: dict[str, tuple[float, int]] = {}  # kind -> (when its last line was, its count then)

    @property
    def messages_dropped(self) -> int:
        return sum(count for kind, count in self.counts.items() if kind.startswith("message "))

    def message(self, message: aiomqtt.Message, exc: Exception) -> None:
        """Handling `message` raised `exc`: the message is dropped."""
        self._failed(f"message {type(exc).__name__}", exc, "mqtt: a message on %s was dropped: handling it raised %s",
                     _shown(str(message.topic)), _why(exc))

    def session(self, label: str, exc: Exception) -> None:
        """The session with the broker `label` failed with `exc`: it reconnects."""
        self._failed(f"session {type(exc).__name__}", exc, "mqtt: the session with %s failed: %s; reconnecting",
                     label, _why(exc))

    def _failed(self, kind: str, exc: Exception, text: str, *args: object) -> None:
        count = self.counts[kind] = self.counts.get(kind, 0) + 1
        now = self._clock()
        last = self._said.get(kind)
        if last is not None and now - last[0] < self.period:
            return
        self._said[kind] = (now, count)
        if last is None:
            note = f"the first such failure; at most one such line every {self.period:g} s"
        else:
            note = f"{count - last[1]} such failures since the last such line, {count} in all"
        log.error(f"{text} ({note})", *args)
        if last is None:
            log.debug("mqtt: the first %s failure", kind, exc_info=exc)


def _deliver(on_message: OnMessage, message: aiomqtt.Message, failures: SessionFailures) -> None:
    try:
        on_message(message)
    except Exception as exc:  # that message's failure alone: dropped, counted, said
        failures.message(message, exc)


async def _read(client: aiomqtt.Client, on_message: OnMessage, inboxes: list[asyncio.Queue[aiomqtt.Message]],
                failures: SessionFailures) -> None:
    """Hand every message to `on_message` until the connection ends (MqttError)."""
    async for message in client.messages:
        _deliver(on_message, message, failures)
        # The rest of a burst at once: aiomqtt's iterator costs a task and a
        # wait per message.
        for queue in inboxes:
            while not queue.empty():
                _deliver(on_message, queue.get_nowait(), failures)


async def _serve(client: aiomqtt.Client, on_connect: OnConnect, on_message: OnMessage | None,
                 inboxes: list[asyncio.Queue[aiomqtt.Message]], failures: SessionFailures) -> None:
    """One connection's work: `on_connect(client)` and, with `on_message`,
    the messages.  Returns when the messages end (without them: when the
    work returns); raises what ended either (MqttError: the connection was
    lost; anything else: a failure)."""
    work = asyncio.create_task(on_connect(client))
    reader = asyncio.create_task(_read(client, on_message, inboxes, failures)) if on_message is not None else None
    names = {work: "on_connect", reader: "reading messages"}
    tasks = {work} if reader is None else {work, reader}
    told: set[asyncio.Task[None]] = set()  # whose end was raised
    try:
        waiting = set(tasks)
        while waiting:
            done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                told.add(task)
                if task.cancelled():  # not by us: we are not being cancelled
                    raise RuntimeError(f"{names[task]} was cancelled")
                task.result()  # raises what ended it
            if reader is None or reader in done:
                return
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        for task in tasks - told:
            late = None if task.cancelled() else task.exception()
            if late is not None and not isinstance(late, aiomqtt.MqttError):
                log.debug("mqtt: %s raised as the connection ended: %s", names[task], _why(late))


async def run_session(settings: BrokerSettings, topics: tuple[str, ...], on_connect: OnConnect,
                      on_message: OnMessage | None, on_lost: OnLost, *,
                      will: aiomqtt.Will | None = None, backoff: Backoff | None = None,
                      failures: SessionFailures | None = None) -> None:
    """Stay connected forever: subscribe to `topics` (QoS 1) after every
    connect, call `on_connect(client)` (the caller's work while connected:
    it returns when its client is lost or never), hand every message to
    `on_message`, and call `on_lost(reason)` when a connection ends.

    Only cancellation ends it.  A message whose `on_message` raises is
    dropped, the rest go on; on_connect's work or the session failing
    otherwise than by a lost connection is logged as an ERROR, and the
    session reconnects after the backoff (which then keeps growing until a
    connection ends well).  Both are counted in `failures` and said at most
    once a minute per kind (SessionFailures)."""
    backoff = backoff or Backoff()
    backoff.reset()
    failures = failures if failures is not None else SessionFailures()
    said_refused = False
    failing = False  # the last attempt failed: its backoff is not reset by the next connect
    while True:
        inboxes: list[asyncio.Queue[aiomqtt.Message]] = []

        def inbox(maxsize: int = 0) -> asyncio.Queue[aiomqtt.Message]:
            queue: asyncio.Queue[aiomqtt.Message] = asyncio.Queue(maxsize=maxsize)
            inboxes.append(queue)
            return queue

        try:
            client = settings.client(will=will, inbox=inbox)
            async with connection(client):
                if not failing:
                    backoff.reset()
                said_refused = False
                log.info("connected to %s as %s", settings.label, settings.client_id)
                for topic in topics:
                    await client.subscribe(topic, qos=1)
                await _serve(client, on_connect, on_message, inboxes, failures)
                reason = "the connection ended"
            failing = False
        except aiomqtt.MqttError as exc:
            failing = False
            why = refusal(exc)
            if why is not None:
                if not said_refused:
                    log.error("the broker %s refused the connection: %s; retrying", settings.label, why)
                    said_refused = True
            reason = str(exc) or type(exc).__name__
        except Exception as exc:  # a bug, ours or the caller's: said, and the session goes on
            failing = True
            failures.session(settings.label, exc)
            reason = _why(exc)
        try:
            on_lost(reason)
        except Exception as exc:
            failures.session(settings.label, exc)
        delay = backoff.delay()
        log.debug("reconnecting to %s in %.2f s", settings.label, delay)
        await asyncio.sleep(delay)

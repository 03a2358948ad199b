"""The subagent's connection to an AgentX master: the I/O around SubagentSession.

One task keeps a session with the master for as long as the agent runs: connect (Unix socket
or TCP), Open, register the served subtrees in the default context and in every node's
context, answer requests, follow the fabric (contexts of nodes that appear are registered, of
nodes that vanish unregistered), ping, and start over after a wait (`Backoff`) when the master
goes away (one log line per attempt, never a traceback). `stop()` sends Close(reasonShutdown)
and waits briefly for the master's answer.
Reference: docs/agentx.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NoReturn

from ibsnmp.mib.subtrees import Subtrees

from . import pdu as ax
from ibsnmp.agent.agentx_master import MasterAddress
from .answers import MasterRequests
from .pdu import AgentxParseError, Oid, VarBind
from .session import (
    Answered,
    Ignored,
    MasterClosed,
    MasterRequest,
    Opened,
    OpenRefused,
    SessionError,
    State,
    SubagentSession,
)

log = logging.getLogger("ibsnmp.agentx")

OPEN_TIMEOUT_S = 5.0
CLOSE_WAIT_S = 1.0
FIRST_RETRY_S = 1.0
MAX_RETRY_S = 60.0
DEFAULT_PING_INTERVAL_S = 15.0
RESYNC_INTERVAL_S = 1.0  # how often the fabric's node list is compared with the registrations
MISSED_PINGS = 2  # unanswered pings in a row that mean the master is gone


@dataclass(frozen=True, slots=True)
class SubagentOptions:
    ident: Oid
    description: bytes
    default_subtrees: Subtrees  # registered in the default context
    node_subtrees: Subtrees  # registered in each node's context
    ping_interval: float = DEFAULT_PING_INTERVAL_S  # 0: no pings
    priority: int = 127
    timeout: int = 0  # seconds the master waits for an answer; 0: its own default
    first_retry: float = FIRST_RETRY_S
    max_retry: float = MAX_RETRY_S


class Backoff:
    """The reconnect waits: exponential backoff from `first` up to `most`.

    The wait before the next attempt starts at `first` and doubles after
    each attempt up to `most`. A session that stayed open for at least
    `most` seconds was a healthy one: the wait after it starts again from
    `first`, so a master restarted after hours is rejoined within `first`
    (1 s by default). A shorter session (a master that accepts the Open and
    drops it at once) keeps the grown wait, so it is not hammered.

    `opened()` marks a session open now; `next_wait()`, called once when an
    attempt (failed connect, refused Open or ended session) is over, returns
    the seconds to wait before the next one. `clock` is a monotonic clock.
    """

    def __init__(self, first: float, most: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._first = first
        self._most = most
        self._clock = clock
        self._next = first
        self._opened_at: float | None = None

    def opened(self) -> None:
        self._opened_at = self._clock()

    def next_wait(self) -> float:
        opened_at, self._opened_at = self._opened_at, None
        if opened_at is not None and self._clock() - opened_at >= self._most:
            self._next = self._first
        wait = self._next
        self._next = min(wait * 2, self._most)
        return wait


class _Lost(Exception):
    """The connection or the session ended; start over."""


def connect_failure_hint(address: MasterAddress, exc: OSError) -> str:
    """Why a connection to the master failed, in words an operator can act on."""
    where = f"AgentX master at {address}"
    if exc.errno == errno.ENOENT:
        return f"no {where}: the socket does not exist (is snmpd running with 'master agentx'?)"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return (f"{where}: permission denied (snmpd's agentXPerms must let this user "
                "open the socket)")
    if exc.errno == errno.ECONNREFUSED:
        return f"{where} refuses connections (is snmpd running with 'master agentx'?)"
    return f"{where}: cannot connect ({exc.strerror or exc})"


class _MasterLink(asyncio.Protocol):
    """The socket's events: data goes to `on_data` as it arrives (a Protocol
    rather than a stream: one PDU per varbind of a walk, no task switch for
    each); `ended` completes, with the reason, when the connection ends."""

    def __init__(self, on_data: Callable[[bytes, _MasterLink], None]) -> None:
        self._on_data = on_data
        self.ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        if not self.ended.done():
            self._on_data(data, self)

    def connection_lost(self, exc: Exception | None) -> None:
        why = f"read failed ({exc})" if exc is not None else "the master closed the connection"
        self.end(_Lost(why))

    def end(self, reason: _Lost) -> None:
        if not self.ended.done():
            self.ended.set_exception(reason)
            self.ended.exception()  # retrieved: the session may already be over


class Subagent:
    """The connection task; see the module documentation.

    `contexts()` names the node contexts there are now (16 hex digits each);
    `clock` (monotonic seconds) times sessions for the backoff.
    """

    def __init__(self, address: MasterAddress, options: SubagentOptions,
                 requests: MasterRequests, contexts: Callable[[], Iterable[bytes]],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.address = address
        self.options = options
        self.requests = requests
        self._contexts = contexts
        self.registered: set[bytes | None] = set()  # None: the default context
        self.sessions_opened = 0
        self.notifications_sent = 0
        self._session: SubagentSession | None = None
        self._writer: asyncio.Transport | None = None
        self._waiting: dict[int, asyncio.Future[ax.Response]] = {}
        self._stopping = asyncio.Event()
        self._backoff = Backoff(options.first_retry, options.max_retry, clock)
        self._task: asyncio.Task[None] | None = None
        self.open_event = asyncio.Event()  # set while a session is open

    # -- life -------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="ibsnmp-agentx")

    async def stop(self) -> None:
        """Close the session (reasonShutdown) and end the task."""
        self._stopping.set()
        session, writer = self._session, self._writer
        if session is not None and writer is not None and session.state is State.OPEN:
            try:
                packet_id, octets = session.send(ax.Close(ax.REASON_SHUTDOWN))
                answer = self._expect(packet_id)
                writer.write(octets)
                await asyncio.wait_for(answer, CLOSE_WAIT_S)
                log.info("AgentX session closed")
            except (OSError, asyncio.TimeoutError, _Lost, SessionError):
                pass
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def notify(self, varbinds: tuple[VarBind, ...]) -> bool:
        """Send a Notify through the master (sysUpTime.0 and snmpTrapOID.0
        first); False when no session is open (the notification is lost,
        as a trap to an unreachable receiver is)."""
        session, writer = self._session, self._writer
        if session is None or writer is None or session.state is not State.OPEN:
            return False
        packet_id, octets = session.send(ax.Notify(varbinds))
        self._expect(packet_id).add_done_callback(_log_notify_answer)
        writer.write(octets)
        self.notifications_sent += 1
        return True

    async def _run(self) -> None:
        while not self._stopping.is_set():
            delay = await self._attempt()
            try:
                await asyncio.wait_for(self._stopping.wait(), delay)
            except asyncio.TimeoutError:
                pass

    async def _attempt(self) -> float:
        """Connect and serve one session until it ends; the wait before the next."""
        try:
            transport, link = await self._connect()
        except OSError as exc:
            delay = self._backoff.next_wait()
            log.warning("%s; retrying in %g s", connect_failure_hint(self.address, exc), delay)
            return delay
        try:
            await self._session_on(transport, link)
        except _Lost as exc:
            delay = self._backoff.next_wait()
            if not self._stopping.is_set():
                log.warning("AgentX master at %s: %s; reconnecting in %g s",
                            self.address, exc, delay)
            return delay
        finally:
            self._drop(transport)

    async def _connect(self) -> tuple[asyncio.Transport, _MasterLink]:
        loop = asyncio.get_running_loop()
        link = _MasterLink(self._received)
        if self.address.path is not None:
            transport, _ = await loop.create_unix_connection(lambda: link, self.address.path)
        else:
            transport, _ = await loop.create_connection(lambda: link, self.address.host,
                                                        self.address.port)
        return transport, link

    def _drop(self, transport: asyncio.Transport) -> None:
        self.open_event.clear()
        self._session, self._writer = None, None
        self.registered.clear()
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(_Lost("connection closed"))
                future.exception()  # retrieved: nobody may be awaiting it
        self._waiting.clear()
        transport.close()

    # -- one session --------------------------------------------------------------

    async def _session_on(self, transport: asyncio.Transport, link: _MasterLink) -> NoReturn:
        """Serve one connection until it ends: always raises _Lost."""
        options = self.options
        session = SubagentSession(options.ident, options.description, options.timeout)
        self._session, self._writer = session, transport
        helpers: list[asyncio.Task[None]] = []
        try:
            opened = self._expect(1)  # the Open is the session's first packet
            transport.write(session.open())
            first: set[asyncio.Future[Any]] = {opened, link.ended}
            done, _ = await asyncio.wait(first, timeout=OPEN_TIMEOUT_S,
                                         return_when=asyncio.FIRST_COMPLETED)
            if link.ended in done:
                link.ended.result()  # raises why it ended
            if not done:
                raise _Lost(f"no answer to Open within {OPEN_TIMEOUT_S:g} s")
            response = opened.result()
            if response.error != ax.NO_AGENTX_ERROR:
                raise _Lost(f"the master refused the Open ({ax.error_name(response.error)})")
            self.sessions_opened += 1
            self._backoff.opened()
            log.info("AgentX session %d open with the master at %s", session.session_id,
                     self.address)
            helpers.append(asyncio.create_task(self._follow_contexts()))
            if options.ping_interval > 0:
                helpers.append(asyncio.create_task(self._ping()))
            self.open_event.set()
            done, _ = await asyncio.wait({link.ended, *helpers},
                                         return_when=asyncio.FIRST_COMPLETED)
            for finished in done:
                finished.result()
            raise _Lost("the session ended")
        finally:
            for task in helpers:
                task.cancel()
            for task in helpers:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    def _received(self, data: bytes, link: _MasterLink) -> None:
        """What the master sent: answers written at once (reads never await)."""
        session, transport = self._session, self._writer
        if session is None or transport is None:
            return
        header = session.lone_request(data)
        if header is not None:  # a walk's PDU: answered from its octets
            try:
                transport.write(self.requests.answer_read(header, data))
                return
            except AgentxParseError:
                pass  # `receive` below says why and closes the session
            except Exception:
                log.exception("AgentX request failed")
                try:
                    request = ax.decode(data)
                except AgentxParseError:
                    pass  # `receive` below says why and closes the session
                else:
                    transport.write(session.respond(
                        request, ax.Response(0, ax.SNMP_ERRORS["genErr"], 1)))
                    return
        try:
            events = session.receive(data)
        except AgentxParseError as exc:
            with contextlib.suppress(SessionError):
                transport.write(session.send(ax.Close(ax.REASON_PARSE_ERROR))[1])
            link.end(_Lost(f"not an AgentX PDU from the master ({exc})"))
            return
        replies: list[bytes] = []
        for event in events:
            try:
                reply = self._handle(event, session)
            except _Lost as exc:
                link.end(exc)
                break
            if reply is not None:
                replies.append(reply)
        if replies:
            transport.write(b"".join(replies))

    def _handle(self, event: object, session: SubagentSession) -> bytes | None:
        if isinstance(event, MasterRequest):
            try:
                response = self.requests.answer(event.packet)
            except Exception:
                log.exception("AgentX request failed")
                response = ax.Response(0, ax.SNMP_ERRORS["genErr"], 1)
            return None if response is None else session.respond(event.packet, response)
        if isinstance(event, (Opened, OpenRefused)):
            error = ax.NO_AGENTX_ERROR if isinstance(event, Opened) else event.error
            self._resolve(1, ax.Response(error=error))
        elif isinstance(event, Answered):
            self._resolve(event.packet_id, event.response)
        elif isinstance(event, MasterClosed):
            raise _Lost(f"the master closed the session (reason {event.reason})")
        elif isinstance(event, Ignored):
            log.debug("AgentX: ignored %s", event.why)
        return None

    def _expect(self, packet_id: int) -> asyncio.Future[ax.Response]:
        future: asyncio.Future[ax.Response] = asyncio.get_running_loop().create_future()
        self._waiting[packet_id] = future
        return future

    def _resolve(self, packet_id: int, response: ax.Response) -> None:
        future = self._waiting.pop(packet_id, None)
        if future is not None and not future.done():
            future.set_result(response)

    async def _request(self, message: ax.Pdu) -> ax.Response:
        session, writer = self._session, self._writer
        if session is None or writer is None:
            raise _Lost("no session")
        packet_id, octets = session.send(message)
        answer = self._expect(packet_id)
        writer.write(octets)
        return await answer

    # -- registrations and pings -------------------------------------------------------

    async def _follow_contexts(self) -> None:
        await self._register(None)
        while True:
            wanted: set[bytes | None] = {None, *self._contexts()}
            for context in sorted(c for c in self.registered - wanted if c is not None):
                await self._unregister(context)
            await asyncio.gather(*(self._register(c) for c in
                                   sorted(c for c in wanted - self.registered if c is not None)))
            await asyncio.sleep(RESYNC_INTERVAL_S)

    def _subtrees(self, context: bytes | None) -> Subtrees:
        return self.options.default_subtrees if context is None else self.options.node_subtrees

    async def _register(self, context: bytes | None) -> None:
        answers = await asyncio.gather(*(
            self._request(ax.Register(root, self.options.priority, self.options.timeout,
                                      context=context))
            for root in self._subtrees(context).roots))
        failed = [(root, a.error) for root, a in zip(self._subtrees(context).roots, answers)
                  if a.error != ax.NO_AGENTX_ERROR]
        # Marked registered even on failure: asking again each second would not help.
        self.registered.add(context)
        name = context.decode() if context else "the default context"
        for root, error in failed:
            log.error("AgentX: the master refused to register %s in %s (%s)",
                      ".".join(map(str, root)), name, ax.error_name(error))
        if not failed:
            log.debug("AgentX: registered %s", name)

    async def _unregister(self, context: bytes) -> None:
        self.registered.discard(context)
        for root in self._subtrees(context).roots:
            await self._request(ax.Unregister(root, self.options.priority, context=context))
        log.debug("AgentX: unregistered %s", context.decode())

    async def _ping(self) -> None:
        missed = 0
        while True:
            await asyncio.sleep(self.options.ping_interval)
            try:
                await asyncio.wait_for(self._request(ax.Ping()), self.options.ping_interval)
                missed = 0
            except asyncio.TimeoutError:
                missed += 1
                if missed >= MISSED_PINGS:
                    raise _Lost(f"{missed} pings unanswered") from None


def _log_notify_answer(future: asyncio.Future[ax.Response]) -> None:
    if future.cancelled() or future.exception() is not None:
        return
    error = future.result().error
    if error != ax.NO_AGENTX_ERROR:
        log.warning("AgentX master refused a notification (%s)", ax.error_name(error))

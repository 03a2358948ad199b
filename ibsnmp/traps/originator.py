"""The notification originator: mapped events -> every configured receiver.

It runs in the agent's event loop on the agent's SnmpEngine (SNMPv3 notifications carry the
agent's snmpEngineID and USM users) and never blocks that loop: `notify` only appends to one
bounded queue per target; one task per target sends, yielding to the loop after every
datagram, and informs wait for their answer on pysnmp's timers. A receiver that is down costs
memory bounded by `queue_size`, not latency. Notifications speak for the node that raised the
event: SNMPv3 ones in the node's context (`node_context_name`), every version with its names.
Reference: docs/notifications.md, 'Which node'.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pysnmp.carrier.asyncio.dgram import udp, udp6
from pysnmp.entity import config as pc
from pysnmp.entity.engine import SnmpEngine
from pysnmp.entity.rfc3413 import ntforg
from pysnmp.proto import rfc1902
from pysnmp.proto.api import v2c

from ibsnmp.agent.trap_targets import TrapTarget
from ibsnmp.agent.transport import NOTIFICATION_DOMAINS
from ibsnmp.events import TrapEvent
from ibsnmp.fabric.model import Node

from .mapping import SNMP_TRAP_ADDRESS_0, MappingError, Notification, map_event
from .queue import DropQueue, RateLimiter
from .sent_log import SentLog

log = logging.getLogger("ibsnmp.traps")

# Transport domains of the originator's own client sockets: replies to
# informs come back here, and requests are refused (agent/prefilter.py).
DOMAIN_V4, DOMAIN_V6 = NOTIFICATION_DOMAINS
MESSAGE_MODEL = {"1": 0, "2c": 1, "3": 3}
# Tag of every receiver address and trap community row: a trap community
# authenticates receivers' answers to informs (which arrive from a tagged
# address) but is never accepted from a manager's request.
NOTIFY_TAG = "ibsnmp-notify"
MAX_SOCKET_BACKLOG = 256 * 1024  # bytes asyncio may buffer before a sender waits


@dataclass(slots=True)
class TargetStats:
    """What happened to one target's notifications since start."""

    sent: int = 0  # traps handed to the socket, informs acknowledged
    dropped: int = 0  # pushed out of the full queue
    failed: int = 0  # send errors, and inform rounds left unanswered
    waiting: int = 0  # in the queue now


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A notification as queued: what, in which context, at which sysUpTime."""

    notification: Notification
    context_name: bytes
    uptime: rfc1902.TimeTicks


def node_context_name(node_guid: int, local_guid: int | None) -> bytes:
    """The SNMP context that speaks for a node: its GUID in 16 lower-case hex
    digits, "" for the local node."""
    return b"" if node_guid == local_guid else f"{node_guid:016x}".encode()


def local_address_towards(host: str, port: int) -> str:
    """The IPv4 address this host sends from to reach `host` (no packet is sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((host, port))
            return str(probe.getsockname()[0])
    except OSError:
        return "0.0.0.0"  # RFC 3584: unknown agent address


class TargetSender:
    """One receiver: its pysnmp target entries, queue, rate limit and send task."""

    def __init__(self, index: int, target: TrapTarget, engine: SnmpEngine,
                 ntf: ntforg.NotificationOriginator, security_name: str) -> None:
        self.target = target
        self.name = f"ibsnmp-notify-{index}"
        self.security_name = security_name
        self.stats = TargetStats()
        self.queue: DropQueue[Outgoing] = DropQueue(target.queue_size, target.label)
        self.limiter = RateLimiter(target.rate_limit) if target.rate_limit else None
        self.task: asyncio.Task[None] | None = None
        self._engine = engine
        self._ntf = ntf
        self._down = False  # an inform went unanswered; logged once until it answers
        self._send_error_logged = False
        self._extra: tuple[tuple[Any, Any], ...] = ()
        if target.version == "1":
            # agent-addr is IPv4 only: 0.0.0.0 ("unknown") towards an IPv6 receiver.
            agent = target.agent_address or ("0.0.0.0" if target.address.ipv6 else
                                             local_address_towards(target.address.host,
                                                                   target.address.port))
            self._extra = ((SNMP_TRAP_ADDRESS_0, rfc1902.IpAddress(agent)),)
        self._configure()

    def _configure(self) -> None:
        """SNMP-TARGET-MIB rows for this receiver (see TrapOriginator.open)."""
        target, engine, name = self.target, self._engine, self.name
        level = "authPriv" if target.version == "3" else "noAuthNoPriv"
        pc.add_target_parameters(engine, name, self.security_name, level,
                                 MESSAGE_MODEL[target.version])
        domain = DOMAIN_V6 if target.address.ipv6 else DOMAIN_V4
        pc.add_target_address(engine, name, domain, _transport_address(target), name,
                              timeout=round(target.timeout * 100), retryCount=target.retries,
                              tagList=NOTIFY_TAG)

    def unconfigure(self) -> None:
        pc.delete_target_address(self._engine, self.name)
        pc.delete_target_parameters(self._engine, self.name)

    # -- sending ------------------------------------------------------------------

    def _pdu(self, item: Outgoing, confirmed: bool) -> Any:
        pdu = v2c.InformRequestPDU() if confirmed else v2c.TrapPDU()
        v2c.apiPDU.set_defaults(pdu)
        v2c.apiPDU.set_varbinds(pdu, item.notification.v2_varbinds(item.uptime) + list(self._extra))
        return pdu

    def _context(self, item: Outgoing) -> bytes:
        # Community-based messages carry no context: the varbinds name the node.
        return item.context_name if self.target.version == "3" else b""

    def send_trap(self, item: Outgoing) -> bool:
        try:
            self._ntf.send_pdu(self._engine, self.name, None, self._context(item),
                               self._pdu(item, confirmed=False))
        except Exception as exc:  # pysnmp raises several types; none may stop the task
            self._send_failed(exc)
            return False
        self.stats.sent += 1
        return True

    async def inform_once(self, item: Outgoing) -> str | None:
        """Send one inform (with the target's retries); None once answered,
        else why not."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Any] = loop.create_future()

        def done(_engine: Any, _handle: Any, error_indication: Any, _pdu: Any,
                 _ctx: Any) -> None:
            if not answer.done():
                answer.set_result(error_indication)

        try:
            self._ntf.send_pdu(self._engine, self.name, None, self._context(item),
                               self._pdu(item, confirmed=True), done)
        except Exception as exc:
            return str(exc) or type(exc).__name__
        error = await answer
        return None if error is None else str(error)

    def _send_failed(self, exc: Exception) -> None:
        self.stats.failed += 1
        if not self._send_error_logged:  # once per target: a broken target must not flood
            self._send_error_logged = True
            log.error("trap target %s: cannot send (%s); further failures are only counted",
                      self.target.label, exc)

    async def run(self) -> None:
        while True:
            item = await self.queue.get()
            if self.limiter is not None:
                await self.limiter.acquire()
            if self.target.kind == "inform":
                await self._deliver(item)
            else:
                self.send_trap(item)
                await self._let_loop_run()

    async def _deliver(self, item: Outgoing) -> None:
        """Send an inform until it is answered: an unanswered one is not lost
        (only the queue bound drops notifications, the oldest first)."""
        while True:
            error = await self.inform_once(item)
            if error is None:
                self.stats.sent += 1
                if self._down:
                    self._down = False
                    log.info("trap target %s answers informs again", self.target.label)
                return
            self.stats.failed += 1
            if not self._down:
                self._down = True
                tries = self.target.retries + 1
                log.warning("trap target %s: inform unanswered after %d %s (%s); "
                            "re-sending it until it is answered", self.target.label,
                            tries, "try" if tries == 1 else "tries", error)
            if "timed out" not in error.lower():
                # A refusal, not silence: wait before asking again.
                await asyncio.sleep(self.target.timeout)

    async def _let_loop_run(self) -> None:
        # One datagram at a time: requests waiting in the loop go first, and
        # a socket that cannot keep up makes this sender wait, not buffer.
        await asyncio.sleep(0)
        transport = self._engine.transport_dispatcher.get_transport(
            DOMAIN_V6 if self.target.address.ipv6 else DOMAIN_V4)
        sock_transport = getattr(transport, "transport", None)
        while sock_transport is not None and \
                sock_transport.get_write_buffer_size() > MAX_SOCKET_BACKLOG:
            await asyncio.sleep(0.005)


def _transport_address(target: TrapTarget) -> tuple[Any, ...]:
    host, port = target.address.host, target.address.port
    if target.address.ipv6 and "%" in host:
        info = socket.getaddrinfo(host, port, socket.AF_INET6, socket.SOCK_DGRAM, 0,
                                  socket.AI_NUMERICHOST)
        return tuple(info[0][4])
    return host, port


class TrapOriginator:
    """Sends every event's notification to every target; see the module doc.

    `notify` is the provider listener. `local_node_guid()` names the node
    the default context speaks for (its notifications use contextName "").
    `node_of(guid)` is the node with that GUID as the agent serves it now
    (None: unknown), whose description an event's notification carries.
    `relays` get every notification too, as queued (the AgentX master).
    """

    def __init__(self, engine: SnmpEngine, targets: Sequence[TrapTarget], *,
                 local_node_guid: Callable[[], int | None] = lambda: None,
                 node_of: Callable[[int], Node | None] = lambda guid: None,
                 relays: Sequence[Callable[[Outgoing], None]] = ()) -> None:
        self.engine = engine
        self.targets = tuple(targets)
        self.relays = tuple(relays)
        self.rejected = 0  # events that could not be mapped
        self._local_node_guid = local_node_guid
        self._node_of = node_of
        self._ntf = ntforg.NotificationOriginator()
        self._senders: list[TargetSender] = []
        self._domains: list[tuple[int, ...]] = []
        self._communities: dict[str, str] = {}  # community -> security name
        self._rejected_traps: set[int] = set()
        self._sent_log = SentLog(log)
        (self._sys_up_time,) = engine.get_mib_builder().import_symbols(
            "__SNMPv2-MIB", "sysUpTime")

    @property
    def senders(self) -> tuple[TargetSender, ...]:
        return tuple(self._senders)

    async def open(self) -> None:
        """Open the client sockets and configure every target (no task yet)."""
        for ipv6 in sorted({t.address.ipv6 for t in self.targets}):
            transport: Any = (udp6.Udp6AsyncioTransport() if ipv6
                              else udp.UdpAsyncioTransport())
            transport.open_client_mode(("::", 0) if ipv6 else ("0.0.0.0", 0))
            domain = DOMAIN_V6 if ipv6 else DOMAIN_V4
            pc.add_transport(self.engine, domain, transport)
            self._domains.append(domain)
            pending = getattr(transport, "_lport", None)
            if pending is not None:  # bound before the first send, so errors show here
                await asyncio.shield(pending)
        for index, target in enumerate(self.targets):
            if target.version == "3":
                security_name = target.user or ""
            else:
                # One security name per community string, not per target: an
                # inform answer is matched to a security name by community and
                # address alone, so two targets must not split one community.
                security_name = self._communities.get(target.community, "")
                if not security_name:
                    security_name = f"ibsnmp-notify-c{len(self._communities)}"
                    self._communities[target.community] = security_name
                    pc.add_v1_system(self.engine, security_name, target.community,
                                     transportTag=NOTIFY_TAG, securityName=security_name)
            self._senders.append(TargetSender(index, target, self.engine, self._ntf,
                                              security_name))

    async def start(self) -> None:
        """Open, then start one send task per target."""
        await self.open()
        for sender in self._senders:
            sender.task = asyncio.create_task(sender.run(), name=sender.name)
        for target in self.targets:
            log.info("sending notifications to %s", target.label)

    async def stop(self) -> None:
        self._sent_log.flush()
        for sender in self._senders:
            if sender.task is not None:
                sender.task.cancel()
        for sender in self._senders:
            if sender.task is not None:
                try:
                    await sender.task
                except asyncio.CancelledError:
                    pass
                sender.task = None
            left = len(sender.queue.drain())
            if left:
                log.warning("trap target %s: %d notifications not sent at shutdown",
                            sender.target.label, left)
            sender.unconfigure()
        for security_name in self._communities.values():
            pc.delete_v1_system(self.engine, security_name)
        self._communities.clear()
        for domain in self._domains:
            pc.delete_transport(self.engine, domain)
        self._domains.clear()
        self._senders.clear()

    def uptime(self) -> rfc1902.TimeTicks:
        """The agent's sysUpTime now (what a GET of sysUpTime.0 answers)."""
        return self._sys_up_time.syntax.clone()

    def notify(self, event: TrapEvent) -> None:
        """Provider listener: map and queue; never blocks, never raises."""
        try:
            notification = map_event(event, self._node_of(event.node_guid))
        except MappingError as exc:
            self.rejected += 1
            if int(event.trap) not in self._rejected_traps:  # once per trap number
                self._rejected_traps.add(int(event.trap))
                log.error("event not sent: %s (further such events are only counted)", exc)
            return
        place = f"LID {event.lid}" + (f" port {event.port}" if event.port is not None else "")
        self.submit(notification, place)

    def submit(self, notification: Notification, where: str = "",
               uptime: rfc1902.TimeTicks | None = None) -> Outgoing:
        """Queue `notification` to every receiver (`where`: its node's LID
        and port, for the log line) with sysUpTime.0 `uptime`, when the
        agent saw what it reports (None: now)."""
        item = Outgoing(notification,
                        node_context_name(notification.node_guid, self._local_node_guid()),
                        self.uptime() if uptime is None else uptime)
        for sender in self._senders:
            sender.queue.put(item)
        for relay in self.relays:
            relay(item)
        self._sent_log.sent(notification, len(self._senders) + len(self.relays), where)
        return item

    def submit_own(self, notification: Notification) -> Outgoing:
        """Queue the agent's own `notification` (coldStart, authenticationFailure)
        to every receiver, in the default context; not to the relays: an AgentX
        master sends its own, about itself."""
        item = Outgoing(notification, b"", self.uptime())
        for sender in self._senders:
            sender.queue.put(item)
        self._sent_log.sent_own(notification, len(self._senders))
        return item

    def stats(self) -> list[tuple[TrapTarget, TargetStats]]:
        result = []
        for sender in self._senders:
            sender.stats.dropped = sender.queue.dropped
            sender.stats.waiting = len(sender.queue)
            result.append((sender.target, sender.stats))
        return result


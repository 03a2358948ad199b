"""Notifications beside a running agent: provider events -> every trap target.

The provider gets one listener for the agent's whole life; it forwards to the originator in
force, so a configuration reload can replace the targets (a new originator) without touching
the provider. Every snapshot the provider swaps in is also compared with the one before: a
port whose link went down or came up raises IF-MIB linkDown / linkUp (link_events.py) unless
`[traps] if_mib = false`, with the sysUpTime of that swap; the interface history is fed the
same swap first, so ifLastChange dates the change no later. The agent's own notifications
(traps.standard) go to the targets alone (`send_own`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

from pysnmp.entity.engine import SnmpEngine
from pysnmp.proto import rfc1902

from ibsnmp.agent.trap_targets import TrapTarget
from ibsnmp.events import TrapEvent
from ibsnmp.fabric.swap import Swap
from ibsnmp.providers.base import Provider

from .link_events import PortStatusWatch, link_notification
from .mapping import Notification, NotificationSpec
from .originator import Outgoing, TrapOriginator

log = logging.getLogger("ibsnmp.traps")


class NotificationService:
    """The originator in force for the configured targets (None without targets)."""

    def __init__(self, engine: SnmpEngine, provider: Provider, *, if_mib: bool = True,
                 relays: Sequence[Callable[[Outgoing], None]] = (),
                 leads: Callable[[], bool] = lambda: True) -> None:
        self._engine = engine
        # Whether this agent sends the fabric's notifications now: one agent
        # of a group sharing a port does (agent.engine_group).
        self._leads = leads
        self._relays = tuple(relays)  # beside the targets: the AgentX master
        self._provider = provider
        self.originator: TrapOriginator | None = None
        self.targets: tuple[TrapTarget, ...] = ()
        self.if_mib = if_mib
        self._links: PortStatusWatch | None = None  # while IF-MIB notifications are sent
        self._loop: asyncio.AbstractEventLoop | None = None
        # Link notifications found at a swap, not sent yet (a provider may swap in a thread),
        # each with the port it speaks of (for the log line) and the swap's sysUpTime.
        self._pending: list[tuple[Notification, str, rfc1902.TimeTicks]] = []
        self._pending_lock = threading.Lock()
        provider.add_listener(self._forward)
        add_swap_listener = getattr(provider, "add_swap_listener", None)
        if add_swap_listener is not None:  # a provider that never swaps has no link changes
            add_swap_listener(self._compare_links)

    def _forward(self, event: TrapEvent) -> None:
        if self.originator is not None and self._leads():
            self.originator.notify(event)

    def _compare_links(self, swap: Swap) -> None:
        """A swapped-in snapshot: its link changes are found now and sent
        after the IBA traps the provider emits for the same change (a
        provider swaps, then emits): once its current step is done, or at
        its next swap if that comes first."""
        links, loop, originator = self._links, self._loop, self.originator
        if links is None or loop is None or originator is None:
            return
        self._send_pending()
        # When the agent saw the change, not when the loop gets to send it.
        seen = originator.uptime()
        found = [(n, f"port {change.port.num}", seen) for change in links.changes_at(swap)
                 if (n := link_notification(change)) is not None]
        if found:
            with self._pending_lock:
                self._pending.extend(found)
            loop.call_soon_threadsafe(self._send_pending)

    def _send_pending(self) -> None:
        with self._pending_lock:
            pending, self._pending = self._pending, []
        if self.originator is not None and pending and self._leads():
            for notification, where, seen in pending:
                self.originator.submit(notification, where, seen)

    async def apply(self, targets: tuple[TrapTarget, ...], if_mib: bool | None = None) -> None:
        """Send to `targets` from now on (IF-MIB link notifications too unless
        `if_mib` is false; None: as before); what waited for the old ones is
        dropped (logged)."""
        await self.close()
        self.targets = targets
        if if_mib is not None:
            self.if_mib = if_mib
        if not targets and not self._relays:
            return
        originator = TrapOriginator(
            self._engine, targets,
            local_node_guid=lambda: self._provider.snapshot.local_node_guid,
            node_of=lambda guid: self._provider.snapshot.nodes.get(guid),
            relays=self._relays)
        await originator.start()
        if any(t.version == "3" and t.kind == "trap" for t in targets):
            # v3 trap receivers must know the sender's engine ID (snmptrapd: createUser -e).
            log.info("SNMPv3 traps are sent with engine ID 0x%s",
                     bytes(self._engine.snmpEngineID).hex())
        self.originator = originator
        if self.if_mib:
            self._loop = asyncio.get_running_loop()
            self._links = PortStatusWatch(self._provider.snapshot)

    def send_own(self, spec: NotificationSpec) -> None:
        """Send the agent's own notification `spec` (no OBJECTS) to every
        target in force, and to no relay (TrapOriginator.submit_own)."""
        originator = self.originator
        if originator is None or not self.targets:
            return
        local = self._provider.snapshot.local_node_guid
        originator.submit_own(Notification(spec, local if local is not None else 0, ()))

    async def close(self) -> None:
        self._links = None
        originator, self.originator = self.originator, None
        if originator is not None:
            await originator.stop()


@asynccontextmanager
async def notifications(engine: SnmpEngine, targets: tuple[TrapTarget, ...],
                        provider: Provider, *, if_mib: bool = True,
                        relays: Sequence[Callable[[Outgoing], None]] = (),
                        leads: Callable[[], bool] = lambda: True,
                        ) -> AsyncIterator[NotificationService]:
    """Send a notification to every target for every event `provider` emits,
    and IF-MIB linkDown / linkUp for its ports (unless `if_mib` is false),
    while `leads()` holds, for as long as the context lasts."""
    service = NotificationService(engine, provider, if_mib=if_mib, relays=relays, leads=leads)
    await service.apply(targets)
    try:
        yield service
    finally:
        await service.close()

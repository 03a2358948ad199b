"""Notifications beside a running agent: provider events -> every trap target.

The provider gets one listener for the agent's whole life; it forwards to
the originator in force, so a configuration reload can replace the targets
(a new originator) without touching the provider.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pysnmp.entity.engine import SnmpEngine

from ibsnmp.agent.config import TrapTarget
from ibsnmp.events import TrapEvent
from ibsnmp.providers.base import Provider

from .originator import TrapOriginator

log = logging.getLogger("ibsnmp.traps")


class NotificationService:
    """The originator in force for the configured targets (None without targets)."""

    def __init__(self, engine: SnmpEngine, provider: Provider) -> None:
        self._engine = engine
        self._provider = provider
        self.originator: TrapOriginator | None = None
        self.targets: tuple[TrapTarget, ...] = ()
        provider.add_listener(self._forward)

    def _forward(self, event: TrapEvent) -> None:
        if self.originator is not None:
            self.originator.notify(event)

    async def apply(self, targets: tuple[TrapTarget, ...]) -> None:
        """Send to `targets` from now on; what waited for the old ones is dropped (logged)."""
        await self.close()
        self.targets = targets
        if not targets:
            return
        originator = TrapOriginator(
            self._engine, targets,
            local_node_guid=lambda: self._provider.snapshot.local_node_guid)
        await originator.start()
        if any(t.version == "3" and t.kind == "trap" for t in targets):
            # v3 trap receivers must know the sender's engine ID (snmptrapd: createUser -e).
            log.info("SNMPv3 traps are sent with engine ID 0x%s",
                     bytes(self._engine.snmpEngineID).hex())
        self.originator = originator

    async def close(self) -> None:
        originator, self.originator = self.originator, None
        if originator is not None:
            await originator.stop()


@asynccontextmanager
async def notifications(engine: SnmpEngine, targets: tuple[TrapTarget, ...],
                        provider: Provider) -> AsyncIterator[NotificationService]:
    """Send a notification to every target for every event `provider` emits,
    for as long as the context lasts."""
    service = NotificationService(engine, provider)
    await service.apply(targets)
    try:
        yield service
    finally:
        await service.close()

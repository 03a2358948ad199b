"""Notifications beside a running agent: provider events -> every trap target."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pysnmp.entity.engine import SnmpEngine

from ibsnmp.agent.config import TrapTarget
from ibsnmp.providers.base import Provider

from .originator import TrapOriginator

log = logging.getLogger("ibsnmp.traps")


@asynccontextmanager
async def notifications(engine: SnmpEngine, targets: tuple[TrapTarget, ...],
                        provider: Provider) -> AsyncIterator[TrapOriginator | None]:
    """Send a notification to every target for every event `provider` emits,
    for as long as the context lasts (None when no target is configured)."""
    if not targets:
        yield None
        return
    originator = TrapOriginator(
        engine, targets, local_node_guid=lambda: provider.snapshot.local_node_guid)
    await originator.start()
    if any(t.version == "3" and t.kind == "trap" for t in targets):
        # v3 trap receivers must know the sender's engine ID (snmptrapd: createUser -e).
        log.info("SNMPv3 traps are sent with engine ID 0x%s", bytes(engine.snmpEngineID).hex())
    provider.add_listener(originator.notify)
    try:
        yield originator
    finally:
        await originator.stop()

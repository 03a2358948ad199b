"""`ibsnmp run --agentx`: the subagent beside (or instead of) the UDP agent.

What is registered: in the default context the InfiniBand subtree only
(IF-MIB's subtrees there are the host's own interfaces, which the master
serves itself); in each node's context every subtree the agent serves
(the node's IF-MIB too: nobody else answers in that context).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

from ibsnmp.agent.pysnmp_cells import cell_of
from ibsnmp.agent.config import AgentxSettings
from ibsnmp.agent.context_hooks import ContextDirectory
from ibsnmp.mib.api import ContextResolver, VirtualMib
from ibsnmp.mib.node_identity import AGENT_OBJECT_ID
from ibsnmp.mib.subtrees import INFINIBAND_MIB, Subtrees
from ibsnmp.traps.originator import Outgoing

from .answers import MasterRequests
from .connection import Subagent, SubagentOptions
from .kept import DEFAULT_LIMIT as KEPT_ANSWERS
from .kept import KeptAnswers
from .pdu import VarBind

log = logging.getLogger("ibsnmp.agentx")

DESCRIPTION = b"ibsnmp: InfiniBand fabric MIBs"
DEFAULT_CONTEXT_SUBTREES = Subtrees((INFINIBAND_MIB,))


def notify_varbinds(item: Outgoing) -> tuple[VarBind, ...]:
    """A queued notification as a Notify's varbinds: sysUpTime.0, snmpTrapOID.0,
    then the objects, as the UDP path sends them."""
    return tuple(VarBind(tuple(oid), *cell_of(value))
                 for oid, value in item.notification.v2_varbinds(item.uptime))


class NodeContexts:
    """The node context names of the provider's snapshot, computed once per snapshot."""

    def __init__(self, snapshot: Callable[[], Any]) -> None:
        self._snapshot = snapshot
        self._seen: Any = None
        self._names: frozenset[bytes] = frozenset()

    def __call__(self) -> Iterable[bytes]:
        fabric = self._snapshot()
        if fabric is not self._seen:
            self._seen = fabric
            self._names = frozenset(f"{guid:016x}".encode() for guid in fabric.nodes)
        return self._names


def sys_up_time(engine: Any) -> Callable[[], int]:
    """sysUpTime now, in hundredths, from the engine's own SNMPv2-MIB instance."""
    (instance,) = engine.get_mib_builder().import_symbols("__SNMPv2-MIB", "sysUpTime")

    def uptime() -> int:
        # Every Response carries it: pysnmp's clone of the instance builds
        # pyasn1 objects each time; its own formula, from its own start, does not.
        created = getattr(instance.syntax, "createdAt", None)
        if created is None:
            return int(instance.syntax.clone())
        return int((time.time() - created) * 100) & 0xFFFFFFFF

    return uptime


def build_subagent(settings: AgentxSettings, resolver: ContextResolver, mib: VirtualMib,
                   snapshot: Callable[[], Any], uptime: Callable[[], int],
                   kept_answers: int = KEPT_ANSWERS) -> Subagent:
    """The subagent; `kept_answers`: at most this many GetNext answers kept
    (agentx.kept; the agent's `[limits] walk_cache`, read at start)."""
    def regions(context: bytes | None) -> Subtrees:
        return DEFAULT_CONTEXT_SUBTREES if context is None else mib.subtrees

    requests = MasterRequests(mib, ContextDirectory(resolver), regions, uptime,
                              kept=KeptAnswers(kept_answers))
    options = SubagentOptions(AGENT_OBJECT_ID, DESCRIPTION, DEFAULT_CONTEXT_SUBTREES,
                              mib.subtrees, ping_interval=settings.ping_interval)
    return Subagent(settings.master, options, requests, NodeContexts(snapshot))


@asynccontextmanager
async def subagent_running(subagent: Subagent) -> AsyncIterator[Subagent]:
    """The subagent connected (and reconnecting) for as long as the context lasts."""
    subagent.start()
    try:
        yield subagent
    finally:
        await subagent.stop()


def master_relay(subagent: Subagent) -> Callable[[Outgoing], None]:
    """A notification relay (TrapOriginator `relays`) through the master; like
    every provider listener it never raises."""

    def relay(item: Outgoing) -> None:
        try:
            sent = subagent.notify(notify_varbinds(item))
        except (TypeError, ValueError) as exc:
            log.error("%s not sent through the AgentX master: %s", item.notification.name, exc)
            return
        if not sent:
            log.warning("%s not sent through the AgentX master: no session open",
                        item.notification.name)

    return relay

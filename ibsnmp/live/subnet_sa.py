"""The subnet's SA for a live provider: one port, one worker thread, queries and Reports.

`LiveSa` opens the SA client on its worker, subscribes (InformInfo) to the traps the agent
forwards as SNMP notifications, and hands each Report's Notice to `emit` as a TrapEvent on the
event loop, so traps arrive without polling. Its `backend` answers IB-SM-MIB requests and
reads partitions, multicast groups and services over the same port. Its stop is bounded
whatever the SA does: the query under way is interrupted, the unsubscribe gets one short try
(none when the SA is known silent), and a worker thread that does not end in time is left
behind.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.mad.records_generated import Notice
from ibsnmp.sa.client import (
    ReportHandler,
    SaClient,
    subscribe,
    subscribed_traps,
    unsubscribe_within,
)
from ibsnmp.sa.notices import notice_event
from ibsnmp.sa.worker import SaWorker
from ibsnmp.mad.umad import Address, UmadError

from ibsnmp.fabric.model import MulticastGroup, Partition, ServiceRecord

from ibsnmp.sa.backend import SaBackend, SaUnavailable
from ibsnmp.sa.mad_backend import LidPorts, MadSaBackend, NodeOfLid, PortOfGid

log = logging.getLogger("ibsnmp.sa")

# Every trap SMA-MIB turns into a notification; OpenSM accepts 256-259 only
# from a requester with its SM_Key.
FORWARDED_TRAPS = tuple(int(t) for t in IbaTrap)
# What stop() may take unless told: the unsubscribe's try and the port's close.
STOP_S = 1.5
# The unsubscribe at stop: one try for every trap, over within this (an SA
# that answers does so in milliseconds), and never more than half the stop.
UNSUBSCRIBE_S = 0.5

ClientOpener = Callable[[ReportHandler], SaClient]
T = TypeVar("T")


def client_opener(ca: str | None = None, port: int = 0, sm_key: int = 0,
                  sm: Address | None = None) -> ClientOpener:
    """Opens the SA client on a port of `ca` (default: the first); the SA at
    `sm`, else where the port's PortInfo says the master SM is."""
    return lambda on_report: SaClient.open(ca, port, sm, sm_key=sm_key, on_report=on_report)


class LiveSa:
    """See the module text. `node_of_lid`, `port_of_gid` and `lid_ports`
    read the provider's latest snapshot; `emit` runs on the event loop."""

    def __init__(self, open_client: ClientOpener, emit: Callable[[TrapEvent], None],
                 node_of_lid: NodeOfLid, port_of_gid: PortOfGid, lid_ports: LidPorts,
                 traps: Iterable[int] = FORWARDED_TRAPS) -> None:
        self._emit = emit
        self._node_of_lid = node_of_lid
        self._traps = tuple(traps)
        self._loop: asyncio.AbstractEventLoop | None = None
        self.subscribed: tuple[int, ...] = ()
        # Whether the SA lists this port's subscriptions to it (keep_subscribed):
        # None until asked once after subscribing.
        self.lists_subscriptions: bool | None = None
        self._resubscribing = False  # the SA lost them and has not accepted them again yet
        self.worker = SaWorker(lambda: open_client(self._on_report))
        self.backend = MadSaBackend(self.worker, node_of_lid, port_of_gid, lid_ports)

    async def start(self, subscriber_gid: int | None = None) -> dict[int, str | None]:
        """Opens the port and subscribes: per trap, None if the SA accepted it,
        else why not. `subscriber_gid`: this port's GID, to ask at once
        whether the SA lists the subscriptions it just accepted (keep_subscribed)."""
        self._loop = asyncio.get_running_loop()
        await self._loop.run_in_executor(None, self.worker.start)
        outcome = await self._subscribe()
        if self.subscribed and subscriber_gid is not None:
            try:
                listed = await self.worker.call(lambda client: subscribed_traps(client, subscriber_gid))
            except Exception as exc:  # judged by the first check that gets an answer
                log.debug("SA InformInfoRecords not read: %s", exc)
            else:
                self.lists_subscriptions = bool(listed)
                if not listed:
                    log.info("SA lists no InformInfoRecord of this port: an SM restart is told by "
                             "sweeps alone")
        return outcome

    async def keep_subscribed(self, subscriber_gid: int) -> bool:
        """Subscribe again if the SA lists none of this port's subscriptions:
        a new SM instance (restarted, or another one taking over at the same
        LID) knows none of its predecessor's, and no sweep may have seen it go.
        True if it subscribed again. Judged only where the SA showed the
        subscriptions once (`start` asks right after making them): an SA that
        lists them to nobody, or not to this requester, tells nothing."""
        if self.lists_subscriptions is False or not self._traps:
            return False
        listed = await self.worker.call(lambda client: subscribed_traps(client, subscriber_gid))
        if self.lists_subscriptions is None:  # not known yet: a listing seen says it
            self.lists_subscriptions = True if listed else None
            return False
        if listed:
            log.debug("SA lists the agent's subscriptions to traps %s", sorted(listed))
            return False
        if not self._resubscribing:  # said once; tried again after every poll until accepted
            log.warning("SA lists none of the agent's trap subscriptions (a new SM instance): "
                        "subscribing again")
        await self._subscribe()
        self._resubscribing = not self.subscribed
        return bool(self.subscribed)

    async def _subscribe(self) -> dict[int, str | None]:
        """Set(InformInfo) for every trap; `subscribed` becomes those the SA accepted (logged)."""
        outcome = await self.worker.call(lambda client: subscribe(client, self._traps))
        self.subscribed = tuple(t for t, refused in outcome.items() if refused is None)
        refused = {t: why for t, why in outcome.items() if why is not None}
        log.info("SA subscriptions: traps %s%s", list(self.subscribed),
                 f"; refused {refused}" if refused else "")
        return outcome

    async def stop(self, within: float = STOP_S) -> None:
        """Unsubscribes (the SA would otherwise keep sending Reports) and
        closes the port, in about `within` seconds at most whatever the SA
        does: the query under way is interrupted first; the unsubscribe is
        one try of at most UNSUBSCRIBE_S, skipped when the SA's last query
        went unanswered; a worker that has not ended by the deadline is left
        behind (a daemon thread). Either of the last two is one log line."""
        deadline = time.monotonic() + within
        self.worker.interrupt()
        try:
            await self._unsubscribe(time.monotonic() + min(UNSUBSCRIBE_S, within / 2))
        finally:
            left = max(0.0, deadline - time.monotonic())
            # Bounded by `left`: the executor's thread is free again by then.
            if not await asyncio.to_thread(self.worker.stop, left):
                log.warning("SA client: its thread did not end within %.3g s of the stop; left "
                            "to end with the process", within)

    async def _unsubscribe(self, deadline: float) -> None:
        """Set(InformInfo) unsubscribing every trap subscribed, all over by
        `deadline` (time.monotonic); a failure is one log line."""
        traps, self.subscribed = self.subscribed, ()
        if not traps:
            return
        if self.worker.silent:
            log.info("SA unsubscribe skipped: the SA did not answer its last query")
            return
        asked = self.worker.call(
            lambda client: unsubscribe_within(client, traps, deadline - time.monotonic()))
        try:
            # The worker's own deadline ends the call; this one covers a worker
            # that has not begun it (a call under way that ignores interruption).
            outcome = await asyncio.wait_for(asked, max(0.0, deadline - time.monotonic()) + 0.1)
        except (UmadError, TimeoutError) as exc:
            log.info("SA unsubscribe failed: %s", str(exc) or "no answer in time")
            return
        refused = {trap: why for trap, why in outcome.items() if why is not None}
        if refused:
            log.info("SA unsubscribe failed for traps %s: %s", sorted(refused),
                     next(iter(refused.values())))

    def _on_report(self, notice: Notice, sa_lid: int) -> None:
        # On the worker thread: the event goes to the loop's thread.
        event = notice_event(notice, self._node_of_lid)
        if event is None:
            log.debug("a Report of trap %s from LID %s is not forwarded",
                      notice["TrapNumber"], notice["IssuerLID"])
        elif self._loop is not None:
            self._loop.call_soon_threadsafe(self._emit, event)


@dataclass(frozen=True)
class SaObjects:
    """What the SA holds for the fabric model; None where it gave no whole answer
    (a snapshot then keeps what it had, or serves none: never a guess)."""

    partitions: tuple[Partition, ...] | None
    multicast_groups: tuple[MulticastGroup, ...] | None
    services: tuple[ServiceRecord, ...] | None


def log_once(said: set[str], why: str) -> None:
    """A warning the first time `why` is said, debug after: a refusal repeats at every sweep."""
    log.log(logging.DEBUG if why in said else logging.WARNING, "%s", why)
    said.add(why)


async def _or_none(read: Callable[[], Awaitable[T]], what: str, said: set[str]) -> T | None:
    try:
        found = await read()
    except SaUnavailable as exc:
        log_once(said, f"SA {what} not read: {exc}")
        return None
    said.difference_update([w for w in said if w.startswith(f"SA {what} ")])
    return found


async def read_sa_objects(backend: SaBackend, said: set[str] | None = None) -> SaObjects:
    """Partitions, multicast groups and services, each read on its own. `said`
    keeps the failures logged already (a caller that reads again passes the same set)."""
    said = set() if said is None else said
    return SaObjects(await _or_none(backend.partitions, "partitions", said),
                     await _or_none(backend.multicast_groups, "multicast groups", said),
                     await _or_none(backend.services, "services", said))

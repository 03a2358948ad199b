"""The subnet's SA for a live provider: one port, one worker thread, queries and Reports.

`LiveSa` opens the SA client on its worker, subscribes (InformInfo) to the
traps the agent forwards as SNMP notifications, and hands each Report's
Notice to `emit` as a TrapEvent on the event loop, so traps arrive without
polling. Its `backend` answers IB-SM-MIB requests and reads partitions,
multicast groups and services over the same port.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.mad.layout import FieldValue
from ibsnmp.mad.sa_client import ReportHandler, SaClient, subscribe, subscribed_traps
from ibsnmp.mad.sa_notices import notice_event
from ibsnmp.mad.sa_worker import SaWorker
from ibsnmp.mad.umad import Address

from ibsnmp.fabric.model import MulticastGroup, Partition, ServiceRecord

from ibsnmp.sa.backend import SaBackend, SaUnavailable
from .sa_backend import LidPorts, MadSaBackend, NodeOfLid, PortOfGid

log = logging.getLogger("ibsnmp.sa")

# Every trap SMA-MIB turns into a notification; OpenSM accepts 256-259 only
# from a requester with its SM_Key.
FORWARDED_TRAPS = tuple(int(t) for t in IbaTrap)

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

    async def stop(self) -> None:
        """Unsubscribes (the SA would otherwise keep sending) and closes the port."""
        try:
            if self.subscribed:
                await self.worker.call(lambda c: subscribe(c, self.subscribed, False))
        finally:
            await asyncio.get_running_loop().run_in_executor(None, self.worker.stop)

    def _on_report(self, notice: dict[str, FieldValue], sa_lid: int) -> None:
        # On the worker thread: the event goes to the loop's thread.
        event = notice_event(notice, self._node_of_lid)
        if event is None:
            log.debug("a Report of trap %s from LID %s is not forwarded",
                      notice.get("TrapNumber"), notice.get("IssuerLID"))
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

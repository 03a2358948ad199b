"""The live provider: the subnet read over MADs from one port of this host (ibsnmp.mad, .live).

`LiveProvider` sweeps at construction (LiveError, exit 2, if its port cannot be opened or the
local node does not answer), then polls every `poll_interval` and sweeps again on a change or
every `sweep_interval`. With an SM it opens the SA on a port of its own: Reports become traps,
and partitions, multicast groups, services and path answers are served. Lost MADs are retried;
what did not answer keeps its last good reading (live.keep) until its node is confirmed gone.
MAD I/O runs in a worker thread; a failed poll keeps the last snapshot. Traps 128, 129/130.
Reference: docs/providers.md, 'The live subnet'; docs/mad-layer.md.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, get_args

from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric.changes import PortTransition
from ibsnmp.fabric.model import Fabric, MeasuredCounters, PortRef
from ibsnmp.fabric.succession import successor, with_values
from ibsnmp.live.keep import DEFAULT_CONFIRM_AFTER, SM_STATE_MASTER, Keeper, SweepReport
from ibsnmp.live.refresh import Refresh, active_lids, counter_targets, refresh, sm_ports
from ibsnmp.live.snapshot import PmaValues, SaRecords, build_fabric, link_state
from ibsnmp.live.trap_ledger import TrapLedger
from ibsnmp.mad.counters import extended_counter_lids
from ibsnmp.mad.discovery import IS_SM, Subnet, discover
from ibsnmp.mad.pma_details import DetailReading, offered_details, read_details
from ibsnmp.mad.records_generated import PortInfo
from ibsnmp.mad.umad import Address, UmadError, UmadPort
from ibsnmp.mad.window import MadWindow, WindowStats
from ibsnmp.live.subnet_sa import ClientOpener, LiveSa, client_opener, log_once, read_sa_objects
from ibsnmp.sa import snapshot_lookups
from ibsnmp.sa.client import nodes_listed, sa_address
from ibsnmp.sa.following import FollowingBackend

from .base import ProviderCore, cancel_and_wait
from .scenario import link_state_traps
from .thresholds import ThresholdWatcher

__all__ = ["DEFAULT_MAD_RETRIES", "DEFAULT_MAD_TIMEOUT", "DEFAULT_POLL_INTERVAL", "DEFAULT_SWEEP_INTERVAL",
           "LiveError", "LiveProvider", "WINDOW_SIZE"]

# PortInfo every 5 s, as the sysfs provider polls: a link that goes down is
# served (and trapped) within 5 s, at one SMP per port and poll.
DEFAULT_POLL_INTERVAL = 5.0
# A full sweep each minute finds what polls cannot (new nodes behind a link
# that never changed state, tables re-programmed); changes seen bring one at once.
DEFAULT_SWEEP_INTERVAL = 60.0
WINDOW_SIZE = 32
DEFAULT_MAD_TIMEOUT = 0.2  # seconds a MAD waits for its answer, each try
DEFAULT_MAD_RETRIES = 3  # tries after the first, as libibmad's default
POLL_SUMMARY_S = 60.0  # polls are summed up in one line this often
SM_RECORDS_S = 1.0  # what a sweep spends asking the SA whether it lists the nodes it missed

# PortInfo fields whose change means the subnet was reconfigured.
_ResweepField = Literal["PortState", "PortPhysicalState", "LID", "LMC", "MasterSMLID"]
_RESWEEP_PORT_FIELDS: tuple[_ResweepField, ...] = get_args(_ResweepField)
# SwitchInfo.PortStateChange flips with every port change and is cleared by
# the SM; the rest changes when the SM re-programs the switch.
_VOLATILE_SWITCH_FIELDS = frozenset({"PortStateChange"})
# The traps a poll raises too (see _swap): a Report of one is matched with the poll's.
_POLLED_TRAPS = frozenset({IbaTrap.LINK_STATE_CHANGE, IbaTrap.LOCAL_LINK_INTEGRITY,
                           IbaTrap.EXCESSIVE_BUFFER_OVERRUN})

log = logging.getLogger("ibsnmp.providers.live")


class LiveError(RuntimeError):
    """The umad port cannot be opened, or the local node does not answer."""


@dataclass
class _Sweep:
    subnet: Subnet  # what it read, completed with what earlier sweeps read (report)
    local_guid: int
    extended_lids: dict[int, frozenset[str]]
    counters: dict[int, dict[int, PmaValues]]  # by node and port
    details: dict[tuple[int, int], DetailReading]  # by (LID, port)
    report: SweepReport
    stats: WindowStats  # its MADs
    seconds: float


@dataclass
class _PollSums:
    """The polls since the last summary line."""

    since: float
    count: int = 0
    failed: int = 0
    sent: int = 0
    timed_out: int = 0
    retried: int = 0
    slowest: float = 0.0


class LiveProvider(ProviderCore):
    """`LiveProvider(ca, port)`: `ca` None takes libibumad's first CA, `port`
    0 its first active port. The start-up sweep happens here."""

    def __init__(self, ca: str | None = None, port: int = 0, *,
                 poll_interval: float = DEFAULT_POLL_INTERVAL,
                 sweep_interval: float = DEFAULT_SWEEP_INTERVAL,
                 sm_key: int = 0, use_sa: bool = True,
                 mad_timeout: float = DEFAULT_MAD_TIMEOUT, mad_retries: int = DEFAULT_MAD_RETRIES,
                 mad_window: int = WINDOW_SIZE, gone_after_sweeps: int = DEFAULT_CONFIRM_AFTER) -> None:
        if not poll_interval > 0 or not sweep_interval > 0:
            raise ValueError("poll and sweep intervals must be positive")
        if not mad_timeout > 0 or mad_retries < 0 or mad_window < 1:
            raise ValueError("a MAD timeout is positive, its retries not negative, its window at least 1")
        super().__init__()
        self.poll_interval = poll_interval
        self.sweep_interval = sweep_interval
        self.mad_timeout, self.mad_retries, self.mad_window = mad_timeout, mad_retries, mad_window
        # A sweep brought on sooner than scheduled counts a node's absence once per interval.
        self._keeper = Keeper(gone_after_sweeps, miss_gap=0.9 * sweep_interval)
        self._polls = _PollSums(time.monotonic())
        # Nodes served from earlier sweeps' readings -> since when (monotonic seconds).
        self._kept: dict[int, float] = {}
        # Where partitions, multicast groups and services enter the snapshot
        # once an SA client reads them (SMPs do not carry them).
        self.sa_records = SaRecords()
        self._where = f"{ca or 'first CA'}, " + (f"port {port}" if port else "first active port")
        self._lock = threading.Lock()  # one MAD exchange at a time on the port
        self._task: asyncio.Task[None] | None = None
        self._sa_task: asyncio.Task[None] | None = None
        self._sa_said: set[str] = set()  # SA failures logged already
        self._sa: LiveSa | None = None  # opened after the first sweep
        try:
            self._umad: UmadPort | None = UmadPort(ca, port)
        except UmadError as exc:
            # Its message says why and what to do (ibsnmp.mad.diagnose).
            raise LiveError(f"cannot open {self._where}: {exc}") from None
        try:
            sweep = self._sweep_now()
        except UmadError as exc:
            self._close()
            raise LiveError(f"sweep from {self._where} failed: {exc}") from None
        if sweep is None:
            self._close()
            raise LiveError(f"the local node behind {self._where} does not answer NodeInfo")
        self._port_infos: dict[PortRef, PortInfo] = {}
        self._counters: dict[int, dict[int, PmaValues]] = {}
        self._details: dict[tuple[int, int], DetailReading] = {}
        self._install(sweep)
        self._fabric = self._build()
        self.sweeps = 1
        self.polls = 0
        log.info("live: %s: %d nodes, %d links, %d SMs", self._where, len(self._fabric.nodes),
                 len(self._fabric.links), len(self._fabric.sms))
        self._say_sweep(sweep)
        self._watch_traps()
        self.sa_backend: FollowingBackend | None = None
        self._sa_opener: Callable[[Address], ClientOpener] = (
            lambda sm: client_opener(ca, port, sm_key, sm))
        self._sa_lid = 0  # the LID the SA client asks (0: none open)
        self._follow_task: asyncio.Task[None] | None = None
        self._subscriptions_task: asyncio.Task[None] | None = None
        # Since the client opened: a sweep read a master SM's SMInfo, then one read none.
        self._saw_master = self._sm_was_gone = False
        self._sa = self._open_sa() if use_sa else None

    def _watch_traps(self, clock: Callable[[], float] = time.monotonic) -> None:
        """Counters of the snapshot served now as the thresholds' baseline."""
        # A Report and a poll that tell of one change within two polls send one trap.
        self._ledger = TrapLedger(2 * self.poll_interval, clock)
        # Nobody else's counters are cleared from here: a saturated one fires no more.
        self._watcher = ThresholdWatcher(clear_after_trap=False)
        # The threshold counters of the ports the last poll read (ThresholdWatcher.poll's `read`).
        self._thresholds: dict[PortRef, tuple[int | None, int | None]] = {}
        self._clock = clock
        self._started = clock()
        self._watcher.poll(self._fabric, 0.0)

    def _open_sa(self) -> LiveSa | None:
        info = self._fabric.local_node.management_port.info  # the port the sweep went out of
        try:
            # The SA's address as the sweep read it: the SA port sends no SMPs of its own.
            live = self._new_sa(sa_address(info.master_sm_lid or 0, info.master_sm_sl or 0))
        except Exception as exc:
            log.warning("live: no SA behind %s (%s): IB-SM-MIB path requests, partitions, "
                        "multicast groups and services are not served", self._where, exc)
            return None
        self.sa_backend = FollowingBackend(live.backend)
        return live

    def _new_sa(self, sm: Address) -> LiveSa:
        """An SA client at `sm`, its port open (blocking), not subscribed yet."""
        def current() -> Fabric:  # the snapshot served when asked
            return self._fabric

        live = LiveSa(self._sa_opener(sm), self._on_report, snapshot_lookups.node_of_lid(current),
                      snapshot_lookups.port_of_gid(current), snapshot_lookups.lid_ports(current))
        try:
            live.worker.start()
        except Exception:
            live.worker.stop()
            raise
        self._sa_lid = sm.lid
        return live

    def _follow_sm(self) -> None:
        """After a sweep: if the master SM answers at another LID than the SA
        client asks (another SM took over), or is back after sweeps that found
        none (it restarted, and forgot the subscriptions), reopen the client there."""
        if self.sa_backend is None or (self._follow_task is not None
                                       and not self._follow_task.done()):
            return
        # SMInfo is answered by the SM process, not the SMA, and may not answer
        # a sweep (ibsim: an SM on another node): so a restart is told only by
        # a master SM read, then none, then one again.
        master = self._fabric.master_sm is not None
        self._sm_was_gone = self._sm_was_gone or (self._saw_master and not master)
        self._saw_master = self._saw_master or master
        info = self._fabric.local_node.management_port.info
        lid = info.master_sm_lid or 0
        back = self._sm_was_gone and master
        if (lid == self._sa_lid and not back) or not 0 < lid < 0xC000:
            return
        self._sm_was_gone = self._saw_master = False
        self._follow_task = asyncio.create_task(self._move_sa(lid, info.master_sm_sl or 0),
                                                name="ibsnmp-live-sa-follow")

    async def _move_sa(self, lid: int, sl: int) -> None:
        assert self.sa_backend is not None
        old, self._sa = self._sa, None
        self.sa_backend.current = None
        log.info("live: the master SM answers at LID %d now (the SA client asked %s): "
                 "reopening the client there", lid, self._sa_lid or "none")
        self._sa_lid = 0
        if old is not None:
            # Closed without unsubscribing: the old SM is gone or no longer master
            # (a standby forwards no Reports), and an SA that is gone only times out.
            await asyncio.to_thread(old.worker.stop)
        try:
            new = await asyncio.to_thread(self._new_sa, sa_address(lid, sl))
        except Exception as exc:
            log.warning("live: SA at LID %d not opened (%s); tried again after the next sweep",
                        lid, exc)
            return
        self._sa, self.sa_backend.current = new, new.backend
        try:
            await new.start(self._fabric.local_node.management_port.gid())
        except Exception as exc:
            log.warning("live: SA subscriptions failed (%s): traps come from polls only", exc)
        self._read_sa_soon()

    # -- the Provider interface ---------------------------------------------------

    async def start(self) -> None:
        if self._task is not None:
            return
        if self._sa is not None:
            try:
                await self._sa.start(self._fabric.local_node.management_port.gid())
            except Exception as exc:
                log.warning("live: SA subscriptions failed (%s): traps come from polls only", exc)
            self._read_sa_soon()
        self._task = asyncio.create_task(self._run(), name="ibsnmp-live")

    # -- stop deadline (issue 40, item 4): a class attribute read by stop() alone --
    stop_within = 1.5  # seconds stop() takes at most, whatever MADs or SA queries are outstanding

    async def stop(self) -> None:
        """Ends the tasks, the SA client and the port within `stop_within`
        seconds. A poll or sweep still in its thread (it cannot be cancelled)
        is interrupted: its next send or receive raises PortClosing, within
        a receive slice. The SA client interrupts its query, unsubscribes if
        its SA answers, and closes (LiveSa.stop). The port is closed once
        that thread is out of it, else left open for the process's exit
        (one log line)."""
        deadline = time.monotonic() + self.stop_within
        tasks = [t for t in (self._task, self._sa_task, self._follow_task, self._subscriptions_task)
                 if t is not None]
        self._task = self._sa_task = self._follow_task = self._subscriptions_task = None
        await cancel_and_wait(tasks)
        if self._umad is not None:
            self._umad.interrupt()
        if self._sa is not None:
            try:
                await self._sa.stop(within=max(0.0, deadline - time.monotonic()))
            except Exception as exc:  # the SM may be gone: the port is closed all the same
                log.info("live: SA unsubscribe failed: %s", exc)
        # Bounded by the deadline: the executor's thread is free again by then.
        if not await asyncio.to_thread(self._close, max(0.0, deadline - time.monotonic())):
            log.warning("live: a poll or sweep still held %s %.3g s after the stop began: its "
                        "port is left open until the process ends", self._where, self.stop_within)

    def _check_subscriptions_soon(self) -> None:
        """After a poll: ask the SA whether it still lists the agent's trap
        subscriptions (LiveSa.keep_subscribed), beside the polls; one at a time."""
        sa = self._sa
        if sa is None or (self._subscriptions_task is not None and not self._subscriptions_task.done()):
            return
        self._subscriptions_task = asyncio.create_task(self._check_subscriptions(sa),
                                                       name="ibsnmp-live-sa-subscriptions")

    async def _check_subscriptions(self, sa: LiveSa) -> None:
        try:
            gid = self._fabric.local_node.management_port.gid()
            await sa.keep_subscribed(gid)
        except Exception as exc:  # the SM may be restarting: asked again after the next poll
            log.debug("live: SA subscriptions not checked: %s", exc)

    def _read_sa_soon(self) -> None:
        """Re-read the SA's objects beside the polls (an SA slow to answer,
        e.g. while its SM restarts, must not delay them); one read at a time."""
        if self._sa is None or (self._sa_task is not None and not self._sa_task.done()):
            return
        self._sa_task = asyncio.create_task(self._read_sa(), name="ibsnmp-live-sa")

    async def _read_sa(self) -> None:
        """Partitions, multicast groups and services from the SA into the
        snapshot; one the SA did not answer whole keeps what was read before."""
        sa = self._sa
        if sa is None:  # the client is being reopened: it reads them once open
            return
        try:
            objects = await read_sa_objects(sa.backend, self._sa_said)
        except Exception as exc:  # the port or the worker failed: keep what was read
            log_once(self._sa_said, f"SA not read: {exc}")
            return
        old = self.sa_records
        self.sa_records = SaRecords(
            partitions=old.partitions if objects.partitions is None else objects.partitions,
            multicast_groups=(old.multicast_groups if objects.multicast_groups is None
                              else objects.multicast_groups),
            services=old.services if objects.services is None else objects.services)
        if self.sa_records != old:
            self._swap(self._build())

    def _on_report(self, event: TrapEvent) -> None:
        """A trap the SM reported (on the event loop): forwarded as it came,
        unless a poll raised the same one already."""
        if event.trap not in _POLLED_TRAPS or self._ledger.reported(event):
            self._emit(event)

    # -- one poll / one sweep (tests call these directly) ---------------------------

    def poll(self) -> None:
        """One refresh now, in this thread, and a sweep if it saw a change."""
        if self._apply_refresh(self._refresh_now()):
            self.sweep()

    def sweep(self) -> None:
        """One full sweep now, in this thread."""
        sweep = self._sweep_now()
        if sweep is None:
            raise LiveError(f"the local node behind {self._where} does not answer NodeInfo")
        self._apply_sweep(sweep)

    # -- MAD exchanges (worker thread) ---------------------------------------------

    def _window(self) -> MadWindow:
        if self._umad is None:
            raise LiveError(f"{self._where} is closed")
        return MadWindow(self._umad, size=self.mad_window, timeout=self.mad_timeout,
                         retries=self.mad_retries)

    def _sweep_now(self) -> _Sweep | None:
        started = time.monotonic()
        with self._lock:
            window = self._window()
            subnet = discover(window, tables=True)
            if not subnet.nodes:
                return None
            local = next(iter(subnet.nodes))  # the route-less node answers first
            if subnet.unanswered:
                log.debug("live: sweep: %d requests unanswered, e.g. %s", len(subnet.unanswered),
                          subnet.unanswered[0])
            subnet, report = self._keeper.merge(subnet, time.monotonic(), self._sm_lists)
            fabric = build_fabric(subnet, local)
            extended = extended_counter_lids(window, active_lids(fabric))
            targets = counter_targets(fabric)
            details = read_details(window, targets, offered_details(window, targets))
            read = refresh(window, fabric, subnet, extended, ports=False, details=details)
        return _Sweep(subnet, local, extended, read.counters, details, report, window.stats,
                      time.monotonic() - started)

    def _sm_lists(self, guids: Sequence[int]) -> Mapping[int, bool]:
        """Whether the SM's records (SA NodeRecords) list each node of `guids`,
        asked from the sweep's thread within SM_RECORDS_S; {} without an SA
        client, or while its SA does not answer."""
        sa = self._sa
        if sa is None or sa.worker.silent:
            return {}
        future = sa.worker.submit(lambda client: nodes_listed(client, guids, SM_RECORDS_S))
        try:
            return future.result(timeout=2 * SM_RECORDS_S)
        except Exception as exc:  # stopping, or the worker failed: the sweeps decide
            log.debug("live: SA NodeRecords not read: %s", exc)
            return {}

    def _refresh_now(self) -> Refresh:
        with self._lock:
            return refresh(self._window(), self._fabric, self._subnet, self._extended,
                           known=self._port_octets, details=self._details)

    def _close(self, wait: float = -1) -> bool:
        """Closes the port once no MAD exchange holds it, waiting up to `wait`
        seconds for one to end (-1: as long as it takes); False if one still
        held it then (the port stays open)."""
        if not self._lock.acquire(timeout=wait):
            return False
        try:
            if self._umad is not None:
                self._umad.close()
                self._umad = None
        finally:
            self._lock.release()
        return True

    # -- snapshots (event loop) ------------------------------------------------------

    def _install(self, sweep: _Sweep) -> None:
        self._subnet, self._local = sweep.subnet, sweep.local_guid
        self._extended = sweep.extended_lids
        # A port whose PMA did not answer the sweep keeps its last counters and details.
        details = dict(self._details)
        details.update(sweep.details)
        self._details = details
        counters = sweep.counters
        for guid, ports in self._counters.items():
            if guid in sweep.subnet.nodes:
                mine = counters.setdefault(guid, {})
                for num, values in ports.items():
                    mine.setdefault(num, values)
        self._counters = counters
        self._port_infos = {}
        self._port_octets: dict[PortRef, bytes] = {}  # as the last poll read them

    def _build(self) -> Fabric:
        measured = {PortRef(guid, num): MeasuredCounters(values, values.plan.layout.wide)
                    for guid, ports in self._counters.items() for num, values in ports.items()}
        return build_fabric(self._subnet, self._local, port_infos=self._port_infos,
                            counters=measured, sa=self.sa_records,
                            spec=f"live ({self._where})")

    def _apply_sweep(self, sweep: _Sweep) -> None:
        old = set(self._fabric.nodes)
        self._install(sweep)
        self.sweeps += 1
        new = set(sweep.subnet.nodes)
        for guid in new - old:
            log.info("live: node %016x (%s) found", guid,
                     sweep.subnet.nodes[guid].description or "no description")
        self._say_sweep(sweep)  # while the snapshot still names the nodes gone now
        # What reads as before keeps its objects, and what was derived of it.
        self._swap(successor(self._fabric, self._build()))

    def _say_sweep(self, sweep: _Sweep) -> None:
        """One INFO line per sweep; a WARNING for each node it began keeping on
        old values or confirmed gone, an INFO line for one that answers again."""
        report, stats = sweep.report, sweep.stats
        answered_again = [guid for guid in self._kept if guid not in report.kept]
        log.info("live: sweep in %.2f s: %d nodes (%d kept from earlier sweeps), %d MADs, "
                 "%d timeouts, %d retries", sweep.seconds, len(sweep.subnet.nodes), len(report.kept),
                 stats.sent, stats.timed_out, stats.retried)
        now = time.monotonic()
        for guid in report.kept:
            if guid not in self._kept:
                log.warning("live: node %016x (%s) did not answer this sweep: serving what an "
                            "earlier sweep read until it is missing from %d sweeps in a row or "
                            "the SM no longer lists it", guid, self._describe(guid),
                            self._keeper.confirm_after)
        for guid in answered_again:
            if guid not in report.gone:
                log.info("live: node %016x (%s) answers again, after %.0f s on earlier readings",
                         guid, self._describe(guid), now - self._kept[guid])
        for guid in report.gone:
            why = ("the SM no longer lists it (SA NodeRecord)" if guid in report.gone_from_sm
                   else f"missing from {self._keeper.confirm_after} sweeps in a row")
            kept = f", after {now - self._kept[guid]:.0f} s on earlier readings" if guid in self._kept else ""
            log.warning("live: node %016x (%s) confirmed gone: %s%s", guid, self._describe(guid), why, kept)
        for guid, num in report.stale_masters:
            log.warning("live: the SM at %016x port %d no longer answers SMInfo and another SM is "
                        "master: no longer served as master", guid, num)
        self._kept = {guid: self._kept.get(guid, now) for guid in report.kept}

    def _describe(self, guid: int) -> str:
        node = self._fabric.nodes.get(guid)
        return (node.description if node is not None else None) or "no description"

    def _apply_refresh(self, result: Refresh) -> bool:
        """Swap in what a refresh read; True if it saw a change a sweep must follow.

        A poll that read new counter values and nothing else keeps the
        snapshot's structure (fabric.succession.with_values); one that read a
        node's PortInfo or SwitchInfo differently rebuilds that node alone."""
        self.polls += 1
        changed = False
        reread: set[int] = set()  # nodes whose structure read differently
        for ref, info in result.port_infos.items():  # the ports whose octets changed
            before = self._port_infos.get(ref) or self._subnet.nodes[ref.guid].ports.get(ref.port)
            if before is None or any(before[f] != info[f] for f in _RESWEEP_PORT_FIELDS):
                changed = True
            if before != info:
                reread.add(ref.guid)
        self._port_infos.update(result.port_infos)
        self._port_octets.update(result.port_octets)
        for guid, switch_info in result.switch_infos.items():
            node = self._subnet.nodes[guid]
            if node.switch_info == switch_info:
                continue  # as read before (compared whole first: the usual case)
            if node.switch_info is not None and any(
                    node.switch_info.get(f) != v for f, v in switch_info.items()
                    if f not in _VOLATILE_SWITCH_FIELDS):
                changed = True
            reread.add(guid)
            node.switch_info = switch_info
        answered = {ref.guid for ref in result.port_octets}
        if any(guid not in answered and not self._keeper.missing(guid) for guid in self._fabric.nodes):
            changed = True  # a node stopped answering (not one known silent): a sweep says more
        changed = self._take_sm_infos(result, reread) or changed
        self._thresholds = self._take_counters(result, reread)
        if result.failures:
            log.debug("live: poll: %d requests unanswered, e.g. %s", len(result.failures),
                      next(iter(result.failures.items())))
        self._sum_poll(result)
        if reread:
            self._swap(successor(self._fabric, self._build(), reread))
        else:
            self._swap(with_values(self._fabric, MappingProxyType(self._counters)))
        return changed

    def _take_sm_infos(self, result: Refresh, reread: set[int]) -> bool:
        """SMInfo as this poll read it; True if an SM changed state (a
        failover: a sweep follows). An SM that did not answer keeps its
        last SMInfo, unless it said MASTER and another says so now."""
        changed = False
        for (guid, num), info in result.sm_infos.items():
            node = self._subnet.nodes.get(guid)
            tables = node.tables.get(num) if node is not None else None
            if tables is None or tables.sm_info == info:
                continue
            if tables.sm_info is None or any(tables.sm_info.get(f) != v for f, v in info.items()
                                             if f != "ActCount"):
                reread.add(guid)
                changed = changed or tables.sm_info is None or tables.sm_info.get("SMState") != info.get(
                    "SMState")
            tables.sm_info = info
        for guid, num in sm_ports(self._subnet):
            read = self._port_infos.get(PortRef(guid, num))
            if read is not None and not read["CapabilityMask"] & IS_SM:
                log.info("live: the SM at %016x port %d stopped (its port no longer says IsSM)",
                         guid, num)
                self._subnet.nodes[guid].tables[num].sm_info = None
                reread.add(guid)
                changed = True
        if any(info.get("SMState") == SM_STATE_MASTER for info in result.sm_infos.values()):
            for guid, num in sm_ports(self._subnet):
                tables = self._subnet.nodes[guid].tables[num]
                if (guid, num) not in result.sm_infos and tables.sm_info is not None \
                        and tables.sm_info.get("SMState") == SM_STATE_MASTER:
                    log.warning("live: the SM at %016x port %d no longer answers SMInfo and another "
                                "SM is master: no longer served as master", guid, num)
                    tables.sm_info = None
                    reread.add(guid)
                    changed = True
        return changed

    def _sum_poll(self, result: Refresh) -> None:
        """Add a poll to the sums; one line once a minute."""
        sums = self._polls
        sums.count += 1
        sums.sent += result.sent
        sums.timed_out += result.timed_out
        sums.retried += result.retried
        sums.slowest = max(sums.slowest, result.seconds)
        now = time.monotonic()
        if now - sums.since >= POLL_SUMMARY_S:
            log.info("live: %d polls in the last %.0f s (%d failed): up to %.2f s each, %d MADs, "
                     "%d timeouts, %d retries", sums.count, now - sums.since, sums.failed,
                     sums.slowest, sums.sent, sums.timed_out, sums.retried)
            self._polls = _PollSums(now)

    def _take_counters(self, result: Refresh, reread: set[int]) -> dict[PortRef, tuple[int | None, int | None]]:
        """Keep the counters `result` read (by node: what a snapshot's
        counter_values is, never changed after), adding to `reread` the
        nodes whose PMA now reports other counters (their rows change); a
        port not read this time keeps its last values.  The threshold
        watcher's two counters of each port read."""
        before, counters = self._counters, result.counters
        for guid, ports in counters.items():
            was = before.get(guid)
            if was is None or any(
                    (old := was.get(num)) is None or old.plan is not values.plan for num, values in ports.items()):
                reread.add(guid)
        if sum(map(len, counters.values())) < sum(map(len, before.values())):  # some port did not answer
            for guid, ports in before.items():
                for num, values in ports.items():
                    counters.setdefault(guid, {}).setdefault(num, values)
        self._counters = counters
        return result.thresholds

    def _swap(self, new: Fabric) -> None:
        """Serve `new`, then raise trap 128 for the switch ports whose link
        crossed Down (see snapshot.link_state)."""
        old = self._fabric
        transitions = []
        same = new.lineage is old.lineage  # new values only: no port changed state
        for node in () if same else new.nodes.values():
            for port in node.ports:
                was = old.port(node.guid, port.num)
                if was is None:
                    continue
                before, after = link_state(was.info), link_state(port.info)
                if before is not after:
                    log.info("live: %s port %d: %s -> %s", node.label, port.num,
                             before.name, after.name)
                    transitions.append(PortTransition(port.ref, before, after))
        self._fabric = new
        read, self._thresholds = self._thresholds, {}
        crossings = self._watcher.poll(new, self._clock() - self._started, read)
        for event in (*link_state_traps(new, tuple(transitions)),
                      *(crossing.event(new) for crossing in crossings)):
            if self._ledger.polled(event):
                self._emit(event)

    async def _run(self) -> None:
        next_poll = time.monotonic() + self.poll_interval
        next_sweep = time.monotonic() + self.sweep_interval
        failing = False
        number = 0  # of the poll, since the start: the debug lines count them
        while True:
            await asyncio.sleep(max(0.0, next_poll - time.monotonic()))
            next_poll = max(next_poll + self.poll_interval, time.monotonic())  # no catch-up bursts
            number += 1
            try:
                due = time.monotonic() >= next_sweep
                if not due:
                    due = self._apply_refresh(await asyncio.to_thread(self._refresh_now))
                    self._check_subscriptions_soon()
                if due:
                    sweep = await asyncio.to_thread(self._sweep_now)
                    if sweep is None:
                        raise LiveError(f"the local node behind {self._where} does not answer")
                    self._apply_sweep(sweep)
                    next_sweep = time.monotonic() + self.sweep_interval
                    self._follow_sm()
                    self._read_sa_soon()
                log.debug("live: poll %d done (%s)", number, "a sweep" if due else "a refresh")
                if failing:
                    failing = False
                    log.info("live: reading the subnet again")
            except Exception as exc:
                self._polls.failed += 1
                if failing:
                    log.debug("live: poll %d failed too: %s", number, exc)
                else:
                    failing = True
                    log.exception("live: poll failed; serving the last snapshot, trying again "
                                  "every %.3g s", self.poll_interval)

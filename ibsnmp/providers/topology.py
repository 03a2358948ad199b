"""The topology provider: a real fabric from an `ibnetdiscover` dump.

    TopologyProvider(path, lft_path=Path("/var/log/opensm-lfts.dump"), sm_guid=0x0002c9030012ab35)

The constructor reads the files: `snapshot` is valid at once, a bad file fails there with a
TopologyError naming the line. Only what the files hold is served (fabric.ibnetdiscover_read,
fabric.lft_read); forwarding tables are the SM's, never computed. `reload()`, SIGHUP and a
file watch read them again; a file that does not read keeps the last good snapshot. No events.
Reference: docs/providers.md, 'A fabric: an ibnetdiscover dump'.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict, TypeVar

from ibsnmp.fabric.ibnetdiscover_read import TopologyError, load_topology
from ibsnmp.fabric.lft_read import load_lfts, with_forwarding
from ibsnmp.fabric.model import Fabric

from .base import ProviderCore, cancel_and_wait

__all__ = ["TopologyProvider", "TopologyError", "DEFAULT_WATCH_INTERVAL", "rereading"]

log = logging.getLogger("ibsnmp.providers.topology")

# How often the files' modification time and size are looked at: a stat
# call each, so often enough that a change is served within seconds.
DEFAULT_WATCH_INTERVAL = 2.0

_T = TypeVar("_T")


class _LoadOptions(TypedDict):
    """load_topology's keywords, kept for every reload."""

    sm_guid: int | None
    sm_priority: int
    local_guid: int | None


_Stamp = tuple[int, int] | None  # (mtime in ns, size); None: the file is missing


class TopologyProvider(ProviderCore):
    """`TopologyProvider(path, *, lft_path=None, sm_guid=None, sm_priority=0,
    local_guid=None, watch_interval=DEFAULT_WATCH_INTERVAL)`.

    `lft_path`: an OpenSM `opensm-lfts.dump` or `ibroute` output; without
    it there are no forwarding tables and no traces.  `sm_guid`: the node
    or port GUID `sminfo` reports (a dump names no SM): one master SM there
    with `sm_priority`, its SM_Key, ActCount and configuration unknown;
    without it, no SM, and ibsnmp.mib.targets serves IB-SM-MIB nowhere.
    `local_guid`: the default context's node (default: the one discovery
    was "Initiated from").  While started, the files' modification time
    and size are looked at every `watch_interval` seconds, and a change
    that then stays for one interval is read (a file being written is not
    read half).  What SETs configured lives outside the snapshot
    (state.store.ConfiguredProvider) and is applied to each new one."""

    def __init__(self, path: Path | str, *, lft_path: Path | str | None = None,
                 sm_guid: int | None = None, sm_priority: int = 0, local_guid: int | None = None,
                 watch_interval: float = DEFAULT_WATCH_INTERVAL) -> None:
        super().__init__()
        self._path = Path(path)
        self._lft_path = Path(lft_path) if lft_path is not None else None
        self._options = _LoadOptions(sm_guid=sm_guid, sm_priority=sm_priority,
                                     local_guid=local_guid)
        self._watch_interval = watch_interval
        self._task: asyncio.Task[None] | None = None
        started = time.perf_counter()
        self._stamps = self._file_stamps()
        self._fabric = self._load()
        self._load_seconds = time.perf_counter() - started
        log.info("topology %s: %d nodes, %d links, %d LIDs, %s in %.2f s", self._path,
                 len(self._fabric.nodes), len(self._fabric.links), len(self._fabric.lid_map),
                 self._forwarding_summary(self._fabric), self._load_seconds)

    # -- the Provider interface ---------------------------------------------------

    # add_listener (ProviderCore): a file describes one moment, so no event
    # is ever emitted.

    async def start(self) -> None:
        """Watch the files for changes (the fabric was loaded by the constructor)."""
        if self._task is None and self._watch_interval > 0:
            self._task = asyncio.create_task(self._watch(), name="ibsnmp-topology-watch")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait([task])

    # -- extras -------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._path

    @property
    def lft_path(self) -> Path | None:
        return self._lft_path

    @property
    def load_seconds(self) -> float:
        """How long the constructor's load took (wall clock)."""
        return self._load_seconds

    def reload(self) -> Fabric:
        """Read the files again and swap the new snapshot in; a bad file
        raises TopologyError and leaves the current snapshot served."""
        stamps = self._file_stamps()
        fabric = self._load()
        self._fabric, self._stamps = fabric, stamps
        return fabric

    def refresh(self, reason: str) -> bool:
        """`reload`, logged in one line either way; False if the files did
        not read (the last good snapshot stays)."""
        try:
            fabric = self.reload()
        except TopologyError as exc:
            # Not again for the same bad files: the watch compares stamps.
            self._stamps = self._file_stamps()
            log.error("topology not reloaded (%s): %s; the last good snapshot stays", reason, exc)
            return False
        log.info("topology reloaded (%s): %d nodes, %d links, %d LIDs, %s", reason, len(fabric.nodes),
                 len(fabric.links), len(fabric.lid_map), self._forwarding_summary(fabric))
        return True

    # -- inside -------------------------------------------------------------------

    def _load(self) -> Fabric:
        fabric = load_topology(self._path, **self._options)
        if self._lft_path is None:
            return fabric
        fabric, strangers = with_forwarding(fabric, load_lfts(self._lft_path))
        if strangers:
            log.warning("%s: %d table(s) of switches the topology does not have, e.g. %016x: not served",
                        self._lft_path, len(strangers), strangers[0])
        return fabric

    def _file_stamps(self) -> tuple[_Stamp, ...]:
        paths = (self._path,) if self._lft_path is None else (self._path, self._lft_path)
        return tuple(_stamp(path) for path in paths)

    async def _watch(self) -> None:
        # A file being written (ibnetdiscover > file) changes from one look to
        # the next: it is read once it has kept its stamps for one interval.
        seen = self._stamps
        while True:
            await asyncio.sleep(self._watch_interval)
            now = self._file_stamps()
            if now != self._stamps and now == seen:
                # A large fabric's files are slow to parse: not on the
                # loop that answers requests (the swap is one assignment).
                await asyncio.to_thread(self.refresh, "changed on disk")
            seen = now

    @staticmethod
    def _forwarding_summary(fabric: Fabric) -> str:
        if fabric.forwarding is None:
            return "no forwarding tables"
        return f"forwarding tables of {len(fabric.forwarding.linear)} switches"


def _stamp(path: Path) -> _Stamp:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size


def rereading(provider: object, load: Callable[[], _T]) -> Callable[[], _T]:
    """`load` (what SIGHUP reloads) preceded by a re-read of the files of a
    topology provider: a bad configuration does not stop the files being
    read, nor bad files the configuration."""
    if not isinstance(provider, TopologyProvider):
        return load
    topology = provider

    def reload() -> _T:
        topology.refresh("SIGHUP")
        return load()

    return reload

"""The topology provider: a real fabric from an `ibnetdiscover` dump.

    provider = TopologyProvider(Path("fabric.topo"))        # loads now
    provider = TopologyProvider(path, sm_guid=0x0002c9030012ab35)

The file is read once, synchronously, in the constructor (a 10,000-node dump
takes well under a second), so `snapshot` is valid at once and a bad file
fails there with a TopologyError that names the line.  What the snapshot
holds and what it leaves out is described in `ibsnmp.fabric.ibnetdiscover_read`.
In short: every node, port, link and LID of the file, forwarding tables
computed by `ibsnmp.fabric.routing`, no counters, no SL-to-VL or VL
arbitration tables, no multicast groups, services or connections.

Subnet managers.  A dump does not say which port runs the SM.  With
`sm_guid` (the node GUID or port GUID `sminfo` reports) the snapshot has one
master SM there: SMInfo's GUID, LID (every port's MasterSMLID) and IsSM
capability are the file's, its priority is `sm_priority` (default 0,
OpenSM's), SM_Key reads 0 (what SMInfo returns to a requester without the
key) and ActCount 0 (not known); ibSmConfigTable shows OpenSM's default
configuration.  Without it the snapshot has no SM: ibSmSMInfoTable would be
empty, and `ibsnmp.mib.targets`, which answers IB-SM-MIB in the default
context only when the fabric has an SM, then serves IB-SM-MIB nowhere.

The default context is the node discovery was "Initiated from" (the header
comment), unless `local_guid` names another.

Nothing changes after loading: there are no events and `start`/`stop` have
no task to run.  `reload()` reads the file again and swaps the snapshot in
(the old one stays if the file is now bad).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from ibsnmp.fabric.ibnetdiscover_read import TopologyError, load_topology
from ibsnmp.fabric.model import Fabric

from .base import ProviderCore

__all__ = ["TopologyProvider", "TopologyError"]

log = logging.getLogger("ibsnmp.providers.topology")


class TopologyProvider(ProviderCore):
    """`TopologyProvider(path, *, sm_guid=None, sm_priority=0, local_guid=None)`."""

    def __init__(self, path: Path | str, *, sm_guid: int | None = None, sm_priority: int = 0,
                 local_guid: int | None = None) -> None:
        super().__init__()
        self._path = Path(path)
        self._options = dict(sm_guid=sm_guid, sm_priority=sm_priority, local_guid=local_guid)
        started = time.perf_counter()
        self._fabric = load_topology(self._path, **self._options)  # type: ignore[arg-type]
        self._load_seconds = time.perf_counter() - started
        log.info("topology %s: %d nodes, %d links, %d LIDs in %.2f s", self._path,
                 len(self._fabric.nodes), len(self._fabric.links), len(self._fabric.lid_map),
                 self._load_seconds)

    # -- the Provider interface ---------------------------------------------------

    # add_listener (ProviderCore): a file describes one moment, so no event
    # is ever emitted.

    async def start(self) -> None:
        """Nothing to run: the fabric was loaded by the constructor."""

    async def stop(self) -> None:
        """Nothing to stop."""

    # -- extras -------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._path

    @property
    def load_seconds(self) -> float:
        """How long the constructor's load took (wall clock)."""
        return self._load_seconds

    def reload(self) -> Fabric:
        """Read the file again and swap the new snapshot in; a bad file
        raises TopologyError and leaves the current snapshot served."""
        fabric = load_topology(self._path, **self._options)  # type: ignore[arg-type]
        self._fabric = fabric
        return fabric

"""The Linux sysfs provider: this host's InfiniBand devices as /sys/class/infiniband shows them.

`SysfsProvider` reads at construction (a snapshot at once, or SysfsError), then polls in a
worker thread; `build_fabric` and `changes` are its pure parts. Every device is a node, the
first by name the default context. Nothing is invented: what sysfs does not tell is None,
served as no instance. Traps 128 (a switch port crossing Down), 144, 145, and 129/130 by
providers.thresholds' rule. No links, peers or SM (no IB-SM-MIB); no counter is cleared.
Reference: docs/providers.md, 'A host: sysfs' (files, conversions, what is absent).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric.changes import PortTransition
from ibsnmp.fabric.iba import DEFAULT_SUBNET_PREFIX, CaType, NodeType, PortPhysState, PortState
from ibsnmp.fabric.model import CaInfo, Fabric, MeasuredCounters, Node, Port, PortInfo, PortRef, values_by_node
from ibsnmp.fabric.succession import successor

from .base import ProviderCore, cancel_and_wait
from .scenario import link_state_traps
from .sysfs_read import DEFAULT_TABLE_REFRESH_S, DeviceReading, PortReading, SysfsReader
from .thresholds import ThresholdWatcher

__all__ = ["DEFAULT_ROOT", "SysfsError", "SysfsProvider", "build_fabric"]

DEFAULT_ROOT = Path("/sys/class/infiniband")
DEFAULT_POLL_INTERVAL = 5.0

log = logging.getLogger("ibsnmp.providers.sysfs")

_GUID_MASK = (1 << 64) - 1
_ACTIVE_DEFER = 5  # the kernel's IB_PORT_ACTIVE_DEFER: Active, held back for a bond
# PCI vendor id -> the IEEE OUI IBA NodeInfo:VendorID carries.
PCI_VENDOR_OUI: dict[int, int] = {0x15B3: 0x0002C9}  # Mellanox / NVIDIA


class SysfsError(ValueError):
    """The sysfs tree has no InfiniBand device to serve."""


# -- readings -> the model ------------------------------------------------------------


def _port_state(code: int | None) -> PortState | None:
    if code == _ACTIVE_DEFER:
        return PortState.ACTIVE
    if code is None or not 0 <= code <= 4:
        return None
    return PortState(code)


def _phys_state(code: int | None) -> PortPhysState | None:
    return PortPhysState(code) if code is not None and 0 <= code <= 7 else None


def _is_ib(reading: PortReading) -> bool:
    # A port whose link_layer cannot be read is taken as InfiniBand (the
    # file appeared in kernel 2.6.37; older ones had InfiniBand only).
    return reading.link_layer != "Ethernet"


_UNKNOWN_INFO: dict[str, Any] = dict.fromkeys(PortInfo._fields)


def _port(node_guid: int, r: PortReading, state: PortState) -> Port:
    gid0 = r.gids[0] if r.gids else 0
    ib = _is_ib(r)
    rate = r.rate
    info = dict(_UNKNOWN_INFO)
    info.update(
        gid_prefix=(gid0 >> 64) if ib and gid0 else None,
        lid=r.lid or 0,
        master_sm_lid=r.sm_lid,
        capability_mask=r.cap_mask,
        local_port_num=r.num,
        link_width_active=rate.width if rate else None,
        port_state=state,
        phys_state=_phys_state(r.phys_state),
        lmc=r.lmc or 0,
        link_speed_active=rate.speed if rate else None,
        master_sm_sl=r.sm_sl,
        guid_cap=len(r.gids) if ib and r.gids else None,
        link_speed_ext_active=rate.speed_ext if rate else None,
    )
    guids: tuple[int, ...] | None = None
    if ib:
        entries = [gid & _GUID_MASK for gid in r.gids]
        while entries and not entries[-1]:
            entries.pop()
        guids = tuple(entries)
    return Port(
        node_guid=node_guid,
        num=r.num,
        guid=(gid0 & _GUID_MASK) or None,
        info=PortInfo(**info),
        pkeys=r.pkeys,
        sl2vl=(),
        vl_arb_high=(),
        vl_arb_low=(),
        guids=guids,
        remote=None,
        physical_interface=None,
        led_on=None,
        vendor_diag=None,
        gids=r.gids,
        counter_layout=_measured(r).layout,
    )


def _measured(r: PortReading) -> MeasuredCounters:
    return MeasuredCounters(MappingProxyType(dict(r.counters)), r.wide)


def _node(d: DeviceReading, node_type: NodeType, node_guid: int) -> Node | None:
    ports = []
    for r in d.ports:
        state = _port_state(r.state)
        if state is None:
            log.debug("sysfs: %s port %d: no readable state; left out", d.name, r.num)
            continue
        ports.append(_port(node_guid, r, state))
    if not ports:
        return None
    is_switch = node_type is NodeType.SWITCH
    data = [p for p in ports if p.num != 0] if is_switch else ports
    if is_switch:
        local = 0
    else:  # the port an SM reaches the CA through: the first Active IB port, else the first
        readings = {r.num: r for r in d.ports}
        ib = [p for p in ports if _is_ib(readings[p.num])]
        active = [p for p in ib if p.is_active]
        local = (active or ib or ports)[0].num
    mgmt = next((p for p in ports if p.num == local), ports[0])
    ca = None
    if node_type is NodeType.CA:
        ca = CaInfo(
            ca_type=CaType.HCA, reliable_connection=None, unreliable_connection=None, reliable_datagram=None,
            unreliable_datagram=None, atomic_operations=None, other_operations=None, solicited_events=None,
            max_path_mtu=None, end_to_end_flow_control=None, multicast=None, automatic_path_migration=None,
            memory_protection=None, loopback=None, subnet_manager=None, static_rate_control=None,
            interpacket_delay=None, multipathing=None, validates_inbound_dlid=None,
            max_gids_per_port=max((len(p.gids or ()) for p in ports), default=0),
        )
    return Node(
        guid=node_guid,
        node_type=node_type,
        description=d.node_desc,  # None: node_desc could not be read
        system_image_guid=d.sys_image_guid,
        base_version=None,
        class_version=None,
        vendor_id=PCI_VENDOR_OUI.get(d.pci_vendor) if d.pci_vendor is not None else None,
        device_id=d.pci_device,  # NVIDIA/Mellanox NodeInfo reports the PCI device id
        revision=d.hw_rev,
        num_ports=len(data) or None,  # a switch shows port 0 alone: absent
        partition_cap=len(mgmt.pkeys) or None,
        local_port_num=local,
        ports=tuple(ports),
        switch=None,
        ca=ca,
        model_name=d.hca_type or "",
        device_name=d.name,
        firmware_version=d.fw_ver,
    )


def build_fabric(devices: Sequence[DeviceReading], *, spec: str = "sysfs",
                 on_skip: dict[str, str] | None = None) -> tuple[Fabric | None, dict[int, str]]:
    """The snapshot of a host's devices (None if none is usable), and the
    device name of each node GUID.  `on_skip` collects why devices were
    left out (name -> reason)."""
    nodes: dict[int, Node] = {}
    names: dict[int, str] = {}
    values: dict[PortRef, MeasuredCounters] = {}
    for d in devices:
        why = ""
        if d.node_type not in (1, 2, 3):
            why = f"node_type {d.node_type} is not an InfiniBand CA, switch or router"
        elif d.node_guid is None:
            why = "no readable node_guid"
        elif d.node_guid in nodes:
            why = f"node GUID {d.node_guid:016x} is {names[d.node_guid]}'s too"
        node = None if why else _node(
            d, NodeType(d.node_type), d.node_guid)  # type: ignore[arg-type]  # no why: both good
        if node is None:
            if on_skip is not None:
                on_skip[d.name] = why or "no port with a readable state"
            continue
        nodes[node.guid] = node
        names[node.guid] = d.name
        served = {port.num for port in node.ports}
        values.update((PortRef(node.guid, r.num), _measured(r)) for r in d.ports if r.num in served)
    if not nodes:
        return None, names
    local = next(iter(nodes.values()))
    lid_map: dict[int, PortRef] = {}
    for node in nodes.values():
        for port in node.ports:
            if port.info.lid and port.info.lid not in lid_map:
                lid_map[port.info.lid] = port.ref
    prefix = local.management_port.info.gid_prefix
    fabric = Fabric(
        subnet_prefix=prefix if prefix is not None else DEFAULT_SUBNET_PREFIX,
        nodes=MappingProxyType(nodes),
        links=(),
        lid_map=MappingProxyType(lid_map),
        sms=(),
        sm_config=None,
        partitions=(),
        multicast_groups=(),
        services=(),
        connections=MappingProxyType({}),
        local_node_guid=local.guid,
        spec=spec,
        host_node_guids=tuple(nodes),  # every device is this host's
        counter_values=values_by_node(values),
    )
    return fabric, names


# -- changes -> events ------------------------------------------------------------------


def _issuer_lid(node: Node, port: Port) -> int:
    """LIDADDR of a trap: a switch's port 0 LID, a CA port's own LID."""
    return node.ports[0].lid if node.is_switch else port.lid


def changes(old: Fabric, new: Fabric, names: dict[int, str]) -> tuple[TrapEvent, ...]:
    """The traps between two snapshots (128, 144, 145), logging what changed."""
    events: list[TrapEvent] = []
    transitions: list[PortTransition] = []
    for guid, node in new.nodes.items():
        before = old.nodes.get(guid)
        name = names.get(guid, f"{guid:016x}")
        if before is None:
            log.info("sysfs: %s (node %016x) is served", name, guid)
            continue
        if node.description != before.description:
            log.info("sysfs: %s: node description %r -> %r", name, before.description, node.description)
        if (node.system_image_guid is not None and before.system_image_guid is not None
                and node.system_image_guid != before.system_image_guid):
            log.info("sysfs: %s: system image GUID %016x -> %016x", name, before.system_image_guid,
                     node.system_image_guid)
            events.append(TrapEvent(IbaTrap.SYSTEM_IMAGE_GUID_CHANGED, guid,
                                    _issuer_lid(node, node.management_port),
                                    system_image_guid=node.system_image_guid))
        for port in node.ports:
            was = before.port(port.num)
            if was is None:
                continue
            a, b = was.info, port.info
            if a.port_state != b.port_state or a.phys_state != b.phys_state:
                log.info("sysfs: %s port %d: %s/%s -> %s/%s", name, port.num, a.port_state.name,
                         a.phys_state.name if a.phys_state is not None else "?", b.port_state.name,
                         b.phys_state.name if b.phys_state is not None else "?")
            if a.port_state != b.port_state:
                transitions.append(PortTransition(port.ref, a.port_state, b.port_state))
            if a.lid != b.lid or a.master_sm_lid != b.master_sm_lid:
                log.info("sysfs: %s port %d: LID %s SM LID %s -> LID %s SM LID %s", name, port.num,
                         a.lid, a.master_sm_lid, b.lid, b.master_sm_lid)
            if (b.capability_mask is not None and a.capability_mask is not None
                    and a.capability_mask != b.capability_mask):
                log.info("sysfs: %s port %d: capability mask 0x%08x -> 0x%08x", name, port.num,
                         a.capability_mask, b.capability_mask)
                events.append(TrapEvent(IbaTrap.CAPABILITY_MASK_CHANGED, guid, _issuer_lid(node, port),
                                        capability_mask=b.capability_mask))
    for guid in old.nodes:
        if guid not in new.nodes:
            log.warning("sysfs: node %016x (%s) is no longer served", guid, names.get(guid, "gone"))
    return link_state_traps(new, tuple(transitions)) + tuple(events)


# -- the provider ------------------------------------------------------------------------


class SysfsProvider(ProviderCore):
    """`SysfsProvider(root=/sys/class/infiniband, poll_interval=5.0)`.

    The first read happens here, so `snapshot` is valid at once; raises
    SysfsError if `root` has no usable InfiniBand device.  `start()` polls
    every `poll_interval` seconds; `poll()` is one poll now (synchronous).
    `table_refresh`: seconds between re-reads of each port's GID and P_Key
    tables, the device's slow files and the directory listings, spread over
    the polls (see sysfs_read).  `clock`: the reader's monotonic clock (for
    tests and benchmarks).
    """

    def __init__(self, root: Path | str = DEFAULT_ROOT, poll_interval: float = DEFAULT_POLL_INTERVAL, *,
                 table_refresh: float = DEFAULT_TABLE_REFRESH_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not poll_interval > 0:
            raise ValueError(f"poll_interval must be > 0, got {poll_interval}")
        self.root = Path(root)
        self.poll_interval = poll_interval
        self._reader = SysfsReader(self.root, table_refresh=table_refresh, clock=clock)
        super().__init__()
        self._task: asyncio.Task[None] | None = None
        self._skipped: set[str] = set()
        self._said_roce: set[tuple[str, int]] = set()
        readings = self._reader.read(full=True)
        fabric, names = self._build(readings)
        if fabric is None:
            found = ", ".join(d.name for d in readings) or "nothing"
            raise SysfsError(f"no InfiniBand device to serve under {self.root} (found: {found})")
        self._readings = readings
        self._fabric = fabric
        self._names = names
        self._watcher = ThresholdWatcher(clear_after_trap=False)
        self._watcher.poll(fabric, self.elapsed())  # the baseline
        for d in readings:
            if d.name in names.values():
                log.info("sysfs: %s: %s fw %s board %s, %d port(s)", d.name, d.hca_type or "?",
                         d.fw_ver or "?", d.board_id or "?", len(d.ports))

    # -- the Provider interface ---------------------------------------------------

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="ibsnmp-sysfs")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait([task] if task is not None else [])

    # -- extras -------------------------------------------------------------------

    @property
    def devices(self) -> dict[int, str]:
        """Node GUID -> device name (mlx5_0 ...) of the nodes served now."""
        return dict(self._names)

    @property
    def readings(self) -> tuple[DeviceReading, ...]:
        """What the last poll read (every device, also the skipped ones)."""
        return self._readings

    @property
    def watcher(self) -> ThresholdWatcher:
        return self._watcher

    def poll(self, *, full: bool = False) -> tuple[TrapEvent, ...]:
        """One poll now, in this thread: read, swap in what changed, emit and
        return the events (for tests and benchmarks; not while start()'s
        task runs, which reads from a worker thread)."""
        return self.apply(self._reader.read(full=full))

    def apply(self, readings: tuple[DeviceReading, ...]) -> tuple[TrapEvent, ...]:
        """Make `readings` the snapshot (if anything changed) and emit the
        events of the change and of the threshold watch."""
        if readings == self._readings:
            return ()
        fabric, names = self._build(readings)
        if fabric is None:
            log.warning("sysfs: no usable device left under %s; serving the last one read", self.root)
            self._readings = readings
            return ()
        old, old_names = self._fabric, self._names
        events = changes(old, fabric, {**old_names, **names})
        self._names, self._readings = names, readings
        # Nodes that read as before stay the objects they were (and what was
        # derived of them): a poll that moved counters changes values only.
        fabric = successor(old, fabric)
        self._fabric = fabric
        crossings = self._watcher.poll(fabric, self.elapsed())
        events += tuple(c.event(fabric) for c in crossings)
        for event in events:
            self._emit(event)
        return events

    # -- internals ------------------------------------------------------------------

    def _build(self, readings: tuple[DeviceReading, ...]) -> tuple[Fabric | None, dict[int, str]]:
        skipped: dict[str, str] = {}
        fabric, names = build_fabric(readings, spec=f"sysfs {self.root}", on_skip=skipped)
        for name, why in skipped.items():
            if name not in self._skipped:
                self._skipped.add(name)
                log.warning("sysfs: %s is not served: %s", name, why)
        for d in readings:
            for r in d.ports:
                if not _is_ib(r) and (d.name, r.num) not in self._said_roce:
                    self._said_roce.add((d.name, r.num))
                    log.info("sysfs: %s port %d is RoCE (link layer Ethernet): served for what sysfs "
                             "shows (state, rate, GIDs, counters); no GUIDInfo or GID prefix", d.name, r.num)
        return fabric, names

    async def _run(self) -> None:
        interval = self.poll_interval
        next_at = time.monotonic() + interval
        failed_once = False
        while True:
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            next_at = max(next_at + interval, time.monotonic())  # no catch-up bursts
            try:
                readings = await asyncio.to_thread(self._reader.read)
                self.apply(readings)
            except Exception:
                if not failed_once:
                    failed_once = True
                    log.exception("sysfs: poll failed; serving the last snapshot, trying again every %.3g s",
                                  interval)

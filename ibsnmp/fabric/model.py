"""The fabric model: immutable snapshots of an InfiniBand subnet.

A provider builds a complete `Fabric` and swaps it in with one assignment; readers keep the
snapshot they started with, so a walk sees one state. Nothing here knows of SNMP; values use
IBA encodings (`iba`). Structure and measurements are apart: a port says which counters its
PMA or host reports (`Port.counter_layout`), the snapshot holds the values read
(`Fabric.counter_values`). Derived data that is costly and often unused (forwarding tables,
sorted index keys) is made on first use and kept in the snapshot's lineage (`lineage`), which
snapshots that differ only in counter values share. See docs/changing-fabrics.md.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple, TypeVar

from .iba import (
    MAX_UNICAST_LID,
    CapabilityMask,
    CaType,
    CmState,
    DiagCode,
    JoinState,
    LinkDownDefaultState,
    LinkSpeed,
    LinkSpeedExt,
    LinkWidth,
    MKeyProtect,
    Mtu,
    MulticastScope,
    NodeType,
    PhysicalInterface,
    PortPhysState,
    PortState,
    Rate,
    SmState,
    VLCap,
    capability_names,
    link_gbps,
    link_rate,
    make_gid,
    multicast_scope,
    speed_name,
)
from .lineage import Aspect, Derived, Lineage, NodeDerived

__all__ = [
    "PortRef",
    "PortInfo",
    "VlArbEntry",
    "MeasuredCounters",
    "CounterLayout",
    "counter_layout",
    "values_by_node",
    "Port",
    "SwitchInfo",
    "CaInfo",
    "Node",
    "Link",
    "SmInfo",
    "SmConfig",
    "PartitionMember",
    "Partition",
    "McMember",
    "MulticastGroup",
    "ServiceRecord",
    "UdEndpoint",
    "RdConnection",
    "ConnectedQp",
    "NodeConnections",
    "LinkTraining",
    "PortHistory",
    "ForwardingTables",
    "Fabric",
]

_T = TypeVar("_T")


def _known(value: _T | None, name: str) -> _T:
    """A PortInfo field a derived value needs; None (the provider cannot tell) refused."""
    if value is None:
        raise ValueError(f"PortInfo.{name} is not known")
    return value


class PortRef(NamedTuple):
    """A port named by its node GUID and port number; sorts as MIB indexes do."""

    guid: int
    port: int


class PortInfo(NamedTuple):
    """The PortInfo attribute (IBA 14.2.5.6), field for field.  A NamedTuple
    rather than a frozen dataclass: a large fabric builds tens of thousands
    and a tuple is cheaper to make.

    None: the provider cannot tell (a Linux host's sysfs shows a port's
    state, LIDs, SM, capability mask and active rate, not its M_Key, MTUs,
    VLs or thresholds); the MIB bindings serve no instance for it.  The
    fields a provider always knows are typed without None."""

    m_key: int | None
    gid_prefix: int | None
    lid: int
    master_sm_lid: int | None
    capability_mask: int | None
    diag_code: int | None
    m_key_lease_period: int | None
    local_port_num: int
    link_width_enabled: LinkWidth | None
    link_width_supported: LinkWidth | None
    link_width_active: LinkWidth | None
    link_speed_supported: LinkSpeed | None
    port_state: PortState
    phys_state: PortPhysState | None
    link_down_default_state: LinkDownDefaultState | None
    m_key_protect_bits: MKeyProtect | None
    lmc: int
    link_speed_active: LinkSpeed | None
    link_speed_enabled: LinkSpeed | None
    neighbor_mtu: Mtu | None
    master_sm_sl: int | None
    vl_cap: VLCap | None
    init_type: int | None
    vl_high_limit: int | None
    vl_arb_high_cap: int | None
    vl_arb_low_cap: int | None
    init_type_reply: int | None
    mtu_cap: Mtu | None
    vl_stall_count: int | None
    hoq_life: int | None
    operational_vls: VLCap | None
    partition_enforcement_inbound: bool | None
    partition_enforcement_outbound: bool | None
    filter_raw_inbound: bool | None
    filter_raw_outbound: bool | None
    m_key_violations: int | None
    p_key_violations: int | None
    q_key_violations: int | None
    guid_cap: int | None
    client_reregister: bool | None
    subnet_timeout: int | None
    resp_time_value: int | None
    local_phy_errors_threshold: int | None
    overrun_errors_threshold: int | None
    link_speed_ext_active: LinkSpeedExt | None
    link_speed_ext_supported: LinkSpeedExt | None
    link_speed_ext_enabled: LinkSpeedExt | None

    @property
    def capabilities(self) -> tuple[str, ...]:
        return capability_names(_known(self.capability_mask, "capability_mask"))

    def has(self, capability: CapabilityMask) -> bool:
        return bool(_known(self.capability_mask, "capability_mask") & capability)

    @property
    def generic_diag_code(self) -> DiagCode:
        return DiagCode(_known(self.diag_code, "diag_code") & 0xF)

    @property
    def vendor_diag_code(self) -> int:
        return _known(self.diag_code, "diag_code") >> 4

    @property
    def is_active(self) -> bool:
        return self.port_state is PortState.ACTIVE

    @property
    def speed_name(self) -> str:
        _, speed, speed_ext = self._active_link(width=False)
        return speed_name(speed, speed_ext)

    @property
    def rate_gbps(self) -> float:
        return link_gbps(*self._active_link())

    @property
    def rate(self) -> Rate:
        return link_rate(*self._active_link())

    def _active_link(self, width: bool = True) -> tuple[int, int, int]:
        """(width, speed, extended speed) active, for iba's rate functions: no
        extended speed (None) reads as 0, and a non-zero one makes the speed unused."""
        speed_ext = self.link_speed_ext_active or 0
        return (_known(self.link_width_active, "link_width_active") if width else 0,
                self.link_speed_active or 0 if speed_ext
                else _known(self.link_speed_active, "link_speed_active"),
                speed_ext)


class VlArbEntry(NamedTuple):
    vl: int
    weight: int


@dataclass(frozen=True, slots=True)
class MeasuredCounters:
    """PMA counters a provider read for one port (a host's sysfs, the live
    subnet's PMAs, a publisher's record), instead of the simulated traffic:
    `values` maps a counters.PortCounters field name (and the
    PortCountersExtended-only ones: unicast_xmit_pkts ...) to the raw value
    the device reported, which may be wider than IBA's PortCounters field
    (64-bit extended data counters).  A counter the device did not report
    is missing; no values at all is a port without a PMA.
    counters.traffic_profile serves these, saturated at IBA's widths.

    `wide`: the names in `values` read from a 64-bit source that wraps
    instead of saturating (PortCountersExtended, the kernel's extended
    counter files); only these feed IF-MIB's Counter64 objects
    (counters.interface_counters).  Empty: every value may have saturated.

    A snapshot keeps the two apart: the names and `wide` are the port's
    structure (`Port.counter_layout`), the values its measurements
    (`Fabric.counter_values`); `Fabric.measured(port)` joins them."""

    values: Mapping[str, int]
    wide: frozenset[str] = frozenset()

    @property
    def layout(self) -> CounterLayout:
        return counter_layout(frozenset(self.values), self.wide)


@dataclass(frozen=True, slots=True)
class CounterLayout:
    """Which counters a port's PMA (or host) reports: their names and the
    ones read from a 64-bit source (see MeasuredCounters).  Empty names: a
    port without a PMA.  Part of a port's structure: the values move with
    every poll, the layout only when the device starts or stops reporting
    a counter."""

    names: frozenset[str]
    wide: frozenset[str] = frozenset()


@functools.lru_cache(maxsize=256)
def counter_layout(names: frozenset[str], wide: frozenset[str] = frozenset()) -> CounterLayout:
    """The layout of these counters: one object per layout, which the ports
    of a fabric share (they report a few sets of counters)."""
    return CounterLayout(names, wide)


def values_by_node(readings: Mapping[PortRef, MeasuredCounters]
                   ) -> Mapping[int, Mapping[int, Mapping[str, int]]]:
    """Fabric.counter_values of per-port readings."""
    nodes: dict[int, dict[int, Mapping[str, int]]] = {}
    for ref, measured in readings.items():
        nodes.setdefault(ref.guid, {})[ref.port] = measured.values
    return MappingProxyType(nodes)


NO_VALUES: Mapping[str, int] = MappingProxyType({})
NO_PORT_VALUES: Mapping[int, Mapping[str, int]] = MappingProxyType({})
NO_COUNTER_VALUES: Mapping[int, Mapping[int, Mapping[str, int]]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Port:
    """One port of a node.  `guid` is the port GUID (a switch's ports all
    report the switch's port-0 GUID, as IBA has no GUIDs for switch data
    ports).  Tables hold what the SM programmed: `pkeys` the used entries
    of the P_Key table (the rest up to PartitionCap are 0), `guids` the
    GUIDInfo entries in use.  `sl2vl` maps SL to VL for traffic leaving
    this port (for a switch, from input port 0, and from every input port
    unless `sl2vl_inputs` says otherwise).  `sl2vl_inputs`: a switch output
    port's table of each input port, (input port, table) in port order, as
    read where the provider read each pair (IBA keeps one per pair); an
    input port missing from it was not read.  None: `sl2vl` holds for every
    input port.

    What a provider cannot tell is None (`guid`, `guids` of a RoCE port,
    `physical_interface`, `led_on`, `vendor_diag`) or an empty table
    (`sl2vl`, `vl_arb_*`): the bindings serve no instance for it.
    `gids`: the GID table as the host reads it, index for index (0 for an
    unused entry), when the provider has it (sysfs); None: GID i is the
    GID prefix joined with GUID entry i.  `counter_layout`: the counters a
    PMA or host reports for the port (their values are the snapshot's:
    Fabric.measured); None: the simulated traffic drives them."""

    node_guid: int
    num: int
    guid: int | None
    info: PortInfo
    pkeys: tuple[int, ...]
    sl2vl: tuple[int, ...]
    vl_arb_high: tuple[VlArbEntry, ...]
    vl_arb_low: tuple[VlArbEntry, ...]
    guids: tuple[int, ...] | None
    remote: PortRef | None
    physical_interface: PhysicalInterface | None
    led_on: bool | None = False
    degraded: bool = False
    vendor_diag: bytes | None = b""
    gids: tuple[int, ...] | None = None
    counter_layout: CounterLayout | None = None
    sl2vl_inputs: tuple[tuple[int, tuple[int, ...]], ...] | None = None

    @property
    def ref(self) -> PortRef:
        return PortRef(self.node_guid, self.num)

    @property
    def lid(self) -> int:
        return self.info.lid

    @property
    def lmc(self) -> int:
        return self.info.lmc

    @property
    def is_active(self) -> bool:
        return self.info.port_state is PortState.ACTIVE

    @property
    def is_link_up(self) -> bool:
        return self.info.phys_state is PortPhysState.LINK_UP

    def covers_lid(self, lid: int) -> bool:
        base = self.info.lid
        return base != 0 and base <= lid < base + (1 << self.info.lmc)

    def gid(self, index: int = 0) -> int:
        if self.gids is not None:
            return self.gids[index]
        assert self.info.gid_prefix is not None and self.guids is not None
        return make_gid(self.info.gid_prefix, self.guids[index])


def sl2vl_by_input(port: Port, inputs: Iterable[int]) -> Iterator[tuple[int, tuple[int, ...]]]:
    """(input port, SL-to-VL table) of a switch output port: each pair read
    (`Port.sl2vl_inputs`), else its one table under each of `inputs`; none
    for a port without a table."""
    if port.sl2vl_inputs is not None:
        return iter(port.sl2vl_inputs)
    table = port.sl2vl
    return ((into, table) for into in inputs) if table else iter(())


@dataclass(frozen=True, slots=True)
class SwitchInfo:
    """The SwitchInfo attribute (IBA 14.2.5.4).  None: the provider did
    not read it (a topology dump shows only EnhancedPort0); the bindings
    serve no instance for it."""

    linear_fdb_cap: int | None
    random_fdb_cap: int | None
    multicast_fdb_cap: int | None
    linear_fdb_top: int | None
    default_port: int | None
    default_multicast_primary_port: int | None
    default_multicast_not_primary_port: int | None
    life_time_value: int | None
    port_state_change: bool | None
    optimized_sl_to_vl_mapping_programming: bool | None
    lids_per_port: int | None
    partition_enforcement_cap: int | None
    inbound_enforcement_cap: bool | None
    outbound_enforcement_cap: bool | None
    filter_raw_inbound_cap: bool | None
    filter_raw_outbound_cap: bool | None
    enhanced_port0: bool | None
    multicast_fdb_top: int | None


@dataclass(frozen=True, slots=True)
class CaInfo:
    """What IB-CA-MIB asks of a channel adapter (IBA 17.2, Table 314/313).
    Port-level values here are the same for every port of the adapter.
    None: the provider cannot tell (sysfs shows no verbs capabilities)."""

    ca_type: CaType
    reliable_connection: bool | None
    unreliable_connection: bool | None
    reliable_datagram: bool | None
    unreliable_datagram: bool | None
    atomic_operations: bool | None
    other_operations: bool | None
    solicited_events: bool | None
    max_path_mtu: Mtu | None
    end_to_end_flow_control: bool | None
    multicast: bool | None
    automatic_path_migration: bool | None
    memory_protection: bool | None
    loopback: bool | None
    subnet_manager: bool | None
    static_rate_control: bool | None
    interpacket_delay: int | None
    multipathing: bool | None
    validates_inbound_dlid: bool | None
    max_gids_per_port: int


@dataclass(frozen=True, slots=True)
class Node:
    """NodeInfo, NodeDescription and the node's ports.  `ports` is sorted
    by number: switches start at port 0, channel adapters at port 1.
    None: the provider cannot tell (e.g. a sysfs host: the NodeInfo
    versions, a VendorID it cannot derive, a switch's NumPorts; a
    NodeDescription that did not answer)."""

    guid: int
    node_type: NodeType
    description: str | None
    system_image_guid: int | None
    base_version: int | None
    class_version: int | None
    vendor_id: int | None
    device_id: int | None
    revision: int | None
    num_ports: int | None
    partition_cap: int | None
    local_port_num: int
    ports: tuple[Port, ...]
    switch: SwitchInfo | None = None
    ca: CaInfo | None = None
    model_name: str = ""
    # The operating system's name of the device (sysfs `mlx5_0`) where the
    # provider read one; IF-MIB names the node's interfaces after it.
    device_name: str | None = None
    # The device's firmware version (sysfs `fw_ver`, "20.31.1014") where the
    # provider read one: a node's sysDescr names it.
    firmware_version: str | None = None

    @property
    def label(self) -> str:
        """How logs and error texts name the node: its description, or its
        GUID when none was read."""
        return self.description if self.description is not None else f"{self.guid:016x}"

    @property
    def is_switch(self) -> bool:
        return self.node_type is NodeType.SWITCH

    @property
    def is_ca(self) -> bool:
        return self.node_type is NodeType.CA

    def port(self, num: int) -> Port | None:
        index = num - self.ports[0].num if self.ports else -1
        if 0 <= index < len(self.ports):
            return self.ports[index]
        return None

    @property
    def data_ports(self) -> tuple[Port, ...]:
        return self.ports[1:] if self.is_switch else self.ports

    @property
    def port_guid(self) -> int | None:
        """NodeInfo.PortGUID: the GUID of the port the SM reaches us on."""
        port = self.port(self.local_port_num)
        return port.guid if port is not None else self.ports[0].guid

    @property
    def led_on(self) -> bool:
        return any(port.led_on for port in self.ports)

    @property
    def management_port(self) -> Port:
        """Port 0 of a switch, or the port the SM reaches a CA through."""
        port = self.port(0 if self.is_switch else self.local_port_num)
        return port if port is not None else self.ports[0]


@dataclass(frozen=True, slots=True, order=True)
class Link:
    """A physical link that is up; `a` sorts before `b`."""

    a: PortRef
    b: PortRef

    @staticmethod
    def between(x: PortRef, y: PortRef) -> Link:
        return Link(x, y) if x <= y else Link(y, x)


@dataclass(frozen=True, slots=True)
class SmInfo:
    """SMInfo (IBA 14.2.5.13) of one subnet manager and where it runs.
    ActCount grows while the SM works: `act_count` at the snapshot's epoch
    and `act_rate` per second (see counters.sm_act_count).  None: not read
    (an SM named by the operator of a topology dump)."""

    guid: int
    sm_key: int | None
    act_count: int | None
    priority: int
    state: SmState
    node_guid: int
    port_num: int
    act_rate: float = 0.0


@dataclass(frozen=True, slots=True)
class SmConfig:
    """Operating parameters of the subnet manager (OpenSM's names)."""

    sweep_interval_s: int
    transaction_timeout_ms: int
    port_aging_time_s: int
    min_unicast_lid: int
    max_unicast_lid: int
    lmc: int
    master_poll_interval_s: int
    master_poll_retries: int
    m_key: int
    m_key_lease_period_s: int
    m_key_protect_bits: MKeyProtect
    subnet_timeout: int
    packet_life_time: int
    head_of_queue_lifetime: int
    leaf_head_of_queue_lifetime: int
    vl_stall_count: int
    local_phy_errors_threshold: int
    overrun_errors_threshold: int

    @classmethod
    def opensm_defaults(cls, lmc: int = 0, *, m_key: int = 0, m_key_lease_period_s: int = 0,
                        m_key_protect_bits: MKeyProtect = MKeyProtect.LEVEL0) -> SmConfig:
        """OpenSM's defaults (opensm.conf), with the LMC and M_Key the fabric uses."""
        return cls(
            sweep_interval_s=10,
            transaction_timeout_ms=200,
            port_aging_time_s=10 * 4,  # sweep interval x polling retries
            min_unicast_lid=1,
            max_unicast_lid=MAX_UNICAST_LID,
            lmc=lmc,
            master_poll_interval_s=10,
            master_poll_retries=4,
            m_key=m_key,
            m_key_lease_period_s=m_key_lease_period_s,
            m_key_protect_bits=m_key_protect_bits,
            subnet_timeout=18,
            packet_life_time=0x12,
            head_of_queue_lifetime=0x12,
            leaf_head_of_queue_lifetime=0x10,
            vl_stall_count=7,
            local_phy_errors_threshold=8,
            overrun_errors_threshold=8,
        )


class PartitionMember(NamedTuple):
    guid: int
    port: int
    full: bool


@dataclass(frozen=True, slots=True)
class Partition:
    """A partition: `pkey` is the 15-bit partition number; members carry
    their membership type.  Members are sorted by (GUID, port)."""

    pkey: int
    name: str
    members: tuple[PartitionMember, ...]
    ipoib: bool = False

    @property
    def full_pkey(self) -> int:
        return self.pkey | 0x8000


class McMember(NamedTuple):
    guid: int
    port: int
    join_state: JoinState
    proxy_join: bool = False


@dataclass(frozen=True, slots=True)
class MulticastGroup:
    """MCMemberRecord group fields and members (sorted by GUID, port)."""

    mgid: int
    mlid: int
    q_key: int
    mtu: Mtu
    rate: Rate
    sl: int
    pkey: int
    members: tuple[McMember, ...]
    traffic_class: int = 0
    flow_label: int = 0
    hop_limit: int = 0
    packet_life_time: int = 0
    name: str = ""

    @property
    def scope(self) -> MulticastScope:
        return multicast_scope(self.mgid)


@dataclass(frozen=True, slots=True)
class ServiceRecord:
    """A ServiceRecord registered with the SA (IBA 15.2.5.14)."""

    service_id: int
    gid: int
    pkey: int
    lease: int
    key: bytes
    name: str
    data: bytes = b""


@dataclass(frozen=True, slots=True)
class UdEndpoint:
    """An unreliable-datagram QP listening on a port (`qpn` is the wire
    value; IBCONNECTION-MIB indexes it plus one)."""

    gid: int
    lid: int
    qpn: int


@dataclass(frozen=True, slots=True)
class RdConnection:
    """A reliable-datagram end-to-end context pair."""

    local_gid: int
    local_lid: int
    local_eecn: int
    remote_gid: int
    remote_lid: int
    remote_eecn: int


@dataclass(frozen=True, slots=True)
class ConnectedQp:
    """One end of an RC (reliable) or UC connection, seen from the local node."""

    local_gid: int
    local_lid: int
    local_qpn: int
    remote_gid: int
    remote_lid: int
    remote_qpn: int
    state: CmState
    reliable: bool


@dataclass(frozen=True, slots=True)
class NodeConnections:
    """The transport endpoints of one CA node, each tuple sorted as the
    IBCONNECTION-MIB indexes its table.  The rates drive the counters in
    counters.connection_counters_at."""

    ud: tuple[UdEndpoint, ...]
    rd: tuple[RdConnection, ...]
    connected: tuple[ConnectedQp, ...]
    ud_datagrams_per_s: float = 0.0
    rd_datagrams_per_s: float = 0.0
    segments_per_s: float = 0.0


class LinkTraining(NamedTuple):
    """What a link trained to (PortInfo's active width, speeds and VLs),
    kept while the link is down so it comes back the same."""

    # As PortInfo has them: None where the provider cannot tell.
    width: LinkWidth | None
    speed: LinkSpeed | None
    speed_ext: LinkSpeedExt | None
    operational_vls: VLCap | None


ALWAYS_UP: tuple[tuple[float, float], ...] = ((0.0, float("inf")),)


@dataclass(frozen=True, slots=True)
class PortHistory:
    """What happened to one port since the provider's epoch, beyond what the
    generator made (scenario events, counter clears).  The counters read it
    (counters.TrafficProfile), so they stay pure functions of elapsed time.
    Times are seconds since the epoch.

    up: the intervals (start, end) the port was Active and passed traffic
      (end = inf while it still is); None: as generated (always, if the port
      is active).
    downs: when the link went down (each adds one to LinkDownedCounter).
    bursts: (time, ErrorRates field name, count) error events on top of the
      port's steady error rates.
    clears: (PortCounters field name, time) the last time each counter was
      cleared (a PMA Set(PortCounters) with that CounterSelect bit).
    peer: the port at the other end of the cable, kept while the link is
      down; training: what the link trained to when it was last up.
    """

    up: tuple[tuple[float, float], ...] | None = None
    downs: tuple[float, ...] = ()
    bursts: tuple[tuple[float, str, int], ...] = ()
    clears: tuple[tuple[str, float], ...] = ()
    peer: PortRef | None = None
    training: LinkTraining | None = None

    def cleared_at(self, name: str) -> float | None:
        for field_name, when in self.clears:
            if field_name == name:
                return when
        return None


NO_HISTORY: Mapping[PortRef, PortHistory] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ForwardingTables:
    """Forwarding tables as the switches hold them: read from the switches
    over MADs or from the subnet manager's dump, never computed.

    `linear` maps a switch GUID to its LFT (entry i is the egress port for
    DLID i, 255 where it forwards nowhere), up to the LinearFDBTop read; a
    switch whose table was not read is missing.  `multicast` maps a switch
    GUID to MLID -> port mask; None: no multicast table was read at all.
    """

    linear: Mapping[int, bytes]
    multicast: Mapping[int, Mapping[int, int]] | None = None


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class Fabric:
    """One consistent snapshot of a subnet.

    `nodes` keeps discovery order (breadth first from the local node).
    `lid_map` maps each port's base LID to the port; `resolve_lid` also
    finds LIDs inside an LMC block.  `connections` may be computed lazily
    by the provider (any Mapping works).  `seed` is set for simulated
    fabrics and drives the traffic model.  `port_history` holds what
    happened to the few ports a scenario touched (see PortHistory); the
    snapshots that change it are made by `fabric.changes`.  `sm_config` is
    None where no subnet manager is known (a lone sysfs host).
    `counter_values`: node GUID -> port number -> the counter values read
    for a port with a `counter_layout` (see `measured`).

    `lineage` holds the derived data (see `derive`); a Fabric built or
    replaced directly starts a new one, and only `fabric.succession` makes
    a snapshot that keeps its predecessor's.
    """

    subnet_prefix: int
    nodes: Mapping[int, Node]
    links: tuple[Link, ...]
    lid_map: Mapping[int, PortRef]
    sms: tuple[SmInfo, ...]
    sm_config: SmConfig | None
    partitions: tuple[Partition, ...]
    multicast_groups: tuple[MulticastGroup, ...]
    services: tuple[ServiceRecord, ...]
    connections: Mapping[int, NodeConnections]
    local_node_guid: int
    seed: int | None = None
    spec: str = ""
    port_history: Mapping[PortRef, PortHistory] = field(default_factory=lambda: NO_HISTORY)
    # The nodes of the host the agent runs on, in device order, when it has
    # more than the local node (every device of a sysfs host); empty: the
    # local node alone.
    host_node_guids: tuple[int, ...] = ()
    # Where forwarding tables come from: `forwarding` when they were read
    # (the live subnet, an SM's LFT dump); else computed by min-hop routing
    # when `computes_routes` (the simulated fabric is its own SM); else the
    # fabric has none to serve (a topology dump alone).
    forwarding: ForwardingTables | None = None
    computes_routes: bool = True
    counter_values: Mapping[int, Mapping[int, Mapping[str, int]]] = field(
        default_factory=lambda: NO_COUNTER_VALUES)
    # Ports a topology dump names as running FDR10 (a rate PortInfo cannot say).
    fdr10_ports: frozenset[PortRef] = frozenset()
    lineage: Lineage = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "lineage", Lineage())

    # -- lookups ---------------------------------------------------------

    def node(self, guid: int) -> Node | None:
        return self.nodes.get(guid)

    def port(self, guid: int, num: int) -> Port | None:
        node = self.nodes.get(guid)
        return node.port(num) if node is not None else None

    def port_at(self, ref: PortRef) -> Port:
        port = self.port(ref.guid, ref.port)
        if port is None:
            raise KeyError(ref)
        return port

    def peer(self, guid: int, num: int) -> PortRef | None:
        port = self.port(guid, num)
        return port.remote if port is not None else None

    def resolve_lid(self, lid: int) -> PortRef | None:
        """The port owning a unicast LID, including LIDs of an LMC block."""
        for lmc in range(8):
            ref = self.lid_map.get(lid & ~((1 << lmc) - 1))
            if ref is not None:
                port = self.port_at(ref)
                if port.covers_lid(lid):
                    return ref
        return None

    def measured(self, port: Port) -> MeasuredCounters | None:
        """The counters read for `port` (None: the simulated traffic drives
        them); a counter its PMA reports that was not read has no value."""
        layout = port.counter_layout
        if layout is None:
            return None
        values = self.counter_values.get(port.node_guid, NO_PORT_VALUES).get(port.num, NO_VALUES)
        return MeasuredCounters(values, layout.wide)

    @property
    def local_node(self) -> Node:
        return self.nodes[self.local_node_guid]

    @property
    def master_sm(self) -> SmInfo | None:
        return next((sm for sm in self.sms if sm.state is SmState.MASTER), None)

    def partition(self, pkey: int) -> Partition | None:
        return self.derive(_PARTITION_BY_KEY).get(pkey & 0x7FFF)

    def multicast_group(self, mgid: int) -> MulticastGroup | None:
        return self.derive(_GROUP_BY_MGID).get(mgid)

    def group_by_mlid(self, mlid: int) -> tuple[MulticastGroup, ...]:
        return self.derive(_GROUPS_BY_MLID).get(mlid, ())

    @property
    def max_lid(self) -> int:
        """The highest unicast LID in use (LinearFDBTop)."""
        return self.derive(_MAX_LID)

    # -- sorted index keys, built once per structure ----------------------

    def sorted_node_guids(self) -> tuple[int, ...]:
        return self.derive(_NODE_GUIDS)

    def sorted_switch_guids(self) -> tuple[int, ...]:
        return self.derive(_SWITCH_GUIDS)

    def sorted_ca_guids(self) -> tuple[int, ...]:
        return self.derive(_CA_GUIDS)

    def sorted_port_keys(self) -> tuple[PortRef, ...]:
        """Every port of every node (switch port 0 included)."""
        return self.derive(_PORT_KEYS)

    def sorted_link_keys(self) -> tuple[PortRef, ...]:
        """Both ends of every link: the from-side keys of a directed link table."""
        return self.derive(_LINK_KEYS)

    def sorted_lids(self) -> tuple[int, ...]:
        return self.derive(_LIDS)

    def sorted_partition_keys(self) -> tuple[int, ...]:
        return self.derive(_PARTITION_KEYS)

    def sorted_mgids(self) -> tuple[int, ...]:
        return self.derive(_MGIDS)

    def sorted_service_keys(self) -> tuple[tuple[int, int, int], ...]:
        """(service ID, GID, P_Key) of every service, sorted."""
        return self.derive(_SERVICE_KEYS)

    # -- derived data ------------------------------------------------------

    def derive(self, derived: Derived[_T]) -> _T:
        """`derived` of this snapshot, computed once per structure."""
        return self.lineage.get(derived, self)

    def derive_for(self, derived: NodeDerived[_T], node: Node) -> _T:
        """`derived` of one node of this snapshot, computed once while the
        node and the aspects it depends on stay the same."""
        return self.lineage.get_for(derived, self, node)


def _groups_by_mlid(fabric: Fabric) -> dict[int, tuple[MulticastGroup, ...]]:
    result: dict[int, list[MulticastGroup]] = {}
    for group in fabric.multicast_groups:
        result.setdefault(group.mlid, []).append(group)
    return {mlid: tuple(groups) for mlid, groups in result.items()}


def _max_lid(fabric: Fabric) -> int:
    top = 0
    for ref in fabric.lid_map.values():
        port = fabric.port_at(ref)
        top = max(top, port.info.lid + (1 << port.info.lmc) - 1)
    return top


_PARTITION_BY_KEY = Derived("partition by key", Aspect.SA,
                            lambda f: {p.pkey: p for p in f.partitions})
_GROUP_BY_MGID = Derived("group by MGID", Aspect.SA, lambda f: {g.mgid: g for g in f.multicast_groups})
_GROUPS_BY_MLID = Derived("groups by MLID", Aspect.SA, _groups_by_mlid)
_MAX_LID = Derived("highest LID", Aspect.LIDS, _max_lid)
_NODE_GUIDS = Derived("node GUIDs", Aspect.NODE_SET, lambda f: tuple(sorted(f.nodes)))
_SWITCH_GUIDS = Derived("switch GUIDs", Aspect.NODE_SET, lambda f: tuple(
    g for g in f.sorted_node_guids() if f.nodes[g].is_switch))
_CA_GUIDS = Derived("CA GUIDs", Aspect.NODE_SET, lambda f: tuple(
    g for g in f.sorted_node_guids() if f.nodes[g].is_ca))
_PORT_KEYS = Derived("port keys", Aspect.NODE_SET, lambda f: tuple(
    port.ref for guid in f.sorted_node_guids() for port in f.nodes[guid].ports))
_LINK_KEYS = Derived("link ends", Aspect.LINKS, lambda f: tuple(
    sorted(end for link in f.links for end in (link.a, link.b))))
_LIDS = Derived("LIDs", Aspect.LIDS, lambda f: tuple(sorted(f.lid_map)))
_PARTITION_KEYS = Derived("partition keys", Aspect.SA, lambda f: tuple(
    sorted(p.pkey for p in f.partitions)))
_MGIDS = Derived("MGIDs", Aspect.SA, lambda f: tuple(sorted(g.mgid for g in f.multicast_groups)))
_SERVICE_KEYS = Derived("service keys", Aspect.SA, lambda f: tuple(
    sorted((s.service_id, s.gid, s.pkey) for s in f.services)))

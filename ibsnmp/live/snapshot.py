"""A `Fabric` snapshot from what a directed-route sweep (and later polls) read.

Every value comes from a MAD: a field, table or node that did not answer is
None, an empty table or absent, never a default that looks measured. LIDs
are those PortInfo reports (a switch's on port 0); forwarding tables are the
switches' own (`computes_routes=False`: the SM routes, not ibsnmp); the SMs
are the SMInfo of every port whose CapabilityMask has IsSM. Partitions,
multicast groups and services come from the SA, not from SMPs: `SaRecords`
is where they enter.
"""

from __future__ import annotations

import enum
import functools
import logging
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from ibsnmp.fabric.counters import NUM_VLS
from ibsnmp.fabric.iba import (
    DEFAULT_SUBNET_PREFIX,
    LinkDownDefaultState,
    LinkSpeed,
    LinkSpeedExt,
    LinkWidth,
    MKeyProtect,
    Mtu,
    NodeType,
    PortPhysState,
    PortState,
    SmState,
    VLCap,
)
from ibsnmp.fabric.model import (
    Fabric,
    ForwardingTables,
    CounterLayout,
    Link,
    MeasuredCounters,
    MulticastGroup,
    Node,
    Partition,
    Port,
    PortInfo,
    PortRef,
    ServiceRecord,
    SmInfo,
    SwitchInfo,
    VlArbEntry,
    counter_layout,
    values_by_node,
)
from ibsnmp.mad import records_generated as mad_records
from ibsnmp.mad.attributes import PORT_COUNTERS, vl_arbitration_entries
from ibsnmp.mad.discovery import NO_PORT, DiscoveredNode, PortTables, Subnet
from ibsnmp.mad.layout import FieldValue

__all__ = ["PmaValues", "SaRecords", "build_fabric", "layout_of", "measured_counters", "pma_values", "link_state"]

log = logging.getLogger("ibsnmp.live")

_E = TypeVar("_E", bound=enum.Enum)
Counters = Mapping[str, FieldValue]

# The per-VL detail counters' PerfMgt names (VL n: the prefix and n) -> the
# model's (counters.MEASURED_PER_VL: the prefix, "_" and n).
VL_COUNTER_FIELDS = {"PortVLXmitFlowCtlUpdateErrors": "vl_xmit_flow_ctl_update_errors",
                     "PortVLXmitWait": "vl_xmit_wait", "PortVLOpPackets": "vl_op_packets",
                     "PortVLOpData": "vl_op_data"}

# PerfMgt field names -> the names model.MeasuredCounters keeps (the
# counters.PortCounters fields and the PortCountersExtended-only ones).
COUNTER_NAMES: dict[str, str] = {
    "SymbolErrorCounter": "symbol_error_counter",
    "LinkErrorRecoveryCounter": "link_error_recovery_counter",
    "LinkDownedCounter": "link_downed_counter",
    "PortRcvErrors": "port_rcv_errors",
    "PortRcvRemotePhysicalErrors": "port_rcv_remote_physical_errors",
    "PortRcvSwitchRelayErrors": "port_rcv_switch_relay_errors",
    "PortXmitDiscards": "port_xmit_discards",
    "PortXmitConstraintErrors": "port_xmit_constraint_errors",
    "PortRcvConstraintErrors": "port_rcv_constraint_errors",
    "LocalLinkIntegrityErrors": "local_link_integrity_errors",
    "ExcessiveBufferOverrunErrors": "excessive_buffer_overrun_errors",
    "VL15Dropped": "vl15_dropped",
    "PortXmitData": "port_xmit_data",
    "PortRcvData": "port_rcv_data",
    "PortXmitPkts": "port_xmit_pkts",
    "PortRcvPkts": "port_rcv_pkts",
    "PortXmitWait": "port_xmit_wait",
    "PortUnicastXmitPkts": "unicast_xmit_pkts",
    "PortUnicastRcvPkts": "unicast_rcv_pkts",
    "PortMulticastXmitPkts": "multicast_xmit_pkts",
    "PortMulticastRcvPkts": "multicast_rcv_pkts",
    # The detail attributes (mad.pma_details): counters.PortRcvErrorDetails ...
    "PortLocalPhysicalErrors": "port_local_physical_errors",
    "PortMalformedPktErrors": "port_malformed_packet_errors",
    "PortBufferOverrunErrors": "port_buffer_overrun_errors",
    "PortDLIDMappingErrors": "port_dlid_mapping_errors",
    "PortVLMappingErrors": "port_vl_mapping_errors",
    "PortLoopingErrors": "port_looping_errors",
    "PortInactiveDiscards": "port_inactive_discards",
    "PortNeighborMTUDiscards": "port_neighbor_mtu_discards",
    "PortSwLifetimeLimitDiscards": "port_sw_lifetime_limit_discards",
    "PortSwHOQLifetimeLimitDiscards": "port_sw_hoq_limit_discards",
    "PortXmitFlowPkts": "port_xmit_flow_pkts",
    "PortRcvFlowPkts": "port_rcv_flow_pkts",
    # The per-opcode ones, with the opcode each counts (counters.MEASURED_OPCODE).
    "PortOpRcvOpCode": "port_op_rcv_opcode",
    "PortOpRcvPkts": "port_op_rcv_pkts",
    "PortOpRcvData": "port_op_rcv_data",
    "PortVLOpPacketsOpCode": "vl_op_packets_opcode",
    "PortVLOpDataOpCode": "vl_op_data_opcode",
    **{f"{field}{vl}": f"{name}_{vl}" for vl in range(NUM_VLS) for field, name in VL_COUNTER_FIELDS.items()},
}


@dataclass(frozen=True)
class SaRecords:
    """What an SA client read (PartitionRecord, MCMemberRecord, ServiceRecord);
    empty until one is attached: SMPs do not carry these."""

    partitions: tuple[Partition, ...] = ()
    multicast_groups: tuple[MulticastGroup, ...] = ()
    services: tuple[ServiceRecord, ...] = ()


class PmaValues(Mapping[str, int]):
    """A PMA's decoded answer read under the model's counter names
    (COUNTER_NAMES), without copying it: a poll reads every port's counters,
    and renaming them one by one cost more than the rest of a poll's work.
    `plan` says which names there are; the answer is not changed after."""

    __slots__ = ("_answer", "plan")

    def __init__(self, answer: Counters, plan: _Plan) -> None:
        self._answer = answer
        self.plan = plan

    def __getitem__(self, name: str) -> int:
        # PMA counters are int fields; no per-read check on the hot path.
        return self._answer[self.plan.fields[name]]  # type: ignore[return-value]  # ints only

    def get(self, name: str, default: Any = None) -> Any:
        field = self.plan.fields.get(name)
        return default if field is None else self._answer[field]

    def __contains__(self, name: object) -> bool:
        return name in self.plan.fields

    def __iter__(self) -> Iterator[str]:
        return iter(self.plan.fields)

    def __len__(self) -> int:
        return len(self.plan.fields)

    def __repr__(self) -> str:
        return f"PmaValues({dict(self)!r})"


class _Plan:
    """Which counters an answer of one kind has, and under which fields."""

    __slots__ = ("fields", "answered", "layout")

    def __init__(self, fields: Mapping[str, str], answered: int, layout: CounterLayout) -> None:
        self.fields = fields  # model name -> PerfMgt field
        self.answered = answered  # the fields of a whole answer of this kind
        self.layout = layout


def pma_values(counters: Counters, wide: frozenset[str] = frozenset(),
               details: frozenset[str] = frozenset()) -> PmaValues:
    """A PMA's answer (PortCounters merged with PortCountersExtended and
    the detail attributes read) as the model's counter values; `wide`: the
    PerfMgt names read from PortCountersExtended, `details`: those read from
    detail attributes. Its layout is `.plan.layout`."""
    key = (wide, details)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _plan_of(frozenset(PORT_COUNTERS.layout.by_name) | wide | details, wide)
    if len(counters) < plan.answered:  # not a whole decoded answer: name what it has
        plan = _plan_of(frozenset(counters), wide)
    return PmaValues(counters, plan)


def measured_counters(counters: Counters, wide: Collection[str] = ()) -> MeasuredCounters:
    """`pma_values` as the model's MeasuredCounters."""
    values = pma_values(counters, frozenset(wide))
    return MeasuredCounters(values, values.plan.layout.wide)


def layout_of(measured: MeasuredCounters) -> CounterLayout:
    """The layout of `measured` (the same object for every port read alike)."""
    values = measured.values
    return values.plan.layout if isinstance(values, PmaValues) else measured.layout


# The plan of an answer whose 64-bit fields and detail fields are those of the
# key: PortCounters' fields, those PortCountersExtended fields in place of
# theirs, the detail attributes' (a few kinds).
_PLANS: dict[tuple[frozenset[str], frozenset[str]], _Plan] = {}


@functools.lru_cache(maxsize=64)
def _plan_of(fields: frozenset[str], wide: frozenset[str]) -> _Plan:
    names = {COUNTER_NAMES[field]: field for field in sorted(fields) if field in COUNTER_NAMES}
    wide_names = frozenset(COUNTER_NAMES[field] for field in wide if field in COUNTER_NAMES)
    return _Plan(MappingProxyType(names), len(fields), counter_layout(frozenset(names), wide_names))


def _enum(kind: type[_E], value: int) -> _E | None:
    """`value` as `kind`, or None for a code the model has no member for
    (NeighborMTU 0 on a port that is down, a reserved encoding)."""
    try:
        return kind(value)
    except ValueError:
        return None


def link_state(info: PortInfo) -> PortState:
    """The port's state as the link has it: Down whenever the physical link is
    not up (IBA 7.2: a port leaves Down only over a trained link), even where
    PortState still reads otherwise (ibsim keeps a disabled port "Active")."""
    up = info.phys_state is None or info.phys_state is PortPhysState.LINK_UP
    return info.port_state if up else PortState.DOWN


def _port_info(raw: mad_records.PortInfo) -> PortInfo | None:
    state = _enum(PortState, raw["PortState"])
    if state is None:
        return None
    return PortInfo(
        m_key=raw["M_Key"], gid_prefix=raw["GidPrefix"], lid=raw["LID"],
        master_sm_lid=raw["MasterSMLID"],
        capability_mask=raw["CapabilityMask"], diag_code=raw["DiagCode"],
        m_key_lease_period=raw["M_KeyLeasePeriod"], local_port_num=raw["LocalPortNum"],
        link_width_enabled=LinkWidth(raw["LinkWidthEnabled"]),
        link_width_supported=LinkWidth(raw["LinkWidthSupported"]),
        link_width_active=LinkWidth(raw["LinkWidthActive"]),
        link_speed_supported=LinkSpeed(raw["LinkSpeedSupported"]), port_state=state,
        phys_state=_enum(PortPhysState, raw["PortPhysicalState"]),
        link_down_default_state=_enum(LinkDownDefaultState, raw["LinkDownDefaultState"]),
        m_key_protect_bits=_enum(MKeyProtect, raw["M_KeyProtectBits"]), lmc=raw["LMC"],
        link_speed_active=LinkSpeed(raw["LinkSpeedActive"]),
        link_speed_enabled=LinkSpeed(raw["LinkSpeedEnabled"]),
        neighbor_mtu=_enum(Mtu, raw["NeighborMTU"]), master_sm_sl=raw["MasterSMSL"],
        vl_cap=_enum(VLCap, raw["VLCap"]), init_type=raw["InitType"],
        vl_high_limit=raw["VLHighLimit"],
        vl_arb_high_cap=raw["VLArbitrationHighCap"], vl_arb_low_cap=raw["VLArbitrationLowCap"],
        init_type_reply=raw["InitTypeReply"], mtu_cap=_enum(Mtu, raw["MTUCap"]),
        vl_stall_count=raw["VLStallCount"], hoq_life=raw["HOQLife"],
        operational_vls=_enum(VLCap, raw["OperationalVLs"]),
        partition_enforcement_inbound=bool(raw["PartitionEnforcementInbound"]),
        partition_enforcement_outbound=bool(raw["PartitionEnforcementOutbound"]),
        filter_raw_inbound=bool(raw["FilterRawInbound"]),
        filter_raw_outbound=bool(raw["FilterRawOutbound"]),
        m_key_violations=raw["M_KeyViolations"], p_key_violations=raw["P_KeyViolations"],
        q_key_violations=raw["Q_KeyViolations"], guid_cap=raw["GUIDCap"],
        client_reregister=bool(raw["ClientReregister"]), subnet_timeout=raw["SubnetTimeOut"],
        resp_time_value=raw["RespTimeValue"], local_phy_errors_threshold=raw["LocalPhyErrors"],
        overrun_errors_threshold=raw["OverrunErrors"],
        link_speed_ext_active=LinkSpeedExt(raw["LinkSpeedExtActive"]),
        link_speed_ext_supported=LinkSpeedExt(raw["LinkSpeedExtSupported"]),
        link_speed_ext_enabled=LinkSpeedExt(raw["LinkSpeedExtEnabled"]),
    )


def _switch_info(raw: mad_records.SwitchInfo) -> SwitchInfo:
    return SwitchInfo(
        linear_fdb_cap=raw["LinearFDBCap"], random_fdb_cap=raw["RandomFDBCap"],
        multicast_fdb_cap=raw["MulticastFDBCap"], linear_fdb_top=raw["LinearFDBTop"],
        default_port=raw["DefaultPort"],
        default_multicast_primary_port=raw["DefaultMulticastPrimaryPort"],
        default_multicast_not_primary_port=raw["DefaultMulticastNotPrimaryPort"],
        life_time_value=raw["LifeTimeValue"], port_state_change=bool(raw["PortStateChange"]),
        optimized_sl_to_vl_mapping_programming=bool(raw["OptimizedSLtoVLMappingProgramming"]),
        lids_per_port=raw["LIDsPerPort"], partition_enforcement_cap=raw["PartitionEnforcementCap"],
        inbound_enforcement_cap=bool(raw["InboundEnforcementCap"]),
        outbound_enforcement_cap=bool(raw["OutboundEnforcementCap"]),
        filter_raw_inbound_cap=bool(raw["FilterRawInboundCap"]),
        filter_raw_outbound_cap=bool(raw["FilterRawOutboundCap"]),
        enhanced_port0=bool(raw["EnhancedPort0"]), multicast_fdb_top=raw["MulticastFDBTop"],
    )


def _used(entries: tuple[int, ...] | None, capacity: int) -> tuple[int, ...] | None:
    """The first `capacity` entries, without the unused (0) ones at the end."""
    if entries is None:
        return None
    kept = list(entries[:capacity])
    while kept and not kept[-1]:
        kept.pop()
    return tuple(kept)


def _vl_arb(entries: tuple[int, ...] | None, capacity: int | None) -> tuple[VlArbEntry, ...]:
    if entries is None or capacity is None:
        return ()
    return tuple(VlArbEntry(vl, weight)
                 for vl, weight in vl_arbitration_entries(entries[:capacity]))


def _sl2vl_inputs(tables: PortTables) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """A switch output port's SL-to-VL table of each input port read, in
    input port order, one object per distinct table (an SM usually programs
    a few for all pairs). Port 0 is an output port like the others (IBA
    14.2.5.8): its tables are kept the same way."""
    distinct: dict[tuple[int, ...], tuple[int, ...]] = {}
    return tuple((into, distinct.setdefault(table, table))
                 for into, table in sorted(tables.sl2vl_by_input.items()))


def _port(node: DiscoveredNode, num: int, info: PortInfo, remote: PortRef | None,
          layout: CounterLayout) -> Port:
    tables = node.tables.get(num, PortTables())
    if node.is_switch:
        # Switch ports share the node's port-0 GUID; data ports have no
        # GUIDInfo (IBA 14.2.5.5: a switch answers it for port 0 alone).
        guid: int | None = node.info["PortGUID"]
        guids = _used(tables.table("guids"), info.guid_cap or 0) if num == 0 else ()
        pkey_cap = node.info["PartitionCap"] if num == 0 else (
            node.switch_info["PartitionEnforcementCap"] if node.switch_info else 0)
    else:
        guid = tables.port_guid
        guids = _used(tables.table("guids"), info.guid_cap or 0)
        pkey_cap = node.info["PartitionCap"]
    return Port(
        node_guid=node.guid, num=num, guid=guid, info=info,
        pkeys=_used(tables.table("pkeys"), pkey_cap) or (),
        sl2vl=(tables.sl2vl_by_input.get(0) or () if node.is_switch
               else tables.table("sl2vl") or ()),
        sl2vl_inputs=_sl2vl_inputs(tables) if node.is_switch else None,
        vl_arb_high=_vl_arb(tables.table("vl_arb_high"), info.vl_arb_high_cap),
        vl_arb_low=_vl_arb(tables.table("vl_arb_low"), info.vl_arb_low_cap),
        guids=guids, remote=remote, physical_interface=None, led_on=tables.led_on,
        vendor_diag=None, counter_layout=layout,
    )


def _node(node: DiscoveredNode, infos: Mapping[int, PortInfo], links: Mapping[PortRef, PortRef],
          counters: Mapping[PortRef, MeasuredCounters]) -> Node | None:
    """The node as read; `counters`: what each port's PMA answered (a port
    without an answer is served as one without a PMA)."""
    ports: list[Port] = []
    for num in node.port_numbers:
        info = infos.get(num)
        if info is None:
            break  # ports are kept contiguous: Node.port() indexes them by number
        ref = PortRef(node.guid, num)
        measured = counters.get(ref)
        ports.append(_port(node, num, info, links.get(ref), _NO_PMA if measured is None else layout_of(measured)))
    if not ports:
        return None
    raw = node.info
    return Node(
        guid=node.guid, node_type=NodeType(raw["NodeType"]),
        description=node.description,
        system_image_guid=raw["SystemImageGUID"], base_version=raw["BaseVersion"],
        class_version=raw["ClassVersion"], vendor_id=raw["VendorID"],
        device_id=raw["DeviceID"], revision=raw["Revision"],
        num_ports=raw["NumPorts"], partition_cap=raw["PartitionCap"],
        local_port_num=raw["LocalPortNum"], ports=tuple(ports),
        switch=_switch_info(node.switch_info) if node.switch_info is not None else None,
    )


_NO_PMA = CounterLayout(frozenset())


def _sms(subnet: Subnet) -> tuple[SmInfo, ...]:
    sms = []
    for node in subnet.nodes.values():
        for num, tables in sorted(node.tables.items()):
            raw = tables.sm_info
            state = _enum(SmState, raw["SMState"]) if raw is not None else None
            if raw is None or state is None:
                continue
            sms.append(SmInfo(guid=raw["GUID"], sm_key=raw["SM_Key"],
                              act_count=raw["ActCount"], priority=raw["Priority"],
                              state=state, node_guid=node.guid, port_num=num))
    return tuple(sms)


def _forwarding(subnet: Subnet) -> ForwardingTables:
    linear: dict[int, bytes] = {}
    multicast: dict[int, Mapping[int, int]] = {}
    for node in subnet.nodes.values():
        if node.lft_complete:
            top = max(node.lft, default=-1)
            linear[node.guid] = bytes(node.lft.get(lid, NO_PORT) for lid in range(top + 1))
        if node.mft_complete:
            multicast[node.guid] = MappingProxyType(dict(node.mft))
    return ForwardingTables(MappingProxyType(linear), MappingProxyType(multicast))


def build_fabric(subnet: Subnet, local_guid: int, *,
                 port_infos: Mapping[PortRef, mad_records.PortInfo] | None = None,
                 counters: Mapping[PortRef, MeasuredCounters] | None = None,
                 sa: SaRecords = SaRecords(), spec: str = "live") -> Fabric:
    """The snapshot of `subnet` seen from the node `local_guid`.

    `port_infos` replaces the sweep's PortInfo of the ports a later poll
    read; `counters` are the PMA counters of each port (a port without is
    served as one without a PMA)."""
    infos: dict[int, dict[int, PortInfo]] = {}
    for found in subnet.nodes.values():
        per_node = infos[found.guid] = {}
        for num, swept in found.ports.items():
            raw = (port_infos or {}).get(PortRef(found.guid, num), swept)
            info = _port_info(raw)
            if info is None:
                log.warning("live: %016x port %d: PortState %s is no state; port left out",
                            found.guid, num, raw["PortState"])
                continue
            per_node[num] = info
    # A link is up while neither end is Down; a cable whose link is down has no peer.
    links: dict[PortRef, PortRef] = {}
    for (guid, num), (peer_guid, peer_num) in subnet.links.items():
        here, there = infos.get(guid, {}).get(num), infos.get(peer_guid, {}).get(peer_num)
        if (here is not None and there is not None and link_state(here) is not PortState.DOWN
                and link_state(there) is not PortState.DOWN):
            links[PortRef(guid, num)] = PortRef(peer_guid, peer_num)
    nodes: dict[int, Node] = {}
    for guid, discovered in subnet.nodes.items():
        node = _node(discovered, infos[guid], links, counters or {})
        if node is not None:
            nodes[guid] = node
    lid_map: dict[int, PortRef] = {}
    for node in nodes.values():
        for port in (node.ports[:1] if node.is_switch else node.ports):
            if port.info.lid and port.info.lid not in lid_map:
                lid_map[port.info.lid] = port.ref
    local = nodes[local_guid]
    prefix = local.management_port.info.gid_prefix
    return Fabric(
        subnet_prefix=prefix or DEFAULT_SUBNET_PREFIX,
        nodes=MappingProxyType(nodes),
        links=tuple(sorted({Link.between(a, b) for a, b in links.items()
                            if a.guid in nodes and b.guid in nodes})),
        lid_map=MappingProxyType(lid_map),
        sms=_sms(subnet),
        sm_config=None,
        partitions=sa.partitions,
        multicast_groups=sa.multicast_groups,
        services=sa.services,
        connections=MappingProxyType({}),
        local_node_guid=local_guid,
        spec=spec,
        forwarding=_forwarding(subnet),
        computes_routes=False,
        counter_values=values_by_node({ref: measured for ref, measured in (counters or {}).items()
                                       if ref.guid in nodes}),
    )

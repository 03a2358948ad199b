"""IB-SM-MIB: the fabric as its subnet manager sees it.

Served where `target.serves_sm` (the default context and nodes running an SM). Every table
describes the whole subnet, so rows are built once per snapshot, in index order, and shared by
all contexts (per_node=False); only ibSmConfigTable's values depend on the context (the SM its
node hosts). The request and result tables, service associations and partition configuration
scalars come from the agent's write store (`ib_sm_binding(state)`); their SETs and every other
SET of this module are in sm_write.py, which registry.py passes in (sm_write reads this module,
never the other way round). `IB_SM_MIB` is the read-only binding: those tables have no rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from typing import Any, NamedTuple

from ibsnmp.fabric.traffic import sm_act_count
from ibsnmp.fabric.iba import SmState, make_gid
from ibsnmp.fabric.lineage import Aspect, Derived
from ibsnmp.fabric.model import Fabric, McMember, Node, Port, SmConfig, SmInfo, sl2vl_by_input
from ibsnmp.state.overrides import PartitionBuffer

from .api import ContextTarget
from .binding import (
    ModuleBinding,
    ScalarBinding,
    Shard,
    TableBinding,
    WriterBinding,
    reads_time,
)
from .facts import clamp_to, highest, named_value, truth
from .sm_requests import request_row

# Rows are generated in index order from the Fabric.sorted_* helpers, so the
# machinery's sort of the encoded indexes runs over presorted input.
Row = tuple[tuple[Any, ...], Any]

# RowStatus active: the row exists and is in service.
_ROW_ACTIVE = named_value("ibSmConfigStatus", "active")


# -- shared helpers --------------------------------------------------------------


def _guid(value: int) -> bytes:
    return value.to_bytes(8, "big")


_truth = truth


def _key_octets(key: int | None, size: int) -> bytes | None:
    """The first `size` octets of a 64-bit key in network order; None (not
    read) has no instance."""
    return None if key is None else (key >> (64 - 8 * size)).to_bytes(size, "big")


def _text64(text: str) -> str:
    """A DisplayString (SIZE(0..64)): NodeDescription and ServiceName are
    64-octet IBA fields; anything longer or non-ASCII is cut to fit."""
    if len(text) <= 64 and text.isascii():
        return text
    return text.encode("ascii", "replace")[:64].decode("ascii")


# Every table is indexed by the subnet prefix (IDENTITY); these are made of
# the nodes: which exist and what each holds.
_NODES = Aspect.NODE_SET | Aspect.NODES | Aspect.IDENTITY


# What each node-owned table reads of a node (TableBinding.view): a node
# that changed elsewhere (a port's state) keeps its rows' answers.
def _node_info_view(node: Node) -> tuple[Any, ...]:
    return (node.node_type, node.description, node.system_image_guid, node.base_version,
            node.class_version, node.vendor_id, node.device_id, node.revision, node.num_ports,
            node.partition_cap, node.local_port_num, node.port_guid)


def _port_info_view(node: Node) -> tuple[Any, ...]:
    return tuple((port.num, port.info) for port in node.ports)


def _switch_view(node: Node) -> Any:
    return node.switch


def _sw_sl2vl_view(node: Node) -> tuple[Any, ...]:
    return node.is_switch, tuple((port.num, port.sl2vl, port.sl2vl_inputs)
                                 for port in node.data_ports)


def _ca_sl2vl_view(node: Node) -> tuple[Any, ...]:
    return node.is_switch, tuple((port.num, port.sl2vl) for port in node.ports)


def _vl_arb_view(node: Node) -> tuple[Any, ...]:
    return tuple((port.num, port.vl_arb_low, port.vl_arb_high) for port in node.ports)


def _prefix(fabric: Fabric) -> bytes:
    return fabric.derive(_PREFIX)


_PREFIX: Derived[bytes] = Derived("subnet prefix octets", Aspect.IDENTITY,
                                  lambda fabric: fabric.subnet_prefix.to_bytes(8, "big"))


def _subnet_prefix(row: Any, target: ContextTarget) -> bytes:
    """Every table's ibSm*SubnetPrefix column (one subnet per fabric)."""
    return _prefix(target.fabric)


def _node_guid_of_port(port: Port, target: ContextTarget) -> bytes:
    return _guid(port.node_guid)


def _node_guid(node: Node, target: ContextTarget) -> bytes:
    return _guid(node.guid)


# -- ibSmConfigTable -----------------------------------------------------------------
# INDEX { ibSmConfigSubnetPrefix }: one row per subnet the SM on "this device"
# manages (draft section 4.1).  A fabric is one subnet, so there is one row.
# It describes the SM hosted by the context's node; where that node runs none
# (the default context on a host without an SM) it describes the master SM,
# which is the SM the agent speaks for.  The configuration (sweep interval,
# LID range ...) is the subnet's, shared by master and standby.


class _SmSite(NamedTuple):
    config: SmConfig | None  # None: the provider knows no SM configuration
    by_node: Mapping[int, SmInfo]
    default: SmInfo


def _config_rows(target: ContextTarget, designated: Callable[[], int | None] | None = None
                 ) -> Iterable[Row]:
    fabric = target.fabric
    if not fabric.sms:
        return ()
    # Master first, then by priority: a node hosting several SMs shows its best.
    ordered = sorted(fabric.sms, key=lambda sm: (sm.state is not SmState.MASTER, -sm.priority, sm.guid))
    by_node: dict[int, SmInfo] = {}
    for sm in ordered:
        by_node.setdefault(sm.node_guid, sm)
    default = ordered[0]
    # With a write store, the default context keeps speaking for the same SM
    # (the one the agent started with) even after a SET disabled it and
    # another took over as master.
    chosen = designated() if designated is not None else None
    if chosen is not None:
        default = next((sm for sm in fabric.sms if sm.guid == chosen), default)
    return (((_prefix(fabric),), _SmSite(fabric.sm_config, by_node, default)),)


def config_sm(target: ContextTarget, designated: int | None = None) -> SmInfo | None:
    """The SM ibSmConfigTable's row shows (and a SET of it configures) in
    this context: the SM of the context's node, else the designated one."""
    rows = list(_config_rows(target, (lambda: designated) if designated is not None else None))
    return _sm(rows[0][1], target) if rows else None


def _sm(site: _SmSite, target: ContextTarget) -> SmInfo:
    return site.by_node.get(target.node.guid, site.default)


def _admin_status(sm: SmInfo) -> int:
    # ibSmConfigAdminStatus enable(1)/disable(2): an SM in NOTACTIVE has been
    # disabled (IBA 14.4.1, SMInfo DISABLE moves it there); any other state runs.
    return 2 if sm.state is SmState.NOT_ACTIVE else 1


def _configured(name: str) -> Callable[[_SmSite, Any], Any]:
    """A configuration column: no instance where the configuration is unknown."""
    return lambda s, t: getattr(s.config, name) if s.config is not None else None


def _config_table(designated: Callable[[], int | None] | None = None) -> TableBinding:
    return TableBinding(
        entry="ibSmConfigEntry",
        rows=partial(_config_rows, designated=designated) if designated is not None else _config_rows,
        depends=Aspect.SMS | Aspect.SM_CONFIG | Aspect.IDENTITY,
        per_node=False,
        columns={
            "ibSmConfigSubnetPrefix": _subnet_prefix,
            "ibSmConfigGUID": lambda s, t: _guid(_sm(s, t).guid),
            "ibSmConfigPriority": lambda s, t: _sm(s, t).priority,
            "ibSmConfigSMKey": lambda s, t: _key_octets(_sm(s, t).sm_key, 8),
            "ibSmConfigAdminStatus": lambda s, t: _admin_status(_sm(s, t)),
            # notActive(0) .. master(3): the IBA SMInfo SMState codes.
            "ibSmConfigOperStatus": lambda s, t: int(_sm(s, t).state),
            # Counter32 wraps at 32 bits, as SMInfo ActCount does.
            "ibSmConfigActCount": reads_time(lambda s, t: sm_act_count(_sm(s, t), t.elapsed)),
            "ibSmConfigStatus": lambda s, t: _ROW_ACTIVE,
            "ibSmConfigSweepInterval": _configured("sweep_interval_s"),
            "ibSmConfigResponseTimeout": _configured("transaction_timeout_ms"),
            "ibSmConfigPortAgingTime": _configured("port_aging_time_s"),
            "ibSmConfigMinUnicastLID": _configured("min_unicast_lid"),
            "ibSmConfigMaxUnicastLID": _configured("max_unicast_lid"),
            "ibSmConfigDefaultLMC": _configured("lmc"),
            "ibSmConfigMasterPollInterval": _configured("master_poll_interval_s"),
            "ibSmConfigMasterPollRetries": _configured("master_poll_retries"),
            "ibSmConfigMKeyLeasePeriod": _configured("m_key_lease_period_s"),
        },
    )


# -- ibSmNodeInfoTable: NodeInfo and NodeDescription of every node -----------------------


def _node_rows(target: ContextTarget) -> Iterator[Row]:
    fabric = target.fabric
    prefix = _prefix(fabric)
    nodes = fabric.nodes
    for guid in fabric.sorted_node_guids():
        yield (prefix, _guid(guid)), nodes[guid]


def _node_field(name: str, convert: Any) -> Any:
    """A NodeInfo column; no instance where the provider did not read it."""
    def get(node: Node, target: ContextTarget) -> Any:
        value = getattr(node, name)
        return None if value is None else convert(value)

    return get


_NODE_INFO = TableBinding(
    entry="ibSmNodeInfoEntry",
    rows=_node_rows,
    depends=_NODES,
    owned=True,
    view=_node_info_view,
    per_node=False,
    columns={
        "ibSmNodeInfoSubnetPrefix": _subnet_prefix,
        "ibSmNodeInfoNodeGUID": _node_guid,
        "ibSmNodeInfoBaseVersion": lambda n, t: n.base_version,
        "ibSmNodeInfoClassVersion": lambda n, t: n.class_version,
        # channelAdapter(1), switch(2), router(3): the IBA NodeType codes.
        "ibSmNodeInfoType": lambda n, t: int(n.node_type),
        "ibSmNodeInfoNumPorts": lambda n, t: n.num_ports,
        "ibSmNodeInfoSystemImageGUID": _node_field("system_image_guid", _guid),
        "ibSmNodeInfoPortGUID": _node_field("port_guid", _guid),
        "ibSmNodeInfoPartitionCap": lambda n, t: n.partition_cap,
        "ibSmNodeInfoDeviceID": _node_field("device_id", lambda v: v.to_bytes(2, "big")),
        "ibSmNodeInfoRevision": _node_field("revision", lambda v: v.to_bytes(4, "big")),
        "ibSmNodeInfoLocalPortNum": lambda n, t: n.local_port_num,
        "ibSmNodeInfoVendorID": _node_field("vendor_id", lambda v: v.to_bytes(3, "big")),
        "ibSmNodeInfoDescription": lambda n, t: (  # None: NodeDescription not read
            None if n.description is None else _text64(n.description)),
    },
)


# -- ibSmPortInfoTable: PortInfo of every port (switch port 0 included) ---------------


def _ports_in_order(fabric: Fabric) -> Iterator[tuple[bytes, Port]]:
    """(node GUID octets, port) for every port, in (GUID, port number) order:
    the order of Fabric.sorted_port_keys, without a lookup per port."""
    nodes = fabric.nodes
    for guid in fabric.sorted_node_guids():
        key = _guid(guid)
        for port in nodes[guid].ports:  # sorted by number
            yield key, port


def _port_rows(target: ContextTarget) -> Iterator[Row]:
    prefix = _prefix(target.fabric)
    for key, port in _ports_in_order(target.fabric):
        yield (prefix, key, port.num), port


def _info(name: str, convert: Any = None) -> Any:
    """A PortInfo column; no instance where the provider could not read the
    field (a host's sysfs: see model.PortInfo)."""
    def get(port: Any, target: ContextTarget) -> Any:
        value = getattr(port.info, name)
        if value is None or convert is None:
            return value
        return convert(value)

    return get


# Bit-set and code fields are served as the raw IBA PortInfo values: the
# DESCRIPTION texts list the IBA 1.0 codes (LinkWidth 1 = 1x, 2 = 4x, 8 = 12x;
# LinkSpeed 1 = 2.5 Gb/s), which later IBA releases extended in the same
# fields (8x = 4, 2x = 16; DDR = 2, QDR = 4).  PortPhysState 7 ("reserved" in
# the text) is IBA's PhyTest.  MTU and VL codes equal the enumerations
# (mtu256(1) .. mtu4096(5), vl0(1) .. vl0ToVl14(5)).
_PORT_INFO = TableBinding(
    entry="ibSmPortInfoEntry",
    rows=_port_rows,
    depends=_NODES,
    owned=True,
    view=_port_info_view,
    per_node=False,
    columns={
        "ibSmPortInfoSubnetPrefix": _subnet_prefix,
        "ibSmPortInfoNodeGUID": _node_guid_of_port,
        "ibSmPortInfoLocalPortNum": lambda p, t: p.num,
        "ibSmPortInfoMKey": _info("m_key", lambda v: v.to_bytes(8, "big")),
        "ibSmPortInfoGIDPrefix": _info("gid_prefix", lambda v: v.to_bytes(8, "big")),
        # LID 0 means "not assigned"; the MIB's range starts at 1: no instance.
        "ibSmPortInfoLID": lambda p, t: p.info.lid or None,
        "ibSmPortInfoMasterSmLID": lambda p, t: p.info.master_sm_lid or None,
        "ibSmPortInfoCapMask": _info("capability_mask", lambda v: v.to_bytes(4, "big")),
        "ibSmPortInfoDiagCode": _info("diag_code", lambda v: v.to_bytes(2, "big")),
        "ibSmPortInfoMKeyLeasePeriod": _info("m_key_lease_period"),
        "ibSmPortInfoLinkWidthEnabled": _info("link_width_enabled", int),
        "ibSmPortInfoLinkWidthSupported": _info("link_width_supported", int),
        "ibSmPortInfoLinkWidthActive": _info("link_width_active", int),
        "ibSmPortInfoLinkSpeedSupported": _info("link_speed_supported", int),
        # noStateChange(0), down(1), initialize(2), armed(3), active(4): IBA PortState.
        "ibSmPortInfoState": _info("port_state", int),
        "ibSmPortInfoPhyState": _info("phys_state", int),
        "ibSmPortInfoLinkDownDefState": _info("link_down_default_state", int),
        "ibSmPortInfoMKeyProtBits": _info("m_key_protect_bits", int),
        "ibSmPortInfoLMC": _info("lmc"),
        "ibSmPortInfoLinkSpeedActive": _info("link_speed_active", int),
        "ibSmPortInfoLinkSpeedEnabled": _info("link_speed_enabled", int),
        "ibSmPortInfoNeighborMTU": _info("neighbor_mtu", int),
        "ibSmPortInfoMasterSmSL": _info("master_sm_sl"),
        "ibSmPortInfoVLCap": _info("vl_cap", int),
        "ibSmPortInfoVLHighLimit": _info("vl_high_limit"),
        "ibSmPortInfoVLArbHighCap": _info("vl_arb_high_cap"),
        "ibSmPortInfoVLArbLowCap": _info("vl_arb_low_cap"),
        "ibSmPortInfoMTUCap": _info("mtu_cap", int),
        "ibSmPortInfoVLStallCount": _info("vl_stall_count"),
        "ibSmPortInfoHOQLife": _info("hoq_life"),
        "ibSmPortInfoOperVL": _info("operational_vls", int),
        "ibSmPortInfoInPartEnforce": _info("partition_enforcement_inbound", _truth),
        "ibSmPortInfoOutPartEnforce": _info("partition_enforcement_outbound", _truth),
        "ibSmPortInfoInFilterRawPktEnf": _info("filter_raw_inbound", _truth),
        "ibSmPortInfoOutFilterRawPktEnf": _info("filter_raw_outbound", _truth),
        # 16-bit IBA violation counters that stop at all ones.
        "ibSmPortInfoMKeyViolation": _info("m_key_violations", clamp_to("ibSmPortInfoMKeyViolation")),
        "ibSmPortInfoPKeyViolation": _info("p_key_violations", clamp_to("ibSmPortInfoPKeyViolation")),
        "ibSmPortInfoQKeyViolation": _info("q_key_violations", clamp_to("ibSmPortInfoQKeyViolation")),
        "ibSmPortInfoGUIDCap": _info("guid_cap"),
        "ibSmPortInfoSubnetTimeout": _info("subnet_timeout"),
        "ibSmPortInfoRespTime": _info("resp_time_value"),
        "ibSmPortInfoLocalPhyError": _info("local_phy_errors_threshold"),
        "ibSmPortInfoOverrunError": _info("overrun_errors_threshold"),
        # 4-bit IBA fields in one octet.
        "ibSmPortInfoInitType": _info("init_type", lambda v: bytes((v & 0xF,))),
        "ibSmPortInfoInitTypeReply": _info("init_type_reply", lambda v: bytes((v & 0xF,))),
    },
)


# -- ibSmSwitchInfoTable: SwitchInfo of every switch -------------------------------------


def _switch_rows(target: ContextTarget) -> Iterator[Row]:
    fabric = target.fabric
    prefix = _prefix(fabric)
    nodes = fabric.nodes
    for guid in fabric.sorted_switch_guids():
        node = nodes[guid]
        if node.switch is not None:
            yield (prefix, _guid(guid)), node


def _switch_field(name: str, convert: Any = None) -> Any:
    """A SwitchInfo column; no instance where the provider did not read it
    (a topology dump shows only EnhancedPort0)."""
    def get(node: Node, target: ContextTarget) -> Any:
        value = getattr(node.switch, name)
        return value if value is None or convert is None else convert(value)

    return get


_SWITCH_INFO = TableBinding(
    entry="ibSmSwitchInfoEntry",
    rows=_switch_rows,
    depends=_NODES,
    owned=True,
    view=_switch_view,
    per_node=False,
    columns={
        "ibSmSwitchInfoSubnetPrefix": _subnet_prefix,
        "ibSmSwitchInfoNodeGUID": _node_guid,
        "ibSmSwitchInfoLinearFdbCap": _switch_field("linear_fdb_cap"),
        "ibSmSwitchInfoRandomFdbCap": _switch_field("random_fdb_cap"),
        "ibSmSwitchInfoMcastFdbCap": _switch_field("multicast_fdb_cap"),
        "ibSmSwitchInfoLinearFdbTop": _switch_field("linear_fdb_top"),
        "ibSmSwitchInfoDefaultPort": _switch_field("default_port"),
        "ibSmSwitchInfoDefPriMcastPort": _switch_field("default_multicast_primary_port"),
        "ibSmSwitchInfoDefNonPriMcastPort": _switch_field("default_multicast_not_primary_port"),
        "ibSmSwitchInfoLifeTimeValue": _switch_field("life_time_value"),
        # portNotInTransition(0), portInTransition(1): the IBA PortStateChange bit.
        "ibSmSwitchInfoPortStateChange": _switch_field("port_state_change", int),
        "ibSmSwitchInfoLIDsPerPort": _switch_field("lids_per_port"),
        "ibSmSwitchInfoPartitionEnfCap": _switch_field("partition_enforcement_cap"),
        "ibSmSwitchInfoInEnfCap": _switch_field("inbound_enforcement_cap", _truth),
        "ibSmSwitchInfoOutEnfCap": _switch_field("outbound_enforcement_cap", _truth),
        "ibSmSwitchInfoInFilterRawPktCap": _switch_field("filter_raw_inbound_cap", _truth),
        "ibSmSwitchInfoOutFilterRawPktCap": _switch_field("filter_raw_outbound_cap", _truth),
        "ibSmSwitchInfoEnhanced0": _switch_field("enhanced_port0", _truth),
    },
)


# -- vector tables: partition and multicast membership ------------------------------
# A vector is at most 255 octets (SIZE(0..255)) of fixed-size elements, so it
# holds 25 partition elements (10 octets) or 14 multicast elements (18
# octets).  Vectors are numbered from 0, the low end of the index's range.
# A partition or group without members still has one, empty, vector.
#
# ibSm*LastChange: the model records no time at which membership changed; a
# snapshot's membership is served as unchanged since the agent started, so
# the value is 0 (the convention of RFC 2863 ifLastChange).  A provider whose
# membership changes at run time needs a change time in the model.


class _Vector(NamedTuple):
    key: bytes  # the P_Key or MGID the vector belongs to
    number: int  # the vector's index (`index` is tuple's method)
    data: bytes


_PARTITION_ELEMENT = 10  # node GUID (8), port (1), membership type (1)
_MCAST_ELEMENT = 18  # port GID (16), JoinState (1), ProxyJoin (1)
_NO_CHANGE = 0


def _vectors(prefix: bytes, key: bytes, elements: list[bytes], size: int) -> Iterator[Row]:
    per_vector = 255 // size
    chunks = [elements[i : i + per_vector] for i in range(0, len(elements), per_vector)] or [[]]
    for index, chunk in enumerate(chunks):
        yield (prefix, key, index), _Vector(key, index, b"".join(chunk))


def _partition_rows(target: ContextTarget) -> Iterator[Row]:
    # ibSmPartitionKey names the partition: its 15-bit P_Key base with bit 15
    # (the membership bit) clear, since membership is per member, in byte 10
    # of each element: fullMembership(1), limitedMembership(2).
    fabric = target.fabric
    prefix = _prefix(fabric)
    for pkey in fabric.sorted_partition_keys():
        partition = fabric.partition(pkey)
        if partition is None:
            continue
        elements = [
            _guid(m.guid) + bytes((m.port, 1 if m.full else 2)) for m in partition.members
        ]
        yield from _vectors(prefix, (pkey & 0x7FFF).to_bytes(2, "big"), elements, _PARTITION_ELEMENT)


def _mcast_member_rows(target: ContextTarget) -> Iterator[Row]:
    fabric = target.fabric
    prefix = _prefix(fabric)
    known: dict[Any, bytes | None] = {}  # the same members recur across groups

    def element(member: McMember) -> bytes | None:
        port = fabric.port(member.guid, member.port)
        if port is None:
            return None
        gid = make_gid(port.info.gid_prefix, port.guid).to_bytes(16, "big")
        # JoinState bits as IBA MCMemberRecord has them; ProxyJoin true(1)/false(2).
        return gid + bytes((int(member.join_state) & 0xFF, _truth(member.proxy_join)))

    for mgid in fabric.sorted_mgids():
        group = fabric.multicast_group(mgid)
        if group is None:
            continue
        elements = []
        for member in group.members:
            data = known[member] if member in known else known.setdefault(member, element(member))
            if data is not None:
                elements.append(data)
        yield from _vectors(prefix, mgid.to_bytes(16, "big"), elements, _MCAST_ELEMENT)


def _vector_columns(table: str, key_column: str, element: int) -> dict[str, Any]:
    return {
        f"ibSm{table}SubnetPrefix": _subnet_prefix,
        key_column: lambda v, t: v.key,
        f"ibSm{table}VectorIndex": lambda v, t: v.number,
        f"ibSm{table}Vector": lambda v, t: v.data,
        f"ibSm{table}VectorSize": lambda v, t: len(v.data),
        f"ibSm{table}VectorElementSize": lambda v, t: element,
        f"ibSm{table}LastChange": lambda v, t: _NO_CHANGE,
    }


_PARTITION = TableBinding(
    entry="ibSmPartitionEntry",
    rows=_partition_rows,
    depends=Aspect.SA | Aspect.IDENTITY,
    per_node=False,
    columns=_vector_columns("Partition", "ibSmPartitionKey", _PARTITION_ELEMENT),
)


# -- ibSmMcastGroupTable ------------------------------------------------------------------


def _mcast_group_rows(target: ContextTarget) -> Iterator[Row]:
    fabric = target.fabric
    prefix = _prefix(fabric)
    for mgid in fabric.sorted_mgids():
        group = fabric.multicast_group(mgid)
        if group is not None:
            yield (prefix, mgid.to_bytes(16, "big")), group


# ibSmMcastGroupRate enumerates only mbps2500(2), gbps10(3), gbps30(4), the
# IBA rate codes of IBA 1.0; a group at another rate has no value here.
_MCAST_RATES = frozenset((2, 3, 4))
# ibSmMcastGroupScope: linkLocal(2), siteLocal(5), orgLocal(8), global(14),
# the scope nibble of the MGID; other nibbles have no enumeration.
_MCAST_SCOPES = frozenset((2, 5, 8, 14))
# ibSmMcastGroupRateSelector: the SA keeps a group's rate as an exact value
# (OpenSM records MTU, rate and packet lifetime with selector 2): equal(2).
_SELECTOR_EXACTLY = 2


def _mcast_scope(mgid: int) -> int | None:
    scope = (mgid >> 112) & 0xF
    return scope if scope in _MCAST_SCOPES else None


_MCAST_GROUP = TableBinding(
    entry="ibSmMcastGroupEntry",
    rows=_mcast_group_rows,
    depends=Aspect.SA | Aspect.IDENTITY,
    per_node=False,
    columns={
        "ibSmMcastGroupSubnetPrefix": _subnet_prefix,
        "ibSmMcastGroupMGID": lambda g, t: g.mgid.to_bytes(16, "big"),
        "ibSmMcastGroupQKey": lambda g, t: g.q_key.to_bytes(4, "big"),
        "ibSmMcastGroupMLID": lambda g, t: g.mlid.to_bytes(2, "big"),
        # mtu256(1) .. mtu4096(5): the IBA MTU codes of MCMemberRecord.
        "ibSmMcastGroupMTU": lambda g, t: int(g.mtu),
        "ibSmMcastGroupTClass": lambda g, t: g.traffic_class,
        "ibSmMcastGroupPKey": lambda g, t: g.pkey.to_bytes(2, "big"),
        "ibSmMcastGroupRateSelector": lambda g, t: _SELECTOR_EXACTLY,
        "ibSmMcastGroupRate": lambda g, t: int(g.rate) if int(g.rate) in _MCAST_RATES else None,
        "ibSmMcastGroupPacketLifeTime": lambda g, t: g.packet_life_time,
        "ibSmMcastGroupSL": lambda g, t: g.sl,
        "ibSmMcastGroupFlowLabel": lambda g, t: (g.flow_label & 0xFFFFF).to_bytes(3, "big"),
        "ibSmMcastGroupHopLimit": lambda g, t: g.hop_limit,
        "ibSmMcastGroupScope": lambda g, t: _mcast_scope(g.mgid),
    },
)


_MCAST_MEMBER = TableBinding(
    entry="ibSmMcastMemberEntry",
    rows=_mcast_member_rows,
    depends=Aspect.SA | _NODES,
    per_node=False,
    columns=_vector_columns("McastMember", "ibSmMcastMemberMGID", _MCAST_ELEMENT),
)


# -- ibSmSMInfoTable: every SM on the subnet ----------------------------------------------
# The DESCRIPTION speaks of the "other" SMs; the table is shared by all
# contexts, and the default context hosts no SM of its own, so it lists every
# SM of the subnet (as an SA SMInfoRecord query does), this device's included.


def _sm_rows(target: ContextTarget) -> Iterator[Row]:
    fabric = target.fabric
    prefix = _prefix(fabric)
    for sm in sorted(fabric.sms, key=lambda sm: sm.guid):
        yield (prefix, _guid(sm.guid)), sm


# The top of ibSmSMInfoActCount (Integer32, 2**31 - 1) is all ones: it masks the wrap.
_ACT_COUNT_MASK = highest("ibSmSMInfoActCount")


def _masked_act_count(count: int | None) -> int | None:
    """None: ActCount was not read (no instance)."""
    return None if count is None else count & _ACT_COUNT_MASK


_SM_INFO = TableBinding(
    entry="ibSmSMInfoEntry",
    rows=_sm_rows,
    depends=Aspect.SMS | Aspect.IDENTITY,
    per_node=False,
    columns={
        "ibSmSMInfoSubnetPrefix": _subnet_prefix,
        "ibSmSMInfoGUID": lambda sm, t: _guid(sm.guid),
        # SIZE(2) cannot hold the 64-bit SM_Key: the first two octets of the
        # key in network order are served, i.e. the start of ibSmConfigSMKey.
        "ibSmSMInfoSMKey": lambda sm, t: _key_octets(sm.sm_key, 2),
        # INTEGER (Integer32) cannot hold the 32-bit ActCount past 2**31 - 1.
        # ActCount is a wrapping counter (IBA 14.2.5.13) whose use is to be seen
        # changing (a standby polls it), so it wraps at 31 bits rather than
        # freezing at the maximum.
        "ibSmSMInfoActCount": reads_time(
            lambda sm, t: _masked_act_count(sm_act_count(sm, t.elapsed))),
        "ibSmSMInfoPriority": lambda sm, t: sm.priority,
        # notActive(0), discovering(1), standby(2), master(3): IBA SMState.
        "ibSmSMInfoSMState": lambda sm, t: int(sm.state),
    },
)


# -- ibSmLinkTable: both directions of every physical link that is up ---------------------


def _link_rows(target: ContextTarget) -> Iterator[Row]:
    fabric = target.fabric
    prefix = _prefix(fabric)
    far: dict[Any, Any] = {}
    for link in fabric.links:
        far[link.a] = link.b
        far[link.b] = link.a
    for ref in fabric.sorted_link_keys():
        yield (prefix, _guid(ref.guid), ref.port), (ref, far[ref])


_LINK = TableBinding(
    entry="ibSmLinkEntry",
    rows=_link_rows,
    depends=Aspect.LINKS | Aspect.IDENTITY,
    owned=True,
    per_node=False,
    columns={
        "ibSmLinkSubnetPrefix": _subnet_prefix,
        "ibSmLinkFromNodeGUID": lambda r, t: _guid(r[0].guid),
        "ibSmLinkFromPortNum": lambda r, t: r[0].port,
        "ibSmLinkToNodeGUID": lambda r, t: _guid(r[1].guid),
        "ibSmLinkToPortNum": lambda r, t: r[1].port,
    },
)


# -- request/result tables and service associations: rows created by SETs ------------------
# Rows come from the agent's write store (ibsnmp.state.store.AgentState): each
# request session is one row of its request table and owns its result rows;
# service associations are configuration. Row objects are {short column
# name: value} mappings (a column never written has no instance). Without a
# store (build_mib() with no state) the tables have no rows.
# Path/MultiPath MTU columns use 0..5 with mtu256(0) (the IBA MTU code minus
# one), unlike PortInfo's 1..5; Rate columns use the IBA PathRecord rate
# codes (2 = 2.5, 3 = 10, 4 = 30 Gb/s ...).


def _no_rows(target: ContextTarget) -> Iterable[Row]:
    return ()


def _stored(table: str, *fields: str) -> dict[str, Any]:
    """Getters for rows kept as {short column name: value} mappings."""
    return {
        f"ibSm{table}{field}": (lambda row, t, name=field: row.get(name))
        for field in fields
    }


_PATH_FIELDS = (
    "DstGID", "SrcGID", "NumbPath", "DstLID", "SrcLID", "RawTraffic", "FlowLabel", "HopLimit",
    "TClass", "PKey", "SL", "MTUSel", "MTU", "RateSel", "Rate", "PktLifeTimeSel", "PktLifeTime",
    "Preference",
)
_MULTIPATH_REQ_FIELDS = (
    "RowStatus", "CreationTime", "CompMask", "RawTraffic", "FlowLabel", "HopLimit", "TClass",
    "NumbPath", "PKey", "SL", "MTUSel", "MTU", "RateSel", "Rate", "PktLifeTimeSel", "PktLifeTime",
    "IndepSel", "SGIDCount", "DGIDCount",
) + tuple(f"SDGIDBlock{n}" for n in range(1, 33))
_TRACE_FIELDS = (
    "IDGeneration", "NodeType", "NodeID", "ChassisID", "EntryPortID", "ExitPortID", "EntryPort",
    "ExitPort",
)

# (entry, table prefix, columns, session table, request (True) or result rows)
_SESSION_TABLE_SPECS = (
    ("ibSmPathReqEntry", "PathReq", ("RowStatus", "CreationTime", "RowCompMask", *_PATH_FIELDS),
     "path", True),
    ("ibSmPathResultEntry", "PathResult", _PATH_FIELDS, "path", False),
    ("ibSmMultiPathReqEntry", "MultiPathReq", _MULTIPATH_REQ_FIELDS, "multipath", True),
    ("ibSmMultiPathResultEntry", "MultiPathResult", _PATH_FIELDS, "multipath", False),
    ("ibSmTraceReqEntry", "TraceReq",
     ("SessionId", "RowStatus", "CreationTime", "CompMask", *_TRACE_FIELDS), "trace", True),
    ("ibSmTraceResultEntry", "TraceResult", _TRACE_FIELDS, "trace", False),
)


def _session_rows(state: Any, table: str, requests: bool, target: ContextTarget) -> Iterator[Row]:
    for session in state.sessions_of(table):
        if requests:
            yield session.index, request_row(state, session)
        else:
            for number, result in enumerate(session.results, start=1):
                yield session.index + (number,), result


def _session_tables(state: Any) -> tuple[TableBinding, ...]:
    out = []
    for entry, table, fields, kind, requests in _SESSION_TABLE_SPECS:
        rows = partial(_session_rows, state, kind, requests) if state is not None else _no_rows
        out.append(TableBinding(entry=entry, rows=rows, columns=_stored(table, *fields), per_node=False,
                                stamp=state.stamp if state is not None else None, depends=Aspect.IDENTITY))
    return tuple(out)


def _assoc_rows(state: Any, target: ContextTarget) -> Iterator[Row]:
    prefix = _prefix(target.fabric)
    for (key, name), status in sorted(state.config.service_assoc.items()):
        yield (prefix, key, name), {"Key": key, "Name": name, "RowStatus": status}


def _service_assoc_table(state: Any) -> TableBinding:
    return TableBinding(
        entry="ibSmServiceAssocEntry",
        rows=partial(_assoc_rows, state) if state is not None else _no_rows,
        depends=Aspect.IDENTITY,
        columns=_stored("ServiceAssoc", "Key", "Name", "RowStatus"),
        per_node=False,
        stamp=state.stamp if state is not None else None,
    )


# -- ibSmServiceTable: ServiceRecords registered with the SA ---------------------------------


def _service_rows(target: ContextTarget) -> Iterator[Row]:
    fabric = target.fabric
    prefix = _prefix(fabric)
    by_key = {(s.service_id, s.gid, s.pkey): s for s in fabric.services}
    for service_id, gid, pkey in fabric.sorted_service_keys():
        yield (
            (prefix, service_id.to_bytes(8, "big"), gid.to_bytes(16, "big"), pkey.to_bytes(2, "big")),
            by_key[(service_id, gid, pkey)],
        )


_LEASE_MAX = highest("ibSmServiceLease")

_SERVICE = TableBinding(
    entry="ibSmServiceEntry",
    rows=_service_rows,
    depends=Aspect.SA | Aspect.IDENTITY,
    per_node=False,
    columns={
        "ibSmServiceSubnetPrefix": _subnet_prefix,
        "ibSmServiceID": lambda s, t: s.service_id.to_bytes(8, "big"),
        "ibSmServiceGID": lambda s, t: s.gid.to_bytes(16, "big"),
        "ibSmServicePKey": lambda s, t: s.pkey.to_bytes(2, "big"),
        # The text's indefinite lease 4294967295 (IBA ServiceLease 0xFFFFFFFF)
        # does not fit INTEGER: leases clamp to its top, 2147483647, which therefore
        # also reads as "indefinite" (68 years).
        "ibSmServiceLease": lambda s, t: min(s.lease, _LEASE_MAX),
        # ServiceKey (16 octets) and ServiceData (64 octets) are fixed-size
        # IBA fields: a shorter stored value is zero-filled, as on the wire.
        "ibSmServiceKey": lambda s, t: s.key[:16].ljust(16, b"\0"),
        "ibSmServiceName": lambda s, t: _text64(s.name),
        "ibSmServiceData": lambda s, t: s.data[:64].ljust(64, b"\0"),
    },
)


# -- SL to VL mapping tables -------------------------------------------------------------
# A switch row (input, output) shows the table of that pair where the provider
# read each (Port.sl2vl_inputs), else the output port's one table.
# Switch rows cover every pair of data ports (1..255 in the INDEX), so the
# table grows with the square of the radix: a 10,000-node two-level
# fat-tree (leaves of ~230 ports) has ~2.5 million rows. It is served as one
# shard per switch, built only when a request reaches that switch.


class _SwSl2Vl(NamedTuple):
    guid: bytes
    in_port: int
    out_port: int
    sl2vl: tuple[int, ...]


def _sw_sl2vl_shards(target: ContextTarget) -> Iterator[tuple[tuple[Any, ...], Shard]]:
    fabric = target.fabric
    prefix = _prefix(fabric)
    nodes = fabric.nodes
    for guid in fabric.sorted_switch_guids():
        key = _guid(guid)
        yield (prefix, key), partial(_switch_sl2vl_rows, prefix, key, nodes[guid])


def _switch_sl2vl_rows(prefix: bytes, key: bytes, switch: Any) -> Iterator[Row]:
    ports = switch.data_ports
    if all(p.sl2vl_inputs is None for p in ports):  # one table per output port
        tables = [(p.num, p.sl2vl) for p in ports if p.sl2vl]
        pairs: Iterable[tuple[int, int, tuple[int, ...]]] = (
            (in_num, out_num, table) for in_num, _ in tables for out_num, table in tables)
    else:  # input port 0 (the switch itself) is outside the INDEX's 1..255
        inputs = [p.num for p in ports if p.sl2vl]
        pairs = sorted((in_num, out.num, table) for out in ports
                       for in_num, table in sl2vl_by_input(out, inputs) if in_num)
    for in_num, out_num, table in pairs:
        yield (prefix, key, in_num, out_num), _SwSl2Vl(key, in_num, out_num, table)


def _ca_sl2vl_rows(target: ContextTarget) -> Iterator[Row]:
    # "channel adapters and routers": every node that is not a switch.
    fabric = target.fabric
    prefix = _prefix(fabric)
    nodes = fabric.nodes
    for guid in fabric.sorted_node_guids():
        node = nodes[guid]
        if node.is_switch:
            continue
        key = _guid(guid)
        for port in node.ports:
            if port.num >= 1 and port.sl2vl:
                yield (prefix, key, port.num), port


def _sl_columns(table: str, get: Callable[[Any], Any]) -> dict[str, Any]:
    return {f"ibSm{table}SL{sl}toVL": (lambda r, t, sl=sl: get(r)[sl]) for sl in range(16)}


_SW_SL2VL = TableBinding(
    entry="ibSmSwSLtoVLMapEntry",
    rows=lambda target: (),
    depends=_NODES,
    owned=True,
    view=_sw_sl2vl_view,
    shards=_sw_sl2vl_shards,
    per_node=False,
    columns={
        "ibSmSwSLtoVLMapSubnetPrefix": _subnet_prefix,
        "ibSmSwSLtoVLMapNodeGUID": lambda r, t: r.guid,
        "ibSmSwSLtoVLMapInPortNum": lambda r, t: r.in_port,
        "ibSmSwSLtoVLMapOutPortNum": lambda r, t: r.out_port,
        **_sl_columns("SwSLtoVLMap", lambda r: r.sl2vl),
    },
)

_CA_SL2VL = TableBinding(
    entry="ibSmCaSLtoVLMapEntry",
    rows=_ca_sl2vl_rows,
    depends=_NODES,
    owned=True,
    view=_ca_sl2vl_view,
    per_node=False,
    columns={
        "ibSmCaSLtoVLMapSubnetPrefix": _subnet_prefix,
        "ibSmCaSLtoVLMapNodeGUID": _node_guid_of_port,
        "ibSmCaSLtoVLMapPortNum": lambda p, t: p.num,
        **_sl_columns("CaSLtoVLMap", lambda p: p.sl2vl),
    },
)


# -- ibSmVLArbitrationTable ---------------------------------------------------------------
# The draft's INDEX { prefix, node, port, priority } has no entry index, so
# only one row per (node, port, priority) fits: the first entry (entry 1,
# ibSmVLArbitrationIndex) of each priority's VLArbitrationTable is served.
# The entry's VL has no column in the draft.  Ports whose table for a
# priority is empty (VLArbHighCap / VLArbLowCap 0) have no row for it.

_LOW_PRIORITY = named_value("ibSmVLArbitrationPriority", "lowPriority")
_HIGH_PRIORITY = named_value("ibSmVLArbitrationPriority", "highPriority")
_FIRST_ENTRY = 1


class _VlArb(NamedTuple):
    port: Port
    priority: int
    weight: int


def _vl_arb_rows(target: ContextTarget) -> Iterator[Row]:
    prefix = _prefix(target.fabric)
    for key, port in _ports_in_order(target.fabric):
        num = port.num
        if port.vl_arb_low:
            yield (prefix, key, num, _LOW_PRIORITY), _VlArb(port, _LOW_PRIORITY, port.vl_arb_low[0].weight)
        if port.vl_arb_high:
            yield (prefix, key, num, _HIGH_PRIORITY), _VlArb(port, _HIGH_PRIORITY, port.vl_arb_high[0].weight)


_VL_ARBITRATION = TableBinding(
    entry="ibSmVLArbitrationEntry",
    rows=_vl_arb_rows,
    depends=_NODES,
    owned=True,
    view=_vl_arb_view,
    per_node=False,
    columns={
        "ibSmVLArbitrationSubnetPrefix": _subnet_prefix,
        "ibSmVLArbitrationNodeGUID": lambda r, t: _guid(r.port.node_guid),
        "ibSmVLArbitrationPriority": lambda r, t: r.priority,
        "ibSmVLArbitrationIndex": lambda r, t: _FIRST_ENTRY,
        "ibSmVLArbitrationPortNum": lambda r, t: r.port.num,
        "ibSmVLArbitrationWeight": lambda r, t: r.weight,
    },
)


# -- ibSmPartitionConfig scalars -------------------------------------------------------
# Operands for the next partition action, written by SETs (see sm_write):
# each reads what was last written, else its initial value (see
# state.overrides.PartitionBuffer.operands); the action reads the last one
# performed, none(1) before any (its DEFVAL).


def _partition_config(state: Any) -> tuple[ScalarBinding, ...]:
    def current() -> PartitionBuffer:
        return state.config.partition_buffer if state is not None else PartitionBuffer()

    def operand(get: Callable[[Any], Any]) -> Callable[[ContextTarget], Any]:
        return lambda t: get(current().operands(_prefix(t.fabric)))

    return (
        ScalarBinding("ibSmPartitionConfigSubnetPrefix", operand(lambda o: o.prefix)),
        ScalarBinding("ibSmPartitionConfigKey", operand(lambda o: o.key)),
        ScalarBinding("ibSmPartitionConfigAction", lambda t: current().last_action),
        ScalarBinding("ibSmPartitionConfigMemberNodeGUID", operand(lambda o: o.guid)),
        ScalarBinding("ibSmPartitionConfigMemberPortNum", operand(lambda o: o.port)),
        ScalarBinding("ibSmPartitionConfigMemberType", operand(lambda o: o.member_type)),
    )


def ib_sm_binding(state: Any = None, writers: tuple[WriterBinding, ...] = ()) -> ModuleBinding:
    """IB-SM-MIB over the fabric, with the rows of `state` (an
    ibsnmp.state.store.AgentState) when given: request sessions, service
    associations and the partition configuration scalars. `writers` (from
    sm_write.sm_writers(state)) accept the SETs."""
    designated = None
    if state is not None:
        designated = lambda: state.designated_sm  # noqa: E731
    return ModuleBinding(
        module="IB-SM-MIB",
        scalars=_partition_config(state),
        tables=(
            _config_table(designated),
            _NODE_INFO,
            _PORT_INFO,
            _SWITCH_INFO,
            _PARTITION,
            _MCAST_GROUP,
            _MCAST_MEMBER,
            _SM_INFO,
            _LINK,
            *_session_tables(state),
            _SERVICE,
            _service_assoc_table(state),
            _SW_SL2VL,
            _CA_SL2VL,
            _VL_ARBITRATION,
        ),
        applies=lambda target: target.serves_sm,
        writers=writers,
    )


IB_SM_MIB = ib_sm_binding()

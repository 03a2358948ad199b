"""SMA-MIB: what the subnet management agent of the context's node reports.

Every context answers this module for its own node: NodeInfo, SwitchInfo (switches), PortInfo
of the management port and of each data port, the per-port tables the SM programs (GUIDInfo,
P_Key, SL-to-VL, VL arbitration), the switch forwarding tables (as fabric.routing serves them),
the SMs running on the node, VendorDiag and LedInfo. The draft's enumerations rarely use IBA's
codes: each mapping is an explicit table below. The accessible-for-notify objects are not bound
here. What the model does not know (None) has no instance: nothing is filled in.
Reference: docs/mibs.md, 'What each module serves'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..fabric.traffic import sm_act_count
from ..fabric.lineage import Aspect
from ..fabric.iba import (
    MAX_PHYS_PORTS,
    MAX_UNICAST_LID,
    MULTICAST_LID_BASE,
    UNROUTED_PORT,
    CapabilityMask,
    LinkSpeed,
    NodeType,
    SmState,
    guid_bytes,
)
from ..fabric.model import Node, Port, PortInfo, sl2vl_by_input
from ..fabric.routing import linear_forwarding_table, multicast_forwarding_table, random_forwarding_table
from .api import ContextTarget
from .binding import ModuleBinding, ScalarBinding, TableBinding, reads_time
from .facts import clamp_to, highest, named_value, truth

# IbDataPortAndInvalid: "255 when no valid port applies"; the SL-to-VL, P_Key
# and VendorDiag index descriptions use it for switch port 0 (and the P_Key
# index for the one table of a CA).
NO_DATA_PORT = 255

_ZERO_KEY = bytes(8)
_DIAG_DATA_OCTETS = 124  # ibSmaPortVendorDiagData is OCTET STRING (SIZE(124))
_PORT_LIST_BITS = 256  # IbSmPortList: 256 bits, port 0 the MSB of octet 1
_MAX_PKEY_ENTRIES = 65504  # IBA: 2048 blocks of 32 P_Key entries
_VL15 = 15  # the management VL: never named by a VLArbitration entry


_truth = truth


def _clamp(value: int, top: int) -> int:
    return value if value <= top else top


def _known(convert: Any) -> Any:
    """`convert` applied to a known value; None (not known) stays None."""
    return lambda value: None if value is None else convert(value)


def _octets(mask: int, size: int) -> Any:
    """An integer as a fixed-size OCTET STRING; None stays None."""
    return _known(lambda value: (value & mask).to_bytes(size, "big"))


# -- enumerations: IBA code -> SMA-MIB number -----------------------------------
# Most are the IBA code plus one, with `other` for codes the draft did not know:
# it was written for IBA 1.1, so only 2.5 Gb/s lanes and 1x/4x/12x widths have
# names.


def _labelled(column: str, labels: dict[Any, str]) -> dict[Any, int]:
    """IBA code -> the number the compiled module gives the code's label."""
    return {code: named_value(column, label) for code, label in labels.items()}


# ibSmaNodeType: channelAdapter(1), switch(2), router(3), other(4); IBA's
# reserved codes (0, 4..255) are "reported as other".
_NODE_TYPE = _labelled("ibSmaNodeType", {
    NodeType.CA: "channelAdapter", NodeType.SWITCH: "switch", NodeType.ROUTER: "router"})
_NODE_TYPE_OTHER = named_value("ibSmaNodeType", "other")

# ibSmaPortLinkWidthEnabled: noStateChange(1) = IBA 0, oneX(2) = 1, fourX(3) = 2,
# oneXOr4X(4) = 3, twelveX(5) = 8, oneXOr12X(6) = 9, fourXOr12X(7) = 10,
# oneX4XOr12X(8) = 11, linkWidthSupported(9) = 255; any set with 8x or 2x
# (IBA 1.2+) is other(10).
_WIDTH_ENABLED = _labelled("ibSmaPortLinkWidthEnabled", {
    0: "noStateChange", 1: "oneX", 2: "fourX", 3: "oneXOr4X", 8: "twelveX", 9: "oneXOr12X",
    10: "fourXOr12X", 11: "oneX4XOr12X", 255: "linkWidthSupported"})
_WIDTH_ENABLED_OTHER = named_value("ibSmaPortLinkWidthEnabled", "other")
# ibSmaPortLinkWidthSupported: oneX(1) = IBA 1, oneXOr4X(2) = 3, oneX4XOr12X(3) = 11.
_WIDTH_SUPPORTED = _labelled("ibSmaPortLinkWidthSupported", {
    1: "oneX", 3: "oneXOr4X", 11: "oneX4XOr12X"})
_WIDTH_SUPPORTED_OTHER = named_value("ibSmaPortLinkWidthSupported", "other")
# ibSmaPortLinkWidthActive: oneX(1) = IBA 1, fourX(2) = 2, twelveX(3) = 8.
_WIDTH_ACTIVE = _labelled("ibSmaPortLinkWidthActive", {1: "oneX", 2: "fourX", 8: "twelveX"})
_WIDTH_ACTIVE_OTHER = named_value("ibSmaPortLinkWidthActive", "other")
# ibSmaPortLinkSpeedSupported / ...Active: twoPoint5Gbps(1) = IBA 1 only; any
# other set or speed (5, 10 Gb/s and every LinkSpeedExt speed) is other(2).
_SPEED = _labelled("ibSmaPortLinkSpeedActive", {int(LinkSpeed.SDR): "twoPoint5Gbps"})
_SPEED_OTHER = named_value("ibSmaPortLinkSpeedActive", "other")
# ibSmaPortLinkSpeedEnabled: noStateChange(1) = IBA 0, twoPoint5Gbps(2) = 1,
# linkSpeedSupported(3) = 15.
_SPEED_ENABLED = _labelled("ibSmaPortLinkSpeedEnabled", {
    0: "noStateChange", 1: "twoPoint5Gbps", 15: "linkSpeedSupported"})
_SPEED_ENABLED_OTHER = named_value("ibSmaPortLinkSpeedEnabled", "other")
# ibSmaPortLinkState: IBA PortState 0..4 (noChange .. active) plus one; other(6).
_LINK_STATE_OTHER = named_value("ibSmaPortLinkState", "other")
# ibSmaPortPhysState: IBA PortPhysicalState 0..6 (noChange .. linkErrorRecovery)
# plus one; PhyTest (7, IBA 1.2) and reserved codes are other(8).
_PHYS_STATE_OTHER = named_value("ibSmaPortPhysState", "other")
# ibSmaPortLinkDownDefaultState: IBA 0..2 (noChange, sleep, polling) plus one; other(4).
_DOWN_DEFAULT_OTHER = named_value("ibSmaPortLinkDownDefaultState", "other")
# ibSmaPortNeighborMtu / ibSmaPortMtuCapacity: mtu256(1) .. mtu4096(5) are the
# IBA codes themselves; 0 and reserved codes are other(6).
_MTU_OTHER = named_value("ibSmaPortMtuCapacity", "other")
# ibSmaPortVirtLaneSupport / ibSmaPortOperationalVls: vl0(1) .. vl0ToVl14(5) are
# the IBA VLCap codes themselves; 0 (no change) and reserved are other(6).
_VLS_OTHER = named_value("ibSmaPortVirtLaneSupport", "other")
# ibSmaPortGenericDiagCode: IBA DiagCode bits 3..0, portReady(1) = 0 ..
# hardError(5) = 4, plus one; reserved codes are other(6).
_DIAG_OTHER = named_value("ibSmaPortGenericDiagCode", "other")
# ibSmaSmState: notActive(2) = IBA 0, discovering(3) = 1, standby(4) = 2,
# master(5) = 3; "a value of reserved returns unknown(1)".
_SM_STATE = {state: named_value("ibSmaSmState", label) for state, label in (
    (SmState.NOT_ACTIVE, "notActive"), (SmState.DISCOVERING, "discovering"),
    (SmState.STANDBY, "standby"), (SmState.MASTER, "master"))}
_SM_STATE_UNKNOWN = named_value("ibSmaSmState", "unknown")
# ibSmaPKeyMembership: none(1) for an invalid P_Key (base 0: 0x0000 or 0x8000,
# IBA 10.9.1.2, as unused table entries read), limited(2) when bit 15 is 0,
# full(3) when it is 1.
_PKEY_NONE, _PKEY_LIMITED, _PKEY_FULL = (named_value("ibSmaPKeyMembership", label)
                                         for label in ("none", "limited", "full"))
_LED_UNKNOWN, _LED_ON, _LED_OFF = (named_value("ibSmaLedState", label)
                                   for label in ("unknown", "on", "off"))


def _plus_one(code: int, last: int, other: int) -> int:
    """The common case: IBA codes 0..last are the MIB numbers 1..last+1."""
    return code + 1 if 0 <= code <= last else other


def _mtu(code: int) -> int:
    return code if 1 <= code <= 5 else _MTU_OTHER


def _vls(code: int) -> int:
    return code if 1 <= code <= 5 else _VLS_OTHER


def _link_speed_active(info: Any) -> int | None:
    # A non-zero LinkSpeedExtActive (FDR and faster) overrides LinkSpeedActive.
    if info.link_speed_ext_active:
        return _SPEED_OTHER
    if info.link_speed_active is None:
        return None
    return _SPEED.get(int(info.link_speed_active), _SPEED_OTHER)


def _link_speed_supported(info: Any) -> int | None:
    if info.link_speed_ext_supported:
        return _SPEED_OTHER
    if info.link_speed_supported is None:
        return None
    return _SPEED.get(int(info.link_speed_supported), _SPEED_OTHER)


def _link_speed_enabled(info: Any) -> int | None:
    if info.link_speed_ext_enabled:
        return _SPEED_ENABLED_OTHER
    if info.link_speed_enabled is None:
        return None
    return _SPEED_ENABLED.get(int(info.link_speed_enabled), _SPEED_ENABLED_OTHER)


def _protect_bits(info: Any) -> int | None:
    """ibSmaPortMKeyProtectBits, by the meaning of IBA's protection levels
    (Table 115): a zero M_Key is never checked, noMKeyProtection(1); otherwise
    level 0 lets SubnGet return the key, succeedWithReturnKey(2); level 1
    returns it as zeros, succeedWithReturnZeroes(3); levels 2 and 3 fail
    SubnGet on a key mismatch, failOnNoMatch(4)."""
    if info.m_key is None or info.m_key_protect_bits is None:
        return None
    if info.m_key == 0:
        return 1
    return {0: 2, 1: 3}.get(int(info.m_key_protect_bits), 4)


def _m_key(info: PortInfo) -> bytes | None:
    """PortInfo:M_Key as a requester without the key reads it (IBA 14.2.4.1):
    the key itself only at protection level 0, zeros above (an SNMP manager
    never presents an M_Key)."""
    if info.m_key is None or info.m_key_protect_bits is None:
        return None
    if info.m_key_protect_bits == 0:
        return info.m_key.to_bytes(8, "big")
    return _ZERO_KEY


def _port_list(mask: int) -> bytes:
    """IbSmPortList from a mask with bit n = port n: port 0 is the most
    significant bit of the first octet; bit 255 is always zero."""
    mask &= (1 << (_PORT_LIST_BITS - 1)) - 1
    return int(format(mask, f"0{_PORT_LIST_BITS}b")[::-1], 2).to_bytes(_PORT_LIST_BITS // 8, "big")


# -- scalars -----------------------------------------------------------------------


def _node_string(target: ContextTarget) -> str | None:
    return node_string(target.node)


def node_string(node: Node) -> str | None:
    """ibSmaNodeString of `node`; None: it has no instance."""
    # DisplayString (SIZE(1..64)): NodeDescription is 64 octets; DisplayString
    # is ASCII, so other characters become '?'. None: NodeDescription not read.
    description = node.description
    if description is None:
        return None
    text = description.encode("ascii", "replace").decode("ascii")[:64]
    return text or None


def _switch(name: str, convert: Any = None) -> Any:
    """A SwitchInfo scalar: absent on a node that is not a switch."""

    def getter(target: ContextTarget) -> Any:
        info = target.node.switch
        if info is None:
            return None
        value = getattr(info, name)
        return convert(value) if convert is not None and value is not None else value

    return getter


def _port0_or_unknown(port: int) -> int:
    # Default ports: "If the port number is unknown, a 0 is returned"; IBA
    # writes 255 (no port) there, outside the draft's 0..254.
    return port if 0 <= port <= MAX_PHYS_PORTS else 0


_fdb_top = clamp_to("ibSmaSwLinearFdbTop")


def _linear_fdb_top(info: Any) -> int | None:
    # "switches that implement random forwarding tables ... a 0 is returned".
    if info.linear_fdb_cap == 0:
        return 0
    return None if info.linear_fdb_top is None else _fdb_top(info.linear_fdb_top)


def _mgmt(target: ContextTarget) -> Any:
    """PortInfo of the management port: switch port 0, or the CA port the SM
    reaches the node through (NodeInfo:LocalPortNum)."""
    return target.node.management_port.info


def _mgmt_field(name: str, top: int | None = None) -> Any:
    if top is None:
        return lambda target: getattr(_mgmt(target), name)
    clamp = _known(lambda value: _clamp(value, top))
    return lambda target: clamp(getattr(_mgmt(target), name))


def _capability(bit: CapabilityMask) -> Any:
    truth = _known(lambda mask: _truth(mask & bit))
    return lambda target: truth(_mgmt(target).capability_mask)


def _flag(field: str, bit: int) -> Any:
    truth = _known(lambda flags: _truth(flags & bit))
    return lambda target: truth(getattr(_mgmt(target), field))


# PortInfo:InitType bits 0..3 and InitTypeReply bits 0..2 (IBA 14.2.5.6).
_NO_LOAD, _PRESERVE_CONTENT, _PRESERVE_PRESENCE, _DO_NOT_RESUSCITATE = 1, 2, 4, 8

_guid = _known(guid_bytes)
_partition_cap = _known(clamp_to("ibSmaNodePartitionTableNum"))
_vendor_diag = clamp_to("ibSmaPortVendorDiagCode")
_device_id = _octets(0xFFFF, 2)
_revision = _octets(0xFFFFFFFF, 4)
_vendor_id = _octets(0xFFFFFF, 3)

_NODE_SCALARS = (
    ScalarBinding("ibSmaNodeString", _node_string),
    ScalarBinding("ibSmaNodeBaseVersion", lambda t: t.node.base_version),
    ScalarBinding("ibSmaNodeClassVersion", lambda t: t.node.class_version),
    ScalarBinding("ibSmaNodeType", lambda t: _NODE_TYPE.get(t.node.node_type, _NODE_TYPE_OTHER)),
    ScalarBinding("ibSmaNodeNumPorts", lambda t: t.node.num_ports),
    ScalarBinding("ibSmaSystemImageGuid", lambda t: _guid(t.node.system_image_guid)),
    ScalarBinding("ibSmaNodeGuid", lambda t: guid_bytes(t.node.guid)),
    ScalarBinding("ibSmaNodePortGuid", lambda t: _guid(t.node.port_guid)),
    # PartitionCap; the draft's range starts at 1 ("at a minimum set to 1").
    ScalarBinding("ibSmaNodePartitionTableNum", lambda t: _partition_cap(t.node.partition_cap)),
    ScalarBinding("ibSmaNodeDeviceId", lambda t: _device_id(t.node.device_id)),
    ScalarBinding("ibSmaNodeRevision", lambda t: _revision(t.node.revision)),
    # NodeInfo:LocalPortNum, the port the SM's requests reach the node on.
    ScalarBinding("ibSmaNodeLocalPortNumOrZero", lambda t: _port0_or_unknown(t.node.local_port_num)),
    ScalarBinding("ibSmaNodeVendorId", lambda t: _vendor_id(t.node.vendor_id)),
)

_SWITCH_SCALARS = (
    ScalarBinding("ibSmaSwLinearFdbTableNum", _switch("linear_fdb_cap", clamp_to("ibSmaSwLinearFdbTableNum"))),
    ScalarBinding("ibSmaSwRandomFdbTableNum", _switch("random_fdb_cap", clamp_to("ibSmaSwRandomFdbTableNum"))),
    ScalarBinding("ibSmaSwMulticastFdbTableNum", _switch("multicast_fdb_cap", clamp_to("ibSmaSwMulticastFdbTableNum"))),
    ScalarBinding("ibSmaSwLinearFdbTop", lambda t: None if t.node.switch is None else _linear_fdb_top(t.node.switch)),
    ScalarBinding("ibSmaSwDefaultPort", _switch("default_port", _port0_or_unknown)),
    ScalarBinding("ibSmaSwDefMcastPriPort", _switch("default_multicast_primary_port", _port0_or_unknown)),
    ScalarBinding("ibSmaSwDefMcastNotPriPort", _switch("default_multicast_not_primary_port", _port0_or_unknown)),
    ScalarBinding("ibSmaSwLifeTimeValue", _switch("life_time_value", lambda v: v & 0x1F)),  # 5-bit field
    ScalarBinding("ibSmaSwPortStateChange", _switch("port_state_change", int)),  # Integer32(0..1)
    ScalarBinding("ibSmaSwLidsPerPort", _switch("lids_per_port")),
    ScalarBinding("ibSmaSwPartitionEnforceNum", _switch("partition_enforcement_cap")),
    ScalarBinding("ibSmaSwInboundEnforceCap", _switch("inbound_enforcement_cap", _truth)),
    ScalarBinding("ibSmaSwOutboundEnforceCap", _switch("outbound_enforcement_cap", _truth)),
    ScalarBinding("ibSmaSwFilterRawPktInputCap", _switch("filter_raw_inbound_cap", _truth)),
    ScalarBinding("ibSmaSwFilterRawPktOutputCap", _switch("filter_raw_outbound_cap", _truth)),
    ScalarBinding("ibSmaSwEnhancedPort0", _switch("enhanced_port0", _truth)),
)

_Cap = CapabilityMask
_gid_prefix = _octets((1 << 64) - 1, 8)
_MGMT_PORT_SCALARS = (
    ScalarBinding("ibSmaPortMKey", lambda t: _m_key(_mgmt(t))),
    ScalarBinding("ibSmaPortGidPrefix", lambda t: _gid_prefix(_mgmt(t).gid_prefix)),
    ScalarBinding("ibSmaPortLid", _mgmt_field("lid", highest("ibSmaPortLid"))),
    ScalarBinding("ibSmaPortMasterSmLid", _mgmt_field("master_sm_lid", highest("ibSmaPortMasterSmLid"))),
    ScalarBinding("ibSmaPortIsSubnetManager", _capability(_Cap.IS_SM)),
    ScalarBinding("ibSmaPortIsNoticeSupported", _capability(_Cap.IS_NOTICE_SUPPORTED)),
    ScalarBinding("ibSmaPortIsTrapSupported", _capability(_Cap.IS_TRAP_SUPPORTED)),
    ScalarBinding("ibSmaPortIsAutoMigrateSupported", _capability(_Cap.IS_AUTOMATIC_MIGRATION_SUPPORTED)),
    ScalarBinding("ibSmaPortIsSlMappingSupported", _capability(_Cap.IS_SL_MAPPING_SUPPORTED)),
    ScalarBinding("ibSmaPortIsMKeyNvram", _capability(_Cap.IS_MKEY_NVRAM)),
    ScalarBinding("ibSmaPortIsPKeyNvram", _capability(_Cap.IS_PKEY_NVRAM)),
    ScalarBinding("ibSmaPortIsLedInfoSupported", _capability(_Cap.IS_LED_INFO_SUPPORTED)),
    ScalarBinding("ibSmaPortIsSmDisabled", _capability(_Cap.IS_SM_DISABLED)),
    ScalarBinding("ibSmaPortIsSysImgGuidSupported", _capability(_Cap.IS_SYSTEM_IMAGE_GUID_SUPPORTED)),
    ScalarBinding("ibSmaPortIsPKeyExtPortTrapSup", _capability(_Cap.IS_PKEY_SWITCH_EXTERNAL_PORT_TRAP_SUPPORTED)),
    ScalarBinding("ibSmaPortIsCommManageSupported", _capability(_Cap.IS_COMMUNICATION_MANAGEMENT_SUPPORTED)),
    ScalarBinding("ibSmaPortIsSnmpTunnelSupported", _capability(_Cap.IS_SNMP_TUNNELING_SUPPORTED)),
    ScalarBinding("ibSmaPortIsReinitSupported", _capability(_Cap.IS_REINIT_SUPPORTED)),
    ScalarBinding("ibSmaPortIsDevManageSupported", _capability(_Cap.IS_DEVICE_MANAGEMENT_SUPPORTED)),
    ScalarBinding("ibSmaPortIsVendorClassSupported", _capability(_Cap.IS_VENDOR_CLASS_SUPPORTED)),
    ScalarBinding("ibSmaPortIsDrNoticeSupported", _capability(_Cap.IS_DR_NOTICE_SUPPORTED)),
    ScalarBinding("ibSmaPortIsCapMaskNoticSupported", _capability(_Cap.IS_CAPABILITY_MASK_NOTICE_SUPPORTED)),
    ScalarBinding("ibSmaPortIsBootMgmtSupported", _capability(_Cap.IS_BOOT_MANAGEMENT_SUPPORTED)),
    ScalarBinding("ibSmaPortMKeyLeasePeriod", _mgmt_field("m_key_lease_period", 65535)),
    ScalarBinding("ibSmaPortMKeyProtectBits", lambda t: _protect_bits(_mgmt(t))),
    ScalarBinding("ibSmaPortMasterSmSl", _mgmt_field("master_sm_sl")),
    ScalarBinding("ibSmaPortInitTypeLoad", _flag("init_type", _NO_LOAD)),
    ScalarBinding("ibSmaPortInitTypeContent", _flag("init_type", _PRESERVE_CONTENT)),
    ScalarBinding("ibSmaPortInitTypePresence", _flag("init_type", _PRESERVE_PRESENCE)),
    ScalarBinding("ibSmaPortInitTypeResuscitate", _flag("init_type", _DO_NOT_RESUSCITATE)),
    ScalarBinding("ibSmaPortInitNoLoadReply", _flag("init_type_reply", _NO_LOAD)),
    ScalarBinding("ibSmaPortInitPreserveContReply", _flag("init_type_reply", _PRESERVE_CONTENT)),
    ScalarBinding("ibSmaPortInitPreservePresReply", _flag("init_type_reply", _PRESERVE_PRESENCE)),
    # 16-bit PortInfo violation counters (IBA keeps them at all ones once full).
    ScalarBinding("ibSmaPortMKeyViolations", _mgmt_field("m_key_violations", 65535)),
    ScalarBinding("ibSmaPortPKeyViolations", _mgmt_field("p_key_violations", 65535)),
    ScalarBinding("ibSmaPortQKeyViolations", _mgmt_field("q_key_violations", 65535)),
    ScalarBinding("ibSmaPortNumGuid", _mgmt_field("guid_cap", 255)),  # GUIDCap, an 8-bit field
    ScalarBinding("ibSmaPortSubnetTimeout", _mgmt_field("subnet_timeout")),
    ScalarBinding("ibSmaPortResponseTimeValue", _mgmt_field("resp_time_value")),
)


# -- tables --------------------------------------------------------------------------


def _data_ports(target: ContextTarget) -> Iterator[Any]:
    """Ports that have an IbDataPort number (switch port 0 excluded)."""
    for port in target.node.data_ports:
        if 1 <= port.num <= MAX_PHYS_PORTS:
            yield port


# What the rows of a node's tables are made of besides the node itself: its
# own tables need nothing else; forwarding tables are read from the switch or
# routed over the switches, links and LIDs (fabric.routing).
_OWN = Aspect(0)
_ROUTES = Aspect.FORWARDING | Aspect.IDENTITY | Aspect.NODE_SET | Aspect.LINKS | Aspect.LIDS


def _port_rows(target: ContextTarget) -> Iterator[tuple[tuple[int], Any]]:
    for port in _data_ports(target):
        yield (port.num,), port


def _guid_rows(target: ContextTarget) -> Iterator[tuple[tuple[int, int], int]]:
    """The GUIDInfo table of each port that has one, its entries in use
    1-based. A switch answers GUIDInfo for port 0 alone (IBA 14.2.5.5: the
    modifier names a GUID block, not a port), so a switch's rows are port
    0's, indexed 255 as in the draft's other tables of switch port 0; its
    external ports have none. A CA or router port is indexed by its number.
    A port with no GUID assigned has "1 entry with a 0 value", as the draft
    says; a port whose GUIDInfo is not known (None: a RoCE port, a table
    that did not answer) has no rows."""
    node = target.node
    if node.is_switch:
        port_0 = node.port(0)
        yield from _guid_table(NO_DATA_PORT, None if port_0 is None else port_0.guids)
    else:
        for port in _data_ports(target):
            yield from _guid_table(port.num, port.guids)


def _guid_table(index: int, guids: tuple[int, ...] | None) -> Iterator[tuple[tuple[int, int], int]]:
    if guids is None:
        return
    for i, guid in enumerate(guids[:255] or (0,)):
        yield (index, i + 1), guid


def _pkey_rows(target: ContextTarget) -> Iterator[tuple[tuple[int, int], int]]:
    """The P_Key tables the SMA serves. A CA's table is reached through the
    port the SM uses and has no port in its attribute modifier, so the draft
    indexes it 255; so is switch port 0's. Switch data ports have their
    partition enforcement tables under their own number. Every entry up to the
    capacity is listed (PartitionCap, or PartitionEnforcementCap for switch
    data ports); entries the SM did not fill read 0, membership none(1)."""
    node = target.node
    yield from _pkey_table(NO_DATA_PORT, node.management_port.pkeys, node.partition_cap)
    if node.switch is not None:
        for port in _data_ports(target):
            yield from _pkey_table(port.num, port.pkeys, node.switch.partition_enforcement_cap)


def _pkey_table(index: int, pkeys: tuple[int, ...], capacity: int | None) -> Iterator[tuple[tuple[int, int], int]]:
    count = min(max(capacity or 0, len(pkeys)), _MAX_PKEY_ENTRIES)
    for i in range(count):
        yield (index, i + 1), pkeys[i] if i < len(pkeys) else 0


def _pkey_membership(entry: int) -> int:
    if entry & 0x7FFF == 0:
        return _PKEY_NONE
    return _PKEY_FULL if entry & 0x8000 else _PKEY_LIMITED


def _sl2vl_rows(target: ContextTarget) -> Iterator[tuple[tuple[int, int, int], int]]:
    """A switch has one SL-to-VL table per (output port, input port) pair,
    port 0 indexed 255: each pair the provider read (Port.sl2vl_inputs), or
    for a port whose table holds for every input port, that table under
    each. A CA port's table has no input port (the packet comes from the CA
    itself): input index 255."""
    node = target.node
    if node.is_switch:
        ports = [port for port in node.ports if port.num <= MAX_PHYS_PORTS]
        inputs = [port.num for port in ports]
        for port in ports:
            out = _sl2vl_index(port.num)
            for into, table in sl2vl_by_input(port, inputs):
                yield from (((out, _sl2vl_index(into), sl + 1), vl)
                            for sl, vl in enumerate(table[:16]))
    else:
        for port in _data_ports(target):
            for sl, vl in enumerate(port.sl2vl[:16]):
                yield (port.num, NO_DATA_PORT, sl + 1), vl


def _sl2vl_index(num: int) -> int:
    return NO_DATA_PORT if num == 0 else num


def _vl_arb_rows(high: bool) -> Callable[[ContextTarget], Iterator[tuple[tuple[int, int], Any]]]:
    """VLArbitration entries of each data port, 1-based (up to 64); an entry
    naming VL15 is ignored by IBA and the draft's VL range stops at 14."""

    def rows(target: ContextTarget) -> Iterator[tuple[tuple[int, int], Any]]:
        for port in _data_ports(target):
            entries = port.vl_arb_high if high else port.vl_arb_low
            for n, entry in enumerate(entries[:64]):
                if entry.vl != _VL15:
                    yield (port.num, n + 1), entry

    return rows


def _lft_rows(target: ContextTarget) -> Iterable[tuple[tuple[int], int]]:
    """The switch's linear forwarding table from routing's compact LFT bytes:
    one row per DLID that has a route (IBA's 255, "no route", has no row), up
    to LinearFDBCap. Egress port 0, the switch itself (its own LID), is 0, as
    the SM programs it (the column's range includes 0 by an erratum)."""
    node = target.node
    info = node.switch
    if info is None or info.linear_fdb_cap == 0:
        return ()
    table = linear_forwarding_table(target.fabric, node.guid)
    # An LFT read without SwitchInfo (an SM's dump) is bounded by itself.
    cap = info.linear_fdb_cap if info.linear_fdb_cap is not None else len(table)
    top = min(len(table), cap, MAX_UNICAST_LID + 1)
    return (
        ((lid,), port)
        for lid, port in enumerate(table[:top])
        if port != UNROUTED_PORT
    )


def _rft_rows(target: ContextTarget) -> Iterator[tuple[tuple[int], Any]]:
    """RandomForwardingTable entries (empty without a RandomFDB). The draft
    indexes the table by an IbDataPort "port index value" while the egress
    port is a column of its own, so the index is the 1-based entry number
    (at most 254 entries can be indexed)."""
    node = target.node
    if node.switch is None or not node.switch.random_fdb_cap:
        return
    for n, entry in enumerate(random_forwarding_table(target.fabric, node.guid)[:MAX_PHYS_PORTS]):
        yield (n + 1,), entry


def _mft_rows(target: ContextTarget) -> Iterator[tuple[tuple[int], bytes]]:
    """Multicast forwarding entries, port masks built once per snapshot."""
    node = target.node
    info = node.switch
    if info is None:
        return
    cap = info.multicast_fdb_cap if info.multicast_fdb_cap is not None else 0x10000 - MULTICAST_LID_BASE
    end = min(MULTICAST_LID_BASE + cap, 0x10000)
    for mlid, mask in multicast_forwarding_table(target.fabric, node.guid).items():
        if MULTICAST_LID_BASE <= mlid < end:
            yield (mlid,), _port_list(mask)


def _sm_rows(target: ContextTarget) -> Iterator[tuple[tuple[int], Any]]:
    """The SMs running on this node, by the port they run on. An SM on switch
    port 0 cannot be indexed (IbDataPort is 1..254)."""
    guid = target.node.guid
    for sm in target.fabric.sms:
        if sm.node_guid == guid and 1 <= sm.port_num <= MAX_PHYS_PORTS:
            yield (sm.port_num,), sm


def _diag_rows(target: ContextTarget) -> Iterator[tuple[tuple[int], Any]]:
    """255 is the management port ("information about the management port
    is returned"), then every data port."""
    yield (NO_DATA_PORT,), target.node.management_port
    for port in _data_ports(target):
        yield (port.num,), port


def _diag_data(port: Port) -> bytes | None:
    if port.vendor_diag is None:
        return None
    return port.vendor_diag[:_DIAG_DATA_OCTETS].ljust(_DIAG_DATA_OCTETS, b"\0")


def _led_state(port: Any) -> int | None:
    """The model's LED state; an LED seen off on a port whose CapabilityMask
    lacks IsLEDInfoSupported cannot be read by the SM: unknown(1). An LED
    the provider cannot see (None) has no instance."""
    if port.led_on is None:
        return None
    if port.led_on:
        return _LED_ON
    return _LED_OFF if (port.info.capability_mask or 0) & CapabilityMask.IS_LED_INFO_SUPPORTED else _LED_UNKNOWN


def _info(name: str, convert: Any = None) -> Any:
    """A PortInfo column of a data-port row (no instance where it is None)."""
    if convert is None:
        return lambda port, target: getattr(port.info, name)
    known = _known(convert)
    return lambda port, target: known(getattr(port.info, name))


def _diag_code(convert: Any) -> Any:
    known = _known(convert)
    return lambda port, target: known(port.info.diag_code)


_TABLES = (
    TableBinding(
        entry="ibGuidInfoEntry",
        rows=_guid_rows,
        depends=_OWN,
        columns={"ibSmaGuidVal": lambda guid, target: guid_bytes(guid)},
    ),
    TableBinding(
        entry="ibSmaPortInfoEntry",
        rows=_port_rows,
        depends=_OWN,
        columns={
            "ibSmaPortLinkWidthEnabled": _info(
                "link_width_enabled", lambda v: _WIDTH_ENABLED.get(int(v), _WIDTH_ENABLED_OTHER)),
            "ibSmaPortLinkWidthSupported": _info(
                "link_width_supported", lambda v: _WIDTH_SUPPORTED.get(int(v), _WIDTH_SUPPORTED_OTHER)),
            "ibSmaPortLinkWidthActive": _info(
                "link_width_active", lambda v: _WIDTH_ACTIVE.get(int(v), _WIDTH_ACTIVE_OTHER)),
            "ibSmaPortLinkSpeedSupported": lambda port, target: _link_speed_supported(port.info),
            "ibSmaPortLinkState": _info("port_state", lambda v: _plus_one(int(v), 4, _LINK_STATE_OTHER)),
            "ibSmaPortPhysState": _info("phys_state", lambda v: _plus_one(int(v), 6, _PHYS_STATE_OTHER)),
            "ibSmaPortLinkDownDefaultState": _info(
                "link_down_default_state", lambda v: _plus_one(int(v), 2, _DOWN_DEFAULT_OTHER)),
            "ibSmaPortLidMaskCount": _info("lmc"),
            "ibSmaPortLinkSpeedActive": lambda port, target: _link_speed_active(port.info),
            "ibSmaPortLinkSpeedEnabled": lambda port, target: _link_speed_enabled(port.info),
            "ibSmaPortNeighborMtu": _info("neighbor_mtu", _mtu),
            "ibSmaPortVirtLaneSupport": _info("vl_cap", _vls),
            "ibSmaPortVlHighPriorityLimit": _info("vl_high_limit"),
            "ibSmaPortVlArbHighCapacity": _info("vl_arb_high_cap", clamp_to("ibSmaPortVlArbHighCapacity")),
            "ibSmaPortVlArbLowCapacity": _info("vl_arb_low_cap", clamp_to("ibSmaPortVlArbLowCapacity")),
            "ibSmaPortMtuCapacity": _info("mtu_cap", _mtu),
            "ibSmaPortVlStallCount": _info("vl_stall_count"),
            "ibSmaPortHeadOfQueueLife": _info("hoq_life"),
            "ibSmaPortOperationalVls": _info("operational_vls", _vls),
            "ibSmaPortPartEnforceInbound": _info("partition_enforcement_inbound", _truth),
            "ibSmaPortPartEnforceOutbound": _info("partition_enforcement_outbound", _truth),
            "ibSmaPortFilterRawPktInbound": _info("filter_raw_inbound", _truth),
            "ibSmaPortFilterRawPktOutbound": _info("filter_raw_outbound", _truth),
            "ibSmaPortLocalPhysErrorThreshold": _info("local_phy_errors_threshold"),
            "ibSmaPortOverrunErrorThreshold": _info("overrun_errors_threshold"),
        },
    ),
    TableBinding(
        entry="ibSmaPKeyEntry",
        rows=_pkey_rows,
        depends=_OWN,
        columns={
            "ibSmaPKeyMembership": lambda entry, target: _pkey_membership(entry),
            # "If the P_Key type is none(1), there is no associated Key Base value."
            "ibSmaPKeyBase": lambda entry, target: (entry & 0x7FFF) or None,
        },
    ),
    TableBinding(
        entry="ibSmaSL2VLMapEntry",
        rows=_sl2vl_rows,
        depends=_OWN,
        columns={"ibSmaVirtualLane": lambda vl, target: vl},
    ),
    TableBinding(
        entry="ibSmaHiPriVlArbEntry",
        rows=_vl_arb_rows(high=True),
        depends=_OWN,
        columns={
            "ibSmaHiPriVirtLane": lambda entry, target: entry.vl,
            "ibSmaHiPriWeight": lambda entry, target: entry.weight,
        },
    ),
    TableBinding(
        entry="ibSmaLowPriVlArbEntry",
        rows=_vl_arb_rows(high=False),
        depends=_OWN,
        columns={
            "ibSmaLowPriVirtLane": lambda entry, target: entry.vl,
            "ibSmaLowPriWeight": lambda entry, target: entry.weight,
        },
    ),
    TableBinding(
        entry="ibSmaLinForEntry",
        rows=_lft_rows,
        depends=_ROUTES,
        columns={"ibSmaLinForwEgressPort": lambda port, target: port},
    ),
    TableBinding(
        entry="ibSmaRandomForwardingEntry",
        rows=_rft_rows,
        depends=_ROUTES,
        columns={
            "ibSmaRandomDestLID": lambda entry, target: entry.lid,
            # IbDataPort cannot name port 0 (the switch's own LIDs).
            "ibSmaRandomForwEgressPort": lambda entry, target: (
                entry.port if 1 <= entry.port <= MAX_PHYS_PORTS else None),
            "ibSmaRandomLMC": lambda entry, target: entry.lmc,
            "ibSmaRandomIsValid": lambda entry, target: _truth(entry.valid),
        },
    ),
    TableBinding(
        entry="ibSmaMulForEntry",
        rows=_mft_rows,
        depends=_ROUTES | Aspect.SA,
        columns={"ibSmaMulForwMask": lambda mask, target: mask},
    ),
    TableBinding(
        entry="ibSmaSmInfoEntry",
        rows=_sm_rows,
        depends=Aspect.SMS,
        columns={
            "ibSmaSmGuid": lambda sm, target: guid_bytes(sm.guid),
            # "shown as zeroes unless the requesting SM is proven to be the
            # master, or the requester is otherwise authenticated": an SNMP
            # manager is neither.
            "ibSmaSmSmKey": lambda sm, target: _ZERO_KEY,
            # SMInfo:ActCount, growing with time; a 32-bit value like Counter32.
            "ibSmaSmSmpCount": reads_time(lambda sm, target: sm_act_count(sm, target.elapsed)),
            "ibSmaSmPriority": lambda sm, target: sm.priority & 0xF,  # 4-bit field
            "ibSmaSmState": lambda sm, target: _SM_STATE.get(sm.state, _SM_STATE_UNKNOWN),
        },
    ),
    TableBinding(
        entry="ibSmaVendDiagInfoEntry",
        rows=_diag_rows,
        depends=_OWN,
        columns={
            "ibSmaPortGenericDiagCode": _diag_code(lambda code: _plus_one(code & 0xF, 4, _DIAG_OTHER)),
            # The model's vendor part (DiagCode bits 15..4) in the draft's 0..2047.
            "ibSmaPortVendorDiagCode": _diag_code(lambda code: _vendor_diag(code >> 4)),
            # true(1) when the buffer "contains meaningful vendor-supplied
            # additional diagnostic information", false(2) when it is empty.
            "ibSmaPortVendorDiagIndexFwd": lambda port, target: (
                None if port.vendor_diag is None else _truth(port.vendor_diag)),
            "ibSmaPortVendorDiagData": lambda port, target: _diag_data(port),
        },
    ),
    TableBinding(
        entry="ibSmaLedInfoEntry",
        rows=_port_rows,
        depends=_OWN,
        columns={"ibSmaLedState": lambda port, target: _led_state(port)},
    ),
)

SMA_MIB = ModuleBinding(
    module="SMA-MIB",
    scalars=_NODE_SCALARS + _SWITCH_SCALARS + _MGMT_PORT_SCALARS,
    tables=_TABLES,
)

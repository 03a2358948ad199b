"""Field tables of the MAD headers and the attributes the agent reads.

Offsets and widths are those of the InfiniBand Architecture specification
(volume 1: 13.4 MAD formats, 14.2.5 SMP attributes, 16.1 performance
management), counted in bits from the most significant bit of the
attribute's first octet. Reserved bits are simply left out. Each layout's
variable names its record type, generated into ibsnmp.mad.records_generated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from ibsnmp.mad import records_generated as records
from ibsnmp.mad.layout import AnyRecord, ArrayField, Field, Layout, OctetsField, RecordT, TextField

MAD_SIZE = 256
# Attribute data begins at octet 64 in SMPs (after the M_Key and the
# directed-route block) and in GS MADs such as PerfMgt (after 40 reserved octets).
DATA_OFFSET = 64
SMP_DATA_SIZE = 64
GS_DATA_SIZE = MAD_SIZE - DATA_OFFSET

# Management classes (IBA 13.4.4).
CLASS_SUBN_LID_ROUTED = 0x01
CLASS_SUBN_DIRECTED_ROUTE = 0x81
CLASS_SUBN_ADM = 0x03
CLASS_PERF_MGT = 0x04

# Methods (IBA 13.4.5); a response sets the top bit of the method octet.
METHOD_GET = 0x01
METHOD_SET = 0x02
METHOD_GET_RESP = 0x81
METHOD_TRAP = 0x05
METHOD_REPORT = 0x06

_COMMON = (
    Field("BaseVersion", 0, 8),
    Field("MgmtClass", 8, 8),
    Field("ClassVersion", 16, 8),
    Field("Response", 24, 1),
    Field("Method", 25, 7),
)
_TAIL = (
    Field("TransactionID", 64, 64),
    Field("AttributeID", 128, 16),
    Field("AttributeModifier", 160, 32),
)

# The common MAD header (IBA 13.4.2), 24 octets.
MAD_HEADER: Layout[records.MADHeader] = Layout("MADHeader", 24, (
    *_COMMON,
    Field("Status", 32, 16),
    Field("ClassSpecific", 48, 16),
    *_TAIL,
))

# A LID-routed SMP (IBA 14.2.1.1): the header, the M_Key, data at octet 64.
LID_ROUTED_SMP: Layout[records.LIDRoutedSMP] = Layout("LIDRoutedSMP", MAD_SIZE, (
    *MAD_HEADER.fields,
    Field("MKey", 192, 64),
    OctetsField("Data", DATA_OFFSET * 8, SMP_DATA_SIZE * 8),
))

# A directed-route SMP (IBA 14.2.1.2): the class-specific word carries the
# direction bit, a 15-bit status and the hop pointer and count; the paths
# are one port number per hop, entry 0 unused.
DIRECTED_ROUTE_SMP: Layout[records.DirectedRouteSMP] = Layout("DirectedRouteSMP", MAD_SIZE, (
    *_COMMON,
    Field("Direction", 32, 1),
    Field("Status", 33, 15),
    Field("HopPointer", 48, 8),
    Field("HopCount", 56, 8),
    *_TAIL,
    Field("MKey", 192, 64),
    Field("DrSLID", 256, 16),
    Field("DrDLID", 272, 16),
    OctetsField("Data", DATA_OFFSET * 8, SMP_DATA_SIZE * 8),
    ArrayField("InitialPath", 1024, 512, count=64, element_width=8),
    ArrayField("ReturnPath", 1536, 512, count=64, element_width=8),
))

# A general services MAD (PerfMgt and others without RMPP): data at octet 64.
GS_MAD: Layout[records.GSMAD] = Layout("GSMAD", MAD_SIZE, (
    *MAD_HEADER.fields,
    OctetsField("Data", DATA_OFFSET * 8, GS_DATA_SIZE * 8),
))


@dataclass(frozen=True)
class Attribute(Generic[RecordT]):
    """An attribute's identifier and the layout of its data."""

    attribute_id: int
    layout: Layout[RecordT]

    @property
    def name(self) -> str:
        return self.layout.name


# Any attribute, for code that reads several alike (its records as AnyRecord).
AnyAttribute = Attribute[AnyRecord]

CLASS_PORT_INFO: Attribute[records.ClassPortInfo] = Attribute(0x0001, Layout("ClassPortInfo", 72, (
    Field("BaseVersion", 0, 8),
    Field("ClassVersion", 8, 8),
    Field("CapabilityMask", 16, 16),
    Field("CapabilityMask2", 32, 27),
    Field("RespTimeValue", 59, 5),
    OctetsField("RedirectGID", 64, 128),
    Field("RedirectTC", 192, 8),
    Field("RedirectSL", 200, 4),
    Field("RedirectFL", 204, 20),
    Field("RedirectLID", 224, 16),
    Field("RedirectP_Key", 240, 16),
    Field("RedirectQP", 264, 24),
    Field("RedirectQ_Key", 288, 32),
    OctetsField("TrapGID", 320, 128),
    Field("TrapTC", 448, 8),
    Field("TrapSL", 456, 4),
    Field("TrapFL", 460, 20),
    Field("TrapLID", 480, 16),
    Field("TrapP_Key", 496, 16),
    Field("TrapHL", 512, 8),
    Field("TrapQP", 520, 24),
    Field("TrapQ_Key", 544, 32),
)))

NODE_DESCRIPTION: Attribute[records.NodeDescription] = Attribute(
    0x0010, Layout("NodeDescription", SMP_DATA_SIZE, (
    TextField("NodeString", 0, 512),
)))

NODE_INFO: Attribute[records.NodeInfo] = Attribute(0x0011, Layout("NodeInfo", SMP_DATA_SIZE, (
    Field("BaseVersion", 0, 8),
    Field("ClassVersion", 8, 8),
    Field("NodeType", 16, 8),
    Field("NumPorts", 24, 8),
    Field("SystemImageGUID", 32, 64),
    Field("NodeGUID", 96, 64),
    Field("PortGUID", 160, 64),
    Field("PartitionCap", 224, 16),
    Field("DeviceID", 240, 16),
    Field("Revision", 256, 32),
    Field("LocalPortNum", 288, 8),
    Field("VendorID", 296, 24),
)))

SWITCH_INFO: Attribute[records.SwitchInfo] = Attribute(0x0012, Layout("SwitchInfo", SMP_DATA_SIZE, (
    Field("LinearFDBCap", 0, 16),
    Field("RandomFDBCap", 16, 16),
    Field("MulticastFDBCap", 32, 16),
    Field("LinearFDBTop", 48, 16),
    Field("DefaultPort", 64, 8),
    Field("DefaultMulticastPrimaryPort", 72, 8),
    Field("DefaultMulticastNotPrimaryPort", 80, 8),
    Field("LifeTimeValue", 88, 5),
    Field("PortStateChange", 93, 1),
    Field("OptimizedSLtoVLMappingProgramming", 94, 2),
    Field("LIDsPerPort", 96, 16),
    Field("PartitionEnforcementCap", 112, 16),
    Field("InboundEnforcementCap", 128, 1),
    Field("OutboundEnforcementCap", 129, 1),
    Field("FilterRawInboundCap", 130, 1),
    Field("FilterRawOutboundCap", 131, 1),
    Field("EnhancedPort0", 132, 1),
    Field("MulticastFDBTop", 144, 16),
)))

# Eight GUIDs per block; the attribute modifier selects the block.
GUID_INFO: Attribute[records.GUIDInfo] = Attribute(0x0014, Layout("GUIDInfo", SMP_DATA_SIZE, (
    ArrayField("GUIDBlock", 0, 512, count=8, element_width=64),
)))

PORT_INFO: Attribute[records.PortInfo] = Attribute(0x0015, Layout("PortInfo", SMP_DATA_SIZE, (
    Field("M_Key", 0, 64),
    Field("GidPrefix", 64, 64),
    Field("LID", 128, 16),
    Field("MasterSMLID", 144, 16),
    Field("CapabilityMask", 160, 32),
    Field("DiagCode", 192, 16),
    Field("M_KeyLeasePeriod", 208, 16),
    Field("LocalPortNum", 224, 8),
    Field("LinkWidthEnabled", 232, 8),
    Field("LinkWidthSupported", 240, 8),
    Field("LinkWidthActive", 248, 8),
    Field("LinkSpeedSupported", 256, 4),
    Field("PortState", 260, 4),
    Field("PortPhysicalState", 264, 4),
    Field("LinkDownDefaultState", 268, 4),
    Field("M_KeyProtectBits", 272, 2),
    Field("LMC", 277, 3),
    Field("LinkSpeedActive", 280, 4),
    Field("LinkSpeedEnabled", 284, 4),
    Field("NeighborMTU", 288, 4),
    Field("MasterSMSL", 292, 4),
    Field("VLCap", 296, 4),
    Field("InitType", 300, 4),
    Field("VLHighLimit", 304, 8),
    Field("VLArbitrationHighCap", 312, 8),
    Field("VLArbitrationLowCap", 320, 8),
    Field("InitTypeReply", 328, 4),
    Field("MTUCap", 332, 4),
    Field("VLStallCount", 336, 3),
    Field("HOQLife", 339, 5),
    Field("OperationalVLs", 344, 4),
    Field("PartitionEnforcementInbound", 348, 1),
    Field("PartitionEnforcementOutbound", 349, 1),
    Field("FilterRawInbound", 350, 1),
    Field("FilterRawOutbound", 351, 1),
    Field("M_KeyViolations", 352, 16),
    Field("P_KeyViolations", 368, 16),
    Field("Q_KeyViolations", 384, 16),
    Field("GUIDCap", 400, 8),
    Field("ClientReregister", 408, 1),
    Field("MulticastPKeyTrapSuppressionEnabled", 409, 2),
    Field("SubnetTimeOut", 411, 5),
    Field("RespTimeValue", 419, 5),
    Field("LocalPhyErrors", 424, 4),
    Field("OverrunErrors", 428, 4),
    Field("MaxCreditHint", 432, 16),
    Field("LinkRoundTripLatency", 456, 24),
    Field("CapabilityMask2", 480, 16),
    Field("LinkSpeedExtActive", 496, 4),
    Field("LinkSpeedExtSupported", 500, 4),
    Field("LinkSpeedExtEnabled", 507, 5),
)))

# 32 P_Keys per block: the top bit is the membership type, the rest the base.
P_KEY_TABLE: Attribute[records.P_KeyTable] = Attribute(0x0016, Layout("P_KeyTable", SMP_DATA_SIZE, (
    ArrayField("P_KeyBlock", 0, 512, count=32, element_width=16),
)))

# The VL of each of the 16 SLs, four bits apiece.
SL_TO_VL_MAPPING_TABLE: Attribute[records.SLtoVLMappingTable] = Attribute(
    0x0017, Layout("SLtoVLMappingTable", SMP_DATA_SIZE, (
    ArrayField("SLtoVL", 0, 64, count=16, element_width=4),
)))

# 32 entries of 16 bits: 4 reserved, the VL (4) and its weight (8); see
# `vl_arbitration_entries` for the split.
VL_ARBITRATION_TABLE: Attribute[records.VLArbitrationTable] = Attribute(
    0x0018, Layout("VLArbitrationTable", SMP_DATA_SIZE, (
    ArrayField("VLWeightBlock", 0, 512, count=32, element_width=12),
)))

# 64 egress ports, one per LID of the block the modifier selects.
LINEAR_FORWARDING_TABLE: Attribute[records.LinearForwardingTable] = Attribute(
    0x0019, Layout("LinearForwardingTable", SMP_DATA_SIZE, (
    ArrayField("PortBlock", 0, 512, count=64, element_width=8),
)))

# 32 port masks of 16 bits for 32 multicast LIDs.
MULTICAST_FORWARDING_TABLE: Attribute[records.MulticastForwardingTable] = Attribute(
    0x001B, Layout("MulticastForwardingTable", SMP_DATA_SIZE, (
    ArrayField("PortMaskBlock", 0, 512, count=32, element_width=16),
)))

# Bit 0 of the first word: the port's LED is on (IBA 14.2.5.15).
LED_INFO: Attribute[records.LedInfo] = Attribute(0x0031, Layout("LedInfo", SMP_DATA_SIZE, (
    Field("LedMask", 0, 1),
)))

SM_INFO: Attribute[records.SMInfo] = Attribute(0x0020, Layout("SMInfo", SMP_DATA_SIZE, (
    Field("GUID", 0, 64),
    Field("SM_Key", 64, 64),
    Field("ActCount", 128, 32),
    Field("Priority", 160, 4),
    Field("SMState", 164, 4),
)))

PORT_COUNTERS: Attribute[records.PortCounters] = Attribute(
    0x0012, Layout("PortCounters", GS_DATA_SIZE, (
    Field("PortSelect", 8, 8),
    Field("CounterSelect", 16, 16),
    Field("SymbolErrorCounter", 32, 16),
    Field("LinkErrorRecoveryCounter", 48, 8),
    Field("LinkDownedCounter", 56, 8),
    Field("PortRcvErrors", 64, 16),
    Field("PortRcvRemotePhysicalErrors", 80, 16),
    Field("PortRcvSwitchRelayErrors", 96, 16),
    Field("PortXmitDiscards", 112, 16),
    Field("PortXmitConstraintErrors", 128, 8),
    Field("PortRcvConstraintErrors", 136, 8),
    Field("CounterSelect2", 144, 8),
    Field("LocalLinkIntegrityErrors", 152, 4),
    Field("ExcessiveBufferOverrunErrors", 156, 4),
    Field("QP1Dropped", 160, 16),
    Field("VL15Dropped", 176, 16),
    Field("PortXmitData", 192, 32),
    Field("PortRcvData", 224, 32),
    Field("PortXmitPkts", 256, 32),
    Field("PortRcvPkts", 288, 32),
    Field("PortXmitWait", 320, 32),
)))

PORT_COUNTERS_EXTENDED: Attribute[records.PortCountersExtended] = Attribute(
    0x001D, Layout("PortCountersExtended", GS_DATA_SIZE, (
    Field("PortSelect", 8, 8),
    Field("CounterSelect", 16, 16),
    Field("PortXmitData", 64, 64),
    Field("PortRcvData", 128, 64),
    Field("PortXmitPkts", 192, 64),
    Field("PortRcvPkts", 256, 64),
    Field("PortUnicastXmitPkts", 320, 64),
    Field("PortUnicastRcvPkts", 384, 64),
    Field("PortMulticastXmitPkts", 448, 64),
    Field("PortMulticastRcvPkts", 512, 64),
)))


# PerfMgt detail attributes (IBA 16.1.4), as perfquery names their fields.
# Each begins with PortSelect and CounterSelect, as PortCounters does.
_PERF_SELECT = (Field("PortSelect", 8, 8), Field("CounterSelect", 16, 16))
NUM_VLS = 16
_R = TypeVar("_R", bound=AnyRecord)


def _perf_layout(name: str, fields: tuple[Field, ...]) -> Layout[_R]:
    return Layout(name, GS_DATA_SIZE, (*_PERF_SELECT, *fields))


def _per_vl(prefix: str, width: int) -> tuple[Field, ...]:
    """`prefix`0 .. `prefix`15, one per VL, packed from bit 32."""
    return tuple(Field(f"{prefix}{vl}", 32 + vl * width, width) for vl in range(NUM_VLS))


PORT_RCV_ERROR_DETAILS: Attribute[records.PortRcvErrorDetails] = Attribute(
    0x0015, _perf_layout("PortRcvErrorDetails", (
    Field("PortLocalPhysicalErrors", 32, 16),
    Field("PortMalformedPktErrors", 48, 16),
    Field("PortBufferOverrunErrors", 64, 16),
    Field("PortDLIDMappingErrors", 80, 16),
    Field("PortVLMappingErrors", 96, 16),
    Field("PortLoopingErrors", 112, 16),
)))

PORT_XMIT_DISCARD_DETAILS: Attribute[records.PortXmitDiscardDetails] = Attribute(
    0x0016, _perf_layout("PortXmitDiscardDetails", (
    Field("PortInactiveDiscards", 32, 16),
    Field("PortNeighborMTUDiscards", 48, 16),
    Field("PortSwLifetimeLimitDiscards", 64, 16),
    Field("PortSwHOQLifetimeLimitDiscards", 80, 16),
)))

PORT_FLOW_CTL_COUNTERS: Attribute[records.PortFlowCtlCounters] = Attribute(
    0x0018, _perf_layout("PortFlowCtlCounters", (
    Field("PortXmitFlowPkts", 32, 32),
    Field("PortRcvFlowPkts", 64, 32),
)))

# The per-opcode attributes count the one opcode a PerfMgt Set() chose, which
# their OpCode component names (bits 0..7), each under a name of its own here:
# a port's answers are merged into one set of fields.
PORT_OP_RCV_COUNTERS: Attribute[records.PortOpRcvCounters] = Attribute(
    0x0017, _perf_layout("PortOpRcvCounters", (
    Field("PortOpRcvOpCode", 0, 8),
    Field("PortOpRcvPkts", 32, 32),
    Field("PortOpRcvData", 64, 32),
)))

PORT_VL_OP_PACKETS: Attribute[records.PortVLOpPackets] = Attribute(0x0019, _perf_layout(
    "PortVLOpPackets", (Field("PortVLOpPacketsOpCode", 0, 8), *_per_vl("PortVLOpPackets", 16))))

PORT_VL_OP_DATA: Attribute[records.PortVLOpData] = Attribute(0x001A, _perf_layout(
    "PortVLOpData", (Field("PortVLOpDataOpCode", 0, 8), *_per_vl("PortVLOpData", 32))))

PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS: Attribute[records.PortVLXmitFlowCtlUpdateErrors] = (
    Attribute(0x001B, _perf_layout("PortVLXmitFlowCtlUpdateErrors",
                                   _per_vl("PortVLXmitFlowCtlUpdateErrors", 2))))

PORT_VL_XMIT_WAIT_COUNTERS: Attribute[records.PortVLXmitWaitCounters] = Attribute(
    0x001C, _perf_layout("PortVLXmitWaitCounters", _per_vl("PortVLXmitWait", 16)))


def vl_arbitration_entries(block: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """(VL, weight) pairs of a decoded VLWeightBlock."""
    return tuple((entry >> 8, entry & 0xFF) for entry in block)

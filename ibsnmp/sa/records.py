"""Subnet administration (SA) MADs and the records they carry, as field tables.

An SA MAD (IBA 15.2.1.1) is the common MAD header, the RMPP header (13.6.2.1), the SA header
(SM_Key, AttributeOffset, ComponentMask) and 200 octets of records. Offsets are those of IBA
volume 1 (13.4.8 InformInfo and Notice, 15.2.5 the SA records), counted in bits from the
record's first octet. Each record also lists its components in ComponentMask order: a
request's mask names the fields that constrain it, and a field cut in several components
(ServiceID, the ServiceData arrays) sets all of them. Each layout's variable names its record
type, generated into ibsnmp.mad.records_generated.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Generic

from ibsnmp.mad import records_generated as records
from ibsnmp.mad.attributes import MAD_HEADER, MAD_SIZE, NODE_DESCRIPTION, NODE_INFO
from ibsnmp.mad.layout import (
    AnyRecord,
    ArrayField,
    Field,
    Layout,
    LayoutError,
    OctetsField,
    RecordT,
    TextField,
)

SA_CLASS_VERSION = 2
SA_HEADER_END = 56  # octet where the records begin
SA_DATA_SIZE = MAD_SIZE - SA_HEADER_END

# SA methods (IBA 15.2.2); a response sets the top bit.
METHOD_GET = 0x01
METHOD_SET = 0x02
METHOD_REPORT = 0x06
METHOD_REPORT_RESP = 0x86
METHOD_GET_TABLE = 0x12
METHOD_GET_MULTI = 0x14
METHOD_DELETE = 0x15

# RMPP types and flags (IBA 13.6.2.1).
RMPP_VERSION = 1
RMPP_DATA, RMPP_ACK, RMPP_STOP, RMPP_ABORT = 1, 2, 3, 4
RMPP_ACTIVE, RMPP_FIRST, RMPP_LAST = 0x1, 0x2, 0x4

SA_MAD: Layout[records.SAMAD] = Layout("SAMAD", MAD_SIZE, (
    *MAD_HEADER.fields,
    Field("RMPPVersion", 192, 8),
    Field("RMPPType", 200, 8),
    Field("RRespTime", 208, 5),
    Field("RMPPFlags", 213, 3),
    Field("RMPPStatus", 216, 8),
    # SegmentNumber in DATA and ACK segments; PayloadLength (first and last
    # DATA segment) or NewWindowLast (ACK) in the second word.
    Field("RMPPData1", 224, 32),
    Field("RMPPData2", 256, 32),
    Field("SMKey", 288, 64),
    Field("AttributeOffset", 352, 16),
    Field("ComponentMask", 384, 64),
    OctetsField("Data", SA_HEADER_END * 8, SA_DATA_SIZE * 8),
))


@dataclass(frozen=True)
class SaAttribute(Generic[RecordT]):
    """An SA attribute: its ID, its field table and its components in mask order
    (None for a reserved component)."""

    attribute_id: int
    layout: Layout[RecordT]
    components: tuple[str | None, ...] = ()

    @property
    def name(self) -> str:
        return self.layout.name

    def mask(self, names: Iterable[str]) -> int:
        """The ComponentMask that selects the fields `names`."""
        mask = 0
        for name in names:
            bits = [i for i, component in enumerate(self.components) if component == name]
            if not bits:
                raise LayoutError(f"{self.name} has no component {name}")
            for bit in bits:
                mask |= 1 << bit
        return mask

    @property
    def record_size(self) -> int:
        """Octets a record takes in a table: its size rounded up to 8 (AttributeOffset)."""
        return -(-self.layout.size // 8) * 8


# Any SA attribute, for code that handles several alike (its records as AnyRecord).
AnySaAttribute = SaAttribute[AnyRecord]


def _gid(name: str, octet: int) -> OctetsField:
    return OctetsField(name, octet * 8, 128)


PATH_RECORD: SaAttribute[records.PathRecord] = SaAttribute(0x0035, Layout("PathRecord", 64, (
    Field("ServiceID", 0, 64),
    _gid("DGID", 8),
    _gid("SGID", 24),
    Field("DLID", 320, 16),
    Field("SLID", 336, 16),
    Field("RawTraffic", 352, 1),
    Field("FlowLabel", 356, 20),
    Field("HopLimit", 376, 8),
    Field("TClass", 384, 8),
    Field("Reversible", 392, 1),
    Field("NumbPath", 393, 7),
    Field("PKey", 400, 16),
    Field("QoSClass", 416, 12),
    Field("SL", 428, 4),
    Field("MTUSelector", 432, 2),
    Field("MTU", 434, 6),
    Field("RateSelector", 440, 2),
    Field("Rate", 442, 6),
    Field("PacketLifeTimeSelector", 448, 2),
    Field("PacketLifeTime", 450, 6),
    Field("Preference", 456, 8),
)), ("ServiceID", "ServiceID", "DGID", "SGID", "DLID", "SLID", "RawTraffic", None,
     "FlowLabel", "HopLimit", "TClass", "Reversible", "NumbPath", "PKey", "QoSClass", "SL",
     "MTUSelector", "MTU", "RateSelector", "Rate", "PacketLifeTimeSelector", "PacketLifeTime",
     "Preference"))

MAX_MULTIPATH_GIDS = 11  # the GIDs that fit in one MultiPathRecord (200 octets)

MULTIPATH_RECORD: SaAttribute[records.MultiPathRecord] = SaAttribute(
    0x003A, Layout("MultiPathRecord", 200, (
    Field("RawTraffic", 0, 1),
    Field("FlowLabel", 4, 20),
    Field("HopLimit", 24, 8),
    Field("TClass", 32, 8),
    Field("Reversible", 40, 1),
    Field("NumbPath", 41, 7),
    Field("PKey", 48, 16),
    Field("QoSClass", 64, 12),
    Field("SL", 76, 4),
    Field("MTUSelector", 80, 2),
    Field("MTU", 82, 6),
    Field("RateSelector", 88, 2),
    Field("Rate", 90, 6),
    Field("PacketLifeTimeSelector", 96, 2),
    Field("PacketLifeTime", 98, 6),
    Field("ServiceID8MSB", 104, 8),
    Field("IndependenceSelector", 112, 2),
    Field("SGIDCount", 120, 8),
    Field("DGIDCount", 128, 8),
    Field("ServiceID56LSB", 136, 56),
    OctetsField("SDGID", 192, MAX_MULTIPATH_GIDS * 128),
)), ("RawTraffic", None, "FlowLabel", "HopLimit", "TClass", "Reversible", "NumbPath", "PKey",
     "QoSClass", "SL", "MTUSelector", "MTU", "RateSelector", "Rate", "PacketLifeTimeSelector",
     "PacketLifeTime", "ServiceID8MSB", "IndependenceSelector", None, "SGIDCount", "DGIDCount",
     "ServiceID56LSB"))

# NodeRecord (IBA 15.2.5.2): a node as the SM knows it, one per port of a CA
# (its LID): NodeInfo (as an SMP carries it) after the LID, then NodeDescription.
_NODE_INFO_AT = 32
NODE_RECORD: SaAttribute[records.NodeRecord] = SaAttribute(0x0011, Layout("NodeRecord", 108, (
    Field("LID", 0, 16),
    *(replace(f, offset=f.offset + _NODE_INFO_AT) for f in NODE_INFO.layout.fields),
    replace(NODE_DESCRIPTION.layout.fields[0], name="NodeDescription", offset=352),
)), ("LID", None, *(f.name for f in NODE_INFO.layout.fields), "NodeDescription"))

PKEY_TABLE_RECORD: SaAttribute[records.P_KeyTableRecord] = SaAttribute(
    0x0033, Layout("P_KeyTableRecord", 72, (
    Field("LID", 0, 16),
    Field("BlockNum", 16, 16),
    Field("PortNum", 32, 8),
    ArrayField("P_KeyTable", 64, 512, count=32, element_width=16),
)), ("LID", "BlockNum", "PortNum", None, "P_KeyTable"))

MCMEMBER_RECORD: SaAttribute[records.MCMemberRecord] = SaAttribute(
    0x0038, Layout("MCMemberRecord", 52, (
    _gid("MGID", 0),
    _gid("PortGID", 16),
    Field("QKey", 256, 32),
    Field("MLID", 288, 16),
    Field("MTUSelector", 304, 2),
    Field("MTU", 306, 6),
    Field("TClass", 312, 8),
    Field("PKey", 320, 16),
    Field("RateSelector", 336, 2),
    Field("Rate", 338, 6),
    Field("PacketLifeTimeSelector", 344, 2),
    Field("PacketLifeTime", 346, 6),
    Field("SL", 352, 4),
    Field("FlowLabel", 356, 20),
    Field("HopLimit", 376, 8),
    Field("Scope", 384, 4),
    Field("JoinState", 388, 4),
    Field("ProxyJoin", 392, 1),
)), ("MGID", "PortGID", "QKey", "MLID", "MTUSelector", "MTU", "TClass", "PKey", "RateSelector",
     "Rate", "PacketLifeTimeSelector", "PacketLifeTime", "SL", "FlowLabel", "HopLimit", "Scope",
     "JoinState", "ProxyJoin"))

SERVICE_RECORD: SaAttribute[records.ServiceRecord] = SaAttribute(
    0x0031, Layout("ServiceRecord", 176, (
    Field("ServiceID", 0, 64),
    _gid("ServiceGID", 8),
    Field("ServicePKey", 192, 16),
    Field("ServiceLease", 224, 32),
    OctetsField("ServiceKey", 256, 128),
    TextField("ServiceName", 384, 512),
    ArrayField("ServiceData8", 896, 128, count=16, element_width=8),
    ArrayField("ServiceData16", 1024, 128, count=8, element_width=16),
    ArrayField("ServiceData32", 1152, 128, count=4, element_width=32),
    ArrayField("ServiceData64", 1280, 128, count=2, element_width=64),
)), ("ServiceID", "ServiceGID", "ServicePKey", None, "ServiceLease", "ServiceKey", "ServiceName",
     *(["ServiceData8"] * 16), *(["ServiceData16"] * 8), *(["ServiceData32"] * 4),
     *(["ServiceData64"] * 2)))

# InformInfo (IBA 13.4.8.3): a subscription to traps the SA forwards as Reports.
INFORM_INFO: SaAttribute[records.InformInfo] = SaAttribute(0x0003, Layout("InformInfo", 36, (
    _gid("GID", 0),
    Field("LIDRangeBegin", 128, 16),
    Field("LIDRangeEnd", 144, 16),
    Field("IsGeneric", 176, 8),
    Field("Subscribe", 184, 8),
    Field("Type", 192, 16),
    Field("TrapNumber", 208, 16),  # DeviceID when not generic
    Field("QPN", 224, 24),
    Field("RespTimeValue", 251, 5),
    Field("ProducerType", 264, 24),  # VendorID when not generic
)))

# InformInfoRecord (IBA 15.2.5.12): a subscription as the SA keeps it, by
# subscriber; the InformInfo it holds starts at octet 24 (its fields read here).
INFORM_INFO_RECORD: SaAttribute[records.InformInfoRecord] = SaAttribute(
    0x00F3, Layout("InformInfoRecord", 60, (
    _gid("SubscriberGID", 0),
    Field("Enum", 128, 16),
    Field("IsGeneric", 192 + 176, 8),
    Field("Subscribe", 192 + 184, 8),
    Field("Type", 192 + 192, 16),
    Field("TrapNumber", 192 + 208, 16),
)), ("SubscriberGID", "Enum"))

NOTICE_DATA_DETAILS = 54

# Notice (IBA 13.4.8.2): what a Report carries.
NOTICE: SaAttribute[records.Notice] = SaAttribute(0x0002, Layout("Notice", 80, (
    Field("IsGeneric", 0, 1),
    Field("Type", 1, 7),
    Field("ProducerType", 8, 24),
    Field("TrapNumber", 32, 16),
    Field("IssuerLID", 48, 16),
    Field("NoticeToggle", 64, 1),
    Field("NoticeCount", 65, 15),
    OctetsField("DataDetails", 80, NOTICE_DATA_DETAILS * 8),
    _gid("IssuerGID", 64),
)))

SA_RECORDS = (PATH_RECORD, MULTIPATH_RECORD, PKEY_TABLE_RECORD, MCMEMBER_RECORD, SERVICE_RECORD,
              INFORM_INFO, INFORM_INFO_RECORD, NOTICE)

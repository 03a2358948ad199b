"""InfiniBand Architecture encodings used by the fabric model.

Every enum carries the value IBA puts on the wire (PortInfo, NodeInfo,
SMInfo, PathRecord ...), not any MIB's offset-by-one variant: the MIB
bindings translate.  Where IBA defines no numbering (CM states, CA type,
physical interface) the numbering of the MIB that serves the value is used
and said so.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag

DEFAULT_SUBNET_PREFIX = 0xFE80_0000_0000_0000
MELLANOX_VENDOR_ID = 0x0002C9
PERMISSIVE_LID = 0xFFFF
MAX_UNICAST_LID = 0xBFFF
MULTICAST_LID_BASE = 0xC000
UNROUTED_PORT = 0xFF  # LFT entry for "no route", as IBA specifies
MAX_PHYS_PORTS = 254


class NodeType(IntEnum):
    CA = 1
    SWITCH = 2
    ROUTER = 3


class PortState(IntEnum):
    NO_CHANGE = 0
    DOWN = 1
    INIT = 2
    ARMED = 3
    ACTIVE = 4


class PortPhysState(IntEnum):
    NO_CHANGE = 0
    SLEEP = 1
    POLLING = 2
    DISABLED = 3
    PORT_CONFIGURATION_TRAINING = 4
    LINK_UP = 5
    LINK_ERROR_RECOVERY = 6
    PHY_TEST = 7


class LinkDownDefaultState(IntEnum):
    NO_CHANGE = 0
    SLEEP = 1
    POLLING = 2


class LinkWidth(IntFlag):
    """PortInfo LinkWidth bits (2x was added by IBA 1.3)."""

    X1 = 1
    X4 = 2
    X8 = 4
    X12 = 8
    X2 = 16

    @property
    def lanes(self) -> int:
        return _LANES[int(self)]

    @property
    def label(self) -> str:
        return f"{self.lanes}x"


_LANES = {1: 1, 2: 4, 4: 8, 8: 12, 16: 2}


class LinkSpeed(IntFlag):
    """PortInfo LinkSpeed bits (the original IBA speeds)."""

    SDR = 1
    DDR = 2
    QDR = 4


class LinkSpeedExt(IntFlag):
    """PortInfo LinkSpeedExt bits; non-zero active value overrides LinkSpeed."""

    FDR = 1
    EDR = 2
    HDR = 4
    NDR = 8


# Nominal data rate of one lane in Gb/s, as PathRecord rates count it.
_LANE_GBPS_SPEED = {LinkSpeed.SDR: 2.5, LinkSpeed.DDR: 5.0, LinkSpeed.QDR: 10.0}
_LANE_GBPS_EXT = {
    LinkSpeedExt.FDR: 14.0,
    LinkSpeedExt.EDR: 25.0,
    LinkSpeedExt.HDR: 50.0,
    LinkSpeedExt.NDR: 100.0,
}


def speed_name(speed: int, speed_ext: int) -> str:
    """'EDR', 'QDR' ... as ibstat and ibnetdiscover print the active speed."""
    if speed_ext:
        return LinkSpeedExt(speed_ext).name or "???"
    return LinkSpeed(speed).name or "???"


def lane_gbps(speed: int, speed_ext: int) -> float:
    if speed_ext:
        return _LANE_GBPS_EXT[LinkSpeedExt(speed_ext)]
    return _LANE_GBPS_SPEED[LinkSpeed(speed)]


def link_gbps(width: int, speed: int, speed_ext: int) -> float:
    """Nominal data rate of a link, e.g. 4x EDR -> 100.0."""
    return LinkWidth(width).lanes * lane_gbps(speed, speed_ext)


def fastest(flags: int) -> int:
    """The highest single bit of a supported/enabled bit set (0 if none)."""
    return 1 << (flags.bit_length() - 1) if flags else 0


class Mtu(IntEnum):
    MTU_256 = 1
    MTU_512 = 2
    MTU_1024 = 3
    MTU_2048 = 4
    MTU_4096 = 5

    @property
    def octets(self) -> int:
        return 128 << self.value


class VLCap(IntEnum):
    """VLCap / OperationalVLs encoding."""

    VL0 = 1
    VL0_1 = 2
    VL0_3 = 3
    VL0_7 = 4
    VL0_14 = 5

    @property
    def data_vls(self) -> int:
        return (1, 2, 4, 8, 15)[self.value - 1]


class MKeyProtect(IntEnum):
    """PortInfo M_KeyProtectBits (IBA 14.2.4.1 protection levels 0..3)."""

    LEVEL0 = 0
    LEVEL1 = 1
    LEVEL2 = 2
    LEVEL3 = 3


class SmState(IntEnum):
    NOT_ACTIVE = 0
    DISCOVERING = 1
    STANDBY = 2
    MASTER = 3


class DiagCode(IntEnum):
    """Generic part (bits 3..0) of PortInfo DiagCode."""

    PORT_READY = 0
    PERFORMING_SELF_TEST = 1
    INITIALIZING = 2
    SOFT_ERROR = 3
    HARD_ERROR = 4


class CapabilityMask(IntFlag):
    """PortInfo CapabilityMask bits (names as IBA and OpenSM use them)."""

    IS_SM = 1 << 1
    IS_NOTICE_SUPPORTED = 1 << 2
    IS_TRAP_SUPPORTED = 1 << 3
    IS_OPTIONAL_IPD_SUPPORTED = 1 << 4
    IS_AUTOMATIC_MIGRATION_SUPPORTED = 1 << 5
    IS_SL_MAPPING_SUPPORTED = 1 << 6
    IS_MKEY_NVRAM = 1 << 7
    IS_PKEY_NVRAM = 1 << 8
    IS_LED_INFO_SUPPORTED = 1 << 9
    IS_SM_DISABLED = 1 << 10
    IS_SYSTEM_IMAGE_GUID_SUPPORTED = 1 << 11
    IS_PKEY_SWITCH_EXTERNAL_PORT_TRAP_SUPPORTED = 1 << 12
    IS_CABLE_INFO_SUPPORTED = 1 << 13
    IS_EXTENDED_SPEEDS_SUPPORTED = 1 << 14
    IS_CAPABILITY_MASK2_SUPPORTED = 1 << 15
    IS_COMMUNICATION_MANAGEMENT_SUPPORTED = 1 << 16
    IS_SNMP_TUNNELING_SUPPORTED = 1 << 17
    IS_REINIT_SUPPORTED = 1 << 18
    IS_DEVICE_MANAGEMENT_SUPPORTED = 1 << 19
    IS_VENDOR_CLASS_SUPPORTED = 1 << 20
    IS_DR_NOTICE_SUPPORTED = 1 << 21
    IS_CAPABILITY_MASK_NOTICE_SUPPORTED = 1 << 22
    IS_BOOT_MANAGEMENT_SUPPORTED = 1 << 23
    IS_LINK_ROUND_TRIP_LATENCY_SUPPORTED = 1 << 24
    IS_CLIENT_REREGISTRATION_SUPPORTED = 1 << 25
    IS_OTHER_LOCAL_CHANGES_NOTICE_SUPPORTED = 1 << 26
    IS_LINK_SPEED_WIDTH_PAIRS_TABLE_SUPPORTED = 1 << 27
    IS_VENDOR_SPECIFIC_MADS_TABLE_SUPPORTED = 1 << 28
    IS_MCAST_PKEY_TRAP_SUPPRESSION_SUPPORTED = 1 << 29
    IS_MULTICAST_FDB_TOP_SUPPORTED = 1 << 30
    IS_HIERARCHY_INFO_SUPPORTED = 1 << 31


def capability_names(mask: int) -> tuple[str, ...]:
    """Names of the capability bits set in a raw 32-bit mask, lowest bit first."""
    return tuple(bit.name for bit in CapabilityMask  # type: ignore[misc]  # members have names
                 if mask & bit)


class Rate(IntEnum):
    """PathRecord / MCMemberRecord Rate codes."""

    GBPS_2_5 = 2
    GBPS_10 = 3
    GBPS_30 = 4
    GBPS_5 = 5
    GBPS_20 = 6
    GBPS_40 = 7
    GBPS_60 = 8
    GBPS_80 = 9
    GBPS_120 = 10
    GBPS_14 = 11
    GBPS_56 = 12
    GBPS_112 = 13
    GBPS_168 = 14
    GBPS_25 = 15
    GBPS_100 = 16
    GBPS_200 = 17
    GBPS_300 = 18
    GBPS_28 = 19
    GBPS_50 = 20
    GBPS_400 = 21
    GBPS_600 = 22
    GBPS_800 = 23
    GBPS_1200 = 24

    @property
    def gbps(self) -> float:
        return float(self.name[5:].replace("_", "."))

    @classmethod
    def from_gbps(cls, gbps: float) -> Rate:
        """The code for a nominal rate; a rate between codes rounds down."""
        best = cls.GBPS_2_5
        for code in cls:
            if best.gbps < code.gbps <= gbps + 1e-9:
                best = code
        return best


def link_rate(width: int, speed: int, speed_ext: int) -> Rate:
    return Rate.from_gbps(link_gbps(width, speed, speed_ext))


class JoinState(IntFlag):
    """MCMemberRecord JoinState bits."""

    FULL_MEMBER = 1
    NON_MEMBER = 2
    SEND_ONLY_NON_MEMBER = 4


class MulticastScope(IntEnum):
    """Scope nibble of a multicast GID (ff1S:...)."""

    LINK_LOCAL = 0x2
    SITE_LOCAL = 0x5
    ORGANIZATION_LOCAL = 0x8
    GLOBAL = 0xE


class PhysicalInterface(IntEnum):
    """Connector of a port; IBA names no code, IB-CA-MIB's numbering is used."""

    CABLE = 1
    FIBER = 2
    BACKPLANE = 3


class CaType(IntEnum):
    """IBA names HCA and TCA without codes; IB-CA-MIB's numbering is used."""

    UNKNOWN = 1
    HCA = 2
    TCA = 3


class CmState(IntEnum):
    """Connection manager states (IBA 12.9.5/12.9.6), numbered as in
    IBCONNECTION-MIB since IBA gives them no codes."""

    LISTEN = 1
    REQ_SENT = 2
    REQ_RCVD = 3
    REP_RCVD = 4
    ESTABLISHED = 5
    DREQ_SENT = 6
    DREQ_RCVD = 7
    TIME_WAIT = 8
    RTU_TIMEOUT = 9
    PEER_COMPARE = 10
    TIMEOUT = 11
    REP_WAIT = 12
    MRA_REP_SENT = 13
    DREP_TIMEOUT = 14


# P_Key helpers: bit 15 is the membership type (1 full, 0 limited).
PKEY_FULL_BIT = 0x8000
DEFAULT_PKEY = 0x7FFF


def make_gid(prefix: int, guid: int) -> int:
    return (prefix << 64) | guid


def guid_bytes(guid: int) -> bytes:
    return guid.to_bytes(8, "big")


def format_gid(gid: int) -> str:
    """Full colon form, as sysfs and ibstat print GIDs."""
    text = f"{gid:032x}"
    return ":".join(text[i : i + 4] for i in range(0, 32, 4))


def parse_gid(text: str) -> int:
    """Accepts the full form and '::' shorthand (ff12:401b:ffff::1)."""
    if "::" in text:
        head, tail = text.split("::", 1)
        left = head.split(":") if head else []
        right = tail.split(":") if tail else []
        groups = left + ["0"] * (8 - len(left) - len(right)) + right
    else:
        groups = text.split(":")
    if len(groups) != 8:
        raise ValueError(f"not a GID: {text!r}")
    value = 0
    for group in groups:
        value = (value << 16) | int(group, 16)
    return value


def multicast_scope(mgid: int) -> MulticastScope:
    return MulticastScope((mgid >> 112) & 0xF)

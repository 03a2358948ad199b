"""Catalog of the simulated devices: real Mellanox/NVIDIA parts by generation.

Values are what these parts report in NodeInfo/PortInfo (vendor 0x02c9,
device IDs, OUIs of their GUIDs, capability masks as sysfs shows them).
"""

from __future__ import annotations

from dataclasses import dataclass

from .iba import (
    MELLANOX_VENDOR_ID,
    CaType,
    LinkSpeed,
    LinkSpeedExt,
    LinkWidth,
    Mtu,
    NodeType,
    VLCap,
)
from .iba import (
    CapabilityMask as Cap,
)
from .model import CaInfo

ALL_SPEEDS = LinkSpeed.SDR | LinkSpeed.DDR | LinkSpeed.QDR

# ConnectX-4 and later report 0x2651e848 in sysfs cap_mask; IsSM is set
# on the port where opensm runs.
_CX_CAPS = (
    Cap.IS_TRAP_SUPPORTED
    | Cap.IS_SL_MAPPING_SUPPORTED
    | Cap.IS_SYSTEM_IMAGE_GUID_SUPPORTED
    | Cap.IS_CABLE_INFO_SUPPORTED
    | Cap.IS_EXTENDED_SPEEDS_SUPPORTED
    | Cap.IS_CAPABILITY_MASK2_SUPPORTED
    | Cap.IS_COMMUNICATION_MANAGEMENT_SUPPORTED
    | Cap.IS_VENDOR_CLASS_SUPPORTED
    | Cap.IS_CAPABILITY_MASK_NOTICE_SUPPORTED
    | Cap.IS_CLIENT_REREGISTRATION_SUPPORTED
    | Cap.IS_OTHER_LOCAL_CHANGES_NOTICE_SUPPORTED
    | Cap.IS_MCAST_PKEY_TRAP_SUPPRESSION_SUPPORTED
)
# ConnectX-3 reports 0x02514868.
_CX3_CAPS = (
    Cap.IS_TRAP_SUPPORTED
    | Cap.IS_AUTOMATIC_MIGRATION_SUPPORTED
    | Cap.IS_SL_MAPPING_SUPPORTED
    | Cap.IS_SYSTEM_IMAGE_GUID_SUPPORTED
    | Cap.IS_EXTENDED_SPEEDS_SUPPORTED
    | Cap.IS_COMMUNICATION_MANAGEMENT_SUPPORTED
    | Cap.IS_VENDOR_CLASS_SUPPORTED
    | Cap.IS_CAPABILITY_MASK_NOTICE_SUPPORTED
    | Cap.IS_CLIENT_REREGISTRATION_SUPPORTED
)
_SWITCH_CAPS = (
    Cap.IS_NOTICE_SUPPORTED
    | Cap.IS_TRAP_SUPPORTED
    | Cap.IS_SL_MAPPING_SUPPORTED
    | Cap.IS_LED_INFO_SUPPORTED
    | Cap.IS_SYSTEM_IMAGE_GUID_SUPPORTED
    | Cap.IS_EXTENDED_SPEEDS_SUPPORTED
    | Cap.IS_VENDOR_CLASS_SUPPORTED
    | Cap.IS_CAPABILITY_MASK_NOTICE_SUPPORTED
    | Cap.IS_CLIENT_REREGISTRATION_SUPPORTED
    | Cap.IS_MULTICAST_FDB_TOP_SUPPORTED
)


def _hca(max_gids: int) -> CaInfo:
    # ConnectX adapters: RC, UC and UD but never RD (no vendor built RD).
    return CaInfo(
        ca_type=CaType.HCA,
        reliable_connection=True,
        unreliable_connection=True,
        reliable_datagram=False,
        unreliable_datagram=True,
        atomic_operations=True,
        other_operations=True,
        solicited_events=True,
        max_path_mtu=Mtu.MTU_4096,
        end_to_end_flow_control=True,
        multicast=True,
        automatic_path_migration=True,
        memory_protection=True,
        loopback=True,
        subnet_manager=True,
        static_rate_control=True,
        interpacket_delay=0,
        multipathing=True,
        validates_inbound_dlid=True,
        max_gids_per_port=max_gids,
    )


@dataclass(frozen=True, slots=True)
class DeviceModel:
    name: str
    node_type: NodeType
    device_id: int
    revision: int
    ouis: tuple[int, ...]
    num_ports: int
    width_supported: LinkWidth
    speed_ext_supported: LinkSpeedExt
    capability_mask: int
    partition_cap: int
    guid_cap: int
    vl_cap: VLCap = VLCap.VL0_7
    mtu_cap: Mtu = Mtu.MTU_4096
    vl_arb_high_cap: int = 8
    vl_arb_low_cap: int = 8
    resp_time_value: int = 16
    vendor_id: int = MELLANOX_VENDOR_ID
    # ConnectX-3 numbers ports node GUID + 1, + 2 and the system image
    # node GUID + 3; ConnectX-4 and later use node GUID + 0, + 1.
    port_guid_offset: int = 0
    system_image_offset: int = 0
    ca: CaInfo | None = None
    linear_fdb_cap: int = 49152
    random_fdb_cap: int = 0
    multicast_fdb_cap: int = 16384
    partition_enforcement_cap: int = 8


@dataclass(frozen=True, slots=True)
class Generation:
    spine: DeviceModel
    leaf: DeviceModel
    hcas: tuple[DeviceModel, ...]  # single-port first, then dual-port variants
    speed: LinkSpeedExt


def _switch(name: str, device_id: int, ouis: tuple[int, ...], ports: int, speeds: LinkSpeedExt,
            revision: int = 0, enforcement_cap: int = 8) -> DeviceModel:
    return DeviceModel(
        name=name, node_type=NodeType.SWITCH, device_id=device_id, revision=revision, ouis=ouis,
        num_ports=ports, width_supported=LinkWidth.X1 | LinkWidth.X4, speed_ext_supported=speeds,
        capability_mask=int(_SWITCH_CAPS), partition_cap=enforcement_cap, guid_cap=1,
        partition_enforcement_cap=enforcement_cap,
    )


def _adapter(name: str, device_id: int, ouis: tuple[int, ...], ports: int, speeds: LinkSpeedExt,
             caps: int = int(_CX_CAPS), revision: int = 0, cx3: bool = False) -> DeviceModel:
    return DeviceModel(
        name=name, node_type=NodeType.CA, device_id=device_id, revision=revision, ouis=ouis,
        num_ports=ports, width_supported=LinkWidth.X1 | LinkWidth.X4, speed_ext_supported=speeds,
        capability_mask=caps, partition_cap=128, guid_cap=128,
        port_guid_offset=1 if cx3 else 0, system_image_offset=3 if cx3 else 0, ca=_hca(128),
    )


_FDR = LinkSpeedExt.FDR
_EDR = LinkSpeedExt.FDR | LinkSpeedExt.EDR
_HDR = _EDR | LinkSpeedExt.HDR
_NDR = _HDR | LinkSpeedExt.NDR

GENERATIONS: dict[str, Generation] = {
    "fdr": Generation(
        spine=_switch("SwitchX-2 (MT51000)", 0xC738, (0x0002C9,), 36, _FDR, revision=0xA1),
        leaf=_switch("SwitchX-2 (MT51000)", 0xC738, (0x0002C9,), 36, _FDR, revision=0xA1),
        hcas=(
            _adapter("ConnectX-3 (MT4099)", 0x1003, (0x0002C9,), 1, _FDR, int(_CX3_CAPS), 1, cx3=True),
            _adapter("ConnectX-3 (MT4099)", 0x1003, (0x0002C9,), 2, _FDR, int(_CX3_CAPS), 1, cx3=True),
        ),
        speed=LinkSpeedExt.FDR,
    ),
    "edr": Generation(
        spine=_switch("Switch-IB 2 (MT53000)", 0xCF08, (0x7CFE90, 0x248A07), 36, _EDR),
        leaf=_switch("Switch-IB 2 (MT53000)", 0xCF08, (0x7CFE90, 0x248A07), 36, _EDR),
        hcas=(
            _adapter("ConnectX-5 (MT4119)", 0x1017, (0x98039B, 0x506B4B, 0xEC0D9A), 1, _EDR),
            _adapter("ConnectX-4 (MT4115)", 0x1013, (0x248A07, 0x7CFE90), 2, _EDR),
        ),
        speed=LinkSpeedExt.EDR,
    ),
    "hdr": Generation(
        spine=_switch("Quantum (MT54000)", 0xD2F0, (0xB8599F, 0x0C42A1), 40, _HDR, enforcement_cap=32),
        leaf=_switch("Quantum (MT54000)", 0xD2F0, (0xB8599F, 0x0C42A1), 40, _HDR, enforcement_cap=32),
        hcas=(
            _adapter("ConnectX-6 (MT4123)", 0x101B, (0x0C42A1, 0x1C34DA, 0xB8599F), 1, _HDR),
            _adapter("ConnectX-6 (MT4123)", 0x101B, (0x0C42A1, 0x1C34DA, 0xB8599F), 2, _HDR),
        ),
        speed=LinkSpeedExt.HDR,
    ),
    "ndr": Generation(
        spine=_switch("Quantum-2 (MT54002)", 0xD2F2, (0x043F72, 0xA088C2), 64, _NDR, enforcement_cap=32),
        leaf=_switch("Quantum-2 (MT54002)", 0xD2F2, (0x043F72, 0xA088C2), 64, _NDR, enforcement_cap=32),
        hcas=(
            _adapter("ConnectX-7 (MT4129)", 0x1021, (0xA088C2, 0x946DAE), 1, _NDR),
            _adapter("ConnectX-7 (MT4129)", 0x1021, (0xA088C2, 0x946DAE), 2, _NDR),
        ),
        speed=LinkSpeedExt.NDR,
    ),
}

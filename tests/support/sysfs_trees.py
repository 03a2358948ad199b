"""Fake /sys/class/infiniband trees in the kernel's exact formats (no tests here).

Every file is written as drivers/infiniband/core/sysfs.c prints it, newline
included: GUIDs `%04x:%04x:%04x:%04x`, node_type `%d: CA`, state `%d: %s`,
lid and sm_lid `0x%x`, cap_mask `0x%08x`, rate `%d Gb/sec (%dX%s)`, GIDs
`%pI6` (eight groups of four hex digits), P_Keys `0x%04x`, counters `%u` /
`%llu`, "N/A (no PMA)" where the device has no PMA.  Builders return what
they wrote, so tests compare SNMP values with the files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MLX_NODE_GUID = 0x0C42A1030017C078
MLX1_NODE_GUID = 0x0C42A1030017C0A0
ROCE_NODE_GUID = 0x0C42A10300B3D4E0
RXE_NODE_GUID = 0x025056FFFEA1B2C3
SWITCH_NODE_GUID = 0x7CFE900300A1B2C0
SUBNET_PREFIX = 0xFE80_0000_0000_0000

# Counters of an active mlx5 port: the extended (64-bit) data counters
# already count 4-octet words; port_xmit_data is past 2^32 to show saturation.
ACTIVE_COUNTERS: dict[str, int] = {
    "symbol_error": 3,
    "link_error_recovery": 1,
    "link_downed": 2,
    "port_rcv_errors": 5,
    "port_rcv_remote_physical_errors": 0,
    "port_rcv_switch_relay_errors": 0,
    "port_xmit_discards": 7,
    "port_xmit_constraint_errors": 0,
    "port_rcv_constraint_errors": 0,
    "local_link_integrity_errors": 1,
    "excessive_buffer_overrun_errors": 0,
    "VL15_dropped": 4,
    "port_xmit_data": 9_876_543_210_123,
    "port_rcv_data": 1_234_567_890,
    "port_xmit_packets": 58_000_000_123,
    "port_rcv_packets": 3_000_000_001,
    "port_xmit_wait": 123_456,
    "unicast_xmit_packets": 57_999_999_000,
    "unicast_rcv_packets": 2_999_999_000,
    "multicast_xmit_packets": 1_123,
    "multicast_rcv_packets": 1_001,
}
# mlx5 per-port hw_counters: transport statistics, none of them a PMA counter.
MLX5_HW_COUNTERS: dict[str, int] = {
    "duplicate_request": 0,
    "implied_nak_seq_err": 0,
    "local_ack_timeout_err": 2,
    "out_of_buffer": 17,
    "out_of_sequence": 0,
    "packet_seq_err": 0,
    "rnr_nak_retry_err": 0,
    "rx_atomic_requests": 0,
    "rx_read_requests": 12,
    "rx_write_requests": 40,
    "lifespan": 10,
}
# rxe (soft RoCE): no PMA; hw_counters count every packet.
RXE_HW_COUNTERS: dict[str, int] = {
    "sent_pkts": 4_242,
    "rcvd_pkts": 4_141,
    "duplicate_request": 1,
    "out_of_seq_request": 0,
    "rcvd_rnr_err": 0,
    "send_rnr_err": 0,
    "lifespan": 10,
}


def guid_text(guid: int) -> str:
    h = f"{guid:016x}"
    return ":".join(h[i:i + 4] for i in range(0, 16, 4))


def gid_text(gid: int) -> str:
    h = f"{gid:032x}"
    return ":".join(h[i:i + 4] for i in range(0, 32, 4))


def ib_gid(guid: int, prefix: int = SUBNET_PREFIX) -> int:
    return (prefix << 64) | guid


def ipv4_gid(a: int, b: int, c: int, d: int) -> int:
    """An IPv4-mapped RoCE v2 GID (::ffff:a.b.c.d)."""
    return (0xFFFF << 32) | (a << 24) | (b << 16) | (c << 8) | d


_STATE = {1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
_PHYS = {1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining", 5: "LinkUp",
         6: "LinkErrorRecovery", 7: "Phy Test"}


@dataclass
class PortSpec:
    """One port's files. `counters` None: no counters/ directory; a value
    that is a str is written as is ("N/A (no PMA)")."""

    state: int = 4
    phys_state: int = 5
    lid: int = 0x5A
    sm_lid: int = 0x1
    sm_sl: int = 0
    lmc: int = 0
    cap_mask: int = 0x2651E848
    rate: str = "100 Gb/sec (4X EDR)"
    link_layer: str = "InfiniBand"
    gids: list[int] = field(default_factory=list)
    pkeys: list[int] = field(default_factory=lambda: [0xFFFF] + [0] * 15)
    counters: dict[str, int | str] | None = field(
        default_factory=lambda: dict[str, int | str](ACTIVE_COUNTERS))
    hw_counters: dict[str, int] | None = field(default_factory=lambda: dict(MLX5_HW_COUNTERS))


@dataclass
class DeviceSpec:
    name: str
    node_guid: int
    sys_image_guid: int
    node_type: str = "1: CA"
    node_desc: str = "MT4123 ConnectX6   Mellanox Technologies"
    fw_ver: str | None = "20.31.1014"
    hca_type: str | None = "MT4123"
    board_id: str | None = "MT_0000000010"
    hw_rev: str | None = "0x0"
    pci_vendor: str | None = "0x15b3"
    pci_device: str | None = "0x101b"
    ports: dict[int, PortSpec] = field(default_factory=dict)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def write_device(root: Path, spec: DeviceSpec) -> DeviceSpec:
    d = root / spec.name
    write(d / "node_guid", guid_text(spec.node_guid) + "\n")
    write(d / "sys_image_guid", guid_text(spec.sys_image_guid) + "\n")
    write(d / "node_type", spec.node_type + "\n")
    write(d / "node_desc", spec.node_desc[:64] + "\n")
    for name in ("fw_ver", "hca_type", "board_id", "hw_rev"):
        value = getattr(spec, name)
        if value is not None:
            write(d / name, value + "\n")
    if spec.pci_vendor is not None:
        write(d / "device" / "vendor", spec.pci_vendor + "\n")
    if spec.pci_device is not None:
        write(d / "device" / "device", spec.pci_device + "\n")
    for num, port in spec.ports.items():
        write_port(d / "ports" / str(num), port)
    return spec


def write_port(p: Path, port: PortSpec) -> None:
    write(p / "state", f"{port.state}: {_STATE.get(port.state, 'UNKNOWN')}\n")
    write(p / "phys_state", f"{port.phys_state}: {_PHYS.get(port.phys_state, '<unknown>')}\n")
    write(p / "lid", f"0x{port.lid:x}\n")
    write(p / "sm_lid", f"0x{port.sm_lid:x}\n")
    write(p / "sm_sl", f"{port.sm_sl}\n")
    write(p / "lid_mask_count", f"{port.lmc}\n")
    write(p / "cap_mask", f"0x{port.cap_mask:08x}\n")
    write(p / "rate", port.rate + "\n")
    write(p / "link_layer", port.link_layer + "\n")
    for i, gid in enumerate(port.gids):
        write(p / "gids" / str(i), gid_text(gid) + "\n")
    for i, pkey in enumerate(port.pkeys):
        write(p / "pkeys" / str(i), f"0x{pkey:04x}\n")
    if port.counters is not None:
        for name, value in port.counters.items():
            write(p / "counters" / name, f"{value}\n")
    if port.hw_counters is not None:
        for name, value in port.hw_counters.items():
            write(p / "hw_counters" / name, f"{value}\n")


def ib_port(port_guid: int, *, lid: int = 0x5A, gids: int = 16, **kw: Any) -> PortSpec:
    """An Active InfiniBand port: GID 0 = subnet prefix + port GUID, the
    other GID entries unused (all zeros), P_Key 0 the default partition."""
    return PortSpec(lid=lid, gids=[ib_gid(port_guid)] + [0] * (gids - 1), **kw)


def mlx5_two_port(root: Path, name: str = "mlx5_0", guid: int = MLX_NODE_GUID) -> DeviceSpec:
    """A 2-port mlx5-style HCA, both ports Active (LIDs 0x5a and 0x5b)."""
    return write_device(root, DeviceSpec(
        name=name, node_guid=guid, sys_image_guid=guid,
        node_desc="node01 HCA-1",
        ports={1: ib_port(guid, lid=0x5A), 2: ib_port(guid + 1, lid=0x5B, rate="200 Gb/sec (4X HDR)")},
    ))


def second_hca(root: Path) -> DeviceSpec:
    """mlx5_1: one 4X FDR port, LID 0x5c, the same system image as mlx5_0."""
    return write_device(root, DeviceSpec(
        name="mlx5_1", node_guid=MLX1_NODE_GUID, sys_image_guid=MLX_NODE_GUID, node_desc="node01 HCA-2",
        ports={1: ib_port(MLX1_NODE_GUID, lid=0x5C, rate="56 Gb/sec (4X FDR)")},
    ))


def two_hcas(root: Path) -> tuple[DeviceSpec, DeviceSpec]:
    """Two single-port HCAs (how ConnectX-4 and later show a dual-port card);
    written in reverse order, mlx5_0 is still the first by name."""
    second = second_hca(root)
    first = write_device(root, DeviceSpec(
        name="mlx5_0", node_guid=MLX_NODE_GUID, sys_image_guid=MLX_NODE_GUID, node_desc="node01 HCA-1",
        ports={1: ib_port(MLX_NODE_GUID, lid=0x5A)},
    ))
    return first, second


def down_port(root: Path) -> DeviceSpec:
    """mlx5_0 with port 2 Down (Polling, no LID, no SM yet)."""
    port = ib_port(MLX_NODE_GUID + 1, lid=0, state=1, phys_state=2, sm_lid=0, rate="10 Gb/sec (4X SDR)",
                   counters={name: 0 for name in ACTIVE_COUNTERS})
    return write_device(root, DeviceSpec(
        name="mlx5_0", node_guid=MLX_NODE_GUID, sys_image_guid=MLX_NODE_GUID,
        ports={1: ib_port(MLX_NODE_GUID, lid=0x5A), 2: port},
    ))


def roce_port(root: Path, name: str = "mlx5_2") -> DeviceSpec:
    """A RoCE port: link layer Ethernet, no LID or SM, GIDs from the MAC and
    the interface's IPv4 address, one P_Key, counters as mlx5 reports them."""
    mac_guid = 0x0EC42AFFFEB3D4E0  # EUI-64 of 0c:42:a1:b3:d4:e0
    gids = [ib_gid(mac_guid), ib_gid(mac_guid), ipv4_gid(192, 168, 1, 10), ipv4_gid(192, 168, 1, 10)]
    port = PortSpec(lid=0, sm_lid=0, cap_mask=0x04010000, rate="25 Gb/sec (1X EDR)", link_layer="Ethernet",
                    gids=gids + [0] * 12, pkeys=[0xFFFF])
    return write_device(root, DeviceSpec(
        name=name, node_guid=ROCE_NODE_GUID, sys_image_guid=ROCE_NODE_GUID, hca_type="MT4125",
        pci_device="0x101d", node_desc="node01 RoCE", ports={1: port},
    ))


def no_pma(root: Path, name: str = "rxe0") -> DeviceSpec:
    """A device without a PMA (soft RoCE): every counters/ file reads
    "N/A (no PMA)", hw_counters has packet counts, no PCI device."""
    mac_guid = 0x025056FFFEA1B2C3
    port = PortSpec(lid=0, sm_lid=0, cap_mask=0x00890000, rate="10 Gb/sec (1X QDR)", link_layer="Ethernet",
                    gids=[ib_gid(mac_guid), ipv4_gid(10, 0, 0, 7)] + [0] * 6, pkeys=[0xFFFF],
                    counters={name: "N/A (no PMA)" for name in list(ACTIVE_COUNTERS)[:16]},
                    hw_counters=dict(RXE_HW_COUNTERS))
    return write_device(root, DeviceSpec(
        name=name, node_guid=RXE_NODE_GUID, sys_image_guid=0, node_desc="rxe0", fw_ver="0.0.0",
        hca_type=None, board_id=None, hw_rev=None, pci_vendor=None, pci_device=None, ports={1: port},
    ))


def switch(root: Path, name: str = "mlxsw_0") -> DeviceSpec:
    """A switch device: sysfs shows only its port 0 (enhanced port 0)."""
    return write_device(root, DeviceSpec(
        name=name, node_guid=SWITCH_NODE_GUID, sys_image_guid=SWITCH_NODE_GUID, node_type="2: switch",
        node_desc="MF0;switch-1:MQM8700/U1", hca_type=None, pci_device="0xcf08",
        ports={0: PortSpec(lid=0x3, rate="200 Gb/sec (4X HDR)", gids=[ib_gid(SWITCH_NODE_GUID)], counters=None,
                           hw_counters=None)},
    ))


def set_file(root: Path, relative: str, text: str) -> None:
    """Rewrite one file as the kernel would print it (newline added)."""
    (root / relative).write_text(text + "\n")


def bench_host(root: Path, hcas: int = 4, ports: int = 2, gids: int = 128, pkeys: int = 128) -> None:
    """A host with `hcas` mlx5 HCAs of `ports` Active ports each, with
    full-size GID and P_Key tables (what a ConnectX shows on InfiniBand)."""
    for n in range(hcas):
        guid = MLX_NODE_GUID + 0x100 * n
        specs = {
            p: ib_port(guid + p - 1, lid=0x10 + 2 * n + p, gids=gids)
            for p in range(1, ports + 1)
        }
        for spec in specs.values():
            spec.pkeys = [0xFFFF, 0x8001] + [0] * (pkeys - 2)
        write_device(root, DeviceSpec(name=f"mlx5_{n}", node_guid=guid, sys_image_guid=MLX_NODE_GUID,
                                      node_desc=f"bench mlx5_{n}", ports=specs))

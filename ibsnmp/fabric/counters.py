"""The PMA counters of a port: IBA's attributes as records, and their widths.

Each attribute is a record of values never changed once made, its counters' IBA field widths
declared once (each class's `BITS`: IBA facts, which the PMA-MIB ranges state again and a
test holds equal). IBA PMA counters saturate at all ones instead of wrapping (`saturate`);
data counters count 4-octet words. IF-MIB's 64-bit view of PortCountersExtended is here too.
What drives a simulated port's values: fabric.traffic.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import ClassVar


NUM_VLS = 16  # per-VL attributes report VL0..VL15

# Opcodes (IBA 9.2, Table 38) the simulated ports carry; the rest count 0.
OPCODE_NAMES: dict[int, str] = {
    0x04: "RC SEND Only",
    0x0A: "RC RDMA WRITE Only",
    0x0C: "RC RDMA READ Request",
    0x10: "RC RDMA READ Response Only",
    0x11: "RC Acknowledge",
    0x64: "UD SEND Only",
}
TRACKED_OPCODES: tuple[int, ...] = tuple(OPCODE_NAMES)


def saturate(value: float, bits: int) -> int:
    """An IBA counter of `bits` width: stops at all ones, never wraps."""
    return clip(value, (1 << bits) - 1)


def clip(value: float, top: int) -> int:
    """saturate, with the width's all-ones value given (the hot paths keep it)."""
    if value <= 0:
        return 0
    return top if value >= top else int(value)


def split_shares(total: float, shares: tuple[float, ...], top: int) -> tuple[int, ...]:
    """`total` split by `shares` (each in [0, 1]: a per-VL attribute's VLs),
    each part saturated at `top`. A part is at most the total, so only a
    total past `top` needs a check per part."""
    if total <= 0:
        return (0,) * len(shares)
    if total < top:
        return tuple([int(total * share) for share in shares])
    return tuple([clip(total * share, top) for share in shares])


# Values, never changed once made; not frozen: a frozen dataclass's __init__
# sets each field through object.__setattr__, costlier than a plain
# one, and a GETNEXT across counters makes one of these per name it asks.
@dataclass(slots=True)
class PortCounters:
    """The PortCounters attribute (IBA 16.1.3.5) plus PortXmitWait."""

    BITS: ClassVar[dict[str, int]] = {
        "symbol_error_counter": 16,
        "link_error_recovery_counter": 8,
        "link_downed_counter": 8,
        "port_rcv_errors": 16,
        "port_rcv_remote_physical_errors": 16,
        "port_rcv_switch_relay_errors": 16,
        "port_xmit_discards": 16,
        "port_xmit_constraint_errors": 8,
        "port_rcv_constraint_errors": 8,
        "local_link_integrity_errors": 4,
        "excessive_buffer_overrun_errors": 4,
        "vl15_dropped": 16,
        "port_xmit_data": 32,
        "port_rcv_data": 32,
        "port_xmit_pkts": 32,
        "port_rcv_pkts": 32,
        "port_xmit_wait": 32,
    }

    symbol_error_counter: int
    link_error_recovery_counter: int
    link_downed_counter: int
    port_rcv_errors: int
    port_rcv_remote_physical_errors: int
    port_rcv_switch_relay_errors: int
    port_xmit_discards: int
    port_xmit_constraint_errors: int
    port_rcv_constraint_errors: int
    local_link_integrity_errors: int
    excessive_buffer_overrun_errors: int
    vl15_dropped: int
    port_xmit_data: int
    port_rcv_data: int
    port_xmit_pkts: int
    port_rcv_pkts: int
    port_xmit_wait: int


# -- 64-bit counters: PortCountersExtended and IF-MIB's view of them ---------------

MASK64 = (1 << 64) - 1
# PortCountersExtended's counters (IBA 16.1.4.11) under the names
# model.MeasuredCounters keeps them; the data counters count 4-octet words.
EXTENDED_NAMES: tuple[str, ...] = (
    "port_xmit_data", "port_rcv_data", "port_xmit_pkts", "port_rcv_pkts",
    "unicast_xmit_pkts", "unicast_rcv_pkts", "multicast_xmit_pkts", "multicast_rcv_pkts",
)
# A PMA Set(PortCounters) clearing one of these clears the 64-bit counts
# that count the same traffic (the EXTENDED_NAMES indexes).
EXTENDED_CLEARED: dict[str, tuple[int, ...]] = {
    "port_xmit_data": (0,), "port_rcv_data": (1,), "port_xmit_pkts": (2, 4, 6), "port_rcv_pkts": (3, 5, 7),
}


@dataclass(slots=True)  # never changed once made: see PortCounters
class InterfaceCounters:
    """A port's IF-MIB (RFC 2863) Counter64 objects: 64-bit counts that
    wrap at 2**64 and never saturate.  A count with no 64-bit source (a
    PMA without PortCountersExtended, or unicast/multicast from one that
    keeps only the data counters) is None: IF-MIB has no instance for it."""

    in_octets: int | None
    out_octets: int | None
    in_ucast_pkts: int | None
    out_ucast_pkts: int | None
    in_mcast_pkts: int | None
    out_mcast_pkts: int | None


def interface_counters_of(values: Mapping[str, int], wide: Collection[str]) -> InterfaceCounters | None:
    """IF-MIB's counters from PortCountersExtended-style values (the
    EXTENDED_NAMES), taking only the names in `wide` (read from a 64-bit
    source); None when none of them is."""
    counts = interface_counts_of(values, wide)
    return None if counts is None else InterfaceCounters(*counts)


def interface_counts_of(values: Mapping[str, int], wide: Collection[str]) -> tuple[int | None, ...] | None:
    """interface_counters_of as a plain tuple in InterfaceCounters' order
    (what a comparison of many ports wants)."""
    if not wide:
        return None
    get = values.get
    counts = tuple(None if name not in wide or (value := get(name)) is None else (value * scale) & MASK64
                   for name, scale in _INTERFACE_SOURCES)
    return None if counts == _NO_COUNTS else counts


@functools.lru_cache(maxsize=64)
def interface_sources_in(wide: frozenset[str]) -> tuple[str, ...]:
    """The 64-bit counters of these that IF-MIB counts come from (in
    InterfaceCounters' order; a port's layout has a few sets of them)."""
    return tuple(name for name, _scale in _INTERFACE_SOURCES if name in wide)


# InterfaceCounters' fields in order: the extended counter each comes from, and its unit in octets.
_INTERFACE_SOURCES = (("port_rcv_data", 4), ("port_xmit_data", 4), ("unicast_rcv_pkts", 1),
                      ("unicast_xmit_pkts", 1), ("multicast_rcv_pkts", 1), ("multicast_xmit_pkts", 1))
_NO_COUNTS = (None,) * 6


@dataclass(frozen=True, slots=True)
class PortRcvErrorDetails:
    BITS: ClassVar[dict[str, int]] = {
        "port_local_physical_errors": 16,
        "port_malformed_packet_errors": 16,
        "port_buffer_overrun_errors": 16,
        "port_dlid_mapping_errors": 16,
        "port_vl_mapping_errors": 16,
        "port_looping_errors": 16,
    }

    port_local_physical_errors: int
    port_malformed_packet_errors: int
    port_buffer_overrun_errors: int
    port_dlid_mapping_errors: int
    port_vl_mapping_errors: int
    port_looping_errors: int


@dataclass(frozen=True, slots=True)
class PortXmitDiscardDetails:
    BITS: ClassVar[dict[str, int]] = {
        "port_inactive_discards": 16,
        "port_neighbor_mtu_discards": 16,
        "port_sw_lifetime_limit_discards": 16,
        "port_sw_hoq_limit_discards": 16,
    }

    port_inactive_discards: int
    port_neighbor_mtu_discards: int
    port_sw_lifetime_limit_discards: int
    port_sw_hoq_limit_discards: int


@dataclass(frozen=True, slots=True)
class PortOpRcvCounters:
    BITS: ClassVar[dict[str, int]] = {"port_op_rcv_pkts": 32, "port_op_rcv_data": 32}

    opcode: int
    port_op_rcv_pkts: int
    port_op_rcv_data: int


@dataclass(frozen=True, slots=True)
class PortFlowCtlCounters:
    BITS: ClassVar[dict[str, int]] = {"port_xmit_flow_pkts": 32, "port_rcv_flow_pkts": 32}

    port_xmit_flow_pkts: int
    port_rcv_flow_pkts: int


@dataclass(frozen=True, slots=True)
class PortVLOpPackets:
    """Packets received with one opcode, per VL (16 bits each)."""

    BITS: ClassVar[int] = 16
    opcode: int
    per_vl: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PortVLOpData:
    """Data words received with one opcode, per VL (32 bits each)."""

    BITS: ClassVar[int] = 32
    opcode: int
    per_vl: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PortVLXmitFlowCtlUpdateErrors:
    BITS: ClassVar[int] = 2
    per_vl: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PortVLXmitWaitCounters:
    BITS: ClassVar[int] = 16
    per_vl: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SwPortVLCongestion:
    """Switch ports only; channel adapters report zeros."""

    BITS: ClassVar[int] = 16
    per_vl: tuple[int, ...]


# The fields a PMA Set(PortCounters) can clear (CounterSelect bits).
CLEARABLE: frozenset[str] = frozenset(PortCounters.BITS)

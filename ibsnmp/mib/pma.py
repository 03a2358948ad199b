"""PMA-MIB: the Performance Management Agent counters of the context's node.

Every table is indexed by IbDataPort (1..254): a CA's ports, a switch's ports 1..N (not port 0).
Simulated values are fabric.traffic functions of the port's traffic profile at `target.elapsed`,
growing with time and saturating at all ones at the IBA field width, which the compiled ranges
match; data counters count 4-octet words. Measured counters (sysfs, a PMA the live provider
reads: counters.MeasuredProfile) are served as read, PortCounters of the last poll and detail
attributes of the last sweep; an attribute not measured has no rows, an unreported counter none.
Reference: docs/mibs.md, 'What each module serves'.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import Any

from ..fabric.counters import NUM_VLS, TRACKED_OPCODES
from ..fabric.traffic import MeasuredProfile, traffic_profile
from ..fabric.lineage import Aspect, NodeDerived
from ..fabric.model import Port
from .api import ContextTarget
from .binding import ModuleBinding, TableBinding, reads_time

Getter = Callable[[Any, ContextTarget], Any]


class _PortRow:
    """One data port and the last attribute values read, so the many columns
    of one request compute each attribute once. Its traffic profile is the
    request's snapshot's: measured values move with every poll, a scenario's
    bursts bend a simulated port's (the row stays)."""

    __slots__ = ("num", "port", "serves", "memo", "_read_in", "_profile")

    def __init__(self, port: Port, profile: Any) -> None:
        self.num = port.num
        self.port = port
        # Which attributes have values: the kind of profile and, measured,
        # the counters the port's PMA reports (its layout), not their values.
        self.serves: Callable[[str], bool] = profile.serves
        self.memo: dict[tuple[str, int], tuple[float, Any, Any]] = {}
        # The snapshot the profile was last looked up in (weakly: a row
        # outlives snapshots) and that profile: every column of a request
        # asks the same one.
        self._read_in: Callable[[], Any] = _no_snapshot
        self._profile: Any = profile

    def read(self, method: str, target: ContextTarget, opcode: int = -1) -> Any:
        fabric = target.fabric
        if self._read_in() is fabric:
            profile = self._profile
        else:
            profile = self._profile = traffic_profile(fabric, self.port)
            self._read_in = weakref.ref(fabric)
        t = target.elapsed
        key = (method, opcode)
        hit = self.memo.get(key)
        if hit is not None and hit[0] == t and hit[1] is profile:
            return hit[2]
        attribute = getattr(profile, method)
        value = attribute(t) if opcode < 0 else attribute(opcode, t)
        self.memo[key] = (t, profile, value)
        return value


def _no_snapshot() -> None:
    """A dead weak reference: no snapshot read yet."""
    return None


def _port_rows(target: ContextTarget) -> list[tuple[tuple[int], _PortRow]]:
    """Every data port of the node, built once per structure and node and
    shared by all PMA tables (so they share the per-row memo)."""
    rows: list[tuple[tuple[int], _PortRow]] = target.fabric.derive_for(_ROWS, target.node)
    return rows


# Which rows a port has follows its profile's kind and, for a measured
# port, the counters its PMA reports: the node's own structure.
_ROWS = NodeDerived("PMA rows", Aspect(0), lambda fabric, node: [
    ((p.num,), _PortRow(p, traffic_profile(fabric, p))) for p in node.data_ports])


def _rows(method: str) -> Callable[[ContextTarget], list[tuple[tuple[int], _PortRow]]]:
    """The data ports whose profile has values for the attribute `method`
    (every port of a simulated fabric; measured ports only what they measured)."""
    return lambda target: [row for row in _port_rows(target) if row[1].serves(method)]


def _switch_port_rows(target: ContextTarget) -> list[tuple[tuple[int], _PortRow]]:
    # SwPortVLCongestion is a switch attribute (IBA 16.1.4.9): a CA has no rows.
    return _rows("sw_port_vl_congestion_at")(target) if target.node.is_switch else []


# ibPmaPortOpCode*Index is "the op code ... Note: this is a 1-based value",
# and the draft says no more: index = IBA opcode (IBA 9.2, Table 38) + 1,
# so opcode 0x00 is index 1 and 0xFE is 255. Rows exist for the opcodes the
# port's PMA tracks (counters.TRACKED_OPCODES); the model counts 0 for every
# other opcode, which are left out rather than listed as 250 rows of zeros.
# A measured port has the one row of the opcode its PMA counted (0xFF: none,
# the index stops at 255).
def _opcode_rows(method: str) -> Callable[[ContextTarget], Iterator[tuple[tuple[int, int], tuple[_PortRow, int]]]]:
    def rows(target: ContextTarget) -> Iterator[tuple[tuple[int, int], tuple[_PortRow, int]]]:
        for (num,), row in _rows(method)(target):
            profile = traffic_profile(target.fabric, row.port)
            opcodes = (profile.opcodes(method) if isinstance(profile, MeasuredProfile)
                       else TRACKED_OPCODES)
            for opcode in opcodes:
                if opcode < _NO_OPCODE:
                    yield (num, opcode + 1), (row, opcode)

    return rows


_NO_OPCODE = 0xFF  # past ibPmaPortOpCode*Index's 255


def _part(value: Any, name: str) -> Any:
    return None if value is None else getattr(value, name)


def _per_vl(value: Any, vl: int) -> Any:
    return None if value is None else value.per_vl[vl]


def _field(method: str, name: str) -> Getter:
    """A column that is one field of a per-port attribute."""
    return reads_time(lambda row, target: _part(row.read(method, target), name))


def _vl(method: str, vl: int) -> Getter:
    """A per-VL column of a per-port attribute."""
    return reads_time(lambda row, target: _per_vl(row.read(method, target), vl))


def _op_field(method: str, name: str) -> Getter:
    """A column of a per-port, per-opcode attribute (row = (port row, opcode))."""
    return reads_time(lambda row, target: _part(row[0].read(method, target, row[1]), name))


def _op_vl(method: str, vl: int) -> Getter:
    return reads_time(lambda row, target: _per_vl(row[0].read(method, target, row[1]), vl))


def _columns(prefix: str, make: Callable[[int], Getter]) -> dict[str, Getter]:
    """The sixteen per-VL columns prefix0 .. prefix15."""
    return {f"{prefix}{vl}": make(vl) for vl in range(NUM_VLS)}


_COUNTERS = "counters_at"  # PortCounters (IBA 16.1.3.5)

PMA_MIB = ModuleBinding(
    module="PMA-MIB",
    tables=(
        TableBinding(
            entry="ibPmaPortCntrsEntry",
            rows=_rows(_COUNTERS),
            depends=Aspect(0),
            columns={
                "ibPmaSymbolErrCounter": _field(_COUNTERS, "symbol_error_counter"),
                "ibPmaLinkErrRecoveryCntr": _field(_COUNTERS, "link_error_recovery_counter"),
                "ibPmaLinkDownedCntr": _field(_COUNTERS, "link_downed_counter"),
                "ibPmaPortRcvErr": _field(_COUNTERS, "port_rcv_errors"),
                "ibPmaPortRcvRemPhysErr": _field(_COUNTERS, "port_rcv_remote_physical_errors"),
                "ibPmaPortRcvSwitchRelayErr": _field(_COUNTERS, "port_rcv_switch_relay_errors"),
                "ibPmaPortXmitDiscard": _field(_COUNTERS, "port_xmit_discards"),
                "ibPmaPortXmitConstraintErr": _field(_COUNTERS, "port_xmit_constraint_errors"),
                "ibPmaPortRcvConstraintErr": _field(_COUNTERS, "port_rcv_constraint_errors"),
                "ibPmaLocalLinkIntegrityErr": _field(_COUNTERS, "local_link_integrity_errors"),
                "ibPmaExcessBufOverrunErr": _field(_COUNTERS, "excessive_buffer_overrun_errors"),
                "ibPmaVl15Dropped": _field(_COUNTERS, "vl15_dropped"),
            },
        ),
        TableBinding(
            entry="ibPmaPortCntrsOptEntry",
            rows=_rows(_COUNTERS),
            depends=Aspect(0),
            columns={
                "ibPmaPortXmitData": _field(_COUNTERS, "port_xmit_data"),
                "ibPmaPortRcvData": _field(_COUNTERS, "port_rcv_data"),
                "ibPmaPortXmitPkts": _field(_COUNTERS, "port_xmit_pkts"),
                "ibPmaPortRcvPkts": _field(_COUNTERS, "port_rcv_pkts"),
            },
        ),
        TableBinding(
            entry="ibPmaPortRcvErrEntry",  # PortRcvErrorDetails (IBA 16.1.4.1)
            rows=_rows("rcv_error_details_at"),
            depends=Aspect(0),
            columns={
                "ibPmaPortRcvErrLocalPhysErrs": _field("rcv_error_details_at", "port_local_physical_errors"),
                "ibPmaPortMalformedPacketErrs": _field("rcv_error_details_at", "port_malformed_packet_errors"),
                "ibPmaPortBufferOverrunErrs": _field("rcv_error_details_at", "port_buffer_overrun_errors"),
                "ibPmaPortDLIDMappingErrs": _field("rcv_error_details_at", "port_dlid_mapping_errors"),
                "ibPmaPortVLMappingErrs": _field("rcv_error_details_at", "port_vl_mapping_errors"),
                "ibPmaPortLoopingErrs": _field("rcv_error_details_at", "port_looping_errors"),
            },
        ),
        TableBinding(
            entry="ibPmaPortXmitDiscardEntry",  # PortXmitDiscardDetails (IBA 16.1.4.2)
            rows=_rows("xmit_discard_details_at"),
            depends=Aspect(0),
            columns={
                "ibPmaPortInactiveDiscards": _field("xmit_discard_details_at", "port_inactive_discards"),
                "ibPmaPortNeighborMtuDiscards": _field("xmit_discard_details_at", "port_neighbor_mtu_discards"),
                "ibPmaPortSwLifetimeLimitDiscards": _field(
                    "xmit_discard_details_at", "port_sw_lifetime_limit_discards"
                ),
                "ibPmaPortSwHoqLimitDiscards": _field("xmit_discard_details_at", "port_sw_hoq_limit_discards"),
            },
        ),
        TableBinding(
            entry="ibPmaPortFlowCtlCntrsEntry",  # PortFlowCtlCounters (IBA 16.1.4.4)
            rows=_rows("flow_ctl_counters_at"),
            depends=Aspect(0),
            columns={
                "ibPmaPortFlowCtlXmitFlowPkts": _field("flow_ctl_counters_at", "port_xmit_flow_pkts"),
                "ibPmaPortFlowCtlRcvFlowPkts": _field("flow_ctl_counters_at", "port_rcv_flow_pkts"),
            },
        ),
        TableBinding(
            entry="ibPmaPortOpCodeRcvCntrsEntry",  # PortOpRcvCounters (IBA 16.1.4.3)
            rows=_opcode_rows("op_rcv_counters_at"),
            depends=Aspect(0),
            columns={
                "ibPmaPortOpCodeRcvCntrsRcvPkts": _op_field("op_rcv_counters_at", "port_op_rcv_pkts"),
                "ibPmaPortOpCodeRcvCntrsRcvData": _op_field("op_rcv_counters_at", "port_op_rcv_data"),
            },
        ),
        TableBinding(
            entry="ibPmaPortOpCodeVlCntrsEntry",  # PortVLOpPackets (IBA 16.1.4.5)
            rows=_opcode_rows("vl_op_packets_at"),
            depends=Aspect(0),
            columns=_columns("ibPmaPortVlOpPkt", lambda vl: _op_vl("vl_op_packets_at", vl)),
        ),
        TableBinding(
            entry="ibPmaPortOpCodeVlDataCntrsEntry",  # PortVLOpData (IBA 16.1.4.6)
            rows=_opcode_rows("vl_op_data_at"),
            depends=Aspect(0),
            columns=_columns("ibPmaPortVlOpData", lambda vl: _op_vl("vl_op_data_at", vl)),
        ),
        TableBinding(
            # PortVLXmitFlowCtlUpdateErrors (IBA 16.1.4.7): 2 bits per VL, so
            # 0..3 inside the draft's 0..255.
            entry="ibPmaPortVlXmitFCUpErrEntry",
            rows=_rows("vl_xmit_flow_ctl_update_errors_at"),
            depends=Aspect(0),
            columns=_columns("ibPmaPortVlXmitFCUpErr", lambda vl: _vl("vl_xmit_flow_ctl_update_errors_at", vl)),
        ),
        TableBinding(
            entry="ibPmaPortVlXmitWaitCntrsEntry",  # PortVLXmitWaitCounters (IBA 16.1.4.8)
            rows=_rows("vl_xmit_wait_at"),
            depends=Aspect(0),
            columns=_columns("ibPmaPortVlXmitWait", lambda vl: _vl("vl_xmit_wait_at", vl)),
        ),
        TableBinding(
            entry="ibPmaPortVlSwCongestionEntry",  # SwPortVLCongestion (IBA 16.1.4.9)
            rows=_switch_port_rows,
            depends=Aspect(0),
            columns=_columns("ibPmaPortVlSwCongestion", lambda vl: _vl("sw_port_vl_congestion_at", vl)),
        ),
    ),
)

"""The simulated traffic that drives the PMA counters of a simulated port.

Every counter is a pure function of a port's `TrafficProfile` (rates chosen from the fabric
seed) and the seconds since the counters were cleared: no background task, and values never
go backwards. Traffic is per link direction: PortXmitData at one end is PortRcvData at the
other. A measured port (sysfs, live, MQTT) has a `MeasuredProfile` of the values read
instead. The counters' records and widths: fabric.counters.
"""

from __future__ import annotations


import dataclasses
import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol, cast

from .counters import (EXTENDED_CLEARED, EXTENDED_NAMES, MASK64, NUM_VLS, InterfaceCounters,
                       PortCounters, PortFlowCtlCounters, PortOpRcvCounters, PortRcvErrorDetails,
                       PortVLOpData, PortVLOpPackets, PortVLXmitFlowCtlUpdateErrors,
                       PortVLXmitWaitCounters, PortXmitDiscardDetails, SwPortVLCongestion, clip,
                       interface_counters_of, saturate, split_shares)
from .detrand import unit as _unit
from .iba import NodeType, PortPhysState, PortState
from .lineage import Aspect, Derived, NodeDerived
from .model import (ALWAYS_UP, NO_PORT_VALUES, NO_VALUES, Fabric, MeasuredCounters, Node, NodeConnections,
                    Port, PortHistory, PortRef, SmInfo)


# -- the traffic model --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Flow:
    """Traffic in one direction of a link: a base rate plus periodic bursts.
    `load(t)` is the traffic-weighted time (monotonic in t)."""

    bytes_per_s: float
    packet_bytes: float
    burst_period_s: float = 60.0
    burst_length_s: float = 0.0
    burst_boost: float = 0.0
    phase_s: float = 0.0
    multicast_share: float = 0.0  # of the packets: what PortCountersExtended counts as multicast

    def load(self, t: float) -> float:
        if t <= 0:
            return 0.0
        boost = self.burst_boost
        if not boost:
            return t
        # The burst time by t + phase, less that by phase (inline: every
        # counter a read computes calls this).
        period, length, phase = self.burst_period_s, self.burst_length_s, self.phase_s
        cycles, rest = divmod(t + phase, period)
        start_cycles, start_rest = divmod(phase, period)
        on = (cycles * length + min(rest, length)) - (start_cycles * length + min(start_rest, length))
        return t + boost * on

    def octets(self, t: float) -> float:
        return self.bytes_per_s * self.load(t)

    def packets(self, t: float) -> float:
        return self.octets(t) / self.packet_bytes if self.packet_bytes else 0.0


IDLE = Flow(0.0, 0.0)


@dataclass(frozen=True, slots=True)
class ErrorRates:
    """Events per second for the error and discard counters."""

    symbol: float = 0.0
    link_error_recovery: float = 0.0
    link_downed: float = 0.0
    rcv_remote_physical: float = 0.0
    rcv_switch_relay: float = 0.0
    xmit_constraint: float = 0.0
    rcv_constraint: float = 0.0
    local_link_integrity: float = 0.0
    excessive_buffer_overrun: float = 0.0
    vl15_dropped: float = 0.0
    local_physical: float = 0.0
    malformed_packet: float = 0.0
    buffer_overrun: float = 0.0
    dlid_mapping: float = 0.0
    vl_mapping: float = 0.0
    looping: float = 0.0
    inactive_discards: float = 0.0
    neighbor_mtu_discards: float = 0.0
    sw_lifetime_limit_discards: float = 0.0
    sw_hoq_limit_discards: float = 0.0
    vl_flow_ctl_update: float = 0.0


NO_ERRORS = ErrorRates()
# The names a scenario's error burst may use: the ErrorRates fields.
ERROR_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(ErrorRates))
_RCV_ERROR_NAMES = ("local_physical", "malformed_packet", "buffer_overrun", "dlid_mapping", "vl_mapping", "looping")
_DISCARD_NAMES = ("inactive_discards", "neighbor_mtu_discards", "sw_lifetime_limit_discards",
                  "sw_hoq_limit_discards")


def _count(rate: float, t: float) -> float:
    return rate * t if t > 0 else 0.0


@dataclass(frozen=True, slots=True)
class _Timeline:
    """A port history summed up so that what it adds up to by a time is a
    bisection, not a pass over it: a scenario that repeats adds an interval,
    a down or a burst at every event, for as long as the agent runs. The
    sums are taken in the order the passes took them (the same floats)."""

    starts: tuple[float, ...]  # the intervals the port was up, in order
    ends: tuple[float, ...]
    up_before: tuple[float, ...]  # the up time of the intervals before each
    load_before: tuple[tuple[float, ...], tuple[float, ...]]  # the same, traffic-weighted (xmit, rcv)
    down_times: tuple[float, ...]
    burst_times: Mapping[str, tuple[float, ...]]  # by ErrorRates field
    burst_totals: Mapping[str, tuple[int, ...]]  # the errors of bursts up to each

    @staticmethod
    def of(intervals: tuple[tuple[float, float], ...], history: PortHistory,
           flows: tuple[Flow, Flow]) -> _Timeline:
        ordered = sorted(intervals)
        up_before: list[float] = []
        load_before: tuple[list[float], list[float]] = ([], [])
        up, loads = 0.0, [0.0, 0.0]
        for start, end in ordered:  # every interval but the last one ended
            up_before.append(up)
            up += end - start
            for i, flow in enumerate(flows):
                load_before[i].append(loads[i])
                loads[i] += flow.load(end) - flow.load(start)
        times: dict[str, list[float]] = {}
        totals: dict[str, list[int]] = {}
        for when, kind, count in sorted(history.bursts, key=lambda burst: burst[0]):
            kind_totals = totals.setdefault(kind, [])
            times.setdefault(kind, []).append(when)
            kind_totals.append((kind_totals[-1] if kind_totals else 0) + count)
        return _Timeline(
            tuple(start for start, _ in ordered), tuple(end for _, end in ordered), tuple(up_before),
            (tuple(load_before[0]), tuple(load_before[1])), tuple(sorted(history.downs)),
            {kind: tuple(values) for kind, values in times.items()},
            {kind: tuple(values) for kind, values in totals.items()})

    def up_time(self, t: float) -> float:
        """Seconds up by t: the intervals that started before it."""
        last = bisect_left(self.starts, t) - 1
        if last < 0:
            return 0.0
        return self.up_before[last] + (min(t, self.ends[last]) - self.starts[last])

    def load(self, is_xmit: bool, flow: Flow, t: float) -> float:
        """`flow`'s traffic-weighted time while up by t (`is_xmit`: which of the two it is)."""
        last = bisect_left(self.starts, t) - 1
        if last < 0:
            return 0.0
        before = self.load_before[0 if is_xmit else 1][last]
        return before + (flow.load(min(t, self.ends[last])) - flow.load(self.starts[last]))

    def downs(self, t: float) -> int:
        return bisect_right(self.down_times, t)

    def bursts(self, kind: str, t: float) -> int:
        """The errors of `kind` the bursts up to t added."""
        times = self.burst_times.get(kind)
        if times is None:
            return 0
        count = bisect_right(times, t)
        return self.burst_totals[kind][count - 1] if count else 0


@dataclass(frozen=True, slots=True)
class TrafficProfile:
    """Everything the counters of one port derive from; the *_at methods
    are the counters after `t` seconds.

    `history` (a port a scenario touched, see model.PortHistory) bends the
    steady model: traffic and error rates run only while the port was up,
    error bursts add on top, LinkDownedCounter counts the downs, and a
    PortCounters field cleared at time c reads as its count since c.  Every
    value is still a pure function of t, monotonic between clears."""

    active: bool
    is_switch: bool
    xmit: Flow
    rcv: Flow
    xmit_wait_per_s: float
    flow_ctl_pkts_per_s: float
    vl_shares: tuple[float, ...]  # 16 entries summing to 1 when active
    opcode_shares: tuple[tuple[int, float], ...]
    errors: ErrorRates = NO_ERRORS
    link_downed_base: int = 0
    history: PortHistory | None = None
    # `history` summed up for bisection, made when first read (see _Timeline).
    timeline: _Timeline | None = dataclasses.field(default=None, init=False, repr=False, compare=False)

    def serves(self, method: str) -> bool:
        """Whether the *_at method `method` has values: the model simulates
        every attribute (MeasuredProfile does not)."""
        return True

    def counters_at(self, t: float) -> PortCounters:
        t = max(0.0, t)
        if self.history is not None:
            return self._history_counters(t)
        xmit_load, rcv_load = self.xmit.load(t), self.rcv.load(t)
        xmit_octets, rcv_octets = self.xmit.bytes_per_s * xmit_load, self.rcv.bytes_per_s * rcv_load
        e = self.errors
        tops = _COUNTER_TOPS
        if e is NO_ERRORS:  # most ports: skip twenty multiplications by zero
            errors: tuple[int, ...] = _NO_ERROR_COUNTS
            downed = clip(self.link_downed_base, tops[2])
        else:
            raw = (
                e.symbol * t,
                e.link_error_recovery * t,
                self.link_downed_base + math.floor(e.link_downed * t),
                # PortRcvErrors counts every packet the details count.
                sum(_raw_rcv_errors(e, t)),
                e.rcv_remote_physical * t,
                e.rcv_switch_relay * t,
                sum(_raw_discards(e, t)),
                e.xmit_constraint * t,
                e.rcv_constraint * t,
                e.local_link_integrity * t,
                e.excessive_buffer_overrun * t,
                e.vl15_dropped * t,
            )
            errors = tuple([clip(value, top) for value, top in zip(raw, tops)])
            downed = errors[2]
        xmit_bytes, rcv_bytes = self.xmit.packet_bytes, self.rcv.packet_bytes
        return PortCounters(
            errors[0], errors[1], downed, errors[3], errors[4], errors[5], errors[6], errors[7],
            errors[8], errors[9], errors[10], errors[11],
            clip(xmit_octets / 4, tops[12]),
            clip(rcv_octets / 4, tops[13]),
            clip(xmit_octets / xmit_bytes, tops[14]) if xmit_bytes else 0,
            clip(rcv_octets / rcv_bytes, tops[15]) if rcv_bytes else 0,
            clip(self.xmit_wait_per_s * xmit_load, tops[16]),
        )

    def threshold_counters_at(self, t: float) -> tuple[int, int]:
        """(LocalLinkIntegrityErrors, ExcessiveBufferOverrunErrors) alone:
        what a threshold watcher polls, without the other fifteen."""
        t = max(0.0, t)
        if self.history is not None:
            counters = self._history_counters(t)
            return counters.local_link_integrity_errors, counters.excessive_buffer_overrun_errors
        e = self.errors
        if e is NO_ERRORS:
            return 0, 0
        return (clip(e.local_link_integrity * t, _COUNTER_TOPS[9]),
                clip(e.excessive_buffer_overrun * t, _COUNTER_TOPS[10]))

    def extended_at(self, t: float) -> tuple[int, ...]:
        """PortCountersExtended after `t` seconds (EXTENDED_NAMES order):
        the traffic PortCounters counts, in 64-bit counters that wrap
        modulo 2**64, so PortXmitData here equals PortCounters' until that
        saturates; multicast is the flow's share of the packets.  A
        PortCounters clear clears the counts of the same traffic."""
        t = max(0.0, t)
        raw = self._raw_extended(t)
        history = self.history
        if history is not None and history.clears:
            earlier: dict[float, list[int]] = {}
            for name, when in history.clears:
                indexes = EXTENDED_CLEARED.get(name)
                if indexes is None or when > t:
                    continue
                before = earlier.get(when)
                if before is None:
                    before = earlier[when] = self._raw_extended(when)
                for i in indexes:
                    raw[i] -= before[i]
        return tuple(value & MASK64 for value in raw)

    def _raw_extended(self, t: float) -> list[int]:
        """The EXTENDED_NAMES counts since the epoch, before wrapping."""
        xmit, rcv = self.xmit, self.rcv
        xmit_octets = xmit.bytes_per_s * self._load(xmit, t)
        rcv_octets = rcv.bytes_per_s * self._load(rcv, t)
        xmit_pkts = math.floor(xmit_octets / xmit.packet_bytes) if xmit.packet_bytes else 0
        rcv_pkts = math.floor(rcv_octets / rcv.packet_bytes) if rcv.packet_bytes else 0
        xmit_mcast = math.floor(xmit_pkts * xmit.multicast_share)
        rcv_mcast = math.floor(rcv_pkts * rcv.multicast_share)
        return [math.floor(xmit_octets / 4), math.floor(rcv_octets / 4), xmit_pkts, rcv_pkts,
                xmit_pkts - xmit_mcast, rcv_pkts - rcv_mcast, xmit_mcast, rcv_mcast]

    def interface_counters_at(self, t: float) -> InterfaceCounters:
        """IF-MIB's counters after `t` seconds: every one from extended_at."""
        words_out, words_in, _, _, ucast_out, ucast_in, mcast_out, mcast_in = self.extended_at(t)
        return InterfaceCounters((words_in * 4) & MASK64, (words_out * 4) & MASK64,
                                 ucast_in, ucast_out, mcast_in, mcast_out)

    def rcv_error_details_at(self, t: float) -> PortRcvErrorDetails:
        raw: Iterable[float]
        if self.history is None and self.errors is NO_ERRORS:
            return _NO_RCV_ERRORS
        if self.history is not None:
            tau = self._up_time(t)
            raw = (self._error(n, t, tau) for n in _RCV_ERROR_NAMES)
        else:
            raw = _raw_rcv_errors(self.errors, t)
        widths = PortRcvErrorDetails.BITS.values()
        return PortRcvErrorDetails(*(saturate(v, width) for v, width in zip(raw, widths)))

    def xmit_discard_details_at(self, t: float) -> PortXmitDiscardDetails:
        raw: Iterable[float]
        if self.history is None and self.errors is NO_ERRORS:
            return _NO_DISCARDS
        if self.history is not None:
            tau = self._up_time(t)
            raw = (self._error(n, t, tau) for n in _DISCARD_NAMES)
        else:
            raw = _raw_discards(self.errors, t)
        widths = PortXmitDiscardDetails.BITS.values()
        return PortXmitDiscardDetails(*(saturate(v, width) for v, width in zip(raw, widths)))

    def op_rcv_counters_at(self, opcode: int, t: float) -> PortOpRcvCounters:
        share = self._opcode_share(opcode)
        octets = self.rcv.bytes_per_s * self._load(self.rcv, t)
        packets = octets / self.rcv.packet_bytes if self.rcv.packet_bytes else 0.0
        bits = PortOpRcvCounters.BITS
        return PortOpRcvCounters(opcode, saturate(packets * share, bits["port_op_rcv_pkts"]),
                                 saturate(octets * share / 4, bits["port_op_rcv_data"]))

    def flow_ctl_counters_at(self, t: float) -> PortFlowCtlCounters:
        # Both directions count the same packets: one width serves both.
        count = saturate(self.flow_ctl_pkts_per_s * self._up_time(t),
                         PortFlowCtlCounters.BITS["port_xmit_flow_pkts"])
        return PortFlowCtlCounters(count, count)

    def vl_op_packets_at(self, opcode: int, t: float) -> PortVLOpPackets:
        octets = self.rcv.bytes_per_s * self._load(self.rcv, t)
        packets = (octets / self.rcv.packet_bytes if self.rcv.packet_bytes else 0.0) * self._opcode_share(opcode)
        return PortVLOpPackets(opcode, split_shares(packets, self.vl_shares, _VL_OP_PACKETS_TOP))

    def vl_op_data_at(self, opcode: int, t: float) -> PortVLOpData:
        words = self.rcv.bytes_per_s * self._load(self.rcv, t) / 4 * self._opcode_share(opcode)
        return PortVLOpData(opcode, split_shares(words, self.vl_shares, _VL_OP_DATA_TOP))

    def vl_xmit_flow_ctl_update_errors_at(self, t: float) -> PortVLXmitFlowCtlUpdateErrors:
        if self.history is not None:
            errors: float = self._error("vl_flow_ctl_update", t, self._up_time(t))
        else:
            errors = _count(self.errors.vl_flow_ctl_update, t)
        # Every VL that carries traffic counts the port's errors.
        count = clip(errors, _VL_FLOW_CTL_TOP)
        return PortVLXmitFlowCtlUpdateErrors(tuple([count if s else 0 for s in self.vl_shares]))

    def vl_xmit_wait_at(self, t: float) -> PortVLXmitWaitCounters:
        wait = self.xmit_wait_per_s * self._load(self.xmit, t)
        return PortVLXmitWaitCounters(split_shares(wait, self.vl_shares, _VL_XMIT_WAIT_TOP))

    def sw_port_vl_congestion_at(self, t: float) -> SwPortVLCongestion:
        if not self.is_switch:
            return _NO_CONGESTION
        # Congestion marks: a sampled fraction of the wait ticks.
        wait = self.xmit_wait_per_s * self._load(self.xmit, t) / 256
        return SwPortVLCongestion(split_shares(wait, self.vl_shares, _VL_CONGESTION_TOP))

    def _opcode_share(self, opcode: int) -> float:
        for code, share in self.opcode_shares:
            if code == opcode:
                return share
        return 0.0

    # -- the history path (ports a scenario touched) ----------------------------

    def _intervals(self) -> tuple[tuple[float, float], ...]:
        history = self.history
        if history is not None and history.up is not None:
            return history.up
        return ALWAYS_UP if self.active else ()

    def _timeline(self) -> _Timeline:
        timeline = self.timeline
        if timeline is None:
            assert self.history is not None
            timeline = _Timeline.of(self._intervals(), self.history, (self.xmit, self.rcv))
            object.__setattr__(self, "timeline", timeline)  # derived once, like a cached property
        return timeline

    def _load(self, flow: Flow, t: float) -> float:
        """Traffic-weighted time the port was up by t (Flow.load without history)."""
        if self.history is None:
            return flow.load(t)
        return self._timeline().load(flow is self.xmit, flow, t)

    def _up_time(self, t: float) -> float:
        if self.history is None:
            return t if t > 0 else 0.0
        return self._timeline().up_time(t)

    def _error(self, name: str, t: float, up_time: float) -> int:
        """Errors of one ErrorRates kind by t: the steady rate while up, plus bursts."""
        rate: float = getattr(self.errors, name)
        count = math.floor(rate * up_time)
        if self.history is not None:
            count += self._timeline().bursts(name, t)
        return count

    def _raw_counters(self, t: float) -> list[int]:
        """The PortCounters fields before saturation, as counts since the epoch."""
        history = self.history
        assert history is not None
        tau = self._up_time(t)
        xmit_load, rcv_load = self._load(self.xmit, t), self._load(self.rcv, t)
        xmit_octets, rcv_octets = self.xmit.bytes_per_s * xmit_load, self.rcv.bytes_per_s * rcv_load

        def err(name: str) -> int:
            return self._error(name, t, tau)

        downs = self._timeline().downs(t)
        return [
            err("symbol"),
            err("link_error_recovery"),
            self.link_downed_base + err("link_downed") + downs,
            sum(err(name) for name in _RCV_ERROR_NAMES),
            err("rcv_remote_physical"),
            err("rcv_switch_relay"),
            sum(err(name) for name in _DISCARD_NAMES),
            err("xmit_constraint"),
            err("rcv_constraint"),
            err("local_link_integrity"),
            err("excessive_buffer_overrun"),
            err("vl15_dropped"),
            math.floor(xmit_octets / 4),
            math.floor(rcv_octets / 4),
            math.floor(xmit_octets / self.xmit.packet_bytes) if self.xmit.packet_bytes else 0,
            math.floor(rcv_octets / self.rcv.packet_bytes) if self.rcv.packet_bytes else 0,
            math.floor(self.xmit_wait_per_s * xmit_load),
        ]

    def _history_counters(self, t: float) -> PortCounters:
        history = self.history
        assert history is not None
        raw = self._raw_counters(t)
        earlier: dict[float, list[int]] = {}
        for name, when in history.clears:
            if when <= t:
                index = _COUNTER_INDEX[name]
                before = earlier.get(when)
                if before is None:
                    before = earlier[when] = self._raw_counters(when)
                raw[index] -= before[index]
        return PortCounters(*[clip(value, top) for value, top in zip(raw, _COUNTER_TOPS)])


_COUNTER_INDEX = {name: i for i, name in enumerate(PortCounters.BITS)}
_INTEGRITY_BITS = PortCounters.BITS["local_link_integrity_errors"]
_OVERRUN_BITS = PortCounters.BITS["excessive_buffer_overrun_errors"]
_COUNTER_NAMES = tuple(PortCounters.BITS)


class _FieldsKind(Protocol):
    """A detail attribute class whose BITS name its fields and their widths."""

    @property
    def BITS(self) -> dict[str, int]: ...
    def __call__(self, *args: Any, **kwargs: Any) -> object: ...


class _PerVlKind(Protocol):
    """A per-VL detail attribute class: BITS is every VL's value's width."""

    @property
    def BITS(self) -> int: ...
    def __call__(self, *args: Any, **kwargs: Any) -> object: ...


class _OpcodeKind(Protocol):
    """A per-opcode attribute class: BITS as a _FieldsKind's (no per-VL
    prefix) or as a _PerVlKind's (a prefix); MEASURED_OPCODE says which."""

    @property
    def BITS(self) -> Any: ...
    def __call__(self, *args: Any, **kwargs: Any) -> object: ...


class _Opcoded(Protocol):
    """A per-opcode attribute as read: it names the opcode it counted."""

    @property
    def opcode(self) -> int: ...


# The detail attributes a measured port may report, by the profile method
# that serves each: a class of fields (its BITS name them), or a per-VL class
# whose sixteen values are named `prefix`_0 .. `prefix`_15.
MEASURED_DETAILS: dict[str, _FieldsKind] = {
    "rcv_error_details_at": PortRcvErrorDetails,
    "xmit_discard_details_at": PortXmitDiscardDetails,
    "flow_ctl_counters_at": PortFlowCtlCounters,
}
MEASURED_PER_VL: dict[str, tuple[_PerVlKind, str]] = {
    "vl_xmit_flow_ctl_update_errors_at": (PortVLXmitFlowCtlUpdateErrors, "vl_xmit_flow_ctl_update_errors"),
    "vl_xmit_wait_at": (PortVLXmitWaitCounters, "vl_xmit_wait"),
}
# The per-opcode attributes: the kind, the prefix of its per-VL names (None:
# PortOpRcvCounters' two fields), and the name of the opcode it counts.
MEASURED_OPCODE: dict[str, tuple[_OpcodeKind, str | None, str]] = {
    "op_rcv_counters_at": (PortOpRcvCounters, None, "port_op_rcv_opcode"),
    "vl_op_packets_at": (PortVLOpPackets, "vl_op_packets", "vl_op_packets_opcode"),
    "vl_op_data_at": (PortVLOpData, "vl_op_data", "vl_op_data_opcode"),
}
_PER_VL_NAMES = {method: tuple(f"{prefix}_{vl}" for vl in range(NUM_VLS))
                 for method, (_, prefix) in MEASURED_PER_VL.items()}
_PER_VL_NAMES.update({method: tuple(f"{prefix}_{vl}" for vl in range(NUM_VLS))
                      for method, (_, prefix, _) in MEASURED_OPCODE.items() if prefix})
_NO_DETAILS: Mapping[str, object] = MappingProxyType({})


def _measured_details(values: Mapping[str, int]) -> Mapping[str, object]:
    """The detail attributes of which `values` holds every field, saturated
    at their IBA widths, by the method that serves each."""
    details: dict[str, object] = {}
    for method, kind in MEASURED_DETAILS.items():
        bits = kind.BITS
        if all(name in values for name in bits):
            details[method] = kind(*(saturate(values[name], width) for name, width in bits.items()))
    for method, (vl_kind, _) in MEASURED_PER_VL.items():
        names = _PER_VL_NAMES[method]
        if all(name in values for name in names):
            width = vl_kind.BITS
            details[method] = vl_kind(tuple(saturate(values[name], width) for name in names))
    for method, (op_kind, prefix, opcode_name) in MEASURED_OPCODE.items():
        names = _PER_VL_NAMES[method] if prefix else tuple(op_kind.BITS)
        if opcode_name not in values or not all(name in values for name in names):
            continue
        opcode = values[opcode_name]
        if prefix:
            width = op_kind.BITS
            details[method] = op_kind(opcode, tuple(saturate(values[name], width)
                                                    for name in names))
        else:
            details[method] = op_kind(opcode, *(saturate(values[name], width)
                                                for name, width in op_kind.BITS.items()))
    return MappingProxyType(details) if details else _NO_DETAILS


def _detail_reader(method: str) -> Callable[..., object]:
    """A MeasuredProfile *_at method: the detail attribute as read, whatever `t`."""
    def read(self: MeasuredProfile, t: float) -> object:
        return self.details.get(method)
    read.__name__ = method
    return read


def _opcode_reader(method: str) -> Callable[..., object]:
    """A MeasuredProfile per-opcode *_at method: the attribute as read, for the
    opcode it counted only, whatever `t`."""
    def read(self: MeasuredProfile, opcode: int, t: float) -> object:
        value = self.details.get(method)
        return value if value is not None and cast(_Opcoded, value).opcode == opcode else None
    read.__name__ = method
    return read


@dataclass(frozen=True, slots=True)
class MeasuredProfile:
    """A port whose counters were measured (model.MeasuredCounters, from a
    host's sysfs or a PMA): PortCounters as read at the last poll, whatever
    `t`, each saturated at its IBA width (a 64-bit PortCountersExtended data
    counter above 2^32-1 reads all ones, never wrapped).  A counter the
    device did not report is None.  `details`: the detail attributes whose
    every field was read (a PMA's PortRcvErrorDetails ..., see
    MEASURED_DETAILS; a per-opcode one for the opcode it names, see
    MEASURED_OPCODE), by the *_at method that serves each; any other
    attribute is not measured (`serves` is false, its *_at method returns
    None).  `interface`: IF-MIB's counters from the values read from a
    64-bit source (MeasuredCounters.wide), None if none was."""

    counters: PortCounters | None
    interface: InterfaceCounters | None = None
    details: Mapping[str, object] = dataclasses.field(default_factory=lambda: _NO_DETAILS)

    @staticmethod
    def of(measured: MeasuredCounters) -> MeasuredProfile:
        values = measured.values
        interface = interface_counters_of(values, measured.wide) if measured.wide else None
        details = _measured_details(values)
        if not any(name in values for name in _COUNTER_NAMES):
            return MeasuredProfile(None, interface, details)
        return MeasuredProfile(PortCounters(*(
            # A counter not read is None (see the class), though PortCounters' fields say int.
            saturate(values[name], bits)  # type: ignore[arg-type]  # None where not read
            if name in values else None
            for name, bits in PortCounters.BITS.items()
        )), interface, details)

    def serves(self, method: str) -> bool:
        if method == "interface_counters_at":
            return self.interface is not None
        if method in self.details:
            return True
        return self.counters is not None and method in ("counters_at", "threshold_counters_at")

    def counters_at(self, t: float) -> PortCounters | None:
        return self.counters

    def interface_counters_at(self, t: float) -> InterfaceCounters | None:
        return self.interface

    def threshold_counters_at(self, t: float) -> tuple[int | None, int | None]:
        c = self.counters
        if c is None:
            return None, None
        return c.local_link_integrity_errors, c.excessive_buffer_overrun_errors

    def _none(self, *args: object) -> None:
        return None

    rcv_error_details_at = _detail_reader("rcv_error_details_at")
    xmit_discard_details_at = _detail_reader("xmit_discard_details_at")
    flow_ctl_counters_at = _detail_reader("flow_ctl_counters_at")
    vl_xmit_flow_ctl_update_errors_at = _detail_reader("vl_xmit_flow_ctl_update_errors_at")
    vl_xmit_wait_at = _detail_reader("vl_xmit_wait_at")
    sw_port_vl_congestion_at = _none

    def opcodes(self, method: str) -> tuple[int, ...]:
        """The opcode a per-opcode attribute was read for (its OpCode
        component: the one a PerfMgt Set() chose); none if not read."""
        value = self.details.get(method)
        return () if value is None else (cast(_Opcoded, value).opcode,)

    op_rcv_counters_at = _opcode_reader("op_rcv_counters_at")
    vl_op_packets_at = _opcode_reader("vl_op_packets_at")
    vl_op_data_at = _opcode_reader("vl_op_data_at")


_COUNTER_TOPS = tuple((1 << bits) - 1 for bits in PortCounters.BITS.values())
_NO_ERROR_COUNTS = (0,) * 12  # PortCounters' error counters of a port without errors
# Shared by every port without errors or not a switch's: the values are immutable.
_NO_RCV_ERRORS = PortRcvErrorDetails(*(0,) * len(PortRcvErrorDetails.BITS))
_NO_DISCARDS = PortXmitDiscardDetails(*(0,) * len(PortXmitDiscardDetails.BITS))
_NO_CONGESTION = SwPortVLCongestion((0,) * NUM_VLS)
_VL_OP_PACKETS_TOP = (1 << PortVLOpPackets.BITS) - 1
_VL_OP_DATA_TOP = (1 << PortVLOpData.BITS) - 1
_VL_FLOW_CTL_TOP = (1 << PortVLXmitFlowCtlUpdateErrors.BITS) - 1
_VL_XMIT_WAIT_TOP = (1 << PortVLXmitWaitCounters.BITS) - 1
_VL_CONGESTION_TOP = (1 << SwPortVLCongestion.BITS) - 1


def _raw_rcv_errors(e: ErrorRates, t: float) -> tuple[float, ...]:
    return tuple(
        math.floor(_count(rate, t))
        for rate in (e.local_physical, e.malformed_packet, e.buffer_overrun, e.dlid_mapping, e.vl_mapping, e.looping)
    )


def _raw_discards(e: ErrorRates, t: float) -> tuple[float, ...]:
    return tuple(
        math.floor(_count(rate, t))
        for rate in (
            e.inactive_discards, e.neighbor_mtu_discards, e.sw_lifetime_limit_discards, e.sw_hoq_limit_discards
        )
    )


# -- profiles derived from the seed ------------------------------------------

_IDLE_VLS = (0.0,) * NUM_VLS


def traffic_profile(fabric: Fabric, port: Port) -> TrafficProfile | MeasuredProfile:
    """The port's profile: for a port whose counters were measured (a
    `counter_layout`: a host's sysfs, a PMA, a publisher's record), the
    values the snapshot holds; else derived once from the fabric seed, the
    link the port is on and its state (down ports carry nothing), and what a
    scenario did to it (fabric.port_history)."""
    node = fabric.nodes[port.node_guid]
    if port.counter_layout is not None:
        return _measured_profile(fabric, node, port)
    history = fabric.port_history.get(port.ref) if fabric.port_history else None
    cache = fabric.derive_for(_PROFILES, node)
    known = cache.get(port.num)
    if known is not None and known[0] is history:
        return known[1]
    if history is None:
        profile = _derive_profile(fabric, port)
    else:
        profile = _derive_history_profile(fabric, port, history)
    cache[port.num] = (history, profile)
    return profile


def _measured_profile(fabric: Fabric, node: Node, port: Port) -> MeasuredProfile:
    """The profile of the values read for `port`, made once per reading:
    snapshots with the same structure share the memo, and a value mapping
    a provider did not replace is the same object."""
    measured = fabric.measured(port)
    assert measured is not None
    memo = fabric.derive_for(_MEASURED, node)
    known = memo.get(port.num)
    if known is not None and known[0] is measured.values:
        return known[1]
    profile = MeasuredProfile.of(measured)
    memo[port.num] = (measured.values, profile)
    return profile


# A simulated port's profile follows its node and the seed, and its own
# history: (the history entry it was made with, the profile).
_PROFILES: NodeDerived[dict[int, tuple[PortHistory | None, TrafficProfile]]] = NodeDerived(
    "traffic profiles", Aspect.IDENTITY, lambda fabric, node: {})
# A measured port's: (the values it was made of, the profile).
_MEASURED: NodeDerived[dict[int, tuple[Mapping[str, int], MeasuredProfile]]] = NodeDerived(
    "measured profiles", Aspect(0), lambda fabric, node: {})


def threshold_counters(fabric: Fabric, port: Port, elapsed: float) -> tuple[int | None, int | None]:
    """LocalLinkIntegrityErrors and ExcessiveBufferOverrunErrors `elapsed`
    seconds after the epoch, as PMA-MIB serves them: a measured port's read
    straight from its values (a poll reads every port's), saturated; None
    for one its PMA does not report."""
    if port.counter_layout is None:
        return traffic_profile(fabric, port).threshold_counters_at(elapsed)
    values = fabric.counter_values.get(port.node_guid, NO_PORT_VALUES).get(port.num, NO_VALUES)
    integrity, overrun = values.get("local_link_integrity_errors"), values.get("excessive_buffer_overrun_errors")
    return (None if integrity is None else saturate(integrity, _INTEGRITY_BITS),
            None if overrun is None else saturate(overrun, _OVERRUN_BITS))


def port_counters(fabric: Fabric, port: Port, elapsed: float) -> PortCounters | None:
    """PortCounters of a port `elapsed` seconds after they were cleared
    (as measured, for a sysfs port; None for one without a PMA)."""
    return traffic_profile(fabric, port).counters_at(elapsed)


def interface_counters(fabric: Fabric, port: Port, elapsed: float) -> InterfaceCounters | None:
    """IF-MIB's 64-bit counters of a port `elapsed` seconds after the
    provider's epoch: the simulated traffic's, or what a host or PMA read
    from a 64-bit source; None for a port with no such source (no PMA,
    a topology dump, 32-bit PortCounters alone)."""
    return traffic_profile(fabric, port).interface_counters_at(elapsed)


def extended_counters(fabric: Fabric, port: Port, elapsed: float) -> MeasuredCounters | None:
    """The simulated PortCountersExtended of a port as a host would have
    read them (every value wide); None for a measured port (its values are
    the snapshot's: Fabric.measured)."""
    profile = traffic_profile(fabric, port)
    if not isinstance(profile, TrafficProfile):
        return None
    return MeasuredCounters(MappingProxyType(dict(zip(EXTENDED_NAMES, profile.extended_at(elapsed)))), _ALL_EXTENDED)


_ALL_EXTENDED = frozenset(EXTENDED_NAMES)


def _derive_history_profile(fabric: Fabric, port: Port, history: PortHistory) -> TrafficProfile:
    """A touched port: the rates it has when its link is up (taken from the
    training it had, if it is down now), bent by its history."""
    basis = port
    if not port.is_active and port.num != 0 and history.training is not None and history.peer is not None:
        width, speed, speed_ext, vls = history.training
        info = port.info._replace(
            port_state=PortState.ACTIVE, phys_state=PortPhysState.LINK_UP, link_width_active=width,
            link_speed_active=speed, link_speed_ext_active=speed_ext, operational_vls=vls,
        )
        basis = dataclasses.replace(port, info=info, remote=history.peer)
    profile = _derive_profile(fabric, basis)
    return dataclasses.replace(profile, active=port.is_active, history=history)


def threshold_watch_ports(fabric: Fabric) -> tuple[PortRef, ...]:
    """Every port whose LocalLinkIntegrityErrors or ExcessiveBufferOverrunErrors
    can change: the degraded links (the only ports `_errors` gives those
    rates), the ports with measured counters (a real host's) and the ports
    with a history (bursts, downs, clears).  A watcher polling these sees
    everything a poll of every port would."""
    degraded = steady_watch_ports(fabric)
    if not fabric.port_history:
        return degraded
    seen = set(degraded)
    return degraded + tuple(sorted(ref for ref in fabric.port_history if ref not in seen))


def steady_watch_ports(fabric: Fabric) -> tuple[PortRef, ...]:
    """threshold_watch_ports but for those only a history puts there."""
    return fabric.derive(_WATCHED)


_WATCHED = Derived("degraded and measured ports", Aspect.NODES | Aspect.NODE_SET, lambda fabric: tuple(
    p.ref for node in fabric.nodes.values() for p in node.ports
    if p.degraded or p.counter_layout is not None))


def _derive_profile(fabric: Fabric, port: Port) -> TrafficProfile:
    seed = fabric.seed or 0
    node = fabric.nodes[port.node_guid]
    is_switch = node.node_type is NodeType.SWITCH
    here = (port.node_guid, port.num)
    if port.num == 0 or not port.is_active:
        # A port that went down (an injected fault) remembers the event.
        return TrafficProfile(False, is_switch, IDLE, IDLE, 0.0, 0.0, _IDLE_VLS, (),
                              link_downed_base=1 if port.degraded else 0)
    there = (port.remote.guid, port.remote.port) if port.remote else (0, 0)
    gbps = port.info.rate_gbps

    def u(salt: int) -> float:  # this port's independent draws
        return _unit(seed, *here, salt)

    xmit = _flow(seed, here, there, gbps)
    vls = port.info.operational_vls
    assert vls is not None  # known wherever rate_gbps above was
    data_vls = vls.data_vls
    return TrafficProfile(
        active=True,
        is_switch=is_switch,
        xmit=xmit,
        rcv=_flow(seed, there, here, gbps),
        # XmitWait ticks (~156 MHz link clock) while the port had data queued.
        xmit_wait_per_s=1.5625e8 * (xmit.bytes_per_s / (gbps * 1.25e8)) * (0.02 + 0.3 * u(10)),
        # Each data VL sends a credit update at least every 65,536 symbols.
        flow_ctl_pkts_per_s=data_vls * gbps * 1e9 / (66 * 65536),
        vl_shares=_vl_shares(data_vls, u(11), u(12)),
        opcode_shares=_opcode_shares(u),
        errors=_errors(port, is_switch, u),
        link_downed_base=int(1 + 3 * u(13)) if port.degraded else 0,
    )


def _flow(seed: int, src: tuple[int, int], dst: tuple[int, int], gbps: float) -> Flow:
    def u(salt: int) -> float:
        return _unit(seed, *src, *dst, salt)

    utilisation = 1e-5 * 1000.0 ** u(1)  # log-uniform 0.001 % .. 1 % of the link
    period = 30.0 + 570.0 * u(3)
    return Flow(
        bytes_per_s=gbps * 1.25e8 * utilisation,
        packet_bytes=256.0 + 3900.0 * u(2),
        burst_period_s=period,
        burst_length_s=period * (0.05 + 0.15 * u(4)),
        burst_boost=4.0 * u(5),
        phase_s=period * u(6),
        multicast_share=0.001 + 0.019 * u(7),  # 0.1 % .. 2 %: SA, IPoIB broadcast, MPI collectives
    )


def _vl_shares(data_vls: int, main: float, spread: float) -> tuple[float, ...]:
    shares = [0.0] * NUM_VLS
    others = min(data_vls, 4) - 1
    first = 1.0 if others == 0 else 0.6 + 0.35 * main
    shares[0] = first
    if others:
        weights = [1.0 + spread * (i + 1) for i in range(others)]
        total = sum(weights)
        for i, weight in enumerate(weights, start=1):
            shares[i] = (1.0 - first) * weight / total
    return tuple(shares)


def _opcode_shares(u: Callable[[int], float]) -> tuple[tuple[int, float], ...]:
    weights = {
        0x04: 1.0 + u(20),
        0x0A: 2.0 * u(21),
        0x0C: 0.1 * u(22),
        0x10: u(23),
        0x11: 0.5 + u(24),
        0x64: 0.1 + 0.3 * u(25),
    }
    total = sum(weights.values())
    return tuple((code, weight / total) for code, weight in weights.items())


def _errors(port: Port, is_switch: bool, u: Callable[[int], float]) -> ErrorRates:
    hour = 1 / 3600.0
    if port.degraded:
        # A marginal link: bit errors, retraining, now and then a flap.
        symbol = 0.05 + 2.0 * u(30)
        return ErrorRates(
            symbol=symbol,
            link_error_recovery=hour * (1 + 11 * u(31)),
            link_downed=hour / 24 * u(32),
            local_physical=symbol * 0.3,
            malformed_packet=hour * u(33),
            rcv_remote_physical=hour * 2 * u(34) if is_switch else 0.0,
            local_link_integrity=hour * 2,
            excessive_buffer_overrun=hour * u(35),
            vl_flow_ctl_update=hour * u(36),
            inactive_discards=hour * u(37) if is_switch else 0.0,
        )
    # Healthy ports: rare, scattered events on a few of them.
    rates = ErrorRates(
        symbol=hour / 24 * 10 if u(40) < 0.1 else 0.0,
        vl15_dropped=hour * 6 if u(41) < 0.2 else 0.0,
        rcv_switch_relay=hour if is_switch and u(42) < 0.05 else 0.0,
        dlid_mapping=hour if is_switch and u(42) < 0.05 else 0.0,
        sw_hoq_limit_discards=hour * 2 if is_switch and u(43) < 0.1 else 0.0,
        rcv_constraint=hour / 2 if port.info.partition_enforcement_inbound and u(44) < 0.05 else 0.0,
        xmit_constraint=hour / 2 if port.info.partition_enforcement_outbound and u(45) < 0.05 else 0.0,
    )
    return NO_ERRORS if rates == NO_ERRORS else rates


# -- subnet manager and transport counters -------------------------------------


def sm_act_count(sm: SmInfo, elapsed: float) -> int | None:
    """SMInfo.ActCount after `elapsed` seconds (a 32-bit counter that wraps);
    None when it was never read."""
    if sm.act_count is None:
        return None
    return (sm.act_count + int(sm.act_rate * max(0.0, elapsed))) & 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class ConnectionCounters:
    """The scalar counters of IBCONNECTION-MIB (Counter64 and Counter32
    values wrap at their width, as SNMP counters do)."""

    ud_in_datagrams: int
    ud_no_qp: int
    ud_in_errors: int
    ud_out_datagrams: int
    rd_in_datagrams: int
    rd_no_qp: int
    rd_in_errors: int
    rd_out_datagrams: int
    connected_in_segments: int
    connected_out_segments: int


def connection_counters_at(conns: NodeConnections, elapsed: float) -> ConnectionCounters:
    t = max(0.0, elapsed)
    ud, rd, seg = conns.ud_datagrams_per_s * t, conns.rd_datagrams_per_s * t, conns.segments_per_s * t
    c64, c32 = (1 << 64) - 1, (1 << 32) - 1
    return ConnectionCounters(
        ud_in_datagrams=int(ud) & c64,
        ud_no_qp=int(ud * 1e-5) & c32,
        ud_in_errors=int(ud * 2e-6) & c32,
        ud_out_datagrams=int(ud * 0.93) & c64,
        rd_in_datagrams=int(rd) & c64,
        rd_no_qp=int(rd * 1e-5) & c32,
        rd_in_errors=int(rd * 2e-6) & c32,
        rd_out_datagrams=int(rd * 0.97) & c64,
        connected_in_segments=int(seg) & c64,
        connected_out_segments=int(seg * 1.02) & c64,
    )

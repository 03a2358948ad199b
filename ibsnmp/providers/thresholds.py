"""Traps 129 and 130 from the PMA error counters: a threshold watcher.

`ThresholdWatcher.poll` judges LocalLinkIntegrityErrors and ExcessiveBufferOverrunErrors of the
ports whose counters can move (counters.threshold_watch_ports) and returns Crossings; callers
emit the events. IBA applies PortInfo's thresholds to raw counts no PMA attribute shows, so
the rule (this project's choice) applies them to the growth of the visible counter: one that
grew by at least its threshold since it was armed fires once. Unknown thresholds are
DEFAULT_THRESHOLDS. The watcher clears nothing: a Crossing says when a counter should be.
Reference: docs/providers.md, 'Traps 129 and 130: the threshold rule'.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric.counters import PortCounters
from ibsnmp.fabric.traffic import steady_watch_ports, threshold_counters
from ibsnmp.fabric.lineage import Aspect, Derived
from ibsnmp.fabric.model import Fabric, Port, PortRef

__all__ = ["WATCHED", "DEFAULT_THRESHOLDS", "Crossing", "ThresholdWatcher"]

# (trap, PortCounters field, PortInfo threshold field)
WATCHED: tuple[tuple[IbaTrap, str, str], ...] = (
    (IbaTrap.LOCAL_LINK_INTEGRITY, "local_link_integrity_errors", "local_phy_errors_threshold"),
    (IbaTrap.EXCESSIVE_BUFFER_OVERRUN, "excessive_buffer_overrun_errors", "overrun_errors_threshold"),
)
_TOP = tuple((1 << PortCounters.BITS[name]) - 1 for _, name, _ in WATCHED)
# The thresholds used where the model cannot tell a port's (sysfs shows none):
# OpenSM's local_phy_errors_threshold and overrun_errors_threshold defaults,
# which the simulated fabric's SM programs too.
DEFAULT_THRESHOLDS: dict[str, int] = {"local_phy_errors_threshold": 8, "overrun_errors_threshold": 8}


@dataclass(frozen=True, slots=True)
class Crossing:
    """A counter of `ref` grew by at least its threshold since it was armed.
    `clear`: it has less than a threshold of room left; whoever acts on the
    crossing should clear it (changes.with_counters_cleared), and the next
    poll re-arms it at 0."""

    ref: PortRef
    trap: IbaTrap
    counter: str
    value: int
    threshold: int
    clear: bool

    def event(self, fabric: Fabric) -> TrapEvent:
        node = fabric.nodes[self.ref.guid]
        lid = node.ports[0].lid if node.is_switch else fabric.port_at(self.ref).lid
        return TrapEvent(self.trap, node.guid, lid, port=self.ref.port)


def _watched(fabric: Fabric) -> list[tuple[PortRef, Port]]:
    """(ref, port) of every port to watch (counters.threshold_watch_ports)
    that has PortCounters (not a switch's port 0)."""
    steady, known = fabric.derive(_STEADY)
    if not fabric.port_history:
        return steady
    return steady + [(ref, port) for ref in sorted(fabric.port_history) if ref not in known
                     and (port := fabric.port(ref.guid, ref.port)) is not None and _counted(fabric, ref)]


def _counted(fabric: Fabric, ref: PortRef) -> bool:
    return not (ref.port == 0 and fabric.nodes[ref.guid].is_switch)  # switch port 0 has no PortCounters


def _steady(fabric: Fabric) -> tuple[list[tuple[PortRef, Port]], frozenset[PortRef]]:
    """The ports watched whatever a scenario did (degraded and measured ones), and their refs."""
    listed = [(ref, fabric.port_at(ref)) for ref in steady_watch_ports(fabric) if _counted(fabric, ref)]
    return listed, frozenset(ref for ref, _ in listed)


_STEADY = Derived("threshold-watched ports", Aspect.NODES | Aspect.NODE_SET, _steady)


class ThresholdWatcher:
    """Polls the watched ports' LocalLinkIntegrityErrors and
    ExcessiveBufferOverrunErrors.  Per port and counter, an armed value
    starts at the counter's value when the watch begins.  A counter that
    grew by at least its threshold (0 counts as 1) fires once, whatever
    the growth, and is re-armed at its new value; one cleared since the
    last poll is re-armed at 0, one that went down otherwise where it is.
    "Reaches" rather than IBA's "exceeds": the counters are 4 bits wide
    and a threshold of 15 could otherwise never fire.
    `clear_after_trap`: a crossing that leaves less than one threshold of
    room below the counter's top asks to be cleared (Crossing.clear), as
    a performance manager would; False for real counters, which nobody
    here can clear (one saturated at 15 then fires no more)."""

    def __init__(self, *, clear_after_trap: bool = True) -> None:
        self.clear_after_trap = clear_after_trap
        self._armed: dict[PortRef, tuple[int | None, int | None]] = {}
        self._last: tuple[Fabric, float] | None = None
        self._last_read: Mapping[PortRef, tuple[int | None, int | None]] | None = None

    def armed(self, ref: PortRef) -> tuple[int | None, int | None] | None:
        return self._armed.get(ref)

    def poll(self, fabric: Fabric, elapsed: float,
             read: Mapping[PortRef, tuple[int | None, int | None]] | None = None) -> list[Crossing]:
        """The crossings since the last poll.  A port seen for the first
        time is armed at its value in the snapshot of the previous poll (at
        that poll's time), so a burst that put it on the watch list counts;
        on the first poll, at its value now.  `read`: the two counters of
        measured ports as the provider read them (counters.threshold_counters
        of `fabric`, which it saves reading again)."""
        crossings: list[Crossing] = []
        last = self._last
        port_history = fabric.port_history
        last_read, self._last_read = self._last_read, read
        if (read is not None and not port_history and last is not None and last[0].lineage is fabric.lineage
                and read == last_read):
            # The same counters on the same ports and thresholds as the poll
            # before judged: it left every port armed where nothing fires.
            self._last = (fabric, elapsed)
            return crossings
        armed_at = self._armed
        for ref, port in _watched(fabric):
            values = read.get(ref) if read is not None else None
            if values is None:
                values = threshold_counters(fabric, port, elapsed)
            armed = armed_at.get(ref)
            history = port_history.get(ref) if port_history else None
            if armed == values and history is None:
                continue  # neither counter moved since it was armed: nothing to judge
            if armed is None:
                armed = values
                if last is not None:
                    before = last[0].port(ref.guid, ref.port)
                    if before is not None:
                        armed = threshold_counters(last[0], before, last[1])
            rearmed = list(armed)
            for i, (trap, counter, threshold_field) in enumerate(WATCHED):
                value = values[i]
                if value is None:  # a measured port whose device does not report it
                    continue
                base = rearmed[i]
                if base is None:  # reported for the first time: the baseline
                    rearmed[i] = value
                    continue
                cleared = history.cleared_at(counter) if history is not None else None
                if cleared is not None and last is not None and cleared >= last[1]:
                    base = 0  # cleared since the last poll: it counts from 0
                elif value < base:
                    base = value
                rearmed[i] = base
                threshold = getattr(port.info, threshold_field)
                if threshold is None:
                    threshold = DEFAULT_THRESHOLDS[threshold_field]
                threshold = max(1, threshold)
                if value - base >= threshold:
                    clear = self.clear_after_trap and value + threshold > _TOP[i]
                    crossings.append(Crossing(ref, trap, counter, value, threshold, clear))
                    rearmed[i] = value
            self._armed[ref] = (rearmed[0], rearmed[1])
        self._last = (fabric, elapsed)
        return crossings

    def observe(self, fabric: Fabric, elapsed: float) -> None:
        """The snapshot that now stands (e.g. after the watcher's clears),
        for arming ports first seen at the next poll."""
        self._last = (fabric, elapsed)

"""Port counters of many ports at once through PerfMgt, as perfquery reads one.

Each PMA's ClassPortInfo says whether it keeps PortCountersExtended (64-bit
data counters); those that do are read with it as well as PortCounters (the
error counters live only there), the others with PortCounters alone.  A
PMA with the data-only kind (NoIETF) answers PortCountersExtended with its
unicast and multicast fields unused: those are dropped, not read as 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ibsnmp.mad.attributes import (
    CLASS_PORT_INFO,
    PORT_COUNTERS,
    PORT_COUNTERS_EXTENDED,
    AnyAttribute,
)
from ibsnmp.mad.layout import FieldValue, field_int
from ibsnmp.mad.packets import MadError, perf_get, reply_octets
from ibsnmp.mad.umad import perf_address
from ibsnmp.mad.window import MadWindow

# ClassPortInfo.CapabilityMask bits of the PerfMgt class (IBA 16.1.3.1):
# PortCountersExtended with all counters, or with the data counters only.
EXTENDED_WIDTH_SUPPORTED = 0x0200
EXTENDED_WIDTH_NO_IETF = 0x4000

Counters = dict[str, FieldValue]
PortKey = tuple[int, int]  # (LID, port number)

# The PortCountersExtended fields each kind of PMA keeps.
ALL_EXTENDED = frozenset({"PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortUnicastXmitPkts",
                          "PortUnicastRcvPkts", "PortMulticastXmitPkts", "PortMulticastRcvPkts"})
DATA_EXTENDED = frozenset({"PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts"})


def ask_counters(window: MadWindow, attribute: AnyAttribute, lid: int, port: int,
                 into: dict[PortKey, Counters], failures: dict[PortKey, str]) -> None:
    """`attribute` of one PMA port; its answer's fields are added to `into`,
    a timeout or an error status noted in `failures`."""
    # Loosely typed: a port's answers to several attributes merge into one dict.
    decode = attribute.layout.decoder()

    def handle(answer: bytes | None) -> None:
        if answer is None:
            failures[(lid, port)] = f"{attribute.name}: timeout"
            return
        try:
            status, octets = reply_octets(answer, attribute)
        except MadError as exc:
            failures[(lid, port)] = f"{attribute.name}: {exc}"
            return
        if status:
            failures[(lid, port)] = f"{attribute.name}: status {status:#x}"
            return
        into.setdefault((lid, port), {}).update(decode(octets))

    window.submit(perf_get(attribute, 0, port), perf_address(lid), handle)


def extended_counter_lids(window: MadWindow, lids: Iterable[int]) -> dict[int, frozenset[str]]:
    """The LIDs whose PMA keeps PortCountersExtended -> the fields of it
    the PMA keeps (ALL_EXTENDED, or DATA_EXTENDED for the NoIETF kind)."""
    infos: dict[PortKey, Counters] = {}
    failures: dict[PortKey, str] = {}
    for lid in set(lids):
        ask_counters(window, CLASS_PORT_INFO, lid, 0, infos, failures)
    window.drain()
    kept: dict[int, frozenset[str]] = {}
    for (lid, _), info in infos.items():
        mask = field_int(info["CapabilityMask"])
        if mask & EXTENDED_WIDTH_SUPPORTED:
            kept[lid] = ALL_EXTENDED
        elif mask & EXTENDED_WIDTH_NO_IETF:
            kept[lid] = DATA_EXTENDED
    return kept


def poll_counters(window: MadWindow, ports: Iterable[PortKey],
                  extended_lids: Mapping[int, frozenset[str]] | set[int],
                  wide: dict[PortKey, frozenset[str]] | None = None,
                  ) -> tuple[dict[PortKey, Counters], dict[PortKey, str]]:
    """Counters of every (LID, port), and why a port has none.

    Where both attributes answer, the extended (64-bit) counters the PMA
    keeps (extended_lids[lid]; a set of LIDs: all of them) replace
    PortCounters' 32-bit ones of the same name; `wide`, if given, gets the
    names of those 64-bit fields per port.
    """
    basic: dict[PortKey, Counters] = {}
    extended: dict[PortKey, Counters] = {}
    failures: dict[PortKey, str] = {}
    wanted = list(ports)
    for lid, port in wanted:
        ask_counters(window, PORT_COUNTERS, lid, port, basic, failures)
        if lid in extended_lids:
            ask_counters(window, PORT_COUNTERS_EXTENDED, lid, port, extended, failures)
    window.drain()
    merged: dict[PortKey, Counters] = {}
    for key in wanted:
        if key not in basic or key in failures:
            continue
        kept = extended_lids.get(key[0], ALL_EXTENDED) if isinstance(extended_lids, Mapping) else ALL_EXTENDED
        merged[key], wider = merge_counters(basic[key], extended.get(key), kept)
        if wide is not None and wider:
            wide[key] = wider
    return merged, failures


def merge_counters(basic: Counters, extended: Counters | None,
                   kept: frozenset[str] = ALL_EXTENDED) -> tuple[Counters, frozenset[str]]:
    """A port's PortCounters answer with the PortCountersExtended fields its
    PMA keeps (`kept`) in place of the 32-bit ones; and the names of those
    64-bit fields (none without an extended answer)."""
    if not extended:
        return dict(basic), frozenset()
    wider = {name: value for name, value in extended.items() if name in kept}
    return {**basic, **wider}, (kept if len(wider) == len(kept) else frozenset(wider))

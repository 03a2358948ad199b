"""Port counters of many ports at once through PerfMgt, as perfquery reads one.

Each PMA's ClassPortInfo says whether it keeps PortCountersExtended (64-bit
data counters); those that do are read with it as well as PortCounters (the
error counters live only there), the others with PortCounters alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from ibsnmp.mad.attributes import (
    CLASS_PORT_INFO,
    PORT_COUNTERS,
    PORT_COUNTERS_EXTENDED,
    Attribute,
)
from ibsnmp.mad.layout import FieldValue
from ibsnmp.mad.packets import MadError, decode_reply, perf_get
from ibsnmp.mad.umad import perf_address
from ibsnmp.mad.window import MadWindow

# ClassPortInfo.CapabilityMask bits of the PerfMgt class (IBA 16.1.3.1):
# PortCountersExtended with all counters, or with the data counters only.
EXTENDED_WIDTH_SUPPORTED = 0x0200
EXTENDED_WIDTH_NO_IETF = 0x4000

Counters = dict[str, FieldValue]
PortKey = tuple[int, int]  # (LID, port number)


def _get(window: MadWindow, attribute: Attribute, lid: int, port: int,
         into: dict[PortKey, Counters], failures: dict[PortKey, str]) -> None:
    def handle(answer: bytes | None) -> None:
        if answer is None:
            failures[(lid, port)] = f"{attribute.name}: timeout"
            return
        try:
            reply = decode_reply(answer, attribute)
        except MadError as exc:
            failures[(lid, port)] = f"{attribute.name}: {exc}"
            return
        if reply.status:
            failures[(lid, port)] = f"{attribute.name}: status {reply.status:#x}"
            return
        into.setdefault((lid, port), {}).update(reply.attribute)

    window.submit(perf_get(attribute, 0, port), perf_address(lid), handle)


def extended_counter_lids(window: MadWindow, lids: Iterable[int]) -> set[int]:
    """The LIDs whose PMA keeps PortCountersExtended."""
    infos: dict[PortKey, Counters] = {}
    failures: dict[PortKey, str] = {}
    for lid in set(lids):
        _get(window, CLASS_PORT_INFO, lid, 0, infos, failures)
    window.drain()
    mask = EXTENDED_WIDTH_SUPPORTED | EXTENDED_WIDTH_NO_IETF
    return {lid for (lid, _), info in infos.items()
            if int(info["CapabilityMask"]) & mask}  # type: ignore[arg-type]


def poll_counters(window: MadWindow, ports: Iterable[PortKey],
                  extended_lids: set[int]) -> tuple[dict[PortKey, Counters], dict[PortKey, str]]:
    """Counters of every (LID, port), and why a port has none.

    Where both attributes answer, the extended (64-bit) data counters
    replace PortCounters' 32-bit ones of the same name.
    """
    basic: dict[PortKey, Counters] = {}
    extended: dict[PortKey, Counters] = {}
    failures: dict[PortKey, str] = {}
    wanted = list(ports)
    for lid, port in wanted:
        _get(window, PORT_COUNTERS, lid, port, basic, failures)
        if lid in extended_lids:
            _get(window, PORT_COUNTERS_EXTENDED, lid, port, extended, failures)
    window.drain()
    merged = {key: {**basic[key], **extended.get(key, {})} for key in wanted
              if key in basic and key not in failures}
    return merged, failures

"""The PMA detail attributes (IBA 16.1.4) a PMA answers, read port by port.

What `perfquery -E`, `-D`, `--flowctlcounters`, `--vlxmitflowctlerrors`, `--vlxmitcounters`,
`--oprcvcounters`, `--vloppackets` and `--vlopdata` read. No ClassPortInfo bit tells whether a
PMA keeps one: each LID's PMA is asked each attribute once, of its lowest port polled, and what
it answered is then read of each of its ports. The per-opcode attributes count the one opcode
a PerfMgt Set() chose (their OpCode component), and are served for it alone. Not read:
SwPortVLCongestion (ibsim does not answer it; it reaches the SM's port and brings OpenSM down).
Reference: docs/mad-layer.md, 'Where each live-mode value comes from'.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from ibsnmp.mad.attributes import (
    PORT_FLOW_CTL_COUNTERS,
    PORT_OP_RCV_COUNTERS,
    PORT_RCV_ERROR_DETAILS,
    PORT_VL_OP_DATA,
    PORT_VL_OP_PACKETS,
    PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS,
    PORT_VL_XMIT_WAIT_COUNTERS,
    PORT_XMIT_DISCARD_DETAILS,
    AnyAttribute,
)
from ibsnmp.mad.counters import Counters, PortKey, ask_counters
from ibsnmp.mad.window import MadWindow

DETAIL_ATTRIBUTES = (PORT_RCV_ERROR_DETAILS, PORT_XMIT_DISCARD_DETAILS, PORT_FLOW_CTL_COUNTERS,
                     PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS, PORT_VL_XMIT_WAIT_COUNTERS,
                     PORT_OP_RCV_COUNTERS, PORT_VL_OP_PACKETS, PORT_VL_OP_DATA)


class DetailReading:
    """The detail attributes one port answered: their fields' values, and the
    names of those fields (the same object for every port read alike)."""

    __slots__ = ("fields", "values")

    def __init__(self, fields: frozenset[str], values: Counters) -> None:
        self.fields = fields
        self.values = values


def offered_details(window: MadWindow, ports: Collection[PortKey]
                    ) -> dict[int, tuple[AnyAttribute, ...]]:
    """The LIDs whose PMA answered some detail attribute -> those attributes."""
    asked: dict[int, int] = {}
    for lid, port in ports:
        asked[lid] = min(port, asked.get(lid, port))
    answers: dict[AnyAttribute, dict[PortKey, Counters]] = {a: {} for a in DETAIL_ATTRIBUTES}
    refused: dict[PortKey, str] = {}
    for lid, port in asked.items():
        for attribute in DETAIL_ATTRIBUTES:
            ask_counters(window, attribute, lid, port, answers[attribute], refused)
    window.drain()
    offered: dict[int, tuple[AnyAttribute, ...]] = {}
    for lid, port in asked.items():
        kept = tuple(a for a in DETAIL_ATTRIBUTES if (lid, port) in answers[a])
        if kept:
            offered[lid] = kept
    return offered


def read_details(window: MadWindow, ports: Collection[PortKey],
                 offered: Mapping[int, tuple[AnyAttribute, ...]]) -> dict[PortKey, DetailReading]:
    """Each port's answers to the detail attributes its PMA offers; a port
    that answered none is left out."""
    answers: dict[PortKey, Counters] = {}
    failures: dict[PortKey, str] = {}
    for lid, port in ports:
        for attribute in offered.get(lid, ()):
            ask_counters(window, attribute, lid, port, answers, failures)
    window.drain()
    kinds: dict[frozenset[str], frozenset[str]] = {}
    readings = {}
    for key, values in answers.items():
        fields = frozenset(values)
        readings[key] = DetailReading(kinds.setdefault(fields, fields), values)
    return readings

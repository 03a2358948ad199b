"""LID-routed refreshes of a swept subnet, through one window.

Every port's PortInfo, every switch's SwitchInfo, the SMInfo of every port a sweep found an SM
on (so a failover shows within a poll) and the PMA counters of every port. A node is asked at
its LID (a switch's port 0 LID, a CA's first active port's) with the port in the attribute
modifier; a node without a LID yet (no SM has configured it) is asked by the directed route
the sweep found. A PortInfo whose octets are those read for the port last time is not decoded
again: most polls find every port as it was.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ibsnmp.fabric.model import Fabric, PortRef
from ibsnmp.mad.attributes import PORT_INFO, SM_INFO, SWITCH_INFO, AnyAttribute
from ibsnmp.mad.counters import Counters, poll_counters
from ibsnmp.mad.discovery import Subnet
from ibsnmp.mad.packets import MadError, directed_route_get, lid_routed_get, reply_octets
from ibsnmp.mad.pma_details import DetailReading
from ibsnmp.mad.records_generated import PortInfo, SMInfo, SwitchInfo
from ibsnmp.mad.umad import DIRECTED_ROUTE, Address
from ibsnmp.mad.window import MadWindow

from .snapshot import PmaValues, pma_values


@dataclass
class Refresh:
    """What one poll read; a request that got no usable answer is in `failures`."""

    port_infos: dict[PortRef, PortInfo] = field(default_factory=dict)  # read differently from `known`
    # The PortInfo octets of every port that answered (the next poll's `known`).
    port_octets: dict[PortRef, bytes] = field(default_factory=dict)
    switch_infos: dict[int, SwitchInfo] = field(default_factory=dict)
    # SMInfo of the ports a sweep found an SM on, by (node GUID, port), those that answered.
    sm_infos: dict[tuple[int, int], SMInfo] = field(default_factory=dict)
    # Each PMA port's counters under the model's names (snapshot.pma_values),
    # by node GUID and port number: what a snapshot's counter_values holds.
    counters: dict[int, dict[int, PmaValues]] = field(default_factory=dict)
    # LocalLinkIntegrityErrors and ExcessiveBufferOverrunErrors of each port
    # read (the threshold watcher's two, 4-bit fields as decoded).
    thresholds: dict[PortRef, tuple[int | None, int | None]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    # What the poll cost: MADs sent, timed out (after every try) and retried, and seconds.
    sent: int = 0
    timed_out: int = 0
    retried: int = 0
    seconds: float = 0.0


def node_lid(fabric: Fabric, guid: int) -> int:
    """The LID a node answers LID-routed SMPs at (0: none yet)."""
    node = fabric.nodes[guid]
    if node.is_switch:
        return node.ports[0].lid
    return next((p.lid for p in node.ports if p.lid and p.is_active), 0)


def counter_targets(fabric: Fabric) -> dict[tuple[int, int], PortRef]:
    """(LID, port) of every PMA port to poll -> its port: a switch's data
    ports at the switch's LID, a CA's active ports at their own LIDs."""
    targets: dict[tuple[int, int], PortRef] = {}
    for node in fabric.nodes.values():
        if node.is_switch:
            lid = node.ports[0].lid
            targets.update(((lid, p.num), p.ref) for p in node.data_ports if lid)
        else:
            targets.update(((p.lid, p.num), p.ref) for p in node.ports if p.lid and p.is_active)
    return targets


def _ask(window: MadWindow, subnet: Subnet, guid: int, lid: int, attribute: AnyAttribute,
         modifier: int, refresh: Refresh, then: Callable[[bytes], None]) -> None:
    """`attribute` of node `guid` at `lid`, or by its directed route when `lid`
    is 0; `then` gets the attribute's octets of a successful answer."""
    what = f"{attribute.name} {guid:016x}/{modifier}"

    def handle(answer: bytes | None) -> None:
        if answer is None:
            refresh.failures[what] = "timeout"
            return
        try:
            status, octets = reply_octets(answer, attribute)
            if status:
                refresh.failures[what] = f"status {status:#x}"
                return
            then(octets)
        except MadError as exc:
            refresh.failures[what] = str(exc)
            return
        refresh.failures.pop(what, None)  # answered on a second way

    if lid:
        window.submit(lid_routed_get(attribute, 0, modifier), Address(lid=lid), handle)
    else:
        route = subnet.nodes[guid].route
        window.submit(directed_route_get(attribute, route, 0, modifier), DIRECTED_ROUTE, handle)


def _port_info(refresh: Refresh, ref: PortRef, known: bytes | None) -> Callable[[bytes], None]:
    """Keeps a port's PortInfo octets, and decodes them where they are not `known`."""
    def take(octets: bytes) -> None:
        if octets != known:
            refresh.port_infos[ref] = PORT_INFO.layout.decode(octets)
        refresh.port_octets[ref] = octets
    return take


def _ask_node(window: MadWindow, fabric: Fabric, subnet: Subnet, guid: int, lid: int,
              result: Refresh, known: Mapping[PortRef, bytes]) -> None:
    node = fabric.nodes[guid]
    for port in node.ports:
        _ask(window, subnet, guid, lid, PORT_INFO, port.num, result,
             _port_info(result, port.ref, known.get(port.ref)))
    if node.is_switch:
        _ask(window, subnet, guid, lid, SWITCH_INFO, 0, result,
             lambda octets: result.switch_infos.__setitem__(guid, SWITCH_INFO.layout.decode(octets)))


def refresh(window: MadWindow, fabric: Fabric, subnet: Subnet, extended_lids: Mapping[int, frozenset[str]],
            *, ports: bool = True, counters: bool = True, known: Mapping[PortRef, bytes] | None = None,
            details: Mapping[tuple[int, int], DetailReading] | None = None) -> Refresh:
    """PortInfo of every port and SwitchInfo of every switch of `fabric`, then
    the counters of every PMA port (blocking: run it in a worker thread).
    `known`: the PortInfo octets read last time; a port that reads the same
    is not in `port_infos`. `details`: the detail attributes read of each
    (LID, port) (at the last sweep), served with its counters."""
    result = Refresh()
    started, before = time.monotonic(), dataclasses.replace(window.stats)
    known = known or {}
    polled = [guid for guid in fabric.nodes if ports and guid in subnet.nodes]
    for guid in polled:
        _ask_node(window, fabric, subnet, guid, node_lid(fabric, guid), result, known)
    window.drain()
    # A node the LID route no longer reaches (the SM has not re-routed around
    # a link that went down yet) is asked again by its directed route.
    lost = [guid for guid in polled if node_lid(fabric, guid) and _missing(fabric, guid, result)]
    for guid in lost:
        _ask_node(window, fabric, subnet, guid, 0, result, known)
    if ports:
        for guid, num in sm_ports(subnet):
            if guid in fabric.nodes:
                _ask(window, subnet, guid, _port_lid(fabric, guid, num), SM_INFO, 0, result,
                     _sm_info(result, (guid, num)))
    window.drain()
    if counters:
        targets = counter_targets(fabric)
        wide: dict[tuple[int, int], frozenset[str]] = {}
        values, failures = poll_counters(window, targets, extended_lids, wide)
        _name_counters(result, values, wide, targets, details or _NO_DETAILS)
        result.failures.update((f"counters {lid}/{port}", why)
                               for (lid, port), why in failures.items())
    stats = window.stats
    result.sent, result.timed_out = stats.sent - before.sent, stats.timed_out - before.timed_out
    result.retried, result.seconds = stats.retried - before.retried, time.monotonic() - started
    return result


def _name_counters(result: Refresh, answers: Mapping[tuple[int, int], Counters],
                   wide: Mapping[tuple[int, int], frozenset[str]], targets: Mapping[tuple[int, int], PortRef],
                   details: Mapping[tuple[int, int], DetailReading]) -> None:
    """The PMA answers in `result` under the model's names, by node, with the
    threshold watcher's two (part of decoding: it runs in the poll's worker
    thread, once per port per poll). A port's detail attributes join its
    answer (a dict of this poll's own)."""
    by_node, thresholds, wide_of, narrow = result.counters, result.thresholds, wide.get, _NARROW
    detail_of = details.get
    for key, answer in answers.items():
        ref = targets[key]
        guid = ref.guid
        ports = by_node.get(guid)
        if ports is None:
            ports = by_node[guid] = {}
        detail = detail_of(key)
        if detail is None:
            ports[ref.port] = pma_values(answer, wide_of(key, narrow))
        else:
            answer.update(detail.values)
            ports[ref.port] = pma_values(answer, wide_of(key, narrow), detail.fields)
        integrity, overrun = answer.get("LocalLinkIntegrityErrors"), answer.get("ExcessiveBufferOverrunErrors")
        thresholds[ref] = (integrity if isinstance(integrity, int) else None,
                           overrun if isinstance(overrun, int) else None)


_NARROW: frozenset[str] = frozenset()  # no 64-bit counter read
_NO_DETAILS: Mapping[tuple[int, int], DetailReading] = {}


def sm_ports(subnet: Subnet) -> list[tuple[int, int]]:
    """(node GUID, port) of every port whose SMInfo the subnet holds."""
    return [(guid, num) for guid, node in subnet.nodes.items()
            for num, tables in node.tables.items() if tables.sm_info is not None]


def _port_lid(fabric: Fabric, guid: int, num: int) -> int:
    """The LID an SMP for port `num` of node `guid` is sent to (a switch's: port 0's)."""
    node = fabric.nodes[guid]
    if node.is_switch:
        return node.ports[0].lid
    port = fabric.port(guid, num)
    return port.lid if port is not None else 0


def _sm_info(result: Refresh, key: tuple[int, int]) -> Callable[[bytes], None]:
    def take(octets: bytes) -> None:
        result.sm_infos[key] = SM_INFO.layout.decode(octets)
    return take


def _missing(fabric: Fabric, guid: int, result: Refresh) -> list[PortRef]:
    """The ports of node `guid` whose PortInfo did not answer."""
    return [port.ref for port in fabric.nodes[guid].ports if port.ref not in result.port_octets]


def active_lids(fabric: Fabric) -> set[int]:
    """The LIDs whose PMA the counter poll reaches (ClassPortInfo is asked of these)."""
    return {lid for lid, _ in counter_targets(fabric)} - {0}


__all__ = ["Refresh", "active_lids", "counter_targets", "node_lid", "refresh", "sm_ports"]

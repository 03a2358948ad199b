"""A snapshot in which some ports' counters were measured, for tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from ibsnmp.fabric.model import Fabric, MeasuredCounters, Node, Port, PortRef


def with_measured(fabric: Fabric, readings: Mapping[PortRef, MeasuredCounters]) -> Fabric:
    """`fabric` (a new snapshot: nothing derived is kept) with each port of
    `readings` measured: its layout on the port, its values in the snapshot."""
    nodes = dict(fabric.nodes)
    values = {guid: dict(ports) for guid, ports in fabric.counter_values.items()}
    for ref, measured in readings.items():
        node = nodes[ref.guid]
        nodes[ref.guid] = dataclasses.replace(node, ports=tuple(
            dataclasses.replace(port, counter_layout=measured.layout) if port.num == ref.port else port
            for port in node.ports))
        values.setdefault(ref.guid, {})[ref.port] = measured.values
    return dataclasses.replace(fabric, nodes=MappingProxyType(nodes), counter_values=MappingProxyType(
        {guid: MappingProxyType(ports) for guid, ports in values.items()}))


def measured_port(fabric: Fabric, ref: PortRef, measured: MeasuredCounters) -> tuple[Fabric, Port]:
    """`with_measured` of one port, and that port as the new snapshot holds it."""
    new = with_measured(fabric, {ref: measured})
    return new, new.port_at(ref)


def node_of(fabric: Fabric, guid: int) -> Node:
    return fabric.nodes[guid]

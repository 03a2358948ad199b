"""New snapshots that keep what their predecessor derived.

Most readings change counter values and nothing else: `with_values` makes such a snapshot,
sharing the predecessor's lineage, so every index, routing table and kept walk step stays.
`successor` takes any fresh snapshot and its predecessor: nodes equal to the predecessor's
become its objects (a node's identity says it did not change), and the lineage that follows
says which aspects and nodes changed (lineage.Lineage.successor), so what did not change
keeps its derived data. `derived_successor` is for callers that know what they changed
(fabric.changes). Reference: docs/changing-fabrics.md, 'The model'.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Set
from types import MappingProxyType
from typing import Any

from .lineage import Aspect
from .model import Fabric, Node

__all__ = ["with_values", "successor", "derived_successor", "node_changes"]


def with_values(fabric: Fabric, values: Mapping[int, Mapping[int, Mapping[str, int]]]) -> Fabric:
    """`fabric` with other counter values: the same structure and lineage."""
    if values is fabric.counter_values:
        return fabric
    new = dataclasses.replace(fabric, counter_values=values)
    object.__setattr__(new, "lineage", fabric.lineage)
    return new


def derived_successor(old: Fabric, new: Fabric, changed: Aspect,
                      nodes: Iterable[int] | None = None) -> Fabric:
    """`new`, made from `old` by a change of `changed` touching `nodes` (see
    Lineage.successor), with `old`'s derived data that the change leaves valid."""
    if not changed:
        object.__setattr__(new, "lineage", old.lineage)
    else:
        object.__setattr__(new, "lineage", old.lineage.successor(changed, nodes))
    return new


def node_changes(old: Mapping[int, Node], new: Mapping[int, Node],
                 candidates: Set[int] | None = None) -> tuple[dict[int, Node] | None, Aspect, set[int]]:
    """Compare two node maps: (the node map to serve, in which every node
    equal to an old one is the old object, or None when that is `new` as it
    is; the aspects that changed among NODE_SET, NODES, DESCRIPTIONS, LIDS
    (a port's LID or LMC) and LINKS (a port's peer or being Active); the
    GUIDs of the nodes that changed). `candidates`: only these may differ,
    every other node is taken from `old` (the caller knows it is equal);
    None: any may."""
    interned: dict[int, Node] | None = None
    if candidates is None:
        guids: Iterable[int] = new
        gone = [guid for guid in old if guid not in new] if new.keys() != old.keys() else []
    else:
        interned = dict(old)
        for guid in candidates:
            if guid in new:
                interned[guid] = new[guid]
            else:
                interned.pop(guid, None)
        guids = [guid for guid in candidates if guid in new]
        gone = [guid for guid in candidates if guid not in new and guid in old]
    changed: set[int] = set(gone)
    aspects = _ARRIVED if gone else Aspect(0)
    for guid in guids:
        node = new[guid]
        before = old.get(guid)
        if before is node:
            continue
        if before is None:
            aspects |= _ARRIVED
            changed.add(guid)
            continue
        if before == node:
            if interned is None:
                interned = dict(new)
            interned[guid] = before
            continue
        changed.add(guid)
        aspects |= Aspect.NODES
        if _shape(before) != _shape(node):
            aspects |= Aspect.NODE_SET
        if (before.description, before.device_name) != (node.description, node.device_name):
            aspects |= Aspect.DESCRIPTIONS
        if _lids(before) != _lids(node):
            aspects |= Aspect.LIDS
        if _routes(before) != _routes(node):
            aspects |= Aspect.LINKS
    return interned, aspects, changed


# What a node arriving or leaving changes.
_ARRIVED = Aspect.NODE_SET | Aspect.NODES | Aspect.DESCRIPTIONS | Aspect.LIDS | Aspect.LINKS


def _shape(node: Node) -> tuple[Any, ...]:
    return (node.node_type, tuple(port.num for port in node.ports))


def _lids(node: Node) -> tuple[tuple[int, int], ...]:
    return tuple((port.info.lid, port.info.lmc) for port in node.ports)


def _routes(node: Node) -> tuple[tuple[bool, Any], ...]:
    return tuple((port.is_active, port.remote) for port in node.ports)


# Fabric fields besides nodes and counter values, and the aspect each belongs to.
_FIELDS: tuple[tuple[str, Aspect], ...] = (
    ("links", Aspect.LINKS),
    ("lid_map", Aspect.LIDS),
    ("sms", Aspect.SMS),
    ("sm_config", Aspect.SM_CONFIG),
    ("partitions", Aspect.SA),
    ("multicast_groups", Aspect.SA),
    ("services", Aspect.SA),
    ("connections", Aspect.CONNECTIONS),
    ("port_history", Aspect.HISTORY),
    ("forwarding", Aspect.FORWARDING),
    ("subnet_prefix", Aspect.IDENTITY),
    ("local_node_guid", Aspect.IDENTITY),
    ("seed", Aspect.IDENTITY),
    ("spec", Aspect.IDENTITY),
    ("host_node_guids", Aspect.IDENTITY),
    ("computes_routes", Aspect.IDENTITY),
    ("fdr10_ports", Aspect.IDENTITY),
)


def successor(old: Fabric, new: Fabric, candidates: Set[int] | None = None) -> Fabric:
    """`new` as the successor of `old`: the same object `old` is when
    nothing differs, else `new` with every part equal to `old`'s taken from
    `old` (nodes, links, LID map ...) and a lineage that keeps `old`'s
    derived data where nothing it depends on changed. `candidates`: the
    GUIDs of the only nodes that may differ (the caller knows every other
    node of `new` is `old`'s object); None: any.

    Comparing costs time for every port of the nodes compared; a provider
    that knows what it read differently says so (`candidates`)."""
    nodes, aspects, touched = node_changes(old.nodes, new.nodes, candidates)
    parts: dict[str, Any] = {}
    for name, aspect in _FIELDS:
        before, after = getattr(old, name), getattr(new, name)
        if before is after:
            continue
        if _same(before, after):
            parts[name] = before
        else:
            aspects |= aspect
            if aspect is Aspect.HISTORY:
                touched.update(ref.guid for ref in _changed_keys(before, after))
    if not aspects & (Aspect.NODE_SET | Aspect.NODES):
        if new.nodes is not old.nodes:
            parts["nodes"] = old.nodes  # every node is old's object
    elif nodes is not None:
        parts["nodes"] = MappingProxyType(nodes)
    values = new.counter_values
    if not aspects:
        return old if values is old.counter_values else with_values(old, values)
    made = dataclasses.replace(new, **parts) if parts else new
    return derived_successor(old, made, aspects, touched)


def _same(before: Any, after: Any) -> bool:
    try:
        return bool(before == after)
    except Exception:  # a lazily computed mapping that cannot compare: assume it changed
        return False


def _changed_keys(before: Mapping[Any, Any], after: Mapping[Any, Any]) -> set[Any]:
    keys = set(before) | set(after)
    return {key for key in keys if before.get(key) != after.get(key)}

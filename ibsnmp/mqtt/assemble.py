"""The aggregator's fabric, sans I/O: one snapshot from the node records that are served now.

Nodes are the union of the records. A link is in the fabric when both ends are served, neither
is Down and each names the other (ends that disagree are reported for the caller to log once;
an end whose peer has not been heard from waits for it). A LID maps to the first port, in GUID
order, that holds it; the SMs are the records', the SM configuration the master's; the default
context is the master SM's node, else the lowest GUID. No forwarding tables: only an SM routes.
A record that differs from the served one in counter values alone changes the snapshot's
values alone (fabric.succession.with_values): its structure and all derived of it stay.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from ibsnmp.fabric.iba import DEFAULT_SUBNET_PREFIX, PortState, SmState
from ibsnmp.fabric.model import Fabric, Link, Node, PortRef, SmConfig, SmInfo
from ibsnmp.fabric.succession import successor, with_values

from .codec import NodeRecord

__all__ = ["LinkMismatch", "Assembly", "Built", "assemble"]


class LinkMismatch(NamedTuple):
    """`end` says its peer is `peer`, but `peer` says its peer is `peer_says`."""

    end: PortRef
    peer: PortRef
    peer_says: PortRef | None


class Built(NamedTuple):
    """A snapshot the Assembly made: `changed` holds the GUIDs of the nodes
    put with another structure or removed since the one before (every other
    node is the same object in both; some may have new counter values),
    `mismatches` the disagreeing link ends if the fabric was rebuilt."""

    fabric: Fabric
    mismatches: tuple[LinkMismatch, ...]
    changed: frozenset[int]
    valued: frozenset[int] = frozenset()  # nodes with new counter values (and the changed ones)


def assemble(records: Mapping[int, NodeRecord], spec: str) -> tuple[Fabric, tuple[LinkMismatch, ...]]:
    guids = sorted(records)
    nodes: dict[int, Node] = {guid: records[guid].node for guid in guids}
    links: set[Link] = set()
    mismatches: list[LinkMismatch] = []
    lid_map: dict[int, PortRef] = {}
    sms: list[SmInfo] = []
    sm_config: SmConfig | None = None
    for guid in guids:
        record = records[guid]
        for port in record.node.ports:
            if port.info.lid and port.info.lid not in lid_map:
                lid_map[port.info.lid] = port.ref
            remote = port.remote
            if remote is None or port.info.port_state is PortState.DOWN:
                continue
            peer_node = nodes.get(remote.guid)
            if peer_node is None:
                continue
            peer = peer_node.port(remote.port)
            peer_says = peer.remote if peer is not None else None
            if peer_says == port.ref:
                if peer is not None and peer.info.port_state is not PortState.DOWN:
                    links.add(Link.between(port.ref, remote))
            else:
                mismatches.append(LinkMismatch(port.ref, remote, peer_says))
        sms.extend(record.sms)
        if record.sm_config is not None and any(sm.state is SmState.MASTER for sm in record.sms):
            sm_config = record.sm_config
    master = next((sm for sm in sms if sm.state is SmState.MASTER), None)
    if master is not None and master.node_guid in nodes:
        local = master.node_guid
    else:
        local = guids[0] if guids else 0
    prefix = None
    if local in nodes:
        prefix = nodes[local].management_port.info.gid_prefix
    fabric = Fabric(
        subnet_prefix=prefix if prefix is not None else DEFAULT_SUBNET_PREFIX,
        nodes=MappingProxyType(nodes),
        links=tuple(sorted(links)),
        lid_map=MappingProxyType(lid_map),
        sms=tuple(sorted(sms, key=lambda sm: sm.guid)),
        sm_config=sm_config,
        partitions=(),
        multicast_groups=(),
        services=(),
        connections=MappingProxyType({}),
        local_node_guid=local,
        spec=spec,
        # The records carry no forwarding tables, and the aggregator is no SM.
        computes_routes=False,
        counter_values=MappingProxyType({guid: records[guid].values for guid in guids}),
    )
    return fabric, tuple(mismatches)


def _copy(nodes: Mapping[int, Node]) -> dict[int, Node]:
    """A dict of `nodes`: a MappingProxyType copies the dict behind it in one
    step, where dict() reads it key by key."""
    return nodes.copy() if isinstance(nodes, MappingProxyType) else dict(nodes)


def _shape(record: NodeRecord) -> tuple[object, ...]:
    """What of a record the links, LIDs and SMs depend on; a record that
    changes only counters or other values keeps its shape."""
    return (tuple((p.num, p.info.lid, p.info.port_state is PortState.DOWN, p.remote) for p in record.node.ports),
            record.node.management_port.info.gid_prefix, tuple((sm.guid, sm.state) for sm in record.sms),
            record.sm_config)


def same_structure(a: NodeRecord, b: NodeRecord) -> bool:
    """Whether two records of a node differ in counter values (and times) only."""
    return a.node == b.node and a.sms == b.sms and a.sm_config == b.sm_config


class Assembly:
    """The served records and the snapshot made of them.  A record whose
    structure did not change changes the snapshot's counter values alone;
    one whose shape (see _shape) did not change swaps only its node into
    the last snapshot; anything else rebuilds the whole fabric with
    `assemble` (keeping what equals the last snapshot: succession.successor)."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self._records: dict[int, NodeRecord] = {}
        self._shapes: dict[int, tuple[object, ...]] = {}
        self._sm_nodes: set[int] = set()
        self._reshaped = True
        self._changed: set[int] = set()  # put with another structure since the last build
        self._removed: set[int] = set()  # removed since the last build
        self._valued: set[int] = set()  # counter values put since the last build
        # Every served node's counter values, kept as the snapshot's are (copied at a build).
        self._values_by_node: dict[int, Mapping[int, Mapping[str, int]]] = {}
        self.fabric, _ = assemble({}, spec)

    def __contains__(self, guid: int) -> bool:
        return guid in self._records

    def __len__(self) -> int:
        return len(self._records)

    def record(self, guid: int) -> NodeRecord | None:
        """The record served for the node (its objects are the snapshot's)."""
        return self._records.get(guid)

    @property
    def dirty(self) -> bool:
        return self._reshaped or bool(self._changed) or bool(self._valued)

    def put(self, record: NodeRecord) -> None:
        guid = record.node.guid
        before = self._records.get(guid)
        if before is not None and (before.node is record.node or same_structure(before, record)):
            self.put_values(dataclasses.replace(record, node=before.node, sms=before.sms,
                                                sm_config=before.sm_config))
            return
        shape = _shape(record)
        if self._shapes.get(guid) != shape:
            self._reshaped = True
            self._shapes[guid] = shape
        self._records[guid] = record
        self._values_by_node[guid] = record.values
        self._changed.add(guid)

    def put_values(self, record: NodeRecord) -> None:
        """A record of a served node whose structure is the served one's."""
        guid = record.node.guid
        self._records[guid] = record
        self._values_by_node[guid] = record.values
        self._valued.add(guid)

    def remove(self, guid: int) -> None:
        if self._records.pop(guid, None) is not None:
            del self._shapes[guid]
            del self._values_by_node[guid]
            self._reshaped = True
            self._removed.add(guid)

    def build(self) -> Built:
        """The snapshot of what was put and removed."""
        mismatches: tuple[LinkMismatch, ...] = ()
        old = self.fabric
        if self._reshaped:
            fresh, mismatches = assemble(self._records, self.spec)
            self.fabric = successor(old, fresh)
            self._sm_nodes = {sm.node_guid for sm in self.fabric.sms}
        elif self._changed:
            nodes = _copy(old.nodes)
            for guid in self._changed:
                nodes[guid] = self._records[guid].node
            sms = old.sms
            if self._sm_nodes & self._changed:
                sms = tuple(sorted((sm for g in self._sm_nodes for sm in self._records[g].sms),
                                   key=lambda sm: sm.guid))
            fresh = Fabric(old.subnet_prefix, MappingProxyType(nodes), old.links, old.lid_map, sms,
                           old.sm_config, old.partitions, old.multicast_groups, old.services,
                           old.connections, old.local_node_guid, spec=self.spec,
                           computes_routes=False, counter_values=self._values())
            self.fabric = successor(old, fresh, self._changed)
        elif self._valued:
            self.fabric = with_values(old, self._values())
        # A rebuild too takes each node from its record: one not put is the object it was.
        changed = frozenset(self._changed | self._removed)
        valued = frozenset(self._valued) | changed
        self._reshaped = False
        self._changed.clear()
        self._removed.clear()
        self._valued.clear()
        return Built(self.fabric, mismatches, changed, valued)

    def _values(self) -> Mapping[int, Mapping[int, Mapping[str, int]]]:
        return MappingProxyType(self._values_by_node.copy())

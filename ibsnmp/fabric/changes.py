"""New snapshots from old ones: a port's state, PortInfo and NodeInfo fields, error bursts, clears.

Every function returns a new `Fabric` (swapped in with one assignment) and leaves the one it
was given untouched, so a reader of the old one keeps one consistent state. Only the changed
nodes are rebuilt, and each change says what it touched (fabric.lineage.Aspect, and which
nodes), so derived data it cannot affect is kept: sorted index keys, routing unless a link
went up or down, the rows and traffic profiles of untouched nodes. Times (`at`) are seconds
since the provider's epoch, the clock the counters are read with.
Reference: docs/changing-fabrics.md, 'The providers'.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from .counters import CLEARABLE
from .traffic import ERROR_NAMES
from .iba import LinkSpeed, LinkSpeedExt, LinkWidth, PortPhysState, PortState, VLCap
from .lineage import Aspect
from .model import ALWAYS_UP, Fabric, Link, LinkTraining, Node, Port, PortHistory, PortRef
from .succession import derived_successor

__all__ = [
    "PortTransition",
    "with_port_state",
    "with_port_info",
    "with_node_info",
    "with_error_burst",
    "with_counters_cleared",
]

_INF = float("inf")


class PortTransition(NamedTuple):
    """One end of a link changed PortState from `old` to `new`."""

    ref: PortRef
    old: PortState
    new: PortState

    @property
    def crosses_down(self) -> bool:
        """Down -> Init/Armed/Active or back: what sets SwitchInfo.PortStateChange
        and raises trap 128 on a switch (IBA 14.2.5.4); Init -> Armed -> Active
        (the SM activating a link) does not."""
        return (self.old is PortState.DOWN) != (self.new is PortState.DOWN)


# -- port state --------------------------------------------------------------------


def with_port_state(
    fabric: Fabric,
    ref: PortRef,
    state: PortState,
    *,
    at: float,
    phys: PortPhysState | None = None,
) -> tuple[Fabric, tuple[PortTransition, ...]]:
    """The link on `ref` goes to `state` at both ends (a link has one state):

    - DOWN: the port goes to `phys` (POLLING, the default, or DISABLED), its
      peer to POLLING; both lose their neighbour, the link leaves
      `fabric.links`, traffic stops and LinkDownedCounter counts one.
    - INIT, ARMED, ACTIVE: the link comes back to the cable's other end with
      the width and speed it trained to before (LinkUp); traffic flows while
      the state is ACTIVE.

    LIDs, P_Key tables and the SM's view are unchanged (no SM sweep is
    simulated); forwarding tables are recomputed from the new links.
    Returns the new snapshot and the ends that changed state (named port
    first); no transitions and the same snapshot if nothing changed.
    Raises ValueError for a switch's port 0 or a port that has no cable.
    """
    port = fabric.port_at(ref)
    node = fabric.nodes[ref.guid]
    if node.is_switch and ref.port == 0:
        raise ValueError(f"port 0 of {node.label!r} is the switch's management port: it has no link")
    if state is PortState.NO_CHANGE:
        raise ValueError("PortState NO_CHANGE is not a state")
    history = fabric.port_history
    peer = port.remote or _history(history, ref).peer
    if peer is None:
        raise ValueError(f"port {ref.port} of {node.label!r} has no cable (no peer port to link with)")
    if state is PortState.DOWN:
        ends = ((ref, phys or PortPhysState.POLLING), (peer, PortPhysState.POLLING))
    else:
        ends = ((ref, PortPhysState.LINK_UP), (peer, PortPhysState.LINK_UP))

    new_ports: dict[PortRef, Port] = {}
    new_history = dict(history)
    transitions: list[PortTransition] = []
    for end, end_phys in ends:
        other = peer if end == ref else ref
        current = fabric.port_at(end)
        old = current.info.port_state
        if old is state and current.info.phys_state is end_phys:
            continue
        before = _history(history, end)
        if state is PortState.DOWN:
            info = current.info._replace(
                port_state=PortState.DOWN, phys_state=end_phys, link_width_active=LinkWidth.X4,
                link_speed_active=LinkSpeed.SDR, link_speed_ext_active=LinkSpeedExt(0),
                operational_vls=VLCap.VL0,
            )
            training = _training(current) if current.remote is not None else before.training
            after = dataclasses.replace(
                before,
                up=_close(_up(before, current), at),
                downs=before.downs + (at,) if old is not PortState.DOWN else before.downs,
                peer=other,
                training=training,
            )
            new_ports[end] = dataclasses.replace(current, info=info, remote=None)
        else:
            training = _training(current) if current.remote is not None else before.training
            if training is None:
                raise ValueError(f"port {end.port} of {fabric.nodes[end.guid].label!r} never trained:"
                                 " no width and speed to come up with")
            info = current.info._replace(
                port_state=state, phys_state=PortPhysState.LINK_UP, link_width_active=training.width,
                link_speed_active=training.speed, link_speed_ext_active=training.speed_ext,
                operational_vls=training.operational_vls,
            )
            up = _up(before, current)
            if state is PortState.ACTIVE and old is not PortState.ACTIVE:
                up = up + ((at, _INF),)
            elif state is not PortState.ACTIVE and old is PortState.ACTIVE:
                up = _close(up, at)
            after = dataclasses.replace(before, up=up, peer=other, training=training)
            new_ports[end] = dataclasses.replace(current, info=info, remote=other)
        new_history[end] = after
        transitions.append(PortTransition(end, old, state))
    if not transitions:
        return fabric, ()

    links = _with_link(fabric.links, Link.between(ref, peer), up=state is not PortState.DOWN)
    flagged = {t.ref.guid for t in transitions if t.crosses_down and fabric.nodes[t.ref.guid].is_switch}
    # Routes follow the links and which of their ends are Active.
    rerouted = links is not fabric.links or any(
        (t.old is PortState.ACTIVE) != (t.new is PortState.ACTIVE) for t in transitions)
    changed = Aspect.NODES | Aspect.HISTORY | (Aspect.LINKS if rerouted else Aspect(0))
    new = dataclasses.replace(fabric, nodes=_replace_ports(fabric, new_ports, switch_state_change=flagged),
                              links=links, port_history=MappingProxyType(new_history))
    return derived_successor(fabric, new, changed, {ref.guid for ref in new_ports}), tuple(transitions)


def _with_link(links: tuple[Link, ...], link: Link, *, up: bool) -> tuple[Link, ...]:
    """`links` (sorted) with `link` added or removed; the same tuple if unchanged."""
    i = bisect.bisect_left(links, link)
    present = i < len(links) and links[i] == link
    if up and not present:
        return links[:i] + (link,) + links[i:]
    if not up and present:
        return links[:i] + links[i + 1:]
    return links


def _history(history: Mapping[PortRef, PortHistory], ref: PortRef) -> PortHistory:
    return history.get(ref) or PortHistory()


def _up(history: PortHistory, port: Port) -> tuple[tuple[float, float], ...]:
    if history.up is not None:
        return history.up
    return ALWAYS_UP if port.is_active else ()


def _close(up: tuple[tuple[float, float], ...], at: float) -> tuple[tuple[float, float], ...]:
    if up and up[-1][1] == _INF:
        start = up[-1][0]
        return up[:-1] + (((start, max(start, at)),) if at > start else ())
    return up


def _training(port: Port) -> LinkTraining:
    info = port.info
    return LinkTraining(info.link_width_active, info.link_speed_active, info.link_speed_ext_active,
                        info.operational_vls)


# -- PortInfo and NodeInfo fields ---------------------------------------------------


def with_port_info(fabric: Fabric, ref: PortRef, **fields: Any) -> Fabric:
    """PortInfo fields changed on one port (e.g. capability_mask=...,
    p_key_violations=...).  Not for PortState: use with_port_state."""
    for name in ("port_state", "phys_state"):
        if name in fields:
            raise ValueError(f"{name} changes with with_port_state, which keeps both ends of the link in step")
    port = fabric.port_at(ref)
    info = port.info._replace(**fields)
    if (info.lid, info.lmc) != (port.info.lid, port.info.lmc):
        raise ValueError("a port's LID and LMC are the SM's to assign (the LID map follows them)")
    new = dataclasses.replace(fabric, nodes=_replace_ports(fabric, {ref: dataclasses.replace(port, info=info)}))
    return derived_successor(fabric, new, Aspect.NODES, (ref.guid,))


def with_node_info(fabric: Fabric, guid: int, **fields: Any) -> Fabric:
    """NodeInfo fields changed on one node (e.g. system_image_guid=...)."""
    for name in ("guid", "ports", "node_type", "num_ports"):
        if name in fields:
            raise ValueError(f"a node's {name} cannot change in a snapshot")
    node = fabric.nodes[guid]
    nodes = dict(fabric.nodes)
    nodes[guid] = dataclasses.replace(node, **fields)
    named = {"description", "device_name"} & fields.keys()
    changed = Aspect.NODES | (Aspect.DESCRIPTIONS if named else Aspect(0))
    new = dataclasses.replace(fabric, nodes=MappingProxyType(nodes))
    return derived_successor(fabric, new, changed, (guid,))


# -- counters -------------------------------------------------------------------------


def with_error_burst(fabric: Fabric, ref: PortRef, errors: Mapping[str, int], *, at: float) -> Fabric:
    """`errors` (ErrorRates field name -> count) happened on the port at `at`:
    the counters they drive jump by that much (saturating at their width)."""
    for name, count in errors.items():
        if name not in ERROR_NAMES:
            raise ValueError(f"unknown error kind {name!r}")
        if count < 0:
            raise ValueError(f"error count {name}={count} is negative")
    fabric.port_at(ref)
    before = _history(fabric.port_history, ref)
    after = dataclasses.replace(
        before, bursts=before.bursts + tuple((at, name, count) for name, count in errors.items() if count)
    )
    return _with_history(fabric, ref, after)


def with_counters_cleared(fabric: Fabric, ref: PortRef, names: Iterable[str], *, at: float) -> Fabric:
    """A PMA Set(PortCounters) cleared these PortCounters fields at `at`:
    from then on each reads as what it counted since."""
    names = tuple(names)
    for name in names:
        if name not in CLEARABLE:
            raise ValueError(f"{name!r} is not a PortCounters field")
    fabric.port_at(ref)
    before = _history(fabric.port_history, ref)
    clears = tuple((n, t) for n, t in before.clears if n not in names) + tuple((n, at) for n in names)
    return _with_history(fabric, ref, dataclasses.replace(before, clears=clears))


def _with_history(fabric: Fabric, ref: PortRef, history: PortHistory) -> Fabric:
    new_history = dict(fabric.port_history)
    new_history[ref] = history
    new = dataclasses.replace(fabric, port_history=MappingProxyType(new_history))
    return derived_successor(fabric, new, Aspect.HISTORY, (ref.guid,))


# -- building the new snapshot -----------------------------------------------------------


def _replace_ports(fabric: Fabric, ports: Mapping[PortRef, Port],
                   switch_state_change: Iterable[int] = ()) -> Mapping[int, Node]:
    nodes = dict(fabric.nodes)
    by_node: dict[int, dict[int, Port]] = {}
    for ref, port in ports.items():
        by_node.setdefault(ref.guid, {})[ref.port] = port
    flagged = set(switch_state_change)
    for guid in set(by_node) | flagged:
        node = nodes[guid]
        changed = by_node.get(guid, {})
        new_ports = tuple(changed.get(p.num, p) for p in node.ports)
        updates: dict[str, Any] = {"ports": new_ports}
        if guid in flagged and node.switch is not None:
            # IBA 14.2.5.4: set when a port goes Down or leaves Down; the SM
            # clears it by writing 1 (no SM runs here, so it stays set).
            updates["switch"] = dataclasses.replace(node.switch, port_state_change=True)
        nodes[guid] = dataclasses.replace(node, **updates)
    return MappingProxyType(nodes)

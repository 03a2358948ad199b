"""Every notification from a node ends with what names that node, each
varbind with the OID and value a GET reads in the context the notification
speaks for: linkDown / linkUp with ifName.n, ifAlias.n, then (as the IBA
notifications, after their OBJECTS) ibSmaNodeGuid.0 and ibSmaNodeString.0."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ibsnmp.events import IbaTrap
from ibsnmp.fabric.changes import with_port_state
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.iba import PortState
from ibsnmp.fabric.model import Fabric, Node, Port
from ibsnmp.mib.api import ContextTarget, Missing
from ibsnmp.mib.loader import definitions
from ibsnmp.mib.registry import build_mib
from ibsnmp.mib.virtual import InfinibandMib
from ibsnmp.traps.defaults import default_event
from ibsnmp.traps.link_events import LINK_OBJECTS, PortStatusWatch, link_notification
from ibsnmp.traps.mapping import map_event, spec_of
from ibsnmp.traps.node_names import node_varbinds

SPEC = "fat-tree:spines=2,leaves=2,hosts=2"
SEED = 3
NODE_OBJECTS = ("ibSmaNodeGuid", "ibSmaNodeString")


@pytest.fixture(scope="module")
def fabric() -> Fabric:
    return build_fabric(SPEC, seed=SEED)


@pytest.fixture(scope="module")
def mib() -> InfinibandMib:
    return build_mib()


def context_of(fabric: Fabric, node: Node) -> ContextTarget:
    """The context a node's notifications speak in: its own, or the default
    one for the agent's local node."""
    if node.guid == fabric.local_node_guid:
        return ContextTarget(fabric, node, True, 0.0, fabric.host_node_guids, default_context=True)
    return ContextTarget(fabric, node, False, 0.0)


def name_of(oid: tuple[int, ...]) -> str:
    """The object an instance OID belongs to."""
    (found,) = (obj.name for obj in definitions().objects.values() if obj.oid == oid[:-1])
    return found


def assert_read_alike(mib: InfinibandMib, target: ContextTarget,
                      varbinds: tuple[tuple[tuple[int, ...], Any], ...]) -> None:
    for oid, value in varbinds:
        read = mib.get(target, oid)
        assert not isinstance(read, Missing), (name_of(oid), read)
        assert read == value, (name_of(oid), read, value)


def down_at_both_ends(fabric: Fabric, port: Port) -> tuple[Fabric, list[Any]]:
    down, _ = with_port_state(fabric, port.ref, PortState.DOWN, at=10.0)
    return down, PortStatusWatch(fabric).changes(down)


def leaf_ports(fabric: Fabric) -> list[Port]:
    """leaf01's active ports cabled to a host: the local node's among them."""
    leaf = next(n for n in fabric.nodes.values() if n.description == "leaf01")
    return [p for p in leaf.data_ports if p.info.is_active and p.remote is not None
            and fabric.nodes[p.remote.guid].is_ca]


def test_a_link_down_ends_with_the_port_and_node_names_its_context_reads(
        fabric: Fabric, mib: InfinibandMib) -> None:
    spoke_for: set[bool] = set()  # whether a change was the local node's
    for port in leaf_ports(fabric):
        down, changes = down_at_both_ends(fabric, port)
        assert len(changes) == 2
        for change in changes:
            notification = link_notification(change)
            assert notification is not None and notification.name == "linkDown"
            n = change.if_index
            objects, names = (notification.varbinds[:len(LINK_OBJECTS)],
                              notification.varbinds[len(LINK_OBJECTS):])
            assert [name_of(oid) for oid, _ in objects] == list(LINK_OBJECTS)
            assert [(name_of(oid), oid[-1]) for oid, _ in names] == [
                ("ifName", n), ("ifAlias", n), ("ibSmaNodeGuid", 0), ("ibSmaNodeString", 0)]
            node = down.nodes[change.node_guid]
            assert names[2][1].asOctets() == change.node_guid.to_bytes(8, "big")
            assert names[0][1].asOctets() == f"{node.description}/{change.port.num}".encode()
            assert_read_alike(mib, context_of(down, node), notification.varbinds)
            spoke_for.add(node.guid == down.local_node_guid)
    assert spoke_for == {True, False}  # the default context's numbering was checked too


@pytest.mark.parametrize("trap", list(IbaTrap))
def test_an_iba_notification_ends_with_the_nodes_guid_and_description(
        fabric: Fabric, mib: InfinibandMib, trap: IbaTrap) -> None:
    event = default_event(fabric, trap)
    node = fabric.nodes[event.node_guid]
    notification = map_event(event, node)
    count = len(spec_of(trap).objects)
    # The OBJECTS the draft defines first, in their order; the node after them.
    assert [name_of(oid) for oid, _ in notification.varbinds[:count]] == \
        [obj.name for obj in spec_of(trap).objects]
    after = notification.varbinds[count:]
    assert [name_of(oid) for oid, _ in after] == list(NODE_OBJECTS)
    assert str(after[1][1]) == node.description
    assert_read_alike(mib, context_of(fabric, node), after)


def test_without_the_node_its_guid_alone_names_it(fabric: Fabric) -> None:
    event = default_event(fabric, IbaTrap.LINK_STATE_CHANGE)
    (guid,) = map_event(event).varbinds[len(spec_of(event.trap).objects):]
    assert name_of(guid[0]) == "ibSmaNodeGuid"
    assert guid[1].asOctets() == event.node_guid.to_bytes(8, "big")


def test_a_node_without_a_description_has_no_node_string(fabric: Fabric, mib: InfinibandMib) -> None:
    switch = next(n for n in fabric.nodes.values() if n.is_switch)
    unnamed = dataclasses.replace(switch, description=None)
    varbinds = node_varbinds(unnamed.guid, unnamed)
    assert [name_of(oid) for oid, _ in varbinds] == ["ibSmaNodeGuid"]
    # Its context has no ibSmaNodeString.0 either.
    target = ContextTarget(fabric, unnamed, False, 0.0)
    string_0 = definitions().objects["ibSmaNodeString"].oid + (0,)
    assert isinstance(mib.get(target, string_0), Missing)

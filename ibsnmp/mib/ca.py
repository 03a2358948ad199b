"""IB-CA-MIB: the channel adapters a context describes (CaInfo in the model).

The draft numbers the CAs "on this network entity" 1..N (ibCaIndex). A node's own context
describes that node: its CA is ibCaIndex 1. The default context describes the agent's host:
every CA of the host (Fabric.host_node_guids, e.g. each adapter of a sysfs host) in device
order, or the one node a host is known as. On a switch, or a node without CaInfo, every table
is empty; a value the model does not know (None: what sysfs cannot tell, e.g. the verbs
capabilities) has no instance.
Reference: docs/mibs.md, 'What each module serves'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..fabric.iba import guid_bytes
from ..fabric.lineage import Aspect
from .api import ContextTarget
from .binding import ModuleBinding, TableBinding
from .facts import clamp_to, truth


def _truth(flag: bool | None) -> int | None:
    """A TruthValue; None (not known) stays None."""
    if flag is None:
        return None
    return truth(flag)


def _is_ca(node: Any) -> bool:
    return node is not None and node.is_ca and node.ca is not None


def _cas(target: ContextTarget) -> Iterator[tuple[int, Any]]:
    """(ibCaIndex, node) of each CA the context describes."""
    if target.entity_guids:
        nodes = (target.fabric.nodes.get(guid) for guid in target.entity_guids)
        yield from enumerate((node for node in nodes if _is_ca(node)), start=1)
    elif _is_ca(target.node):
        yield 1, target.node


def _general_rows(target: ContextTarget) -> Iterator[tuple[tuple[int], Any]]:
    for index, node in _cas(target):
        yield (index,), node


def _port_rows(target: ContextTarget) -> Iterator[tuple[tuple[int, int], Any]]:
    for index, node in _cas(target):
        for port in node.data_ports:  # CA ports are numbered from 1
            yield (index, port.num), (node.ca, port)


def _gid_rows(target: ContextTarget) -> Iterator[tuple[tuple[int, int, int], bytes]]:
    """One row per GUIDInfo entry in use: GID index i (1-based) is the port's
    GID prefix joined with GUID entry i-1 (IBA 4.1.1); a port whose GID table
    the model holds as read (port.gids, a sysfs host) has one row per entry
    in use (non-zero), GID table index i-1. The GID bytes are built here,
    once per snapshot, so the getter only returns them."""
    for index, node in _cas(target):
        for port in node.data_ports:
            if port.gids is not None:
                for i, gid in enumerate(port.gids):
                    if gid:
                        yield (index, port.num, i + 1), gid.to_bytes(16, "big")
                continue
            for i in range(len(port.guids or ())):
                yield (index, port.num, i + 1), port.gid(i).to_bytes(16, "big")


_gid_count = clamp_to("ibCaMaxGidsPerPort")  # every port has at least one GID


def _max_gids(row: Any) -> int:
    """GID table size: the port's own when the model holds its table."""
    ca, port = row
    size = len(port.gids) if port.gids is not None else ca.max_gids_per_port
    return _gid_count(size)


def _attr(name: str) -> Callable[[Any, ContextTarget], int | None]:
    """A TruthValue column read from one CaInfo flag."""
    return lambda node, target: _truth(getattr(node.ca, name))


IB_CA_MIB = ModuleBinding(
    module="IB-CA-MIB",
    tables=(
        TableBinding(
            entry="ibCaGeneralInfoEntry",
            rows=_general_rows,
            depends=Aspect(0),
            columns={
                # CaType uses IB-CA-MIB's numbering already (iba.CaType).
                "ibCaType": lambda node, target: int(node.ca.ca_type),
                "ibCaNodeGuid": lambda node, target: guid_bytes(node.guid),
                # NodeInfo NumPorts: a CA has 1..254 physical ports.
                "ibCaNumPorts": lambda node, target: node.num_ports,
            },
        ),
        TableBinding(
            entry="ibCaAttributeEntry",
            rows=_general_rows,
            depends=Aspect(0),
            columns={
                "ibCaHasReliableConnection": _attr("reliable_connection"),
                "ibCaHasUnreliableConnection": _attr("unreliable_connection"),
                "ibCaHasReliableDatagram": _attr("reliable_datagram"),
                "ibCaHasUnreliableDatagram": _attr("unreliable_datagram"),
                "ibCaSupportsAtomicOperations": _attr("atomic_operations"),
                "ibCaSupportsOtherOperations": _attr("other_operations"),
                "ibCaSupportsSolicitedEvents": _attr("solicited_events"),
                # ibCaPathMtuSetSupport: mtu256(1) .. mtu256n512n1024n2048n4096(5)
                # names the set of MTUs up to the largest one; the IBA MTU code
                # of that largest MTU (256=1 .. 4096=5) is the same number.
                "ibCaPathMtuSetSupport": lambda node, target: (
                    None if node.ca.max_path_mtu is None else int(node.ca.max_path_mtu)),
                "ibCaGenEndToEndFlowControl": _attr("end_to_end_flow_control"),
                "ibCaSupportsMulticast": _attr("multicast"),
                "ibCaSupportsAutoPathMigration": _attr("automatic_path_migration"),
                "ibCaSupportsMemoryProtection": _attr("memory_protection"),
                "ibCaSupportsLoopback": _attr("loopback"),
                "ibCaSupportsSubnetManager": _attr("subnet_manager"),
            },
        ),
        TableBinding(
            entry="ibCaPortAttributeEntry",
            rows=_port_rows,
            depends=Aspect(0),
            columns={
                "ibCaPortGuid": lambda row, target: None if row[1].guid is None else guid_bytes(row[1].guid),
                # iba.PhysicalInterface uses IB-CA-MIB's numbering:
                # cable(1), fiber(2), backplane(3).
                "ibCaPhysicalInterface": lambda row, target: (
                    None if row[1].physical_interface is None else int(row[1].physical_interface)),
                "ibCaSupportsStaticRateControl": lambda row, target: _truth(row[0].static_rate_control),
                # "Otherwise, 0 is returned" when static rate control is absent.
                "ibCaInterpacketDelayValue": lambda row, target: (
                    None if row[0].static_rate_control is None
                    else row[0].interpacket_delay if row[0].static_rate_control else 0
                ),
                "ibCaSupportsMultipathing": lambda row, target: _truth(row[0].multipathing),
                "ibCaValidatesInPktDlid": lambda row, target: _truth(row[0].validates_inbound_dlid),
                "ibCaMaxGidsPerPort": lambda row, target: _max_gids(row),
            },
        ),
        TableBinding(
            entry="ibCaPortGidEntry",
            rows=_gid_rows,
            depends=Aspect(0),
            columns={"ibCaPortGidValue": lambda gid, target: gid},
        ),
    ),
)

"""What the SA client needs to know of the subnet, read from the live snapshot.

The SA answers in LIDs and GIDs; the model speaks of node GUIDs and port
numbers. These lookups translate with the snapshot being served, rebuilt
once per snapshot (cached inside it, as the routing tables are).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ibsnmp.fabric.iba import make_gid
from ibsnmp.fabric.model import Fabric, Port


def node_of_lid(current: Callable[[], Fabric]) -> Callable[[int], int | None]:
    """LID -> the GUID of the node that owns it (inside an LMC block too)."""

    def lookup(lid: int) -> int | None:
        ref = current().resolve_lid(lid)
        return None if ref is None else ref.guid

    return lookup


def _port_gid(port: Port) -> int | None:
    """GID index 0: the one the SA names a port by; None where it was not read."""
    if port.gids:
        return port.gids[0]
    if port.info.gid_prefix is None or port.guid is None:
        return None
    return make_gid(port.info.gid_prefix, port.guid)


def port_of_gid(current: Callable[[], Fabric]) -> Callable[[int], tuple[int, int] | None]:
    """Port GID (GID index 0) -> (node GUID, port number); a switch answers as port 0."""

    def build(fabric: Fabric) -> dict[int, tuple[int, int]]:
        index: dict[int, tuple[int, int]] = {}
        for node in fabric.nodes.values():
            for port in node.ports:
                if node.is_switch and port.num != 0:
                    continue  # data ports share port 0's GUID; the SA names the switch by port 0
                gid = _port_gid(port)
                if gid is not None:  # else never read: no SA GID can name this port
                    index.setdefault(gid, (node.guid, port.num))
        return index

    def lookup(gid: int) -> tuple[int, int] | None:
        fabric = current()
        return fabric.cached("sa_link.port_of_gid", lambda: build(fabric)).get(gid)

    return lookup


def lid_ports(current: Callable[[], Fabric]) -> Callable[[], Iterable[tuple[int, int]]]:
    """Every (LID, port number) whose P_Key table the SA can be asked for:
    each channel adapter port by its own LID, each switch by port 0's."""

    def ports() -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        for node in current().nodes.values():
            for port in node.ports:
                if port.lid and (not node.is_switch or port.num == 0):
                    found.append((port.lid, port.num))
        return found

    return ports

"""What the SA client needs to know of the subnet, read from the live snapshot.

The SA answers in LIDs and GIDs; the model speaks of node GUIDs and port
numbers. These lookups translate with the snapshot being served, through the
indexes the SA query code already keeps in each snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ibsnmp.fabric.model import Fabric
from ibsnmp.sa.query import gid_port


def node_of_lid(current: Callable[[], Fabric]) -> Callable[[int], int | None]:
    """LID -> the GUID of the node that owns it (inside an LMC block too)."""

    def lookup(lid: int) -> int | None:
        ref = current().resolve_lid(lid)
        return None if ref is None else ref.guid

    return lookup


def port_of_gid(current: Callable[[], Fabric]) -> Callable[[int], tuple[int, int] | None]:
    """Port GID -> (node GUID, port number) of the end port owning it (a switch: port 0)."""
    return lambda gid: gid_port(current(), gid)


def lid_ports(current: Callable[[], Fabric]) -> Callable[[], Iterable[tuple[int, int]]]:
    """Every (LID, port number) whose P_Key table the SA can be asked for:
    each end port (a channel adapter port, a switch's port 0) by its base LID."""
    return lambda: [(lid, ref.port) for lid, ref in sorted(current().lid_map.items())]

"""An independent shortest-path reference for the SA query tests."""

from __future__ import annotations

from collections import deque

from ibsnmp.fabric.iba import PortState
from ibsnmp.fabric.model import Fabric


def hop_distances(fabric: Fabric, start: int) -> dict[int, int]:
    """Links crossed from node `start` to every node, over links whose two
    ports are Active (breadth first, written here, not routing's)."""
    graph: dict[int, set[int]] = {}
    for link in fabric.links:
        if all(fabric.port_at(end).info.port_state is PortState.ACTIVE for end in (link.a, link.b)):
            graph.setdefault(link.a.guid, set()).add(link.b.guid)
            graph.setdefault(link.b.guid, set()).add(link.a.guid)
    seen = {start: 0}
    todo = deque([start])
    while todo:
        here = todo.popleft()
        for there in graph.get(here, ()):
            if there not in seen:
                seen[there] = seen[here] + 1
                todo.append(there)
    return seen

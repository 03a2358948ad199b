"""One fabric snapshot replacing another, and which nodes a listener of
the swap must look at: what providers hand their swap listeners."""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import NamedTuple

from ibsnmp.fabric.model import Fabric, Node


class Swap(NamedTuple):
    """One snapshot replacing another. `changed`: the GUIDs of the nodes
    the swap added, removed or replaced (each other node is the same
    object in both); None when the provider cannot tell (any may differ).
    `valued`: the GUIDs of the nodes whose counter values it replaced
    (every other node's are the same mapping in both); None: any may have.
    They let a listener's cost follow the change, not the fabric."""

    old: Fabric
    new: Fabric
    changed: Set[int] | None
    valued: Set[int] | None = None

    def valued_since(self, seen: Mapping[int, Mapping[int, Mapping[str, int]]] | None) -> Set[int] | None:
        """The nodes whose values a listener that last saw the counter values
        `seen` must look at: `valued` if those are the old snapshot's, else None."""
        return self.valued if seen is self.old.counter_values else None

    def changed_since(self, seen: Mapping[int, Node] | None) -> Set[int] | None:
        """What a listener that last saw the node map `seen` must look at:
        `changed` if that is the old snapshot's, else None (everything)."""
        return self.changed if seen is self.old.nodes else None


def nodes_to_compare(nodes: Mapping[int, Node], seen: Mapping[int, Node],
                     changed: Set[int] | None) -> tuple[list[int], list[int]]:
    """GUIDs whose node in `nodes` is not the object in `seen` (new or
    replaced), and GUIDs of `seen` that are gone from `nodes`; only those
    in `changed` are looked at (all when None)."""
    last = seen.get
    if changed is not None:
        present = [guid for guid in changed if guid in nodes]
        gone = [guid for guid in changed if guid not in nodes and guid in seen]
        return [guid for guid in present if last(guid) is not nodes[guid]], gone
    fresh = [guid for guid, node in nodes.items() if last(guid) is not node]
    arrived = sum(1 for guid in fresh if guid not in seen)
    # Every GUID of `nodes` is seen or has arrived: more seen than that means some left.
    gone = [guid for guid in seen if guid not in nodes] if len(seen) + arrived > len(nodes) else []
    return fresh, gone

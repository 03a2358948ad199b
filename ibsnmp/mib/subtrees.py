"""The OID subtrees the virtual MIB serves, and where an OID falls among them.

The engine sends every OID inside one of these subtrees to the VirtualMib
and every other OID to pysnmp's own tree; a GETNEXT that leaves a subtree
merges the two in OID order. The subtrees are disjoint; a subtree is every
OID that starts with its root.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

Oid = tuple[int, ...]

# IF-MIB (RFC 2863): the interfaces group (ifNumber, ifTable) and ifMIB
# (ifXTable, ifStackTable, ...); the InfiniBand drafts' experimental arc.
IF_MIB_INTERFACES: Oid = (1, 3, 6, 1, 2, 1, 2)
IF_MIB_IFMIB: Oid = (1, 3, 6, 1, 2, 1, 31)
INFINIBAND_MIB: Oid = (1, 3, 6, 1, 3, 117)


def end_of_subtree(root: Oid) -> Oid:
    """The first OID after every OID that starts with `root`."""
    return root[:-1] + (root[-1] + 1,)


class Subtrees:
    """A sorted tuple of disjoint OID subtrees, looked up by bisection."""

    __slots__ = ("roots", "_ends")

    def __init__(self, roots: Iterable[Oid]) -> None:
        self.roots: tuple[Oid, ...] = tuple(sorted(tuple(root) for root in roots))
        self._ends = tuple(end_of_subtree(root) for root in self.roots)
        for end, later in zip(self._ends, self.roots[1:]):
            if later < end:
                raise ValueError(f"served subtrees overlap at {'.'.join(map(str, later))}")

    def end_of(self, oid: Oid) -> Oid | None:
        """The end of the served subtree `oid` lies in (see `end_of_subtree`),
        or None when it lies in none."""
        position = bisect_right(self.roots, oid) - 1
        if position >= 0 and oid < self._ends[position]:
            return self._ends[position]
        return None

    def next_root(self, oid: Oid) -> Oid | None:
        """The root of the first served subtree that starts after `oid`."""
        position = bisect_right(self.roots, oid)
        return self.roots[position] if position < len(self.roots) else None

    def holds(self, oid: Oid) -> bool:
        return self.end_of(oid) is not None

    def __repr__(self) -> str:
        return f"Subtrees({', '.join('.'.join(map(str, root)) for root in self.roots)})"


SERVED_SUBTREES = Subtrees((IF_MIB_INTERFACES, IF_MIB_IFMIB, INFINIBAND_MIB))

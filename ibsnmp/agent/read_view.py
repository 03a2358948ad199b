"""The read views as OID subtrees: what VACM holds, and what the fast responder checks.

Both the VACM view tree (engine._configure_views) and the fast responder's
one-decision-per-request view come from `excluded_subtrees`, so the two
paths cannot disagree about what a community may read.
"""

from __future__ import annotations

from .views import View, key_subtrees

Oid = tuple[int, ...]

# Everything under internet (1.3.6.1) is readable, except the agent's own
# secrets and security set-up, for every principal: who may read what, under
# which name, and where notifications go are the configuration an attacker
# maps first. Counters (usmStats, snmpEngine, snmpUnknownContexts) stay.
VIEW_ROOT: Oid = (1, 3, 6, 1)
SECRET_SUBTREES: tuple[Oid, ...] = (
    (1, 3, 6, 1, 6, 3, 12, 1, 2),     # SNMP-TARGET-MIB snmpTargetAddrTable: receivers
    (1, 3, 6, 1, 6, 3, 12, 1, 3),     # SNMP-TARGET-MIB snmpTargetParamsTable: their names
    (1, 3, 6, 1, 6, 3, 13, 1),        # SNMP-NOTIFICATION-MIB tables: notify tags, filters
    (1, 3, 6, 1, 6, 3, 15, 1, 2),     # SNMP-USER-BASED-SM-MIB usmUser: user names, protocols
    (1, 3, 6, 1, 6, 3, 16, 1),        # SNMP-VIEW-BASED-ACM-MIB: groups, access, views
    (1, 3, 6, 1, 6, 3, 18),           # SNMP-COMMUNITY-MIB: community strings
    (1, 3, 6, 1, 4, 1, 20408, 3, 1),  # PYSNMP-USM-MIB: USM keys, pass phrases
)


def excluded_subtrees(view: View) -> tuple[Oid, ...]:
    """The subtrees a read view leaves out of VIEW_ROOT."""
    return SECRET_SUBTREES + (key_subtrees() if view == "no-keys" else ())


class ReadView:
    """One read view: VIEW_ROOT without its excluded subtrees.

    RFC 3415's longest-match rule reduces to this because every excluded
    subtree lies inside the single included one.
    """

    __slots__ = ("_excluded", "_head", "_by_head", "_whole")

    def __init__(self, view: View) -> None:
        excluded = excluded_subtrees(view)
        self._excluded = tuple((len(subtree), subtree) for subtree in excluded)
        # Excluded subtrees by their first `_head` arcs (as many as the
        # shortest has), then by depth: most OIDs are settled by one lookup.
        self._head = min(len(subtree) for subtree in excluded)
        grouped: dict[Oid, dict[int, set[Oid]]] = {}
        for subtree in excluded:
            by_depth = grouped.setdefault(subtree[:self._head], {})
            by_depth.setdefault(len(subtree), set()).add(subtree)
        self._by_head = {head: tuple((depth, frozenset(subtrees))
                                     for depth, subtrees in sorted(by_depth.items()))
                         for head, by_depth in grouped.items()}
        # `shows`: per served object, whether the view holds all of it (or none).
        self._whole: dict[Oid, bool | None] = {}

    def shows(self, subtree: Oid, oid: Oid) -> bool:
        """`contains_below_root(oid)` for an `oid` under `subtree` (an object
        the MIB serves), settled once per subtree where the view shows all
        of it or none."""
        whole = self._whole.get(subtree)
        if whole is None:
            whole = self._whole[subtree] = self._shown_whole(subtree)
        return whole if whole is not None else self.contains_below_root(oid)

    def _shown_whole(self, subtree: Oid) -> bool | None:
        """True: everything under `subtree` is in the view; False: nothing;
        None: an excluded subtree lies inside it."""
        for _, excluded in self._excluded:
            if subtree[:len(excluded)] == excluded:
                return False
            if excluded[:len(subtree)] == subtree:
                return None
        return True

    def contains_below_root(self, oid: Oid) -> bool:
        """`contains` for an OID known to lie under VIEW_ROOT: a lookup of its
        first arcs, then one set lookup per depth under them."""
        checks = self._by_head.get(oid[:self._head])
        if checks is not None:
            for depth, subtrees in checks:
                if oid[:depth] in subtrees:
                    return False
        return True

    def contains(self, oid: Oid) -> bool:
        if oid[:4] != VIEW_ROOT:
            return False
        for depth, subtree in self._excluded:
            if oid[:depth] == subtree:
                return False
        return True

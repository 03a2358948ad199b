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

    __slots__ = ("_excluded", "_by_depth")

    def __init__(self, view: View) -> None:
        excluded = excluded_subtrees(view)
        self._excluded = tuple((len(subtree), subtree) for subtree in excluded)
        by_depth: dict[int, set[Oid]] = {}
        for subtree in excluded:
            by_depth.setdefault(len(subtree), set()).add(subtree)
        self._by_depth = tuple((depth, frozenset(subtrees))
                               for depth, subtrees in sorted(by_depth.items()))

    def contains_below_root(self, oid: Oid) -> bool:
        """`contains` for an OID known to lie under VIEW_ROOT: one set lookup per depth."""
        for depth, subtrees in self._by_depth:
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

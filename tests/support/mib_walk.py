"""Walking a VirtualMib directly (no SNMP), for the binding tests."""

from __future__ import annotations

from typing import Any

from ibsnmp.mib.api import ContextTarget, Oid, VirtualMib


def walk(mib: VirtualMib, target: ContextTarget, start: Oid) -> dict[Oid, Any]:
    """Every instance under `start`, asserting GETNEXT order is strictly increasing."""
    found: dict[Oid, Any] = {}
    oid = start
    while (step := mib.get_next(target, oid)) is not None and step[0][: len(start)] == start:
        assert step[0] > oid
        oid = step[0]
        found[oid] = step[1]
    return found

"""SET support shared by every writable binding: RFC 3416 value checks
against the compiled MIB, RowStatus rules (RFC 2579), write requests.

A SET runs in two phases, as RFC 3416 4.2.5 describes: every varbind is
tested (type, length, value, then each writer's consistency checks over all
the varbinds it owns) against a transaction of the write store; only when
all pass is the transaction committed, in one step. A failure anywhere
leaves everything as it was, so a multi-varbind SET is all or nothing and
there is nothing to undo.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from pyasn1.error import PyAsn1Error
from pyasn1.type import univ

from ibsnmp.state.overrides import SNMP_OBJECTS, SYSTEM_OBJECTS

from .api import SetError
from .facts import convention_value
from .loader import ObjectDef, definitions

WRITABLE = frozenset({"read-write", "read-create"})

# RowStatus (RFC 2579), as SNMPv2-TC numbers it
ACTIVE, NOT_IN_SERVICE, NOT_READY, CREATE_AND_GO, CREATE_AND_WAIT, DESTROY = (
    convention_value("SNMPv2-TC", "RowStatus", label) for label in (
        "active", "notInService", "notReady", "createAndGo", "createAndWait", "destroy"))


@dataclass(frozen=True, slots=True)
class WriteRequest:
    """One varbind of a SET, checked against its object's syntax.

    index: position of the varbind among those handed to the MIB (what a
      SetError names); name: the object's descriptor; instance: the index
      values its OID encodes (ints, bytes for OCTET STRINGs; () for a
      scalar); value: the plain value (int or bytes).
    """

    index: int
    name: str
    instance: tuple[Any, ...]
    value: Any


class WriteStore(Protocol):
    """Where writable state lives: `begin()` opens a transaction that
    writers fill; `commit(txn)` makes it the current state (after writing
    it durably when it changes configuration) or raises OSError leaving the
    current state untouched."""

    def begin(self) -> Any: ...

    def commit(self, txn: Any) -> None: ...


def checked_value(obj: ObjectDef, value: Any, index: int) -> Any:
    """The plain value of a varbind for `obj`, or SetError wrongType /
    wrongLength / wrongValue (RFC 3416 4.2.5 step 3)."""
    syntax = obj.syntax
    tag_set = getattr(value, "tagSet", None)
    if tag_set is None or tag_set != syntax.tagSet:
        raise SetError("wrongType", index, f"{obj.name} is not of that ASN.1 type")
    plain = value.asOctets() if isinstance(syntax, univ.OctetString) else int(value)
    problem = value_problem(syntax, plain)
    if problem is not None:
        status, reason = problem
        raise SetError(status, index, f"{obj.name}: {reason}")
    return plain


def value_problem(syntax: Any, plain: int | bytes) -> tuple[str, str] | None:
    """Why the plain value `plain` is not one of `syntax` (the compiled
    MIB's): (RFC 3416 error status, reason), or None when it is."""
    octets = isinstance(syntax, univ.OctetString)
    if octets != isinstance(plain, bytes) or isinstance(plain, bool):
        return "wrongType", "not of that type"
    try:
        syntax.subtypeSpec(plain)  # what clone() checks, without building an object
    except PyAsn1Error:
        if octets:
            return "wrongLength", "length out of range"
        return "wrongValue", "value out of range"
    if (octets and _is_display_string(syntax)
            and not _printable(plain)):  # type: ignore[arg-type]  # octets: bytes
        return "wrongValue", "not NVT ASCII text"
    return None


def _is_display_string(syntax: Any) -> bool:
    kind = type(syntax)
    found = _DISPLAY_STRING_TYPES.get(kind)
    if found is None:
        found = _DISPLAY_STRING_TYPES[kind] = any(
            cls.__name__ == "DisplayString" for cls in kind.__mro__)
    return found


# Syntax class -> whether it is a DisplayString (a dict: functools' caches take
# only what mypy can prove Hashable, and a class is not typed so).
_DISPLAY_STRING_TYPES: dict[type, bool] = {}


def _printable(data: bytes) -> bool:
    """DisplayString (RFC 2579): NVT ASCII (RFC 854) as text holds it:
    printable ASCII and LF, a CR only before LF or NUL, and a NUL only after CR."""
    if not all(32 <= c < 127 or c in (0, 10, 13) for c in data):
        return False
    rest = data.replace(b"\r\n", b"").replace(b"\r\x00", b"")
    return b"\r" not in rest and b"\x00" not in rest


def row_status_check(exists: bool, requested: int, index: int) -> None:
    """RFC 2579 rules for a RowStatus SET, as net-snmp applies them:
    notReady (and the non-value 0) cannot be written (wrongValue);
    createAndGo / createAndWait need a row that does not exist, active /
    notInService one that does (inconsistentValue); destroy is always
    accepted (destroying no row is a no-op)."""
    if requested in (0, NOT_READY):
        raise SetError("wrongValue", index, "notReady cannot be written")
    if requested in (CREATE_AND_GO, CREATE_AND_WAIT) and exists:
        raise SetError("inconsistentValue", index, "the row already exists")
    if requested in (ACTIVE, NOT_IN_SERVICE) and not exists:
        raise SetError("inconsistentValue", index, "no such row")


def require_range(request: WriteRequest, low: int, high: int, what: str = "") -> int:
    """For INTEGER objects the MIB leaves unbounded but IBA gives a field
    width: values outside it are wrongValue."""
    value = request.value
    if not low <= value <= high:
        raise SetError("wrongValue", request.index,
                       f"{request.name}: {what or 'value'} must be {low}..{high}")
    return int(value)


@lru_cache(maxsize=4096, typed=True)  # a state repeats small values (ports, VLs, statuses) often
def state_value_problem(descriptor: str, value: int | bytes) -> str | None:
    """Why `value` cannot be served as `descriptor` (an object of a served
    module, or a writable SNMPv2-MIB system or snmp group object), None if
    it can: the check of every value a state file holds
    (ibsnmp.state.overrides.from_json)."""
    mib = definitions()
    obj = mib.base_scalar("SNMPv2-MIB", descriptor) \
        if descriptor in SYSTEM_OBJECTS or descriptor in SNMP_OBJECTS else mib.objects[descriptor]
    problem = value_problem(obj.syntax, value)
    return None if problem is None else problem[1]

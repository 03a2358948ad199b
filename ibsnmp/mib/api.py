"""The seam between the SNMP engine and the InfiniBand MIB objects.

The engine knows nothing of InfiniBand: for a request in some SNMP context
it asks a `ContextResolver` which node that context speaks for, then asks
the `VirtualMib` for values under the subtrees it serves (IF-MIB's and the
InfiniBand one, see mib.subtrees). Reads never await and never block: they
look at the current fabric snapshot only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

# INFINIBAND_MIB and Oid are also the engine's names for them.
from .subtrees import INFINIBAND_MIB as INFINIBAND_MIB, Oid as Oid, Subtrees


@dataclass(frozen=True, slots=True)
class ContextTarget:
    """What one SNMP context describes: one node of one fabric snapshot.

    `fabric` and `node` are ibsnmp.fabric.model objects (typed loosely here
    so the engine does not import the fabric package). `serves_sm` is true
    where IB-SM-MIB is answered: the default context and nodes running an SM.
    `elapsed` is the time in seconds since the provider's epoch when the
    request arrived, in whole ticks (mib.targets.FabricContexts.elapsed):
    counters and other values that grow with time read it.
    `entity_guids` names the nodes of the network entity the context
    describes when it is more than `node`: the default context of a host
    with several adapters (IB-CA-MIB lists every CA of the entity).
    `default_context` is true for the default context (""), which speaks
    for the agent itself (its own system group); a node's own context
    (named by its GUID) answers the node's sysName, sysDescr, sysObjectID.
    """

    fabric: Any
    node: Any
    serves_sm: bool
    elapsed: float = 0.0
    entity_guids: tuple[int, ...] = ()
    default_context: bool = False


# contextName (b"" for the default context, else 16 lower-case hex digits of
# a node GUID) -> the target, or None when no such node exists.
ContextResolver = Callable[[bytes], ContextTarget | None]


class Missing:
    """Why a GET found no value: the RFC 3416 exception it becomes."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NO_SUCH_OBJECT = Missing("noSuchObject")
NO_SUCH_INSTANCE = Missing("noSuchInstance")

# BER tags of the SNMP types a Cell carries (RFC 2578, RFC 3416).
INTEGER = 0x02
OCTET_STRING = 0x04
OBJECT_IDENTIFIER = 0x06
IP_ADDRESS = 0x40
COUNTER32 = 0x41
GAUGE32 = 0x42  # Unsigned32 too
TIME_TICKS = 0x43
OPAQUE = 0x44
COUNTER64 = 0x46

CellValue = int | bytes | tuple[int, ...]


class Cell(NamedTuple):
    """One instance's value without pysnmp objects: the BER tag of its SNMP
    type (from the compiled module) and the plain value: int for INTEGER,
    the counters, gauges and TimeTicks; bytes for OCTET STRING, IpAddress
    and Opaque; a tuple of sub-identifiers for an OBJECT IDENTIFIER."""

    tag: int
    value: CellValue


class VirtualMib(Protocol):
    """Read access to every object the agent serves itself, for one context target.

    `get_cell` / `next_cell` answer with plain Cells; `get` / `get_next`
    with the same values boxed as pysnmp syntax objects of the type the
    compiled module declares. OIDs are plain tuples. `subtrees` are the
    disjoint subtrees it serves whole: the engine's own tree has nothing
    inside them. A next instance may lie in a later subtree than the OID
    asked after; the engine decides whether its own tree comes first.
    """

    subtrees: Subtrees

    @property
    def object_oids(self) -> list[Oid]:
        """Every scalar and column it serves, in OID order."""
        ...

    def get_cell(self, target: ContextTarget, oid: Oid) -> Cell | Missing:
        """The cell at `oid`, or NO_SUCH_OBJECT / NO_SUCH_INSTANCE."""
        ...

    def instance_arcs(self, target: ContextTarget, oid: Oid) -> int:
        """The most arcs of an instance of the object `oid` lies under (0: none)."""
        ...

    def get_step(self, target: ContextTarget, oid: Oid) -> tuple[Cell | Missing, bool, Any]:
        """`get_cell`, whether that answer holds while the snapshot's structure
        and `version(target)` stay the same (false where values move with time),
        and a tag saying what it depends on (None: anything) for the
        `invalidation` of a MIB that offers one."""
        ...

    def next_cell(self, target: ContextTarget, oid: Oid) -> tuple[Oid, Cell] | None:
        """The first instance after `oid` in any of `subtrees`, or None after the last."""
        ...

    def next_step(self, target: ContextTarget, oid: Oid) -> tuple[Oid, Cell, bool, Any] | None:
        """`next_cell`, whether that answer holds while the snapshot's structure
        and `version(target)` stay the same (false where values move with time),
        and its tag (see `get_step`)."""
        ...

    def version(self, target: ContextTarget) -> Any:
        """A value that changes whenever a read of `target`'s snapshot may
        answer differently (a SET, a request session), time aside."""
        ...

    def get(self, target: ContextTarget, oid: Oid) -> Any | Missing:
        """The value at `oid`, or NO_SUCH_OBJECT / NO_SUCH_INSTANCE."""
        ...

    def get_next(self, target: ContextTarget, oid: Oid) -> tuple[Oid, Any] | None:
        """The first instance after `oid` in any of `subtrees`, or None after the last."""
        ...


# -- SET --------------------------------------------------------------------------
# RFC 3416 4.2.5 error-status names a write can fail with.
SET_ERRORS = frozenset({
    "noAccess", "notWritable", "wrongType", "wrongLength", "wrongEncoding", "wrongValue",
    "noCreation", "inconsistentValue", "inconsistentName", "resourceUnavailable",
    "commitFailed", "undoFailed", "genErr",
})


class SetError(Exception):
    """A SET refused: `status` is the RFC 3416 error-status name, `index`
    the 0-based position of the offending varbind in the list the writer
    was given."""

    def __init__(self, status: str, index: int, reason: str = "") -> None:
        if status not in SET_ERRORS:
            raise ValueError(f"unknown SET error status {status!r}")
        super().__init__(f"{status} at varbind {index}" + (f": {reason}" if reason else ""))
        self.status = status
        self.index = index
        self.reason = reason


class PreparedWrite(Protocol):
    """A SET that passed every test: `commit()` makes it take effect (and
    durable) or raises SetError("commitFailed") leaving nothing changed."""

    def commit(self) -> None: ...


@runtime_checkable
class WritableMib(VirtualMib, Protocol):
    """A VirtualMib that also accepts SETs, all or nothing.

    `prepare_write` runs RFC 3416's test phase over every varbind (values
    are pysnmp/pyasn1 objects as decoded from the PDU) and raises SetError
    for the first that fails; nothing changes until `commit()`.
    `writes_outside` tells the scalars outside `subtrees` that its SETs
    write too (the system group's).
    """

    def writes_outside(self, oid: Oid) -> bool: ...

    def prepare_write(self, target: ContextTarget,
                      varbinds: Sequence[tuple[Oid, Any]]) -> PreparedWrite: ...

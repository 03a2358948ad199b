"""The plain-value read path (get_cell / next_cell) against the pysnmp one.

The pysnmp path boxes the cells of the plain path, so these tests check the
cells against what pysnmp itself makes of the boxed values: the identifier
octet pyasn1's BER encoder writes, the plain value inside, and pyasn1's own
check of the compiled syntax's constraints.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from pyasn1.codec.ber import encoder
from pyasn1.error import PyAsn1Error
from pyasn1.type import univ
from tests.support.set_support import Agent, i, instance
from tests.support.narrow import present

from ibsnmp.fabric.iba import SmState
from ibsnmp.mib.api import (
    COUNTER32,
    COUNTER64,
    GAUGE32,
    INFINIBAND_MIB,
    INTEGER,
    NO_SUCH_INSTANCE,
    NO_SUCH_OBJECT,
    OBJECT_IDENTIFIER,
    OCTET_STRING,
    TIME_TICKS,
    Cell,
    ContextTarget,
    Oid,
)
from ibsnmp.mib.binding import ModuleBinding, ScalarBinding
from ibsnmp.mib.cells import CellType, CellValueError
from ibsnmp.mib.loader import definitions
from ibsnmp.mib.registry import build_mib
from ibsnmp.mib.targets import context_name
from ibsnmp.mib.virtual import InfinibandMib
from ibsnmp.wire import ber

# Heavy in process (a minute or so): left out of `make quick`.
pytestmark = pytest.mark.slow

SPEC = "fat-tree:spines=1,leaves=1,hosts=2,faults=0"
CREATE_AND_GO = 4
IB_SM_MIB = INFINIBAND_MIB + (7,)
IF_MIB_INTERFACES = (1, 3, 6, 1, 2, 1, 2)
DEFS = definitions()
# SMI type name -> the tag RFC 2578 / RFC 3416 give it (the oracle for the
# compiled syntaxes, which carry the tag only in their pyasn1 tag sets).
SMI_TAGS = {"Integer32": INTEGER, "Integer": INTEGER, "OctetString": OCTET_STRING,
            "Counter32": COUNTER32, "Gauge32": GAUGE32, "Unsigned32": GAUGE32,
            "TimeTicks": TIME_TICKS, "Counter64": COUNTER64,
            "ObjectIdentifier": OBJECT_IDENTIFIER}  # IF-MIB's ifSpecific, ifTestType


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Agent:
    """A simulated fabric with a path request and its trace, so the request
    and result tables have rows too."""
    agent = Agent(SPEC, seed=3, path=tmp_path_factory.mktemp("cells") / "state.json")
    hosts = [p for n in agent.fabric.nodes.values() if n.is_ca for p in n.ports if p.lid]
    src, dst = hosts[0], hosts[-1]

    def path_req(column: str) -> Oid:
        return instance(f"ibSmPathReq{column}", agent.prefix, 2)

    agent.set((instance("ibSmTraceReqRowStatus", agent.prefix, 2), i(CREATE_AND_GO)),
              (path_req("RowStatus"), i(CREATE_AND_GO)),
              (path_req("SrcLID"), i(src.lid)), (path_req("DstLID"), i(dst.lid)))
    return agent


def contexts(agent: Agent) -> list[bytes]:
    return [b""] + [context_name(guid).encode() for guid in sorted(agent.fabric.nodes)]


def plain(boxed: Any) -> Any:
    if isinstance(boxed, univ.OctetString):
        return bytes(boxed)
    if isinstance(boxed, univ.ObjectIdentifier):
        return tuple(boxed)
    return int(boxed)


_ENCODED_TAGS: dict[type, int] = {}


def encoded_tag(boxed: Any) -> int:
    """The identifier octet pyasn1 encodes a syntax object with (once per class)."""
    kind = type(boxed)
    if kind not in _ENCODED_TAGS:
        _ENCODED_TAGS[kind] = encoder.encode(boxed)[0]
    return _ENCODED_TAGS[kind]


def assert_same(cell: Cell, boxed: Any) -> None:
    assert encoded_tag(boxed) == cell.tag
    value = plain(boxed)
    assert value == cell.value and type(value) is type(cell.value)


def test_cells_equal_the_boxed_values_on_every_oid_of_every_context(agent: Agent) -> None:
    mib = agent.mib
    walked = 0
    sm_rows = 0
    for context in contexts(agent):
        target = agent.target(context)
        oid: Oid = INFINIBAND_MIB
        while True:
            step = mib.next_cell(target, oid)
            boxed = mib.get_next(target, oid)
            if step is None:
                assert boxed is None  # the end of the MIB, on both paths
                break
            assert boxed is not None and boxed[0] == step[0] and step[0] > oid
            assert_same(step[1], boxed[1])
            assert mib.get_cell(target, step[0]) == step[1]
            assert_same(step[1], mib.get(target, step[0]))
            if step[0][:-1] != oid[:-1]:  # the first instance of a row or column
                # The exceptions agree too: nothing lives below an instance.
                below = step[0] + (0,)
                assert mib.get_cell(target, below) is mib.get(target, below) is NO_SUCH_INSTANCE
            oid = step[0]
            walked += 1
            sm_rows += oid[:7] == IB_SM_MIB
    assert walked > 100_000 and sm_rows > 0
    # The request and its results were walked too.
    result = instance("ibSmPathResultSrcLID", agent.prefix, 2, 1)
    assert isinstance(mib.get_cell(agent.target(), result), Cell)


def test_the_next_counter_is_found_as_next_cell_finds_it(agent: Agent) -> None:
    """timed_next (the fast responder's way among counters' rows) answers
    every name it answers as next_cell does: from each instance, from
    between it and the next, and from each column's OID; it leaves names
    under columns that do not read the time to next_cell."""
    mib = agent.mib
    answered = declined = 0
    for context in (b"", contexts(agent)[1]):
        target = agent.target(context)  # one instant for both readers
        for root in (IF_MIB_INTERFACES, INFINIBAND_MIB):
            oid: Oid = root
            while (step := mib.next_cell(target, oid)) is not None and step[0][:len(root)] == root:
                for name in (step[0], step[0] + (0,), step[0][:-1]):
                    timed = mib.timed_next(target, name)
                    if timed is None:
                        declined += 1
                        continue
                    answered += 1
                    assert (timed[0], timed[1]) == mib.next_cell(target, name)
                    # The fast responder asks only under these (a prefix of the name's octets).
                    assert any(name[:len(entry)] == entry for entry in mib.timed_entries)
                    assert timed[0][:len(timed[2])] == timed[2]  # under the column it names
                oid = step[0]
    assert answered > 1000 and declined > 1000


def names_around(name: Oid) -> list[Oid]:
    """Names a manager or a sender of fresh names may ask near an instance:
    itself, in the gap after it (arcs of one to five octets, one whose
    first octet is 0xff), before it, and past its object's instances."""
    return [name, name + (0,), name + (16383,), name + (16384, 1), name + (2**32 - 1,),
            name[:-1] + (name[-1] + 1,), name[:-1] + (max(name[-1] - 1, 0), 2**21),
            name[:-1] + (2**14,), name[:-1] + (300,), name[:13] + (2**28,), name[:12] + (300,)]


COLUMNS = {obj.oid: obj for obj in DEFS.objects.values() if obj.kind == "column"}
SHARDED_TABLE = IB_SM_MIB + (1, 14)  # ibSmSwSLtoVLMapTable: read per switch


def column_of(name: Oid) -> Oid | None:
    return next((name[:n] for n in range(9, 14) if name[:n] in COLUMNS), None)


def test_names_are_placed_from_their_octets_as_from_their_arcs(agent: Agent) -> None:
    """origin_of_element and timed_next_of_element (the fast responder's way to
    place an asked name without decoding it) answer as step_origin and
    timed_next do, for names around every seventh instance and each
    column's OID, or decline; under a column they decline only where the
    table is sharded or a row holds an arc of 2^14 or more."""
    mib = agent.mib
    placed = timed = timed_none = 0
    declined: set[tuple[bytes, Oid]] = set()
    for context in (b"", contexts(agent)[1]):
        target = agent.target(context)  # one instant for both readers
        for root in (IF_MIB_INTERFACES, INFINIBAND_MIB):
            oid: Oid = root
            seen = 0
            while (step := mib.next_cell(target, oid)) is not None and step[0][:len(root)] == root:
                oid = step[0]
                seen += 1
                if seen % 7:
                    continue
                column = column_of(oid)
                for name in names_around(oid) + ([column] if column else []):
                    element = ber.element(ber.OBJECT_IDENTIFIER, ber.oid_octets(name))
                    start = 2 if element[1] < 0x80 else 2 + (element[1] & 0x7F)
                    by_arcs = mib.timed_next(target, name)
                    by_octets = mib.timed_next_of_element(target, element, start)
                    if by_octets == ():
                        assert by_arcs is None, name
                        timed_none += 1
                    elif by_octets is not None:
                        assert by_octets == by_arcs, name
                        timed += 1
                    origin = mib.step_origin(target, name)
                    found = mib.origin_of_element(target, element, start)
                    if found is not None:
                        assert origin is not None and origin != name, f"{name} {origin}"
                        assert found == ber.element(ber.OBJECT_IDENTIFIER, ber.oid_octets(origin))
                        placed += 1
                    elif origin is not None and origin != name and column_of(name) is not None:
                        declined.add((context, present(column_of(name))))
    assert placed > 10_000 and timed > 1_000 and timed_none > 10
    long_rows = 0
    for context, column in declined:
        if column[:len(SHARDED_TABLE)] == SHARDED_TABLE:
            continue
        target = agent.target(context)
        rows = []
        oid = column
        while (step := mib.next_cell(target, oid)) is not None and step[0][:len(column)] == column:
            rows.append(step[0][len(column):])
            oid = step[0]
        assert any(arc >= 2**14 for row in rows for arc in row), (context, column)
        long_rows += 1
    assert long_rows > 0  # IB Connection MIB's QPNs, among others


def test_missing_objects_on_both_paths(agent: Agent) -> None:
    mib = agent.mib
    target = agent.target()
    for oid in [(1, 3, 6, 1, 2, 1, 1, 1, 0), INFINIBAND_MIB, INFINIBAND_MIB + (99, 1, 0)]:
        assert mib.get_cell(target, oid) is mib.get(target, oid) is NO_SUCH_OBJECT
    # IB-SM-MIB is not served in the context of a switch that runs no SM.
    switch = next(n for n in agent.fabric.nodes.values() if not n.is_ca)
    in_switch = agent.target(context_name(switch.guid).encode())
    sm_scalar = instance("ibSmPartitionConfigKey")
    assert mib.get_cell(in_switch, sm_scalar) is mib.get(in_switch, sm_scalar) is NO_SUCH_OBJECT
    assert mib.next_cell(target, (1, 3, 6, 1, 3, 118)) is mib.get_next(target, (1, 3, 6, 1, 3, 118))


@cache
def read_only_mib() -> InfinibandMib:
    return build_mib()


def bound_objects() -> list[str]:
    names = []
    for obj in DEFS.objects.values():
        if obj.kind in ("scalar", "column") and DEFS.readable(obj.name):
            try:
                read_only_mib().cell_type(obj.name)
            except KeyError:
                continue
            names.append(obj.name)
    return names


def test_every_readable_column_is_bound_with_its_compiled_tag() -> None:
    mib = read_only_mib()
    columns = [o for o in DEFS.objects.values() if o.kind == "column" and DEFS.readable(o.name)]
    assert len(columns) > 400
    for column in columns:
        ctype = mib.cell_type(column.name)
        assert ctype.syntax is column.syntax
        smi_type = next(c.__name__ for c in type(column.syntax).__mro__ if c.__name__ in SMI_TAGS)
        assert ctype.tag == SMI_TAGS[smi_type], column.name
        sample: int | bytes | tuple[int, ...]
        sample = ctype.values[0][0] if ctype.values else b"\0" * (ctype.sizes[0][0] if ctype.sizes else 0)
        if ctype.tag == OBJECT_IDENTIFIER:
            sample = (0, 0)
        assert encoder.encode(column.syntax.clone(sample))[0] == ctype.tag, column.name


def accepts(check: Any, value: Any) -> bool:
    try:
        check(value)
    except (PyAsn1Error, CellValueError):
        return False
    return True


def test_ranges_enumerations_and_sizes_agree_with_the_compiled_syntax() -> None:
    names = bound_objects()
    assert len(names) > 500
    enumerations = 0
    for name in names:
        ctype = read_only_mib().cell_type(name)
        if ctype.kind == "oid":  # IF-MIB's ifSpecific, ifTestType: any OID
            assert accepts(ctype.cell, (1, 3, 6, 1)), name
            continue
        if ctype.kind == "int":
            assert ctype.values is not None  # every SMI integer type is bounded
            probes: list[Any] = [v + d for lo, hi in ctype.values for v in (lo, hi)
                                 for d in (-1, 0, 1)]
            for named in ctype.named_values.values():
                assert accepts(ctype.cell, named), (name, named)
            enumerations += bool(ctype.named_values)
        else:
            sizes = ctype.sizes or ((0, 300),)
            probes = [b"\x01" * n for lo, hi in sizes for v in (lo, hi)
                      for n in (v - 1, v, v + 1) if n >= 0]
        for probe in probes:
            expected = accepts(ctype.syntax.clone, probe)
            assert accepts(ctype.cell, probe) == expected, (name, probe)
    assert enumerations > 20


def test_plain_values_are_normalized_as_pyasn1_does() -> None:
    mib = read_only_mib()
    description = mib.cell_type("ibSmNodeInfoDescription")
    assert description.cell("switch-1") == Cell(OCTET_STRING, b"switch-1")
    state = mib.cell_type("ibSmaSmState")
    assert state.cell(SmState.MASTER) == Cell(INTEGER, int(SmState.MASTER))
    assert type(state.cell(SmState.MASTER).value) is int
    with pytest.raises(CellValueError):
        state.cell("master")
    with pytest.raises(CellValueError):
        description.cell(12)


def test_a_getter_outside_its_syntax_fails_both_paths_alike() -> None:
    out_of_range = ModuleBinding(module="IB-SM-MIB", scalars=(
        ScalarBinding("ibSmPartitionConfigMemberPortNum", lambda t: 1 << 40),))
    mib = InfinibandMib([out_of_range])
    target = ContextTarget(fabric=None, node=None, serves_sm=True)
    oid = instance("ibSmPartitionConfigMemberPortNum")
    with pytest.raises(CellValueError, match="ibSmPartitionConfigMemberPortNum"):
        mib.get_cell(target, oid)
    with pytest.raises(CellValueError):
        mib.get(target, oid)
    with pytest.raises(CellValueError):
        mib.next_cell(target, oid[:-1])



def walk_cells(mib: InfinibandMib, target: ContextTarget) -> list[tuple[Oid, Cell]]:
    out = []
    oid: Oid = INFINIBAND_MIB
    while (step := mib.next_cell(target, oid)) is not None:
        out.append(step)
        oid = step[0]
    return out


def test_interleaved_contexts_read_their_own_rows(agent: Agent) -> None:
    """The row indexes and the object found last are remembered between
    requests: walks of different contexts, one step each in turn, must see
    what each context's walk alone sees."""
    names = [b""] + [context_name(n.guid).encode() for n in agent.fabric.nodes.values()][:3]
    # One target per context, so time-driven values (counters) stay put.
    targets = {name: agent.target(name) for name in names}
    alone = {name: walk_cells(build_mib(agent.state), targets[name]) for name in names}
    shared = build_mib(agent.state)
    positions = {name: INFINIBAND_MIB for name in names}
    seen: dict[bytes, list[tuple[Oid, Cell]]] = {name: [] for name in names}
    while positions:
        for name in list(positions):
            step = shared.next_cell(targets[name], positions[name])
            if step is None:
                del positions[name]
                continue
            seen[name].append(step)
            # A GET of another context's first instance between the steps.
            other = names[(names.index(name) + 1) % len(names)]
            assert shared.get_cell(targets[other], alone[other][0][0]) == alone[other][0][1]
            positions[name] = step[0]
    assert seen == alone

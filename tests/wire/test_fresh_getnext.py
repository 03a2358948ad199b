"""GETNEXTs of names no walk asks answer as pysnmp does, kept or not, across changes.

A name between two rows, past a column's last row, between two tables or
longer than any instance answers as the row (or object OID) it follows
does, and the fast responder keeps that answer under that origin only
(mib.virtual.InfinibandMib.step_origin). Each batch of such names is asked
of pysnmp and of the fast responder twice (the second time from what the
first kept) and the answers compared octet for octet; then the fabric
changes (a port goes down, a node leaves) and the same names are asked
again: what was kept for a gap the change altered must not be served.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator
from types import MappingProxyType

import pytest
from tests.support import fast_diff
from tests.support.held import Held
from tests.support.fast_diff import COMMUNITY, KEYS_COMMUNITY, TwoPaths, assert_same_response, response_varbinds
from tests.support.wire import community_request

from ibsnmp.fabric import build_fabric
from ibsnmp.fabric.changes import with_port_state
from ibsnmp.fabric.iba import PortState
from ibsnmp.fabric.model import Fabric
from ibsnmp.fabric.succession import successor
from ibsnmp.wire.ber import END_OF_MIB_VIEW

# Heavy in process (pysnmp answers every name): left out of `make quick`.
pytestmark = pytest.mark.slow

Oid = tuple[int, ...]
SPEC = "fat-tree:spines=1,leaves=2,hosts=2"
ROOTS = ((1, 3, 6, 1, 2, 1, 2), (1, 3, 6, 1, 2, 1, 31), (1, 3, 6, 1, 3, 117))
SAMPLE = 37  # every this many instances of a walk gives names around it
# The SL-to-VL and forwarding tables' columns hold thousands of rows alike:
# their instances are sampled THIN times more sparsely.
BIG_COLUMN = 1000
THIN = 20
BATCH = 16  # names per GETNEXT
MOST_ARC = 2**32 - 1
# ibSmSwSLtoVLMapTable's first column: a table read shard by shard (per switch).
SHARDED_COLUMN = (1, 3, 6, 1, 3, 117, 7, 1, 14, 1, 1, 1)
PMA_MIB = (1, 3, 6, 1, 3, 117, 6, 1)  # its counters read the time


def walked(paths: TwoPaths, community: str) -> list[Oid]:
    """Every instance of the served subtrees in the community's context, by GETBULK."""
    out: list[Oid] = []
    for root in ROOTS:
        oid: Oid = root
        while True:
            reply = paths.fast(community_request("bulk", [oid], community=community,
                                                 max_repetitions=60))
            assert reply is not None
            inside = [name for name, tag in response_varbinds(reply)
                      if tag != END_OF_MIB_VIEW and name[:len(root)] == root]
            out.extend(inside)
            if len(inside) < 60:
                break
            oid = inside[-1]
    return out


def fresh_names(instances: list[Oid]) -> Iterator[Oid]:
    """Names around every SAMPLE-th instance (in a column of more than
    BIG_COLUMN rows, every SAMPLE * THIN-th) that no walk asks: in the gap
    after it, past its column's rows, after its table's entry, 128 arcs long."""
    rows = Counter(instance[:12] for instance in instances)
    for position, instance in enumerate(instances):
        stride = SAMPLE * THIN if rows[instance[:12]] > BIG_COLUMN else SAMPLE
        if position % stride:
            continue
        yield instance + (position,)
        # Arcs of two octets, the largest (0xff first), and of three: names
        # are placed by their octets where those sort as the arcs do.
        yield instance[:-1] + (16383,)
        yield instance + (16384 + position, 1)
        yield instance + (0, MOST_ARC)
        yield instance[:-1] + (instance[-1] + 1, 5)
        yield instance[:12] + (256 + position,)
        yield instance[:11] + (MOST_ARC, position)
        yield instance[:10] + (999,)
        yield instance + (MOST_ARC,) * (126 - len(instance)) + (position, 1)
    yield SHARDED_COLUMN + (0,)
    yield (1, 3, 6, 1, 3, 117, 99)  # past the last object: the agent's own come next


def assert_answers_as_pysnmp(paths: TwoPaths, names: list[Oid], community: str) -> None:
    for start in range(0, len(names), BATCH):
        request = community_request("next", names[start:start + BATCH], community=community)
        slow = paths.pysnmp(request)
        for _ in range(2):  # looked up, then from what the first answer kept
            assert_same_response(request, slow, paths.fast(request))


def contexts(fabric: Fabric) -> list[str]:
    switch = next(g for g, n in sorted(fabric.nodes.items()) if n.is_switch)
    return [COMMUNITY, KEYS_COMMUNITY, f"{COMMUNITY}@{switch:016x}"]


@pytest.fixture()
def agent() -> tuple[TwoPaths, Held, dict[str, list[Oid]]]:
    held = Held(build_fabric(SPEC, seed=4))
    paths = TwoPaths(held)
    names = {community: list(fresh_names(walked(paths, community)))
             for community in contexts(held.snapshot)}
    return paths, held, names


def test_fresh_names_answer_as_pysnmp(agent: tuple[TwoPaths, Held, dict[str, list[Oid]]]) -> None:
    paths, _, names = agent
    for community, asked in names.items():
        assert_answers_as_pysnmp(paths, asked, community)


def test_fresh_names_answer_as_pysnmp_after_a_port_goes_down(
        agent: tuple[TwoPaths, Held, dict[str, list[Oid]]]) -> None:
    paths, held, names = agent
    for community, asked in names.items():
        assert_answers_as_pysnmp(paths, asked, community)
    host = next(n for _, n in sorted(held.snapshot.nodes.items()) if n.is_ca)
    ref = next(p.ref for p in host.ports if p.remote is not None)
    walks = paths.dispatcher.parts.fast_reads.walks
    carried = walks.carried
    held.snapshot = with_port_state(held.snapshot, ref, PortState.DOWN, at=100.0)[0]
    for community, asked in names.items():
        assert_answers_as_pysnmp(paths, asked, community)
    assert walks.carried == carried + 1  # judged: what the change left stayed kept


def test_fresh_names_answer_as_pysnmp_after_a_node_leaves(
        agent: tuple[TwoPaths, Held, dict[str, list[Oid]]]) -> None:
    paths, held, names = agent
    for community, asked in names.items():
        assert_answers_as_pysnmp(paths, asked, community)
    before = held.snapshot
    host = next(g for g, n in sorted(before.nodes.items())
                if n.is_ca and g != before.local_node_guid)
    gone = dataclasses.replace(
        before, nodes=MappingProxyType({g: n for g, n in before.nodes.items() if g != host}),
        links=tuple(link for link in before.links if host not in (link.a.guid, link.b.guid)),
        lid_map=MappingProxyType({lid: ref for lid, ref in before.lid_map.items()
                                  if ref.guid != host}))
    held.snapshot = successor(before, gone)
    for community, asked in names.items():
        assert_answers_as_pysnmp(paths, asked, community)


def test_names_no_walk_asks_are_not_kept(agent: tuple[TwoPaths, Held, dict[str, list[Oid]]]) -> None:
    paths, _, names = agent
    walks = paths.dispatcher.parts.fast_reads.walks
    asked = [name for name in names[COMMUNITY] if len(name) > 13]
    assert_answers_as_pysnmp(paths, asked, COMMUNITY)
    kept = walks.size
    # Other names in the same gaps (their last arc past the row's).
    again = [name[:-1] + (min(name[-1] + 7, MOST_ARC),) for name in asked]
    assert_answers_as_pysnmp(paths, again, COMMUNITY)
    assert walks.size == kept


def test_fresh_names_before_counters_read_the_time(agent: tuple[TwoPaths, Held, dict[str, list[Oid]]],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A name whose next instance is a counter keeps where that instance is,
    not its value: asked again an hour later, it answers the value then."""
    paths, _, names = agent
    asked = [name for name in names[COMMUNITY] if name[:8] == PMA_MIB][:BATCH]
    assert len(asked) == BATCH
    request = community_request("next", asked, community=COMMUNITY)
    assert_answers_as_pysnmp(paths, asked, COMMUNITY)
    before = paths.fast(request)
    monkeypatch.setattr(fast_diff, "ELAPSED", fast_diff.ELAPSED + 3600.0)
    assert_answers_as_pysnmp(paths, asked, COMMUNITY)
    assert paths.fast(request) != before  # the same names, other values

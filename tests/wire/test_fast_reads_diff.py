"""The fast responder answers as pysnmp does: every context of three fabrics, both paths.

Each context is walked with GETBULK from 1.3.6.1 (across the system group,
IF-MIB's two subtrees around the snmp group, the InfiniBand subtree and the
agent's own MIBs to endOfMibView), each
request sent to pysnmp and to the fast responder of the same engine and
the two answers compared octet for octet (sysUpTime and the snmp group
counters, which tick or count between the two, by type only). Big tables
are sampled: after 80 instances of a column the walk jumps to the next
column, through both paths alike. OIDs met on the way are then asked
again with GET, GETNEXT and GETBULK in SNMPv1 and SNMPv2c with assorted
non-repeaters and max-repetitions, next to missing, hidden and foreign
names. pysnmp caps GETBULK at 64 repeater varbinds, so these requests
stay under it (test_fast_reads.py covers what lies beyond).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support import sysfs_trees as trees
from tests.support.fast_diff import COMMUNITY, KEYS_COMMUNITY, TwoPaths, assert_same_response, response_varbinds
from tests.support.wire import V1, V2C, community_request

from ibsnmp.agent.views import key_subtrees
from ibsnmp.mib.subtrees import IF_MIB_IFMIB, IF_MIB_INTERFACES
from ibsnmp.providers.simulated import SimulatedProvider
from ibsnmp.providers.sysfs import SysfsProvider
from ibsnmp.providers.topology import TopologyProvider
from ibsnmp.wire.ber import COUNTER64, END_OF_MIB_VIEW
from tests.support.paths import DATA_DIR

# Heavy in process (a minute or so): left out of `make quick`.
pytestmark = pytest.mark.slow

Oid = tuple[int, ...]
TOPOLOGY = DATA_DIR / "edr_hdr_router.topo"
SYS_DESCR = (1, 3, 6, 1, 2, 1, 1, 1, 0)
INFINIBAND = (1, 3, 6, 1, 3, 117)
IF_NUMBER = IF_MIB_INTERFACES + (1, 0)
IF_X_ENTRY = IF_MIB_IFMIB + (1, 1, 1)
# Where the IF-MIB subtrees meet pysnmp's tree: their roots and ends, the
# gaps between them, empty tables, the last columns of ifTable and ifXTable.
IF_MIB_EDGES: list[Oid] = [
    IF_MIB_INTERFACES, IF_NUMBER, IF_MIB_INTERFACES + (2, 1, 22), IF_MIB_INTERFACES + (2, 1, 22, 999),
    (1, 3, 6, 1, 2, 1, 3), (1, 3, 6, 1, 2, 1, 11, 99), (1, 3, 6, 1, 2, 1, 30, 1), IF_MIB_IFMIB,
    IF_X_ENTRY + (18,), IF_X_ENTRY + (19, 2**31), IF_MIB_IFMIB + (1, 2, 1), IF_MIB_IFMIB + (1, 4),
    IF_MIB_IFMIB + (1, 5, 0), IF_MIB_IFMIB + (2,), (1, 3, 6, 1, 2, 1, 32), (1, 3, 6, 1, 3, 116, 1),
]
COLUMN_SAMPLE = 80  # instances of one column walked before jumping to the next
COLUMN_DEPTH = 10  # arcs of 1.3.6.1.3.117.<mib>.<group>.<table>.<entry> + column


def _sysfs_provider(root: Path) -> SysfsProvider:
    trees.down_port(root)
    trees.second_hca(root)
    trees.roce_port(root)
    trees.no_pma(root)
    return SysfsProvider(root, 60.0)


@pytest.fixture(scope="module", params=["simulated", "sysfs", "topology"])
def paths(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> TwoPaths:
    if request.param == "simulated":
        provider: Any = SimulatedProvider("fat-tree:spines=1,leaves=2,hosts=2", 1,
                                          watch_interval=0)
    elif request.param == "sysfs":
        provider = _sysfs_provider(tmp_path_factory.mktemp("sysfs"))
    else:
        provider = TopologyProvider(TOPOLOGY, sm_guid=0x248A070300A0B101, sm_priority=14)
    return TwoPaths(provider)


def _community(context: bytes, base: str = COMMUNITY) -> bytes:
    return base.encode() + (b"@" + context if context else b"")


def _both(paths: TwoPaths, data: bytes) -> bytes:
    slow = paths.pysnmp(data)
    fast = paths.fast(data)
    assert_same_response(data, slow, fast)
    assert fast is not None
    return fast


def _walk(paths: TwoPaths, community: bytes) -> list[tuple[Oid, int]]:
    """Every (OID, tag) of a sampled GETBULK walk from 1.3.6.1, compared on the way."""
    seen: list[tuple[Oid, int]] = []
    per_column: dict[Oid, int] = {}
    oid: Oid = (1, 3, 6, 1)
    while True:
        reply = _both(paths, community_request("bulk", [oid], community=community,
                                               max_repetitions=40))
        varbinds = response_varbinds(reply)
        for found, tag in varbinds:
            if tag == END_OF_MIB_VIEW:
                return seen
            seen.append((found, tag))
        oid = varbinds[-1][0]
        if oid[:6] == INFINIBAND and len(oid) > COLUMN_DEPTH:
            column = oid[:COLUMN_DEPTH]
            per_column[column] = per_column.get(column, 0) + len(varbinds)
            if per_column[column] >= COLUMN_SAMPLE:
                oid = column[:-1] + (column[-1] + 1,)


def _requests(seen: list[tuple[Oid, int]], community: bytes, rng: random.Random) -> Iterator[bytes]:
    """Reads around OIDs met in a walk: instances, their parents and neighbours."""
    oids = [oid for oid, _ in seen]
    sample = rng.sample(oids, min(25, len(oids)))
    sample += [oid for oid, tag in seen if tag == COUNTER64][:10]  # v1 maps these
    last = oids[-1]
    odd = [(1, 3, 6, 1, 3, 117, 99), (1, 3, 6, 1, 6, 3, 18, 1, 1, 1, 2), (2, 5, 1), (0, 0, 0),
           (1, 3, 6, 1, 3, 117), last, last + (0,), SYS_DESCR[:-1]] + list(key_subtrees())
    odd += IF_MIB_EDGES
    for oid in sample + odd:
        neighbour = rng.choice(oids)
        for version in (V1, V2C):
            kw: dict[str, Any] = {"community": community, "version": version}
            yield community_request("get", [oid], **kw)
            yield community_request("get", [oid[:-1], oid + (0,), SYS_DESCR, neighbour], **kw)
            yield community_request("next", [oid], **kw)
            yield community_request("next", [oid[:-1], neighbour, last], **kw)
        non_repeaters, repetitions = rng.choice([(0, 0), (0, 1), (1, 3), (2, 5), (3, 7), (5, 2)])
        yield community_request("bulk", [oid, neighbour, SYS_DESCR[:-1]][:rng.randint(1, 3)],
                                community=community, non_repeaters=non_repeaters,
                                max_repetitions=repetitions)
    yield community_request("bulk", [last, (2, 5)], community=community, max_repetitions=5)


def test_every_context_answers_as_pysnmp(paths: TwoPaths) -> None:
    rng = random.Random(14)
    contexts = list(paths.contexts())
    assert len(contexts) > 1
    for context in contexts:
        seen = _walk(paths, _community(context))
        assert len(seen) > 100, context
        # Through both IF-MIB subtrees: ifNumber and every node's interfaces.
        assert any(oid == IF_NUMBER for oid, _ in seen), context
        assert any(oid[: len(IF_X_ENTRY)] == IF_X_ENTRY for oid, _ in seen), context
        for data in _requests(seen, _community(context), rng):
            _both(paths, data)


def test_keys_community_reads_what_its_view_shows(paths: TwoPaths) -> None:
    community = _community(b"", KEYS_COMMUNITY)
    for subtree in key_subtrees():
        for kind in ("get", "next", "bulk"):
            _both(paths, community_request(kind, [subtree, subtree + (1,)], community=community,
                                           max_repetitions=4))

"""Forwarding tables read from OpenSM's LFT dump and from ibroute output.

The data files were written on the ibsim ring (tests/data/ibsim/ring.net)
with OpenSM 3.3.23 routing it: `ibnetdiscover`, OpenSM's
`opensm-lfts.dump` (`-D 0x43 --dump_files_dir`) and `ibroute -G` of each
switch, concatenated.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ibsnmp.fabric import routing
from ibsnmp.fabric.iba import UNROUTED_PORT
from ibsnmp.fabric.ibnetdiscover_read import load_topology
from ibsnmp.fabric.lft_read import LftError, load_lfts, read_lfts, with_forwarding
from tests.support.paths import DATA_DIR

DATA = DATA_DIR
RING = DATA / "ibsim_ring.topo"
OPENSM_DUMP = DATA / "ibsim_ring-opensm-lfts.dump"
IBROUTE = DATA / "ibsim_ring.ibroute"
S1, S2, S3 = 0x200000, 0x200001, 0x200002

# What OpenSM programmed (ibroute on the running fabric): DLID -> port.
S1_TABLE = {1: 1, 2: 0, 3: 7, 4: 8, 5: 2, 6: 7, 7: 8}


@pytest.mark.parametrize("path", [OPENSM_DUMP, IBROUTE], ids=["opensm-dump", "ibroute"])
def test_both_formats_give_the_tables_opensm_programmed(path: Path) -> None:
    tables = load_lfts(path)
    assert sorted(tables) == [S1, S2, S3]
    s1 = tables[S1]
    assert (s1.lid, s1.top) == (2, 7)
    assert {lid: port for lid, port in enumerate(s1.ports) if port != UNROUTED_PORT} == S1_TABLE
    assert s1.ports[0] == UNROUTED_PORT  # LID 0 is not listed: no route
    assert tables[S2].ports[3] == tables[S3].ports[4] == 0  # each switch's own LID: port 0


def test_the_two_formats_agree() -> None:
    assert load_lfts(OPENSM_DUMP) == load_lfts(IBROUTE)


def test_the_fabric_serves_the_tables_and_their_top() -> None:
    fabric, strangers = with_forwarding(load_topology(RING), load_lfts(OPENSM_DUMP))
    assert strangers == ()
    assert fabric.computes_routes is False and fabric.forwarding is not None
    lft = routing.linear_forwarding_table(fabric, S1)
    assert {lid: port for lid, port in enumerate(lft) if port != UNROUTED_PORT} == S1_TABLE
    switch = fabric.nodes[S1].switch
    assert switch is not None and switch.linear_fdb_top == 7
    # Traces follow the SM's tables: H-1 (LID 1) -> S-1 -> S-3 -> H-4 (LID 7).
    hops = routing.trace(fabric, 1, 7).hops
    assert [(hop.node_guid, hop.in_port, hop.out_port) for hop in hops] == [
        (0x100000, None, 1), (S1, 1, 8), (S3, 7, 1), (0x100009, 1, None)]
    # Nothing else of SwitchInfo is invented on the way.
    assert switch.linear_fdb_cap is None


def test_tables_of_switches_the_topology_lacks_are_not_served() -> None:
    text = OPENSM_DUMP.read_text().replace("0x0000000000200002", "0x0000000000abcdef")
    fabric, strangers = with_forwarding(load_topology(RING), read_lfts(text))
    assert strangers == (0xABCDEF,)
    assert routing.linear_forwarding_table(fabric, S3) == b""
    assert routing.linear_forwarding_table(fabric, S1)


@pytest.mark.parametrize("change, message, line_no", [
    (lambda t: t.replace("7 lids dumped\nUnicast lids [0-7] of switch Lid 3",
                         "6 lids dumped\nUnicast lids [0-7] of switch Lid 3"),
     "says 6 LIDs but the table has 7 as its top LID", 9),
    (lambda t: t.replace("7 lids dumped", "7 valid lids dumped", 1).replace("0x0005 002 #", "#", 1),
     "says 7 LIDs but the table has 6 entries", 9),
    (lambda t: t.replace("0x0003 007 #", "0x0002 007 #", 1), "LID 2 is listed twice", 4),
    (lambda t: t.replace("0x0007 008 #", "0x0009 008 #", 1), "LID 9 outside the table's range 0-7", 8),
    (lambda t: t.replace("0x0005 002 #", "0x0005 300 #", 1), "egress port 300 outside 0..254", 6),
    (lambda t: t.replace("0x0005 002 #", "0x0005 two #", 1), "expected an entry", 6),
    (lambda t: "0x0001 001\n" + t, "expected 'Unicast lids", 1),
    (lambda t: t.replace("7 lids dumped\n", "", 1), "a new table starts before", 9),
    (lambda t: "Multicast mlids [0xc000-0xc3ff] of switch Lid 2 guid 0x200000 (S-1):\n",
     "multicast tables are not read", 1),
])
def test_a_bad_table_names_its_line(change: Callable[[str], str], message: str,
                                    line_no: int) -> None:
    with pytest.raises(LftError, match=message) as caught:
        read_lfts(change(OPENSM_DUMP.read_text()), source="lfts")
    assert caught.value.line_no == line_no


def test_a_file_cut_short_is_refused_whole(tmp_path: Path) -> None:
    text = OPENSM_DUMP.read_text()
    cut = tmp_path / "cut.dump"
    cut.write_text(text[: text.index("7 lids dumped", 600)])
    with pytest.raises(LftError, match="has no closing 'N lids dumped' line: the file is incomplete"):
        load_lfts(cut)
    with pytest.raises(LftError, match="cannot read"):
        load_lfts(tmp_path / "missing.dump")


def test_a_path_record_needs_values_that_were_read() -> None:
    import dataclasses
    from types import MappingProxyType

    from ibsnmp.sa.query import PathQuery, path_lifetime, path_records

    fabric, _ = with_forwarding(load_topology(RING), load_lfts(OPENSM_DUMP))
    route = routing.trace(fabric, 1, 7)
    # The rate is the dump's (4xSDR); MTU and lifetime were never read.
    assert route.rate is not None and route.rate.gbps == 10.0
    assert route.mtu is None and path_lifetime(fabric, route) is None
    # Even with a P_Key both ends share, no record is made of guessed values.
    nodes = dict(fabric.nodes)
    for guid in (0x100000, 0x100009):
        node = nodes[guid]
        ports = tuple(dataclasses.replace(p, pkeys=(0xFFFF,)) for p in node.ports)
        nodes[guid] = dataclasses.replace(node, ports=ports)
    shared = dataclasses.replace(fabric, nodes=MappingProxyType(nodes))
    assert path_records(shared, PathQuery(slid=1, dlid=7)) == []

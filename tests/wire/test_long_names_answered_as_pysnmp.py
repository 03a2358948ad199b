"""GETNEXT and GETBULK of long names (128 arcs, the longest RFC 2578 allows)
in the tables of a switch's context, as an attacker with a read community
sends them: the fast responder places them among the rows by their octets
(mib.virtual.ElementPlacer) and answers each request as pysnmp's command
responders do, octet for octet, in SNMPv1 (its walk steps kept apart:
Counter64 objects skipped) and SNMPv2c alike."""

from __future__ import annotations

import pytest
from tests.support.fast_diff import COMMUNITY, TwoPaths, assert_same_response, response_varbinds
from tests.support.wire import V1, V2C, community_request, decode_response

from ibsnmp.providers.simulated import SimulatedProvider
from ibsnmp.wire.ber import END_OF_MIB_VIEW

# Heavy in process (pysnmp answers every request too): left out of `make quick`.
pytestmark = pytest.mark.slow

Oid = tuple[int, ...]
NODE_TYPE = (1, 3, 6, 1, 3, 117, 7, 1, 2, 1, 1, 5)  # IB-SM-MIB ibSmNodeInfoType: switch(2)
COLUMNS = {
    "LFT": (1, 3, 6, 1, 3, 117, 3, 1, 9, 1, 1, 2),
    "MFT": (1, 3, 6, 1, 3, 117, 3, 1, 11, 1, 1, 2),
    "SL-to-VL": (1, 3, 6, 1, 3, 117, 3, 1, 7, 1, 1, 4),
    "port info": (1, 3, 6, 1, 3, 117, 3, 1, 5, 1, 1, 2),
}
# In the default context: the fabric's interfaces.
IF_X_COLUMN = (1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 1)  # ifName: its last row is before Counter64 ones
PER_REQUEST = 16


@pytest.fixture(scope="module")
def paths() -> TwoPaths:
    return TwoPaths(SimulatedProvider("fat-tree:spines=2,leaves=2,hosts=2", 1, watch_interval=0))


def walk(paths: TwoPaths, community: bytes, column: Oid, most: int = 400) -> list[Oid]:
    rows: list[Oid] = []
    oid = column
    while len(rows) < most:
        reply = paths.fast(community_request("next", [oid], community=community))
        assert reply is not None
        (found, tag), = response_varbinds(reply)
        if tag == END_OF_MIB_VIEW or found[:len(column)] != column:
            return rows
        rows.append(found)
        oid = found
    return rows


def switch(paths: TwoPaths) -> bytes:
    """The community of a switch's context (`public@<node GUID>`)."""
    for oid in walk(paths, COMMUNITY.encode(), NODE_TYPE):
        reply = paths.fast(community_request("get", [oid]))
        assert reply is not None
        if int(decode_response(reply)[3][0][1]) == 2:
            return COMMUNITY.encode() + b"@" + bytes(oid[-8:]).hex().encode()
    raise AssertionError("no switch in the fabric")


def long_names(rows: list[Oid], column: Oid, salt: int) -> list[Oid]:
    """Names after, on and before rows spread over the table, and under the
    column before its rows, made 128 arcs long with large and small arcs."""
    names = []
    for i in range(PER_REQUEST):
        row = rows[(i * 7 + salt) * len(rows) // (7 * PER_REQUEST) % len(rows)]
        if i % 4 == 1 and row[-1] > 0:
            row = row[:-1] + (row[-1] - 1,)  # a gap before a row
        elif i % 4 == 2:
            row = column  # before every row
        junk = (2**32 - 1, 1 << 28, 5, 127, 128, 16383, 16384)[i % 7]
        names.append(row + (junk,) * (126 - len(row)) + (salt, i))
    return names


@pytest.mark.parametrize("table", sorted(COLUMNS) + ["ifXTable"])
def test_long_names_answer_as_pysnmp(paths: TwoPaths, table: str) -> None:
    community, column = ((COMMUNITY.encode(), IF_X_COLUMN) if table == "ifXTable"
                         else (switch(paths), COLUMNS[table]))
    rows = walk(paths, community, column)
    assert rows, table
    for salt in range(3):
        names = long_names(rows, column, salt)
        assert all(len(name) == 128 for name in names)
        requests = [community_request("next", names, community=community, version=version)
                    for version in (V1, V2C)]
        requests.append(community_request("bulk", names, community=community,
                                          non_repeaters=2, max_repetitions=3))
        for data in requests * 2:  # the second time from kept steps
            assert_same_response(data, paths.pysnmp(data), paths.fast(data))

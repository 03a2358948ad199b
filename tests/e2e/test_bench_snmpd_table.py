"""The walk benchmark's snmpd table-helper peer: the `table`/`add_row` lines
written from a recorded walk, and snmpd serving them as recorded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench import snmpd_table
from bench.snmpd_table import (
    COUNTER64,
    INTEGER,
    OCTET_STRING,
    Hidden,
    TableConfigError,
    Varbind,
    config_value,
    table_config,
    table_shape,
    view_lines,
)

TABLE = (1, 3, 6, 1, 3, 117, 7, 1, 3, 1)  # IB-SM-MIB::ibSmPortInfoTable
ENTRY = TABLE + (1,)
ROOT = TABLE[:-1]  # ibSmPortInfo: the subtree the bench walks
PREFIX = bytes.fromhex("fe80000000000000")
OCTETS = {1: 8, 2: 8, 4: 8, 5: 8, 8: 4, 9: 2, 44: 1, 45: 1}  # the MIB's SIZEs
BLANKS_AND_BINARY = b' "\x00\xff'  # a blank, a quote, NUL and 0xff in ibSmPortInfoCapMask
AFTER = ((1, 3, 6, 1, 3, 117, 7, 1, 4, 1, 1, 1, 7), OCTET_STRING, PREFIX)  # past the table


def row(guid: int, port: int, lacking: tuple[int, ...] = ()) -> list[Varbind]:
    """One recorded row: INTEGER columns hold 10*column + port, the MKey column (4) is hidden."""
    suffix = tuple(PREFIX) + tuple(guid.to_bytes(8, "big")) + (port,)
    cells: dict[int, tuple[int, object]] = {}
    for column in range(1, 46):
        if column == 4 or column in lacking:
            continue
        if column in OCTETS:
            value = {1: PREFIX, 2: guid.to_bytes(8, "big"), 5: PREFIX, 8: BLANKS_AND_BINARY,
                     9: b"\x00\x01", 44: b" ", 45: b""}[column]
            cells[column] = (OCTET_STRING, value)
        else:
            cells[column] = (INTEGER, column * 10 + port)
    cells[3] = (INTEGER, port)
    return [(ENTRY + (column,) + suffix, tag, value) for column, (tag, value) in cells.items()]


def recording() -> list[Varbind]:
    """Four rows, two of them without LID and MasterSmLID (6, 7), in walk order."""
    varbinds = (row(0x0002C90300000001, 1) + row(0x0002C90300000001, 2, lacking=(6, 7))
                + row(0x0002C90300000002, 1) + row(0x0002C90300000002, 2, lacking=(6, 7)))
    return sorted(varbinds)


def test_shape_is_the_mibs() -> None:
    shape = table_shape("ibSmPortInfoTable")
    assert shape.oid == TABLE
    assert [c.subid for c in shape.columns] == list(range(1, 46))
    assert {c.subid for c in shape.columns if c.tag == OCTET_STRING} == set(OCTETS)
    assert shape.index_tags == (OCTET_STRING, OCTET_STRING, INTEGER)


def test_rows_are_add_row_lines_in_index_order() -> None:
    config = table_config(table_shape("ibSmPortInfoTable"), recording())
    assert (config.rows, config.cells) == (4, 4 * 44 - 4)
    assert config.lines[0] == "table ibSmPortInfoTable"
    assert len(config.lines) == 5
    ints = " ".join(str(c * 10 + 1) for c in range(10, 44))
    assert config.lines[1] == (
        "add_row ibSmPortInfoTable 0xfe80000000000000 0x0002c90300000001 1 "
        '0xfe80000000000000 0x0002c90300000001 1 "" 0xfe80000000000000 61 71 '
        f"0x202200ff 0x0001 {ints} 0x20 \"\"")
    # The lacking LID and MasterSmLID get zeros, which the view hides.
    assert config.lines[2].startswith(
        "add_row ibSmPortInfoTable 0xfe80000000000000 0x0002c90300000001 2 "
        '0xfe80000000000000 0x0002c90300000001 2 "" 0xfe80000000000000 0 0 0x202200ff ')
    assert [line.split()[3:5] for line in config.lines[1:]] == [
        ["0x0002c90300000001", "1"], ["0x0002c90300000001", "2"],
        ["0x0002c90300000002", "1"], ["0x0002c90300000002", "2"]]


def test_the_view_hides_the_hidden_column_and_the_lacking_cells_with_masks() -> None:
    config = table_config(table_shape("ibSmPortInfoTable"), recording())
    lacking = ".254.128.0.0.0.0.0.0.0.2.201.3.0.0.0.1.2"  # the first row without a LID
    # Every sub-identifier but the port is a wildcard: the rows with a LID are port 1.
    assert view_lines("recorded", config.hidden) == [
        "view recorded included .1",
        "view recorded excluded .1.3.6.1.3.117.7.1.3.1.1.4",
        f"view recorded excluded .1.3.6.1.3.117.7.1.3.1.1.6{lacking} ff:f0:00:08",
        f"view recorded excluded .1.3.6.1.3.117.7.1.3.1.1.7{lacking} ff:f0:00:08",
    ]


def test_a_mask_never_covers_a_recorded_cell() -> None:
    # Port 2 of the first node lacks its LID, port 2 of the second has one:
    # the mask keeps both the port and the node's last GUID octet.
    varbinds = sorted(row(0x0002C90300000001, 1) + row(0x0002C90300000001, 2, lacking=(6,))
                      + row(0x0002C90300000002, 2))
    config = table_config(table_shape("ibSmPortInfoTable"), varbinds)
    (cell,) = [h for h in config.hidden if h.oid[len(ENTRY)] == 6]
    assert not any(cell.matches(oid) for oid, _tag, _value in varbinds)
    assert cell.matches(ENTRY + (6,) + tuple(PREFIX) + (0, 2, 201, 3, 0, 0, 0, 1, 2))
    assert cell.mask() == "ff:f0:00:18"


def test_mask_bits() -> None:
    assert Hidden((1, 3, 6, 1, 9), frozenset({1, 4})).mask() == "b0"
    assert Hidden(tuple(range(9)), frozenset({8})).mask() == "ff:00"
    assert Hidden(tuple(range(10)), frozenset({0})).mask() == "7f:c0"


def test_values_as_read_config_reads_them() -> None:
    assert config_value(COUNTER64, 2**64 - 1, "x") == "18446744073709551615"
    assert config_value(0x40, b"\x0a\x00\x00\x01", "x") == "10.0.0.1"
    assert config_value(0x06, (1, 3, 6, 1), "x") == ".1.3.6.1"
    assert config_value(INTEGER, -5, "x") == "-5"
    with pytest.raises(TableConfigError, match="0x44"):
        config_value(0x44, b"\x01", "x")  # Opaque: read_config_read_memory has no reader
    with pytest.raises(TableConfigError, match="atoi"):
        config_value(INTEGER, 2**31, "x")
    with pytest.raises(TableConfigError, match="at most 1023"):
        config_value(OCTET_STRING, bytes(1024), "x")


def test_what_the_table_helper_would_serve_otherwise_is_refused() -> None:
    shape = table_shape("ibSmPortInfoTable")
    good = recording()
    oid, _tag, value = good[0]
    with pytest.raises(TableConfigError, match="recorded as BER type 0x42"):
        table_config(shape, [(oid, 0x42, value)])  # a Gauge32 where the MIB has a string
    with pytest.raises(TableConfigError, match="column 46 is not"):
        table_config(shape, [(ENTRY + (46,) + oid[len(ENTRY) + 1:], INTEGER, 1)])
    with pytest.raises(TableConfigError, match="not an index"):
        table_config(shape, [(oid[:-1], OCTET_STRING, value)])  # the port is missing


def snmpd_path() -> str | None:
    sbin = Path("/usr/sbin/snmpd")  # not on a user's PATH
    return shutil.which("snmpd") or (str(sbin) if sbin.exists() else None)


@pytest.mark.skipif(snmpd_path() is None, reason="net-snmp snmpd is not installed")
def test_snmpd_serves_the_recording_as_recorded(tmp_path: Path) -> None:
    from bench import walk
    from bench.walk import Processes, SnmpClient  # type: ignore[attr-defined]  # walk's own import

    varbinds = recording() + [AFTER]
    conf = tmp_path / "snmpd.conf"
    peer = walk.write_table_conf(conf, varbinds, ROOT, len(varbinds) - 1)
    assert (peer.rows, peer.cells, peer.view_entries) == (4, len(varbinds) - 1, 3)
    with Processes() as procs:
        server, _seconds = walk.start_snmpd(procs, conf, tmp_path / "persist", ROOT,
                                            name="snmpd-table", table=True)
        with SnmpClient(server.port, timeout=5.0) as client:
            served = list(client.walk(ROOT, max_repetitions=7))
            assert served == recording()
            assert client.get_next(served[-1][0]) == AFTER


@pytest.mark.skipif(snmpd_path() is None, reason="net-snmp snmpd is not installed")
def test_snmpd_complaints_stop_the_peer(tmp_path: Path) -> None:
    from bench import walk
    from bench.walk import Processes  # type: ignore[attr-defined]  # walk's own import

    conf = tmp_path / "snmpd.conf"
    walk.write_table_conf(conf, recording(), ROOT, len(recording()))
    conf.write_text(conf.read_text() + "add_row ibSmPortInfoTable 0x00\n")
    with Processes() as procs, pytest.raises(walk.BenchError, match="missing"):
        walk.start_snmpd(procs, conf, tmp_path / "persist", ROOT, name="snmpd-table",
                         table=True)


def test_ber_tags_of_syntaxes() -> None:
    from pysnmp.proto import rfc1902

    assert [snmpd_table.ber_tag(syntax()) for syntax in (
        rfc1902.Integer32, rfc1902.OctetString, rfc1902.IpAddress, rfc1902.Counter32,
        rfc1902.Unsigned32, rfc1902.TimeTicks, rfc1902.Counter64, rfc1902.Bits,
        rfc1902.ObjectIdentifier)] == [0x02, 0x04, 0x40, 0x41, 0x42, 0x43, 0x46, 0x04, 0x06]

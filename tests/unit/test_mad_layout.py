"""MAD layouts: bit-field encoding, known field positions, and MADs captured
from an ibsim fabric (tests/data/ibsim/ring.net, the values `smpquery -D`
printed on the same fabric)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ibsnmp.mad import attributes as attrs
from ibsnmp.mad.layout import ArrayField, Field, FieldValue, Layout, LayoutError, get_bits, set_bits
from ibsnmp.mad.packets import MadError, decode_reply, directed_route_get, perf_get
from tests.support.paths import DATA_DIR

MADS = DATA_DIR / "mads"


def captured(name: str) -> bytes:
    return bytes.fromhex((MADS / f"{name}.hex").read_text().strip())


def test_bits_cross_octet_boundaries() -> None:
    data = bytearray(4)
    set_bits(data, 5, 7, 0b1010011)
    assert data.hex() == "0530" + "0000"
    assert get_bits(data, 5, 7) == 0b1010011
    set_bits(data, 31, 1, 1)
    assert get_bits(data, 0, 32) == 0x05300001


def test_bits_refuse_values_and_ranges_that_do_not_fit() -> None:
    with pytest.raises(LayoutError):
        set_bits(bytearray(2), 4, 4, 16)
    with pytest.raises(LayoutError):
        get_bits(b"\0\0", 12, 8)


def test_layout_refuses_overlapping_fields() -> None:
    with pytest.raises(LayoutError, match="overlaps"):
        Layout("Bad", 4, (Field("A", 0, 9), Field("B", 8, 8)))


def test_every_attribute_round_trips_distinct_values() -> None:
    layouts = [a.layout for a in vars(attrs).values() if isinstance(a, attrs.Attribute)]
    assert len(layouts) >= 13
    for layout in layouts:
        values: dict[str, FieldValue] = {}
        for n, f in enumerate(layout.fields):
            if isinstance(f, ArrayField):
                values[f.name] = tuple((n + i) % (1 << f.element_width) for i in range(f.count))
            elif type(f) is Field:
                values[f.name] = (n * 0x9E3779B97F4A7C15 + 1) % (1 << f.width)
        encoded = layout.encode(values)
        decoded = layout.decode(encoded)
        assert {k: decoded[k] for k in values} == values, layout.name


def test_port_info_field_positions() -> None:
    data = attrs.PORT_INFO.layout.encode({"LID": 0x1234, "PortState": 4, "LMC": 1,
                                          "NeighborMTU": 4, "LinkSpeedExtEnabled": 0x1F})
    assert data[16:18] == b"\x12\x34"
    assert data[32] == 0x04  # PortState: low nibble of octet 32
    assert data[34] == 0x01  # LMC: low three bits of octet 34
    assert data[36] == 0x40  # NeighborMTU: high nibble of octet 36
    assert data[63] == 0x1F


def test_directed_route_request_layout() -> None:
    mad = directed_route_get(attrs.NODE_INFO, [1, 7], 0x0102030405060708)
    assert mad[:4] == bytes([1, 0x81, 1, 0x01])
    assert mad[6:8] == bytes([0, 2])  # hop pointer, hop count
    assert mad[8:16] == bytes.fromhex("0102030405060708")
    assert mad[16:18] == b"\x00\x11"
    assert mad[32:36] == b"\xff\xff\xff\xff"  # DrSLID, DrDLID: permissive
    assert mad[128:131] == bytes([0, 1, 7])
    with pytest.raises(MadError):
        directed_route_get(attrs.NODE_INFO, [0], 1)


def test_perf_request_carries_port_select() -> None:
    mad = perf_get(attrs.PORT_COUNTERS, 5, port_select=3)
    assert mad[1] == 0x04 and mad[16:18] == b"\x00\x12"
    assert mad[64 + 1] == 3


def test_captured_node_info_of_the_local_ca() -> None:
    reply = decode_reply(captured("nodeinfo_local"), attrs.NODE_INFO)
    assert reply.status == 0
    assert reply.header["Direction"] == 1 and reply.header["HopCount"] == 0
    assert reply.attribute == {
        "BaseVersion": 1, "ClassVersion": 1, "NodeType": 1, "NumPorts": 2,
        "SystemImageGUID": 0x100000, "NodeGUID": 0x100000, "PortGUID": 0x100001,
        "PartitionCap": 64, "DeviceID": 0, "Revision": 0xA1, "LocalPortNum": 1, "VendorID": 0,
    }


def test_captured_node_info_one_hop_away() -> None:
    reply = decode_reply(captured("nodeinfo_s1"), attrs.NODE_INFO)
    initial_path = reply.header["InitialPath"]
    assert isinstance(initial_path, tuple)
    assert reply.header["HopCount"] == 1 and initial_path[:2] == (0, 1)
    assert reply.attribute["NodeType"] == 2 and reply.attribute["NumPorts"] == 8
    assert reply.attribute["NodeGUID"] == 0x200000 and reply.attribute["PartitionCap"] == 8


def test_captured_port_info() -> None:
    local = decode_reply(captured("portinfo_local"), attrs.PORT_INFO).attribute
    assert local["CapabilityMask"] == 0x50C048 and local["M_KeyLeasePeriod"] == 4089
    assert local["GUIDCap"] == 32 and local["SubnetTimeOut"] == 31
    assert local["CapabilityMask2"] == 0x30
    switch = decode_reply(captured("portinfo_s1_p7"), attrs.PORT_INFO).attribute
    assert (switch["LinkWidthSupported"], switch["LinkWidthActive"]) == (31, 2)
    assert (switch["LinkSpeedSupported"], switch["LinkSpeedActive"]) == (7, 1)
    assert (switch["PortState"], switch["PortPhysicalState"]) == (2, 5)
    assert (switch["NeighborMTU"], switch["MTUCap"], switch["VLCap"]) == (4, 4, 4)
    assert (switch["VLStallCount"], switch["OperationalVLs"]) == (7, 4)


def test_captured_node_description_and_switch_info() -> None:
    assert decode_reply(captured("nodedesc_s1"), attrs.NODE_DESCRIPTION).attribute == {
        "NodeString": "S-1"}
    info = decode_reply(captured("switchinfo_s1"), attrs.SWITCH_INFO).attribute
    assert (info["LinearFDBCap"], info["MulticastFDBCap"]) == (30720, 1024)
    assert (info["PortStateChange"], info["PartitionEnforcementCap"]) == (1, 64)
    assert (info["FilterRawInboundCap"], info["FilterRawOutboundCap"]) == (1, 1)


def test_reply_for_another_attribute_is_refused() -> None:
    with pytest.raises(MadError, match="attribute"):
        decode_reply(captured("nodeinfo_s1"), attrs.PORT_INFO)
    with pytest.raises(MadError, match="not a response"):
        decode_reply(directed_route_get(attrs.NODE_INFO, [], 1), attrs.NODE_INFO)


def test_vl_arbitration_entries_split_vl_and_weight() -> None:
    block = tuple([0x0340, 0x0701] + [0] * 30)
    data = attrs.VL_ARBITRATION_TABLE.layout.encode({"VLWeightBlock": block})
    assert data[:4] == bytes.fromhex("03400701")
    decoded = attrs.VL_ARBITRATION_TABLE.layout.decode(data)["VLWeightBlock"]
    assert isinstance(decoded, tuple)
    assert attrs.vl_arbitration_entries(decoded)[:2] == ((3, 0x40), (7, 1))


def test_octet_aligned_arrays_agree_with_bitwise_reading() -> None:
    data = bytes(range(64))
    for width in (8, 16, 64):
        array = ArrayField("A", 0, 512, count=512 // width, element_width=width)
        assert array.decode(data) == tuple(get_bits(data, i * width, width)
                                           for i in range(512 // width))
    with pytest.raises(LayoutError):
        ArrayField("Ports", 0, 16, count=2, element_width=8).encode(bytearray(2), (1, 256))

"""Compiled codecs: every layout's generated decoder and packer against the
field-by-field reference (`Layout.decode_generic`, `Layout.encode`), on the
MADs captured from ibsim and on seeded random buffers."""

from __future__ import annotations

import enum
import random
from pathlib import Path

import pytest

from ibsnmp.mad import attributes as attrs
from ibsnmp.mad.layout import AnyRecord, Layout, LayoutError
from ibsnmp.mad.packets import (
    MadError,
    MadReply,
    decode_reply,
    directed_route_get,
    lid_routed_get,
    perf_get,
)
from ibsnmp.mad.umad import reply_tid, with_transaction_id
from tests.support.paths import DATA_DIR

MADS = DATA_DIR / "mads"
MGMT_CLASS_OFFSET, SUBN_DIRECTED_ROUTE = 1, 0x81
# The directed-route SMPs among the captures (the SA's answers have tests of their own).
CAPTURED = [path for path in sorted(MADS.glob("*.hex"))
            if bytes.fromhex(path.read_text().strip())[MGMT_CLASS_OFFSET] == SUBN_DIRECTED_ROUTE]
HEADERS = (attrs.MAD_HEADER, attrs.LID_ROUTED_SMP, attrs.DIRECTED_ROUTE_SMP, attrs.GS_MAD)
ATTRIBUTES = tuple(a for a in vars(attrs).values() if isinstance(a, attrs.Attribute))
LAYOUTS = HEADERS + tuple(a.layout for a in ATTRIBUTES)
# Attributes named by ID in the captured SMPs (all are directed-route answers).
BY_ID = {a.attribute_id: a for a in ATTRIBUTES if a.layout.size == attrs.SMP_DATA_SIZE}


def _random_buffers(layout: Layout[AnyRecord], count: int) -> list[bytes]:
    rng = random.Random(layout.name)
    return [rng.randbytes(layout.size) for _ in range(count)]


def test_the_captured_mads_are_here() -> None:
    assert len(CAPTURED) >= 6


@pytest.mark.parametrize("path", CAPTURED, ids=lambda p: p.stem)
def test_compiled_decoders_equal_the_generic_one_on_captured_mads(path: Path) -> None:
    mad = bytes.fromhex(path.read_text().strip())
    for header in (attrs.MAD_HEADER, attrs.DIRECTED_ROUTE_SMP):
        assert header.decode(mad) == header.decode_generic(mad)
    attribute = BY_ID[header.decode(mad)["AttributeID"]]
    data = mad[attrs.DATA_OFFSET:]
    assert attribute.layout.decode(data) == attribute.layout.decode_generic(data)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
def test_compiled_codecs_equal_the_generic_ones_on_random_buffers(
        layout: Layout[AnyRecord]) -> None:
    names = [f.name for f in layout.fields]
    packer = layout.packer(names)
    encodable = 0
    for data in _random_buffers(layout, 100):
        values = layout.decode_generic(data)
        assert layout.decode(data) == values
        try:
            wanted = bytes(layout.encode(values))
        except LayoutError:
            # Random octets in a text field may not survive UTF-8 decoding: both refuse.
            with pytest.raises(LayoutError):
                packer(*values.values())
            continue
        assert bytes(packer(*values.values())) == wanted
        encodable += 1
    assert encodable


def test_a_decoder_of_some_fields_reads_only_those_in_the_order_asked() -> None:
    layout = attrs.PORT_INFO.layout
    data = _random_buffers(layout, 1)[0]
    everything = layout.decode_generic(data)
    wanted = ("PortState", "LID", "LinkWidthActive")
    assert list(layout.decoder(wanted)(data).items()) == [(n, everything[n]) for n in wanted]
    assert layout.decoder(wanted) is layout.decoder(list(wanted))  # compiled once
    with pytest.raises(LayoutError, match="no field 'Nonsense'"):
        layout.decoder(("Nonsense",))


def test_large_decoders_keep_the_fields_in_order_and_return_a_new_dictionary() -> None:
    # More than 16 fields are filled into a copy of a keyed dictionary, not a display.
    layout = attrs.PORT_INFO.layout
    first, second = _random_buffers(layout, 2)
    decoded = layout.decode(first)
    assert list(decoded) == [f.name for f in layout.fields] and len(decoded) > 16
    assert decoded == layout.decode_generic(first)
    again = layout.decode(second)
    assert again is not decoded and decoded == layout.decode_generic(first)
    backwards = tuple(f.name for f in reversed(layout.fields))
    assert list(layout.decoder(backwards)(first)) == list(backwards)


def test_short_buffers_are_refused_by_name() -> None:
    with pytest.raises(LayoutError, match="NodeInfo needs 64 octets, got 10"):
        attrs.NODE_INFO.layout.decode(bytes(10))


def test_a_packer_leaves_the_other_fields_zero() -> None:
    layout = attrs.PORT_INFO.layout
    packed = layout.packer(("LID", "PortState"))(0x1234, 4)
    assert bytes(packed) == bytes(layout.encode({"LID": 0x1234, "PortState": 4}))
    assert layout.decode(packed)["LID"] == 0x1234 and sum(packed) == 0x12 + 0x34 + 4


class _State(enum.IntEnum):
    ACTIVE = 4


@pytest.mark.parametrize(("value", "accepted"), [
    (15, True), (_State.ACTIVE, True), (16, False), (-1, False), (True, False), ("4", False),
])
def test_a_packer_checks_integers_as_encode_does(value: object, accepted: bool) -> None:
    layout = attrs.PORT_INFO.layout
    pack = layout.packer(("PortState",))
    if accepted:
        wanted = layout.encode({"PortState": value})  # type: ignore[dict-item]  # any type
        assert bytes(pack(value)) == bytes(wanted)
        return
    with pytest.raises(LayoutError, match="PortState"):
        layout.encode({"PortState": value})  # type: ignore[dict-item]  # a wrong type on purpose
    with pytest.raises(LayoutError, match="PortState"):
        pack(value)


def test_a_packer_checks_octets_and_arrays_as_encode_does() -> None:
    text = attrs.NODE_DESCRIPTION.layout.packer(("NodeString",))
    assert text("sw1")[:4] == b"sw1\0"
    with pytest.raises(LayoutError, match="NodeString"):
        text("x" * 65)
    with pytest.raises(LayoutError, match="NodeString"):
        text(b"bytes")
    table = attrs.LINEAR_FORWARDING_TABLE.layout.packer(("PortBlock",))
    with pytest.raises(LayoutError, match="PortBlock takes 64 elements"):
        table((1, 2))
    with pytest.raises(LayoutError, match="LinearForwardingTable"):
        table((256,) * 64)
    # Bit-packed arrays (4-bit SL-to-VL entries) go through the field itself.
    sl2vl = attrs.SL_TO_VL_MAPPING_TABLE.layout
    entries = tuple(range(16))
    assert bytes(sl2vl.packer(("SLtoVL",))(entries)) == bytes(sl2vl.encode({"SLtoVL": entries}))


def test_requests_are_what_the_generic_encoder_builds() -> None:
    route = (1, 7, 3)
    built = attrs.DIRECTED_ROUTE_SMP.decode_generic(directed_route_get(attrs.PORT_INFO, route,
                                                                       0x1234, 5))
    assert (built["HopCount"], built["AttributeModifier"], built["TransactionID"]) == (3, 5, 0x1234)
    initial_path = built["InitialPath"]
    assert isinstance(initial_path, tuple) and initial_path[:5] == (0, 1, 7, 3, 0)
    assert (built["DrSLID"], built["DrDLID"], built["Method"]) == (0xFFFF, 0xFFFF, 1)
    lid_routed = attrs.LID_ROUTED_SMP.decode_generic(lid_routed_get(attrs.NODE_INFO, 9, 2))
    assert (lid_routed["MgmtClass"], lid_routed["AttributeID"], lid_routed["TransactionID"],
            lid_routed["AttributeModifier"]) == (attrs.CLASS_SUBN_LID_ROUTED, 0x0011, 9, 2)
    perf = perf_get(attrs.PORT_COUNTERS, 3, 7)
    assert attrs.GS_MAD.decode_generic(perf)["MgmtClass"] == attrs.CLASS_PERF_MGT
    assert attrs.PORT_COUNTERS.layout.decode_generic(perf[attrs.DATA_OFFSET:])["PortSelect"] == 7


def test_transaction_ids_are_written_and_read_where_the_header_table_puts_them() -> None:
    mad = directed_route_get(attrs.NODE_INFO, (), 0)
    tagged = with_transaction_id(mad, 0xABCD_0000_1234_5678)
    assert attrs.MAD_HEADER.decode_generic(tagged)["TransactionID"] == 0xABCD_0000_1234_5678
    assert len(tagged) == len(mad) and tagged[16:] == mad[16:]
    assert reply_tid(tagged) == 0x1234_5678  # the kernel's agent bits are not ours


@pytest.mark.parametrize("path", CAPTURED, ids=lambda p: p.stem)
def test_a_replys_header_read_when_asked_is_the_whole_header(path: Path) -> None:
    mad = bytes.fromhex(path.read_text().strip())
    attribute = BY_ID[attrs.MAD_HEADER.decode(mad)["AttributeID"]]
    reply = decode_reply(mad, attribute)
    whole = attrs.DIRECTED_ROUTE_SMP.decode_generic(mad)
    del whole["Data"]
    assert reply.header == whole
    assert reply.status == whole["Status"]


def test_a_reply_without_its_header_needs_the_mad() -> None:
    with pytest.raises(MadError, match="header"):
        MadReply(None, 0, {})
    assert MadReply({"Status": 0}, 0, {}).header == {"Status": 0}


def test_fixed_values_are_folded_into_a_packer_as_encode_would_write_them() -> None:
    layout = attrs.DIRECTED_ROUTE_SMP
    fixed = {"BaseVersion": 1, "MgmtClass": 0x81, "DrSLID": 0xFFFF, "MKey": 2**64 - 1}
    pack = layout.packer(("HopCount", "InitialPath"), fixed=fixed)
    path = (0, 3, 5, *([0] * 61))
    assert bytes(pack(2, path)) == bytes(layout.encode({**fixed, "HopCount": 2,
                                                        "InitialPath": path}))
    assert layout.packer(("HopCount", "InitialPath"), fixed=dict(fixed)) is pack
    with pytest.raises(LayoutError, match="BaseVersion"):
        layout.packer(("HopCount",), fixed={"BaseVersion": 256})
    with pytest.raises(LayoutError, match="both fixed and given"):
        layout.packer(("HopCount",), fixed={"HopCount": 1})
    text = attrs.NODE_DESCRIPTION.layout
    assert bytes(text.packer((), fixed={"NodeString": "sw"})()) == bytes(
        text.encode({"NodeString": "sw"}))


def test_a_reader_returns_the_named_values_in_order() -> None:
    mad = bytes.fromhex((MADS / "portinfo_s1_p7.hex").read_text().strip())
    header = attrs.DIRECTED_ROUTE_SMP.decode_generic(mad)
    wanted = ("AttributeID", "Response", "HopCount")
    assert attrs.DIRECTED_ROUTE_SMP.reader(wanted)(mad) == tuple(header[n] for n in wanted)
    assert attrs.DIRECTED_ROUTE_SMP.reader(("Status",))(mad) == (header["Status"],)


def test_a_transaction_id_wider_than_its_field_is_refused() -> None:
    with pytest.raises(LayoutError, match="64 bits"):
        with_transaction_id(directed_route_get(attrs.NODE_INFO, (), 0), 1 << 64)

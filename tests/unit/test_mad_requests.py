"""The sweep's fast paths against the generic ones: SubnGet() requests built from
cached heads, replies checked without a MadReply, the receive status read from
libibumad's buffer header."""

from __future__ import annotations

import ctypes
import ctypes.util

import pytest

from ibsnmp.mad import attributes as attrs
from ibsnmp.mad import packets
from ibsnmp.mad.packets import (
    PERMISSIVE_LID,
    MadError,
    decode_reply,
    directed_route_get,
    reply_attribute,
)

# Every attribute the directed-route sweep reads, with modifiers as it sends them.
SWEPT = (
    (attrs.NODE_INFO, (0,)),
    (attrs.NODE_DESCRIPTION, (0,)),
    (attrs.PORT_INFO, (0, 1, 36, 254)),
    (attrs.SWITCH_INFO, (0,)),
    (attrs.LINEAR_FORWARDING_TABLE, (0, 1, 767)),
    (attrs.MULTICAST_FORWARDING_TABLE, (0, (1 << 28) | 3, (15 << 28) | 511)),
    (attrs.GUID_INFO, (0, 31)),
    (attrs.P_KEY_TABLE, (0, (7 << 16) | 1)),
    (attrs.SL_TO_VL_MAPPING_TABLE, (0, 9)),
    (attrs.VL_ARBITRATION_TABLE, ((1 << 16) | 3, (4 << 16) | 36)),
    (attrs.LED_INFO, (0, 5)),
    (attrs.SM_INFO, (0,)),
)
ROUTES = ((), (1,), (3, 17, 254), tuple(range(1, packets.MAX_HOPS + 1)))


def generic_request(attribute: attrs.AnyAttribute, route: tuple[int, ...], modifier: int) -> bytes:
    """The request as the field table encodes it, field by field."""
    return bytes(attrs.DIRECTED_ROUTE_SMP.encode({
        "BaseVersion": 1, "MgmtClass": attrs.CLASS_SUBN_DIRECTED_ROUTE, "ClassVersion": 1,
        "Method": attrs.METHOD_GET, "HopCount": len(route),
        "AttributeID": attribute.attribute_id, "AttributeModifier": modifier,
        "DrSLID": PERMISSIVE_LID, "DrDLID": PERMISSIVE_LID,
        "InitialPath": (0, *route, *(0,) * (packets.MAX_HOPS - len(route)))}))


@pytest.mark.parametrize(("attribute", "modifiers"), SWEPT, ids=lambda a: getattr(a, "name", ""))
def test_requests_from_cached_heads_are_the_generic_encoders(
        attribute: attrs.AnyAttribute, modifiers: tuple[int, ...]) -> None:
    for modifier in modifiers:
        for route in ROUTES:
            first = directed_route_get(attribute, route, 0, modifier)
            again = directed_route_get(attribute, list(route), 0, modifier)  # from the cache
            assert first == again == generic_request(attribute, route, modifier)
            assert len(first) == attrs.MAD_SIZE


def test_a_transaction_id_given_to_the_builder_is_in_the_request() -> None:
    built = attrs.DIRECTED_ROUTE_SMP.decode_generic(
        directed_route_get(attrs.PORT_INFO, (2, 4), 0xABCDEF, 3))
    assert (built["TransactionID"], built["HopCount"], built["AttributeModifier"]) == (
        0xABCDEF, 2, 3)
    initial_path = built["InitialPath"]
    assert isinstance(initial_path, tuple) and initial_path[:4] == (0, 2, 4, 0)


def test_the_head_cache_is_bounded_and_refilled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packets, "_MAX_HEADS", 4)
    packets._HEADS.clear()
    for block in range(10):
        assert directed_route_get(attrs.LINEAR_FORWARDING_TABLE, (1,), 0, block) == \
            generic_request(attrs.LINEAR_FORWARDING_TABLE, (1,), block)
        assert len(packets._HEADS) <= 4


def test_bad_routes_and_modifiers_are_refused_before_any_head_is_kept() -> None:
    with pytest.raises(MadError, match="1..254"):
        directed_route_get(attrs.NODE_INFO, (0,), 0)
    with pytest.raises(MadError, match="1..254"):
        directed_route_get(attrs.NODE_INFO, (1, 255), 0)
    with pytest.raises(MadError, match="at most 63 hops"):
        directed_route_get(attrs.NODE_INFO, (1,) * 64, 0)
    with pytest.raises(ValueError, match="AttributeModifier"):
        directed_route_get(attrs.PORT_INFO, (1,), 0, 1 << 32)


def answer_to(request: bytes, attribute: attrs.AnyAttribute, status: int = 0,
              data: bytes = b"") -> bytes:
    """A GetResp() to `request`: the response bit, the status, and `data` as the attribute."""
    mad = bytearray(request)
    attrs.DIRECTED_ROUTE_SMP.encode({"Response": 1, "Status": status}, into=mad)
    mad[attrs.DATA_OFFSET:attrs.DATA_OFFSET + len(data)] = data
    return bytes(mad)


def test_reply_attribute_is_decode_replys_attribute() -> None:
    request = directed_route_get(attrs.NODE_INFO, (1,), 0)
    data = bytes(range(1, attrs.SMP_DATA_SIZE + 1))
    answer = answer_to(request, attrs.NODE_INFO, data=data)
    assert reply_attribute(answer, attrs.NODE_INFO) == decode_reply(answer, attrs.NODE_INFO).attribute
    assert reply_attribute(answer, attrs.NODE_INFO)["NodeType"] == 3


def test_reply_attribute_refuses_what_decode_reply_refuses_and_a_status() -> None:
    request = directed_route_get(attrs.PORT_INFO, (), 0, 1)
    with pytest.raises(MadError, match="not a response"):
        reply_attribute(request, attrs.PORT_INFO)
    answer = answer_to(request, attrs.PORT_INFO)
    with pytest.raises(MadError, match="answer for attribute 0x0015, asked 0x0011"):
        reply_attribute(answer, attrs.NODE_INFO)
    with pytest.raises(MadError, match="status 0x1c"):
        reply_attribute(answer_to(request, attrs.PORT_INFO, status=0x1C), attrs.PORT_INFO)
    with pytest.raises(MadError, match="256 octets"):
        reply_attribute(answer[:100], attrs.PORT_INFO)


def test_the_status_read_from_the_buffer_is_libibumads() -> None:
    if ctypes.util.find_library("ibumad") is None:
        pytest.skip("libibumad is not installed (Debian package libibumad3; `make setup`)")
    from ibsnmp.mad.umad import UserMadHead, library

    lib = library()
    buffer = ctypes.create_string_buffer(int(lib.umad_size()) + attrs.MAD_SIZE)
    head = UserMadHead.from_buffer(buffer)
    for status in (0, 110, 0xDEADBEEF):
        head.status = status
        assert lib.umad_status(buffer) & 0xFFFFFFFF == status
    # The MAD follows the header, where libibumad says it does.
    assert lib.umad_get_mad(buffer) - ctypes.addressof(buffer) >= ctypes.sizeof(UserMadHead)

"""The BER codec of the fast responder against pyasn1, octet for octet."""

from __future__ import annotations

import bisect
import random
from typing import cast

import pytest
from pyasn1.codec.ber import encoder
from pysnmp.proto import rfc1902, rfc1905
from pysnmp.proto.api import v1 as api_v1
from pysnmp.proto.api import v2c as api_v2c
from tests.support.wire import V1, V2C, community_request

from ibsnmp.wire import ber
from ibsnmp.wire.ber import HeaderError
from ibsnmp.wire.header import GET, GET_BULK, GET_NEXT
from ibsnmp.wire.request import decode_request, encode_response, response_size, varbind

SYS_DESCR = (1, 3, 6, 1, 2, 1, 1, 1, 0)


def test_decodes_what_pysnmp_encodes() -> None:
    oids = [SYS_DESCR, (1, 3, 6, 1, 3, 117, 3, 1, 2, 1, 4294967295), (2, 999, 1), (0, 0)]
    for kind, tag in (("get", GET), ("next", GET_NEXT)):
        for version in (V1, V2C):
            request = decode_request(community_request(kind, oids, version=version,
                                                       community=b"pub@lic",
                                                       request_id=-2**31))
            assert (request.version, request.community, request.pdu_type) == (
                version, b"pub@lic", tag)
            assert request.request_id == -2**31 and list(request.oids) == oids
    bulk = decode_request(community_request("bulk", oids, non_repeaters=3,
                                            max_repetitions=2**31 - 1))
    assert (bulk.pdu_type, bulk.non_repeaters, bulk.max_repetitions) == (
        GET_BULK, 3, 2**31 - 1)


def test_negative_bulk_counts_are_zero() -> None:
    negative = bytes.fromhex(
        "302502010104067075626c6963a518020210920201ff020102300c300a06062b06010201010500")
    bulk = decode_request(negative)
    assert (bulk.non_repeaters, bulk.max_repetitions, bulk.request_id) == (0, 2, 0x1092)


def _patched(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) == 1
    return data.replace(old, new)


GET_DESCR = community_request("get", [SYS_DESCR], community="c", request_id=1)
# 30 len 02 01 01 04 01 63 a0 len 02 01 01 02 01 00 02 01 00 30 len 30 len 06 08 2b..00 05 00
MALFORMED = {
    "trailing octet": GET_DESCR + b"\x00",
    "set": community_request("set", [SYS_DESCR], values=[api_v2c.OctetString("x")]),
    "bulk in v1": _patched(community_request("bulk", [SYS_DESCR], community="c"),
                           b"\x02\x01\x01\x04", b"\x02\x01\x00\x04"),
    "error-status set": _patched(GET_DESCR, b"\x02\x01\x00\x02\x01\x00",
                                 b"\x02\x01\x05\x02\x01\x00"),
    "version 2": _patched(GET_DESCR, b"\x02\x01\x01\x04", b"\x02\x01\x02\x04"),
    "indefinite length": b"\x30\x80" + GET_DESCR[2:] + b"\x00\x00",
    "oid arc leading 0x80": _patched(GET_DESCR, b"\x06\x08\x2b\x06\x01\x02\x01\x01\x01\x00",
                                     b"\x06\x08\x2b\x06\x01\x80\x01\x01\x01\x00"),
    "oid ends mid-arc": _patched(GET_DESCR, b"\x01\x01\x00\x05", b"\x01\x01\x81\x05"),
    "oid arc over 2^32": community_request("get", [(1, 3, 2**32)]),
    "oid of 129 arcs": community_request("get", [(1, 3) + (1,) * 127]),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_refuses_what_it_cannot_answer_exactly(name: str) -> None:
    with pytest.raises(HeaderError):
        decode_request(MALFORMED[name])


def test_refuses_every_truncation() -> None:
    data = community_request("bulk", [SYS_DESCR, (1, 3, 6, 1, 3, 117)])
    decode_request(data)
    for cut in range(len(data)):
        with pytest.raises(HeaderError):
            decode_request(data[:cut])


VALUES: list[tuple[int, int | bytes | ber.Oid, object]] = [
    (ber.INTEGER, -2**31, rfc1902.Integer32(-2**31)),
    (ber.INTEGER, 127, rfc1902.Integer32(127)),
    (ber.INTEGER, -128, rfc1902.Integer32(-128)),
    (ber.INTEGER, -129, rfc1902.Integer32(-129)),
    (ber.INTEGER, 128, rfc1902.Integer32(128)),
    (ber.COUNTER32, 2**32 - 1, rfc1902.Counter32(2**32 - 1)),
    (ber.GAUGE32, 0, rfc1902.Gauge32(0)),
    (ber.TIMETICKS, 2**31, rfc1902.TimeTicks(2**31)),
    (ber.COUNTER64, 2**64 - 1, rfc1902.Counter64(2**64 - 1)),
    (ber.OCTET_STRING, b"", rfc1902.OctetString(b"")),
    (ber.OCTET_STRING, bytes(300), rfc1902.OctetString(bytes(300))),
    (ber.IP_ADDRESS, b"\x0a\x00\x00\x01", rfc1902.IpAddress("10.0.0.1")),
    (ber.OPAQUE, b"\x01", rfc1902.Opaque(b"\x01")),
    (ber.OBJECT_IDENTIFIER, (1, 3, 6, 1, 2**32 - 1), rfc1902.ObjectName((1, 3, 6, 1, 2**32 - 1))),
    (ber.NO_SUCH_OBJECT, b"", rfc1905.noSuchObject),
    (ber.NO_SUCH_INSTANCE, b"", rfc1905.noSuchInstance),
    (ber.END_OF_MIB_VIEW, b"", rfc1905.endOfMibView),
]


@pytest.mark.parametrize("tag,plain,typed", VALUES, ids=[repr(v[2]) for v in VALUES])
def test_values_encode_as_pyasn1_encodes_them(tag: int, plain: int | bytes | ber.Oid,
                                               typed: object) -> None:
    assert ber.encode_value(tag, plain) == encoder.encode(typed)


@pytest.mark.parametrize("version", [V1, V2C])
def test_responses_equal_pysnmps_octet_for_octet(version: int) -> None:
    rng = random.Random(7)
    mod = api_v1 if version == V1 else api_v2c
    encode_oid = ber.OidEncodings()
    for _ in range(200):
        rows = [(tuple(rng.randrange(2**rng.choice((3, 8, 20, 32)))
                       for _ in range(rng.randrange(0, 30))), rng.choice(VALUES))
                for _ in range(rng.randrange(0, 40))]
        rows = [((1, 3) + arcs, value) for arcs, value in rows
                if version == V2C or value[0] not in (ber.COUNTER64,) + tuple(ber.EXCEPTIONS)]
        request_id = rng.randrange(-2**31, 2**31)
        status, index = rng.choice([(0, 0), (2, 1), (5, 0)])
        community = bytes(rng.randrange(256) for _ in range(rng.choice((0, 6, 200))))
        pdu = mod.GetResponsePDU() if version == V1 else mod.ResponsePDU()
        mod.apiPDU.set_defaults(pdu)
        mod.apiPDU.set_request_id(pdu, request_id)
        mod.apiPDU.set_error_status(pdu, status)
        mod.apiPDU.set_error_index(pdu, index)
        mod.apiPDU.set_varbinds(pdu, [(oid, typed) for oid, (_, _, typed) in rows])
        message = mod.Message()
        mod.apiMessage.set_defaults(message)
        mod.apiMessage.set_community(message, community)
        mod.apiMessage.set_pdu(message, pdu)
        varbinds = b"".join(varbind(encode_oid(oid), ber.encode_value(tag, plain))
                            for oid, (tag, plain, _) in rows)
        ours = encode_response(version, community, request_id, status, index, varbinds)
        assert ours == encoder.encode(message)
        assert response_size(version, community, request_id, len(varbinds)) == len(ours)


def test_oid_encodings_are_remembered_within_their_bound() -> None:
    encodings = ber.OidEncodings(limit=2)
    first = encodings((1, 3, 6, 1))
    assert first == encoder.encode(rfc1902.ObjectName((1, 3, 6, 1)))
    assert encodings((1, 3, 6, 1)) is first  # remembered
    encodings((1, 3, 6, 2))
    encodings((1, 3, 6, 3))  # full: starts again
    assert len(encodings._cache) == 1 and encodings((1, 3, 6, 1)) is not first


def test_the_varbind_room_of_a_message_is_the_most_that_fits() -> None:
    """Around every length-octet boundary of the message, the PDU and the list:
    the room fits the message, one octet more does not; -1 when nothing fits."""
    from ibsnmp.wire.request import message_varbind_room

    for community in (b"", b"public", b"c" * 120, b"c" * 300):
        for request_id in (0, 127, 128, -129, 2**31 - 1):
            for max_size in [*range(0, 300, 7), *range(380, 620), 65535, 65536, 65507]:
                room = message_varbind_room(1, community, request_id, max_size)
                if room < 0:
                    assert response_size(1, community, request_id, 0) > max_size
                    continue
                assert response_size(1, community, request_id, room) <= max_size
                assert response_size(1, community, request_id, room + 1) > max_size


def _oid_value(octets: bytes) -> tuple[bytes, int, int]:
    return octets, 0, len(octets)


def test_an_endless_sub_identifier_is_refused_by_its_length() -> None:
    # A v2c GET of OID 2b0601 + ff x 65000 + 7f held the agent 0.33 s per packet
    # when every octet shifted a growing integer: the value octets alone now decide.
    octets = bytes.fromhex("2b0601") + b"\xff" * 65000 + b"\x7f"
    with pytest.raises(HeaderError, match="too long"):
        ber.read_oid(*_oid_value(octets))


@pytest.mark.parametrize("octets", [
    bytes.fromhex("2b06") + b"\x90\x80\x80\x80\x00",  # 2^32: one past the largest arc
    bytes.fromhex("2b06") + b"\xff" * 5 + b"\x7f",  # far past it, inside the length bound
    bytes.fromhex("9080808050"),  # 2.(2^32) packed into the first sub-identifier
])
def test_an_arc_above_2_32_minus_1_is_refused(octets: bytes) -> None:
    with pytest.raises(HeaderError, match="too large"):
        ber.read_oid(*_oid_value(octets))


def test_the_largest_arcs_and_the_longest_oid_are_read() -> None:
    largest = bytes.fromhex("2b06") + b"\x8f\xff\xff\xff\x7f"
    assert ber.read_oid(*_oid_value(largest)) == (1, 3, 6, 4294967295)
    packed = b"\x90\x80\x80\x80\x4f"  # 2.(2^32-1): the first sub-identifier is 2^32+79
    assert ber.read_oid(*_oid_value(packed)) == (2, 4294967295)
    longest = b"\x2b" + b"\x8f\xff\xff\xff\x7f" * 126
    assert len(ber.read_oid(*_oid_value(longest))) == 128
    with pytest.raises(HeaderError, match="too long"):
        ber.read_oid(*_oid_value(longest + b"\x01"))


def test_octets_sort_among_short_arcs_as_the_arcs_do() -> None:
    """Rows' suffixes of arcs under 2^14 are looked up by their octets: any
    asked suffix's sort key must fall among them where its arcs fall, an arc
    of 2^14 or more (three octets or more, one of 0xff..) anywhere in it."""
    rng = random.Random(5)
    edges = [0, 1, 127, 128, 255, 16255, 16256, 16383]
    large = [16384, 16385, 2**21 - 1, 2**21, 2**28, 2**32 - 1]

    def arcs(most: int, allow_large: bool) -> tuple[int, ...]:
        pool = edges + (large if allow_large else [])
        return tuple(rng.choice(pool) if rng.random() < 0.7 else rng.randrange(16384)
                     for _ in range(rng.randrange(most + 1)))

    rows = sorted({arcs(4, False) for _ in range(400)})
    row_octets = [ber.short_arcs_octets(row) for row in rows]
    assert None not in row_octets
    known = cast(list[bytes], row_octets)  # no None: asserted just above
    assert known == sorted(known)
    asked = [arcs(5, True) for _ in range(3000)] + [row + (16384,) for row in rows]
    assert sum(max(name, default=0) >= 16384 for name in asked) > 1000
    for name in asked:
        octets = ber.oid_octets((1, 3) + name)[1:]  # a suffix: no first sub-identifier
        key = ber.sort_key_among_short_arcs(octets)
        assert bisect.bisect_right(known, key) == bisect.bisect_right(rows, name), name
        assert (key in row_octets) == (name in rows)
    assert ber.short_arcs_octets((16383, 5)) == b"\xff\x7f\x05"
    assert ber.short_arcs_octets((1, 16384)) is None

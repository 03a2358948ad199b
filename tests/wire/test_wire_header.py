"""The BER header reader: what it reads from real messages, what it refuses,
and the tooBig answer it builds (decoded back with pysnmp's decoder)."""

from __future__ import annotations

import pytest
from tests.support.oversized import FLOOD_VARBINDS, oversized_get
from tests.support.wire import V1, V2C, community_request, decode_response

from ibsnmp.wire.ber import element as encode_element
from ibsnmp.wire.ber import HeaderError, oid_octets, read_oid, read_value
from ibsnmp.wire.header import (
    GET,
    GET_BULK,
    CommunityMessage,
    OtherVersion,
    V3Message,
    read_header,
    too_big_response,
)

SYS_DESCR = "1.3.6.1.2.1.1.1.0"
# snmpget -v3 -l noAuthNoPriv engine-ID discovery: empty user, plaintext GET, reportable.
V3_DISCOVERY = bytes.fromhex(
    "303e020103301102042a3a8b5d020300ffe3040104020103041030"
    "0e0400020100020100040004000400301404000400a00e02043a5b"
    "6d2e0201000201003000")


def test_community_header() -> None:
    data = community_request("bulk", [SYS_DESCR] * 3, community="pub@0002c903000a1b2c",
                             request_id=-5)
    header = read_header(data)
    assert isinstance(header, CommunityMessage)
    assert (header.version, header.community, header.pdu.tag) == (V2C, b"pub@0002c903000a1b2c",
                                                                  GET_BULK)
    assert [v.oid(data) for v in header.pdu.read_varbinds(data)] == [(1, 3, 6, 1, 2, 1, 1, 1, 0)] * 3
    element = header.pdu.request_id_element
    assert element is not None and data[element[0]:element[1]] == bytes.fromhex("0201fb")
    assert header.pdu.request_id == -5 and header.pdu.fields == (0, 10)


def test_every_varbind_of_a_large_request_is_read() -> None:
    data = oversized_get(b"public")
    header = read_header(data)
    assert isinstance(header, CommunityMessage)
    assert len(header.pdu.read_varbinds(data)) == FLOOD_VARBINDS


def test_v3_header() -> None:
    header = read_header(V3_DISCOVERY)
    assert isinstance(header, V3Message)
    assert (header.message_id, header.max_size, header.flags, header.security_model) == (
        0x2A3A8B5D, 65507, 0x04, 3)
    assert header.user_name == b"" and header.pdu is not None and header.pdu.tag == GET


@pytest.mark.parametrize("hex_message,why", [
    ("", "empty"),
    ("3003020101", "message longer than the datagram"),
    ("30800201010400a000", "indefinite length"),
    ("3009020101040170a10200", "PDU tag 0xa1 truncated"),
    ("300b020100040170a8040201", "Report PDU in SNMPv1"),
    ("30 0a 02 01 01 04 01 70 a0 02 30 00".replace(" ", ""), "GET without request-id"),
    ("3010020601000000000104017 0a003020100".replace(" ", ""), "six-octet version"),
    ("1f0100", "multi-octet tag"),
])
def test_malformed_headers_are_refused(hex_message: str, why: str) -> None:
    with pytest.raises(HeaderError):
        read_header(bytes.fromhex(hex_message))


def test_other_versions_are_named() -> None:
    assert read_header(bytes.fromhex("3003020102")) == OtherVersion(2)


@pytest.mark.parametrize("version", [V1, V2C])
def test_too_big_answer(version: int) -> None:
    data = community_request("get", [SYS_DESCR, "1.3.6.1.2.1.1.5.0"], version=version,
                             request_id=123456)
    header = read_header(data)
    assert isinstance(header, CommunityMessage)
    answer = too_big_response(data, header)
    request_id, status, index, varbinds = decode_response(answer)
    assert (request_id, status, index) == (123456, 1, 0)
    # SNMPv1 answers with the request's varbinds (RFC 1157), SNMPv2c with none (RFC 3416).
    assert [oid for oid, _ in varbinds] == ([SYS_DESCR, "1.3.6.1.2.1.1.5.0"]
                                            if version == V1 else [])
    reply = read_header(answer)
    assert isinstance(reply, CommunityMessage)
    assert reply.community == b"public"



def get_of(varbinds: bytes) -> bytes:
    """A v2c GET whose varbind list holds `varbinds`, octets as given."""
    pdu = (encode_element(0x02, b"\x01") + encode_element(0x02, b"\x00")
           + encode_element(0x02, b"\x00") + encode_element(0x30, varbinds))
    return encode_element(0x30, encode_element(0x02, b"\x01") + encode_element(0x04, b"public")
                          + encode_element(GET, pdu))


@pytest.mark.parametrize("varbinds_hex", ["020100", "3005060100", "308500000000000000",
                                          "3081"])
def test_malformed_varbinds_are_refused_when_read(varbinds_hex: str) -> None:
    varbinds = bytes.fromhex("3005 06012b 0500") + bytes.fromhex(varbinds_hex)
    data = get_of(varbinds)
    header = read_header(data)
    assert isinstance(header, CommunityMessage)
    with pytest.raises(HeaderError):
        header.pdu.read_varbinds(data)


def test_a_too_big_answer_needs_a_whole_message() -> None:
    # The varbinds the header reader skips must be whole too: one OID's
    # length lies (8 -> 12), so the message is malformed and gets no tooBig.
    good = community_request("get", ["1.3.6.1.2.1.1.1.0"] * 4)
    bad = good.replace(bytes.fromhex("06082b06010201010100"), bytes.fromhex("060c2b06010201010100"), 1)
    assert bad != good
    header, bad_header = read_header(good), read_header(bad)
    assert isinstance(header, CommunityMessage) and isinstance(bad_header, CommunityMessage)
    assert too_big_response(good, header)
    with pytest.raises(HeaderError):
        bad_header.pdu.read_varbinds(bad)
    with pytest.raises(HeaderError):
        too_big_response(bad, bad_header)


def test_octets_after_the_message_are_a_parse_error() -> None:
    good = community_request("get", ["1.3.6.1.2.1.1.1.0"])
    assert read_header(good)
    with pytest.raises(HeaderError, match="after the message"):
        read_header(good + b"\x05\x00")


def test_reading_stops_one_past_the_limit() -> None:
    data = oversized_get(b"public")
    header = read_header(data)
    assert isinstance(header, CommunityMessage)
    assert len(header.pdu.read_varbinds(data, 256)) == 257
    assert len(header.pdu.read_varbinds(data, 10**6)) == FLOOD_VARBINDS


NULL_LISTS = {
    "1.3": ("06012b", True),
    "sysDescr.0": ("06082b06010201010100", True),
    "arc 2^32-1": ("06062b8fffffff7f", True),
    "arc 2^32+127": ("06062b908080807f", False),
    "arc of six octets": ("06072b818080808001", False),
    "leading 0x80": ("06032b8001", False),
    "ends mid-arc": ("06022b81", False),
    "value not NULL": ("06012b020100", False),
}


@pytest.mark.parametrize("name", sorted(NULL_LISTS))
def test_a_null_list_is_checked_whole(name: str) -> None:
    """Every OID the strict reader refuses the regular expressions refuse too."""
    body_hex, valid = NULL_LISTS[name]
    body = bytes.fromhex(body_hex)
    if not body.endswith(b"\x02\x01\x00"):
        body += b"\x05\x00"
    varbinds = bytes.fromhex("3005 06012b 0500") * 300 + encode_element(0x30, body)
    data = get_of(varbinds)
    header = read_header(data)
    assert isinstance(header, CommunityMessage)
    assert header.pdu.is_null_list(data) is valid
    if valid:
        assert len(header.pdu.read_varbinds(data)) == 301
    elif name != "value not NULL":  # an INTEGER value is well formed, just not NULL
        with pytest.raises(HeaderError):
            header.pdu.read_varbinds(data)


# -- linear in the size: every check is bounded before per-octet work --------------------


def test_an_oversized_oid_is_refused_by_its_length_alone() -> None:
    # 65 KB of one sub-identifier: refused before its first octet is looked at.
    data = bytes.fromhex("2b0601") + b"\xff" * 65000 + b"\x7f"
    with pytest.raises(HeaderError, match="OBJECT IDENTIFIER too long"):
        read_oid(data, 0, len(data))


@pytest.mark.parametrize("tag", [0x02, 0x41, 0x42, 0x43, 0x46])
def test_an_oversized_integer_is_refused_by_its_length_alone(tag: int) -> None:
    data = b"\x01" * 65000  # never turned into a 520,000-bit number
    with pytest.raises(HeaderError, match="bad INTEGER length"):
        read_value(data, tag, 0, len(data), V2C)


V3_MALFORMED = {
    "msgMaxSize 483": ("020300ffe3", "02030001e3"),
    "negative msgAuthoritativeEngineBoots": ("0400020100020100", "04000201ff020100"),
    "msgSecurityModel 0": ("040104020103", "040104020100"),
    "USM parameters not a SEQUENCE": ("0410300e", "0410310e"),
}


@pytest.mark.parametrize("name", sorted(V3_MALFORMED))
def test_malformed_v3_plaintext_is_refused(name: str) -> None:
    good_hex, bad_hex = V3_MALFORMED[name]
    assert V3_DISCOVERY.hex().count(good_hex) == 1
    with pytest.raises(HeaderError):
        read_header(bytes.fromhex(V3_DISCOVERY.hex().replace(good_hex, bad_hex)))


@pytest.mark.parametrize("arcs,valid", [
    ((2, 2**32 - 1), True),  # the first sub-identifier 2^32+79: five octets, first 0x90
    ((2, 2**32), False),
    ((1, 3) + (2**32 - 1,) * 126, True),  # 128 arcs of five octets: the longest OID
    ((1, 3) + (2**32 - 1,) * 127, False),
])
def test_oid_limits_at_their_edges(arcs: tuple[int, ...], valid: bool) -> None:
    octets = oid_octets(arcs)
    if valid:
        assert read_oid(octets, 0, len(octets)) == arcs
    else:
        with pytest.raises(HeaderError):
            read_oid(octets, 0, len(octets))


def test_names_checked_together_are_refused_exactly_when_one_alone_is() -> None:
    """check_oids (a request's names at once) and check_oid (one by one) agree."""
    import random

    from ibsnmp.wire.ber import HeaderError, check_oid, check_oids

    rng = random.Random(20)
    pieces = [b"\x2b", b"\x06", b"\x81\x00", b"\x80", b"\x8f\xff\xff\xff\x7f", b"\x90\x80\x80\x80\x00",
              b"\x90\x80\x80\x80\x4f", b"\xff\xff\xff\xff\xff\x7f", b"\x7f", b"\x82\x01", b"\xff"]

    def name() -> bytes:
        return b"".join(rng.choice(pieces) for _ in range(rng.choice((1, 3, 40, 140))))

    def alone_ok(octets: bytes) -> bool:
        try:
            check_oid(octets, 0, len(octets))
        except HeaderError:
            return False
        return True

    for _ in range(3000):
        names = [name() for _ in range(rng.randint(1, 4))]
        expected = all(alone_ok(octets) for octets in names)
        try:
            check_oids(names)
            together = True
        except HeaderError:
            together = False
        assert together == expected, [octets.hex() for octets in names]

"""The strict reader's OBJECT IDENTIFIER check (ibsnmp.wire.ber.check_oids,
check_oid, has_bad_arc), done with integer arithmetic over all of a
request's names at once, refuses exactly what RFC 2578's limits refuse:
the regular expression `OID_SYNTAX` (minimal sub-identifiers of at most
2^32-1, the first up to 2^32+79) whole, at most 128 arcs, at most 640
octets, the last octet ending a sub-identifier. Random and adversarial
octets, one name or several, against that definition."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ibsnmp.wire.ber import OID_SYNTAX, HeaderError, check_oid, check_oids, has_bad_arc, oid_octets

MAX_ARCS, MAX_OCTETS = 128, 640

# Octets where the limits lie: ends of sub-identifiers (0x00, 0x4f, 0x50,
# 0x7f), 0x80 (not minimal as a first octet), 0x81-0x8f (a first octet of
# five that keeps an arc within 2^32-1), 0x90 and up.
EDGE_OCTETS = st.sampled_from([0x00, 0x01, 0x4F, 0x50, 0x7F, 0x80, 0x81, 0x8F, 0x90, 0xC0, 0xFF])
# Sub-identifiers at and past every limit, among plain ones.
PIECES = st.sampled_from([
    b"\x2b", b"\x06", b"\x00", b"\x7f", b"\x81\x00", b"\x82\x01", b"\x80\x01", b"\x80",
    b"\xff\xff\x7f", b"\x8f\xff\xff\xff\x7f", b"\x90\x80\x80\x80\x00", b"\x90\x80\x80\x80\x4f",
    b"\x90\x80\x80\x80\x50", b"\x91\x80\x80\x80\x01", b"\x8f\x80\x80\x80\x00",
    b"\xff\xff\xff\xff\xff\x7f", b"\x81\x80\x80\x80\x80\x00", b"\xff"])
STRUCTURED = st.lists(PIECES, min_size=1, max_size=160).map(b"".join)
RAW = st.binary(min_size=1, max_size=700) | st.lists(EDGE_OCTETS, min_size=1, max_size=700).map(bytes)
NAMES = STRUCTURED | RAW


def within_limits(name: bytes) -> bool:
    """RFC 2578's limits by their definition: the regular expression, a count."""
    return (0 < len(name) <= MAX_OCTETS and name[-1] < 0x80
            and OID_SYNTAX.fullmatch(name) is not None
            and sum(octet < 0x80 for octet in name) + 1 <= MAX_ARCS)


def accepted(names: list[bytes]) -> bool:
    try:
        check_oids(names)
    except HeaderError:
        return False
    return True


def accepted_alone(name: bytes) -> bool:
    try:
        check_oid(name, 0, len(name))
    except HeaderError:
        return False
    return True


@settings(max_examples=3000, deadline=None)
@given(st.lists(NAMES, min_size=1, max_size=6))
@example([b"\x90\x80\x80\x80\x4f" + b"\x8f\xff\xff\xff\x7f" * 126])  # 128 arcs, 2^32+79 first
@example([b"\x90\x80\x80\x80\x4f" + b"\x8f\xff\xff\xff\x7f" * 127])  # 129 arcs
@example([b"\x2b" + b"\x01" * 126, b"\x2b" + b"\x01" * 127])
@example([b"\x2b\x81\x80\x80\x80\x00", b"\x80\x2b"])
def test_names_are_refused_exactly_as_the_definition_refuses_them(names: list[bytes]) -> None:
    assert accepted(names) == all(map(within_limits, names)), [name.hex() for name in names]
    for name in names:
        assert accepted_alone(name) == within_limits(name), name.hex()


@pytest.mark.parametrize("arcs,valid", [
    ((1, 3) + (2**32 - 1,) * 126, True),
    ((1, 3) + (2**32 - 1,) * 127, False),
    ((2, 2**32 - 1) + (2**32 - 1,) * 126, True),  # first sub-identifier 2^32+79, 128 arcs
    ((2, 2**32 - 1) + (2**32 - 1,) * 127, False),
    ((1, 3, 2**32), False),
    ((2, 2**32 - 80), True),  # 2^32: five octets from 0x90, as the first
])
def test_the_longest_names_at_their_edges(arcs: tuple[int, ...], valid: bool) -> None:
    octets = oid_octets(arcs)
    assert accepted([octets] * 64) is valid
    assert accepted([b"\x2b\x06", octets, b"\x2b"]) is valid


# -- has_bad_arc: the octets of a whole varbind list, sub-identifiers starting
# after each octet under 0x80 (agent.prefilter's check of { OID, NULL } lists) --


_CLASSES = bytes.maketrans(bytes(range(256)), b"a" * 128 + b"z" + b"h" * 15 + b"d" * 112)


def bad_by_classes(octets: bytes) -> bool:
    """has_bad_arc's definition as substring searches of octet classes (a:
    under 0x80, z: 0x80, h: 0x81-0x8f, d: 0x90 and up)."""
    classes = octets.translate(_CLASSES)
    return (b"az" in classes or re.search(rb"[zhd]{5}", classes) is not None
            or re.search(rb"ad[zhd]{3}", classes) is not None)


@settings(max_examples=3000, deadline=None)
@given(st.lists(NAMES, max_size=8).map(lambda names: b"\x30" + b"\x05\x00".join(names)))
@example(b"\x00\x90\x80\x80\x80")  # a first octet over 0x8f, four high octets to the end
@example(b"\x00\x81\x80\x80\x80\x80")
@example(b"\x00\x80")
def test_has_bad_arc_finds_what_the_class_searches_find(octets: bytes) -> None:
    assert has_bad_arc(octets) == bad_by_classes(octets), octets.hex()

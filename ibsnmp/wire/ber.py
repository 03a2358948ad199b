"""BER as SNMP uses it: strict reading of elements, and writing them as pyasn1 does.

Reading accepts only what RFC 3417 section 8 allows (definite lengths,
single-octet tags) and raises HeaderError for anything else, so one
exception type covers every malformed input. Writing produces the same
octets pyasn1's BER encoder writes (shortest definite lengths, minimal
two's complement integers, OCTET STRINGs primitive), so a response built
here equals the one pysnmp would send, octet for octet.
"""

from __future__ import annotations

import re

from .constants import Version

Oid = tuple[int, ...]

INTEGER, OCTET_STRING, NULL, OBJECT_IDENTIFIER, SEQUENCE = 0x02, 0x04, 0x05, 0x06, 0x30
# SNMP application types (RFC 2578 / RFC 3416).
IP_ADDRESS, COUNTER32, GAUGE32, TIMETICKS, OPAQUE, COUNTER64 = 0x40, 0x41, 0x42, 0x43, 0x44, 0x46
# Varbind exception values (RFC 3416): context-specific, primitive, empty.
NO_SUCH_OBJECT, NO_SUCH_INSTANCE, END_OF_MIB_VIEW = 0x80, 0x81, 0x82
EXCEPTIONS = frozenset({NO_SUCH_OBJECT, NO_SUCH_INSTANCE, END_OF_MIB_VIEW})
INTEGER_TAGS = frozenset({INTEGER, COUNTER32, GAUGE32, TIMETICKS, COUNTER64})
OCTET_TAGS = frozenset({OCTET_STRING, IP_ADDRESS, OPAQUE})

MAX_LENGTH_OCTETS = 4  # a 4 GB element is more than any datagram
MAX_OID_ARCS = 128  # RFC 2578 3.5: at most 128 sub-identifiers
MAX_ARC = 0xFFFFFFFF  # each at most 2^32-1
# 128 arcs of at most 5 octets each: longer value octets cannot be a valid OID.
MAX_OID_OCTETS = MAX_OID_ARCS * 5
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
UINT32_MAX, UINT64_MAX = (1 << 32) - 1, (1 << 64) - 1
MAX_OCTET_STRING = 65535  # OCTET STRING (SIZE (0..65535)), RFC 2578 7.1.2
IP_ADDRESS_OCTETS = 4
SNMP_V1 = Version.V1  # no Counter64, no exception values
# Value ranges and most octets of the integer types (Counter64: 9 octets, a leading 0).
_INTEGER_VALUES = {INTEGER: (INT32_MIN, INT32_MAX, 5), COUNTER32: (0, UINT32_MAX, 5),
                   GAUGE32: (0, UINT32_MAX, 5), TIMETICKS: (0, UINT32_MAX, 5),
                   COUNTER64: (0, UINT64_MAX, 9)}


class HeaderError(ValueError):
    """The octets are not an SNMP message (or not one this reader accepts)."""


# -- reading ------------------------------------------------------------------------


def read_element(data: bytes, pos: int, limit: int) -> tuple[int, int, int]:
    """The element at `pos` as (tag, first value octet, end); it must end by `limit`."""
    if pos + 2 > limit:
        raise HeaderError("truncated element")
    tag = data[pos]
    if tag & 0x1F == 0x1F:
        raise HeaderError("multi-octet tag")
    length = data[pos + 1]
    pos += 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0:
            raise HeaderError("indefinite length")
        if count > MAX_LENGTH_OCTETS or pos + count > limit:
            raise HeaderError("bad length")
        length = int.from_bytes(data[pos:pos + count], "big")
        pos += count
    end = pos + length
    if end > limit:
        raise HeaderError("element longer than its container")
    return tag, pos, end


def expect(data: bytes, pos: int, limit: int, tag: int) -> tuple[int, int]:
    """The value span (start, end) of the element at `pos`, which must have `tag`."""
    found, start, end = read_element(data, pos, limit)
    if found != tag:
        raise HeaderError(f"expected tag 0x{tag:02x}, got 0x{found:02x}")
    return start, end


def read_integer(data: bytes, start: int, end: int, low: int, high: int,
                 most_octets: int = 5) -> int:
    """An INTEGER's value octets, which must hold a number from `low` to `high`."""
    if not 1 <= end - start <= most_octets:
        raise HeaderError("bad INTEGER length")
    value = int.from_bytes(data[start:end], "big", signed=True)
    if not low <= value <= high:
        raise HeaderError("INTEGER out of range")
    return value


def check_oid(data: bytes, start: int, end: int) -> None:
    """Refuse an OBJECT IDENTIFIER's value octets outside RFC 2578's limits
    (at most 128 arcs, each at most 2^32-1, minimal octets): `check_oids`.

    Bounded before any octet is read: more than 640 value octets cannot
    be 128 arcs.
    """
    if start >= end or data[end - 1] & 0x80:
        raise HeaderError("bad OBJECT IDENTIFIER")
    if end - start > MAX_OID_OCTETS:
        raise HeaderError("OBJECT IDENTIFIER too long")
    chunk = data[start:end]
    if chunk.isascii():  # one-octet sub-identifiers: minimal, small, counted by length
        if len(chunk) >= MAX_OID_ARCS:
            raise HeaderError("OBJECT IDENTIFIER too long")
        return
    check_oids([chunk])


def check_oids(names: list[bytes]) -> None:
    """Refuse any of these OBJECT IDENTIFIERs' value octets that is outside
    RFC 2578's limits (`OID_SYNTAX`, at most 128 arcs), all checked at once.

    Each name ends a sub-identifier, so joined they keep every one whole:
    the octet tests of `has_bad_arc` run once over all of them, as integer
    arithmetic in C, and so does the count of the octets that end one.
    """
    stand_ins = False
    for name in names:
        if not name or name[-1] & 0x80 or len(name) > MAX_OID_OCTETS:
            raise HeaderError("bad OBJECT IDENTIFIER")
        if name[0] == _LARGEST_FIRST_OCTET:
            stand_ins = True
    if stand_ins:
        # A first sub-identifier of 2^32..2^32+79 (two arcs, 2.(2^32-80) and
        # up) is within the limits, though has_bad_arc refuses it elsewhere:
        # checked as one of 2^32-1, which takes as many octets.
        names = [_FIVE_OCTETS_MAX + name[5:] if _LARGEST_FIRST.match(name) else name
                 for name in names]
    classes = _checked_classes(b"\x00" + b"\x00".join(names))
    if classes is None:
        raise HeaderError("OBJECT IDENTIFIER arc too large or not minimal")
    at = 1
    for name in names:  # one arc per sub-identifier, two in the first
        size = len(name)
        if size >= MAX_OID_ARCS and classes.count(0, at, at + size) >= MAX_OID_ARCS:
            raise HeaderError("OBJECT IDENTIFIER too long")
        at += size + 1


def read_oid(data: bytes, start: int, end: int) -> Oid:
    """An OBJECT IDENTIFIER's value octets as arcs (checked by `check_oid` first)."""
    check_oid(data, start, end)
    return _arcs_of(data[start:end])


def _arcs_of(chunk: bytes) -> Oid:
    """The arcs of checked OBJECT IDENTIFIER value octets."""
    arcs: list[int] | bytes = chunk if chunk.isascii() else _arcs(chunk)
    first = arcs[0]
    if first < 40:
        head = (0, first)
    elif first < 80:
        head = (1, first - 40)
    else:
        head = (2, first - 80)
    return head + tuple(arcs[1:])


def oid_of_element(element: bytes) -> Oid:
    """The arcs of a whole OBJECT IDENTIFIER element (tag, length, value) that
    the strict reader has checked already (or that was encoded here)."""
    size = element[1]
    start = 2 if size < 0x80 else 2 + (size & 0x7F)
    return _arcs_of(element[start:])


def oid_head_of_element(element: bytes, most_arcs: int) -> tuple[Oid, int]:
    """The first `most_arcs` (at least 2) arcs of a checked OBJECT IDENTIFIER
    element, and where the rest starts (0: there is no rest). Only those
    arcs' octets are decoded: a name's arcs past any served instance's cost
    nothing; `more_arcs` reads on from there."""
    size = element[1]
    start = 2 if size < 0x80 else 2 + (size & 0x7F)
    # The first sub-identifier holds two arcs: most_arcs - 1 sub-identifiers.
    head = _SUB_IDENTIFIERS[most_arcs - 1].match(element, start)
    if head is None or head.end() == len(element):
        return _arcs_of(element[start:]), 0
    return _arcs_of(element[start:head.end()]), head.end()


def arc_count(element: bytes) -> int:
    """How many arcs a checked OBJECT IDENTIFIER element has, counted in C:
    one per octet that ends a sub-identifier, two in the first."""
    size = element[1]
    start = 2 if size < 0x80 else 2 + (size & 0x7F)
    return element[start:].translate(_CLASSES).count(b"a") + 1


def more_arcs(element: bytes, rest: int, count: int) -> tuple[Oid, int]:
    """Up to `count` more arcs of an element from offset `rest` (see
    `oid_head_of_element`), and where what is left starts (0: nothing)."""
    more = _SUB_IDENTIFIERS[count].match(element, rest)
    end = len(element) if more is None else more.end()
    return tuple(_arcs(element[rest:end])), 0 if end == len(element) else end


class _SubIdentifiers(dict[int, re.Pattern[bytes]]):
    """n -> the compiled pattern of n sub-identifiers, made on first use."""

    def __missing__(self, count: int) -> re.Pattern[bytes]:
        pattern = self[count] = re.compile(rb"(?:[\x80-\xff]*[\x00-\x7f]){%d}" % count)
        return pattern


_SUB_IDENTIFIERS = _SubIdentifiers()


def read_value(data: bytes, tag: int, start: int, end: int, version: int) -> None:
    """Check a varbind value element of `tag` against its SNMP type (RFC 2578, 3416).

    Only the primitive SNMP types are values (a constructed OCTET STRING,
    tag 0x24, is none); SNMPv1 (`version` 0) has no Counter64 and no
    exception values. Each check is bounded before any octet is read.
    """
    size = end - start
    ranged = _INTEGER_VALUES.get(tag)
    if ranged is not None:
        if tag == COUNTER64 and version == SNMP_V1:
            raise HeaderError("Counter64 in SNMPv1")
        low, high, most_octets = ranged
        read_integer(data, start, end, low, high, most_octets)
    elif tag == OCTET_STRING or tag == OPAQUE:
        if size > MAX_OCTET_STRING:
            raise HeaderError("OCTET STRING too long")
    elif tag == IP_ADDRESS:
        if size != IP_ADDRESS_OCTETS:
            raise HeaderError("IpAddress not of four octets")
    elif tag == OBJECT_IDENTIFIER:
        check_oid(data, start, end)
    elif tag == NULL or (tag in EXCEPTIONS and version != SNMP_V1):
        if size:
            raise HeaderError("NULL with a value")
    else:
        raise HeaderError(f"not an SNMP value: tag 0x{tag:02x}")


# Sub-identifiers of at most 2^32-1 in minimal octets: no leading 0x80, at most
# five octets, five only when the first adds no more than four bits. The first
# sub-identifier holds two arcs (X * 40 + Y, Y up to 2^32-1 under 2): up to
# 2^32+79, one more form of five octets. `check_oids` refuses exactly what this
# does not match whole (and more than 127 sub-identifiers), without it: a
# regular expression trying every octet is far too slow for a request's names.
_ARC = (rb"[\x00-\x7f]|[\x81-\xff][\x80-\xff]{0,2}[\x00-\x7f]"
        rb"|[\x81-\x8f][\x80-\xff]{3}[\x00-\x7f]")
OID_SYNTAX = re.compile(rb"(?:" + _ARC + rb"|\x90\x80\x80\x80[\x00-\x4f])(?:" + _ARC + rb")*+")
_LARGEST_FIRST = re.compile(rb"\x90\x80\x80\x80[\x00-\x4f]")
_LARGEST_FIRST_OCTET = 0x90
_FIVE_OCTETS_MAX = b"\x8f\xff\xff\xff\x7f"  # 2^32-1

# Octets as classes (a: under 0x80, z: 0x80, h: 0x81-0x8f, d: 0x90 and up).
_CLASSES = bytes.maketrans(bytes(range(256)), b"a" * 128 + b"z" + b"h" * 15 + b"d" * 112)
_HIGH = bytes.maketrans(b"zd", b"hh")  # classes: every octet of 0x80 or more as h


# Octets as classes for integer arithmetic, one octet each: 0x00 for an octet
# under 0x80 (it ends a sub-identifier), 0x80 for 0x81-0x8f, 0xc0 for 0x90 and
# up (the high bit: the sub-identifier goes on; 0x40: a first octet of those
# adds more than four bits), 0x81 for 0x80 (0x01: not minimal as a first).
_SWAR_CLASSES = bytes.maketrans(bytes(range(256)),
                                bytes(128) + b"\x81" + b"\x80" * 15 + b"\xc0" * 112)


class _OctetMasks(dict[int, tuple[int, int]]):
    """k -> the octets 0x80 and 0x01, 2^k of each, as big-endian integers
    (made on first use)."""

    def __missing__(self, k: int) -> tuple[int, int]:
        size = 1 << k
        masks = self[k] = (int.from_bytes(b"\x80" * size, "big"),
                           int.from_bytes(b"\x01" * size, "big"))
        return masks


_MASKS = _OctetMasks()


def _checked_classes(octets: bytes) -> bytes | None:
    """`octets` through _SWAR_CLASSES (0x00: the octet ends a sub-identifier),
    or None when `has_bad_arc` holds.

    SWAR: the classes as one big-endian integer, each test a few
    operations on it that CPython runs word by word in C (no carry
    crosses an octet); substring searches for the same patterns take
    several times as long on the repetitive names an attacker sends.
    """
    classes = octets.translate(_SWAR_CLASSES)
    x = int.from_bytes(classes, "big")
    high_bits, low_bits = _MASKS[max(len(octets) - 1, 1).bit_length()]
    high = x & high_bits
    # At an octet's high bit: it and the next one are high, then the next three.
    pairs = high & (high << 8)
    fours = pairs & (pairs << 16)
    # Four high octets where the first adds more than four bits (x << 1: its
    # 0x40 at the high bit) or a fifth follows: an arc over 2^32-1, or six
    # octets and more. (Four start a sub-identifier, or a fifth was before.)
    if fours and fours & ((x << 1) | (high << 32)):
        return None
    if b"\x80" in octets:  # memchr first: 0x80 octets are rare in most names
        # 0x80 where the octet before is not high (high >> 15: its high bit at
        # this one's lowest): a sub-identifier's first, not minimal.
        exactly = x & low_bits
        if exactly & (high >> 15) != exactly:
            return None
    return classes


def has_bad_arc(octets: bytes) -> bool:
    """Whether sub-identifiers that start after each octet under 0x80 break RFC
    2578's limits: one starting with 0x80 (not minimal), one of six octets or
    more, one of five whose first octet adds more than four bits (over 2^32-1).
    `octets` starts with an octet under 0x80 (a first sub-identifier of
    2^32..2^32+79 is refused: `check_oids` allows it)."""
    return _checked_classes(octets) is None


def _arcs(chunk: bytes) -> list[int]:
    """Sub-identifiers (the first one still holding two arcs) of checked octets."""
    arcs: list[int] = []
    append = arcs.append
    octets = iter(chunk)
    for octet in octets:
        if octet < 0x80:
            append(octet)
            continue
        arc = octet & 0x7F
        for octet in octets:  # the rest of this sub-identifier, from the same iterator
            if octet < 0x80:
                append((arc << 7) | octet)
                break
            arc = (arc << 7) | (octet & 0x7F)
    return arcs


# -- writing ------------------------------------------------------------------------


def encode_length(size: int) -> bytes:
    if size < 0x80:
        return bytes((size,))
    octets = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes((0x80 | len(octets),)) + octets


class _Lengths(dict[int, bytes]):
    """Length octets by length: those of the usual sizes looked up, not encoded
    (a response's message has about ten lengths, each a call otherwise)."""

    def __missing__(self, length: int) -> bytes:
        return encode_length(length)


LENGTHS = _Lengths((length, encode_length(length)) for length in range(4096))


def length_octets(size: int) -> int:
    """How many octets `encode_length(size)` writes."""
    return 1 if size < 0x80 else 1 + (size.bit_length() + 7) // 8


def tlv_size(content: int) -> int:
    """Octets of a whole element of `content` value octets (a one-octet tag,
    as every SNMP tag is, and the shortest definite length)."""
    return 1 + length_octets(content) + content


def element(tag: int, value: bytes) -> bytes:
    """One element with the shortest definite length."""
    size = len(value)
    if size < 0x80:
        return bytes((tag, size)) + value
    return bytes((tag,)) + encode_length(size) + value


def integer_octets(value: int) -> bytes:
    """Two's complement octets as pyasn1 writes them (unsigned types too).

    pyasn1 sizes a negative number by its magnitude, so -128 takes two
    octets (ff 80) where one would do: the same here, or responses differ.
    """
    return value.to_bytes(value.bit_length() // 8 + 1, "big", signed=True)


def integer_element(tag: int, value: int) -> bytes:
    """An INTEGER-like element (INTEGER, Counter32, ...) as pyasn1 writes it;
    the one-octet values, nearly every field of a header, without a call,
    and the others framed inline (a value in range takes at most nine
    octets: one-octet length): this runs once per integer value served."""
    if 0 <= value < 0x80:
        return bytes((tag, 1, value))
    octets = integer_octets(value)
    if len(octets) < 0x80:
        return bytes((tag, len(octets))) + octets
    return element(tag, octets)


def oid_octets(oid: Oid) -> bytes:
    """An OBJECT IDENTIFIER's value octets."""
    if len(oid) < 2:
        raise ValueError(f"an OBJECT IDENTIFIER needs two arcs: {oid}")
    if min(oid) < 0:
        raise ValueError(f"an OBJECT IDENTIFIER has no negative arcs: {oid}")
    try:  # the usual arcs, under 2^14, each from the table in C
        return _ARC_OCTETS[oid[0] * 40 + oid[1]] + b"".join(map(_ARC_OCTETS.__getitem__,
                                                                 oid[2:]))
    except IndexError:
        return b"".join(map(_arc_octets, (oid[0] * 40 + oid[1],) + oid[2:]))


def _arc_octets(arc: int) -> bytes:
    """One sub-identifier: seven bits an octet, all but the last with the high bit."""
    if arc < 0x80:
        return bytes((arc,))
    chunk = [arc & 0x7F]
    arc >>= 7
    while arc:
        chunk.append(0x80 | (arc & 0x7F))
        arc >>= 7
    return bytes(reversed(chunk))


_ARC_OCTETS = tuple(_arc_octets(arc) for arc in range(1 << 14))  # one or two octets each


# Where every arc is under 2^14 (one or two octets), OBJECT IDENTIFIER octets
# sort as their arcs do: an octet under 0x80 ends a sub-identifier and one of
# 0x81 or more starts a larger one. A sub-identifier of three octets or more
# (an arc of 2^14 or more) holds two octets of 0x80 or more in a row: "hh"
# in the octet classes of has_bad_arc with every class of 0x80 and up as h.
_ENDS_AND_HIGHS = _CLASSES.translate(_HIGH)
# After the octets of any arc under 2^14 (whose second octet is under 0x80).
_PAST_SHORT_ARCS = b"\xff\xff"


def short_arcs_octets(arcs: Oid) -> bytes | None:
    """The sub-identifier octets of `arcs` (one sub-identifier each: an
    instance suffix), or None when an arc is 2^14 or more."""
    try:
        return b"".join(map(_ARC_OCTETS.__getitem__, arcs))
    except IndexError:
        return None


def sort_key_among_short_arcs(octets: bytes) -> bytes:
    """Checked sub-identifier octets (starting where one starts), as they
    sort among the `short_arcs_octets` of arcs under 2^14: whole up to their
    first arc of 2^14 or more, then after every such sequence that agrees
    that far (the arc there is larger than any of theirs)."""
    long_arc = octets.translate(_ENDS_AND_HIGHS).find(b"hh")
    return octets if long_arc < 0 else octets[:long_arc] + _PAST_SHORT_ARCS


class OidEncodings:
    """Encoded OBJECT IDENTIFIER elements, remembered: a walk names each OID twice.

    Bounded: when full it starts again rather than growing with a fabric's
    millions of instances; the OIDs a manager polls again and again are soon
    back in it.
    """

    __slots__ = ("_cache", "_limit")

    def __init__(self, limit: int = 1 << 15) -> None:
        self._cache: dict[Oid, bytes] = {}
        self._limit = limit

    def __call__(self, oid: Oid) -> bytes:
        encoded = self._cache.get(oid)
        if encoded is None:
            if len(self._cache) >= self._limit:
                self._cache.clear()
            encoded = self._cache[oid] = element(OBJECT_IDENTIFIER, oid_octets(oid))
        return encoded


def encode_value(tag: int, value: int | bytes | Oid) -> bytes:
    """A varbind value element of BER tag `tag` holding a plain value."""
    if tag in INTEGER_TAGS:
        return integer_element(tag, value)  # type: ignore[arg-type]
    if tag in EXCEPTIONS or tag == NULL:
        return bytes((tag, 0))
    if tag == OBJECT_IDENTIFIER:
        return element(tag, oid_octets(value))  # type: ignore[arg-type]
    return element(tag, value)  # type: ignore[arg-type]  # OCTET STRING and its kin

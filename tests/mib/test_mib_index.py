"""SMIv2 index encodings of the compiled tables (RFC 2578 section 7.7)."""

from __future__ import annotations

from ibsnmp.mib.index import IndexCodec
from ibsnmp.mib.loader import IndexPart, definitions


def test_fixed_size_strings_have_no_length_and_implied_has_none() -> None:
    # ibSmServiceAssocEntry: subnet prefix SIZE(8), key SIZE(16), IMPLIED name.
    codec = IndexCodec(definitions().index_of("ibSmServiceAssocEntry"))
    prefix = bytes.fromhex("fe80000000000000")
    key = bytes(range(16))
    encoded = codec.encode((prefix, key, "ipoib"))
    assert encoded == tuple(prefix) + tuple(key) + tuple(b"ipoib")


def test_variable_size_string_carries_its_length() -> None:
    syntax = definitions().objects["ibSmaNodeString"].syntax  # DisplayString (SIZE(1..64))
    codec = IndexCodec([IndexPart("name", syntax, implied=False)])
    assert codec.encode(("ab",)) == (2, 97, 98)


def test_integer_indexes_are_one_subidentifier_each() -> None:
    codec = IndexCodec(definitions().index_of("ibSmaPortInfoEntry"))
    assert codec.encode((7,)) == (7,)


def test_guid_index_of_a_node_table() -> None:
    parts = definitions().index_of("ibSmNodeInfoEntry")
    codec = IndexCodec(parts)
    values = []
    for part in parts:
        is_string = hasattr(part.syntax, "asOctets")
        values.append(b"\x12" * 8 if is_string else 3)
    encoded = codec.encode(values)
    # Two 8-octet strings (prefix, GUID) with no length sub-identifiers.
    assert len(encoded) == sum(8 if hasattr(p.syntax, "asOctets") else 1 for p in parts)

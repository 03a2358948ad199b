"""The codec's quick readers against the field-by-field ones they stand in for.

Each quick reader (msgspec's JSON parser, a StructCodec's generated reader,
the counters read at once, tables read once) either gives what the checked
reader gives or declines, and declines whatever the checked reader refuses:
the refusal is then worded by the checked reader, as before.
"""

from __future__ import annotations

import enum
import functools
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.model import Fabric
from ibsnmp.mqtt import codec, fields
from ibsnmp.mqtt.codec import (PORT_FIELDS, PORT_INFO_FIELDS, SM_FIELDS, PayloadError, decode_state,
                               encode_state, record_of)

# What a JSON field may hold, weighted towards the edges of the field types.
SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-3, max_value=300),
    st.sampled_from([2**32 - 1, 2**63, 2**64 - 1, 2**64, -(2**63)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "0123456789abcdef", "0123456789ABCDEF", "0123456789abcde", "x", "\ud800", "é" * 70]),
)
MISSING = object()


@functools.cache
def _fabric() -> Fabric:
    """The small fabric these tests read (built once: every example reads it)."""
    return build_fabric("fat-tree:spines=1,leaves=2,hosts=2", seed=3)


@functools.cache
def _switch_port_text() -> bytes:
    """A switch's state, as its publisher writes it."""
    fabric = _fabric()
    node = next(n for n in fabric.nodes.values() if n.switch is not None)
    return encode_state(record_of(fabric, node, 5.0, 100.0))


def _good_object(codec_: fields.StructCodec) -> dict[str, Any]:
    """An object of `codec_`'s type as a real record encodes it (a new one each call)."""
    port = json.loads(_switch_port_text())["ports"][1]
    if codec_ is PORT_INFO_FIELDS:
        return dict(port["info"])
    return {name: value for name, value in port.items() if name in codec_.names}


def _read_checked(codec_: fields.StructCodec, table: dict[str, Any]) -> dict[str, Any] | PayloadError:
    try:
        return codec_._read(table, "x")
    except PayloadError as exc:
        return exc


@pytest.mark.parametrize("codec_", [PORT_INFO_FIELDS, PORT_FIELDS], ids=["PortInfo", "Port"])
@given(data=st.data())
@settings(max_examples=400, deadline=None)
def test_generated_reader_gives_what_the_checked_one_gives_or_declines(codec_: fields.StructCodec,
                                                                        data: st.DataObject) -> None:
    table = _good_object(codec_)
    for name in data.draw(st.lists(st.sampled_from(codec_.order), max_size=3)):
        value = data.draw(st.one_of(SCALARS, st.just(MISSING)))
        if value is MISSING:
            table.pop(name, None)
        else:
            table[name] = value
    quick = codec_._read_good(table)
    checked = _read_checked(codec_, table)
    if isinstance(checked, PayloadError):
        assert quick is None, f"the quick reader took what the checked one refuses: {checked}"
    elif quick is not None:
        assert quick == checked
        assert all(type(quick[name]) is type(checked[name]) for name in quick)


def test_generated_reader_takes_a_good_object_whole() -> None:
    for codec_ in (PORT_INFO_FIELDS, PORT_FIELDS):
        table = _good_object(codec_)
        assert codec_._read_good(table) == codec_._read(table, "x")


@pytest.mark.parametrize("field, value", [("lid", True), ("lid", 1.0), ("lid", -1), ("lid", 2**64),
                                          ("lid", None), ("port_state", 99), ("m_key", "0123456789ABCDEF")])
def test_a_refusal_is_worded_by_the_checked_reader(field: str, value: object) -> None:
    table = _good_object(PORT_INFO_FIELDS)
    if field not in table:
        pytest.skip(f"the bench port has no {field}")
    table[field] = value
    with pytest.raises(PayloadError) as caught:
        PORT_INFO_FIELDS.decode(table, "ports[1].info")
    assert str(caught.value).startswith(f"ports[1].info.{field}: ")


def test_an_sm_record_reads_the_same_both_ways() -> None:
    table = {"guid": "0000000000000001", "sm_key": "0000000000000000", "act_count": 7, "priority": 3,
             "state": 3, "port_num": 1, "act_rate": 1.5}
    table = {name: value for name, value in table.items() if name in SM_FIELDS.names}
    assert SM_FIELDS._read_good(table) == SM_FIELDS._read(table, "sms[0]")


COUNTER = st.fixed_dictionaries(
    {"value": st.one_of(st.integers(min_value=-1, max_value=2**64), st.sampled_from([True, 1.0, None, "1"])),
     "bits": st.one_of(st.integers(min_value=0, max_value=65), st.sampled_from([True, 8.0]))},
    optional={"wide": st.one_of(st.booleans(), st.sampled_from([0, 1, None, "true"])),
              "extra": st.integers()})
NAMES = st.one_of(st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True), st.sampled_from(["", "A", "a-b", "é"]))


@given(st.dictionaries(NAMES, st.one_of(COUNTER, SCALARS), min_size=1, max_size=6))
@settings(max_examples=500, deadline=None)
def test_counters_read_at_once_give_what_the_loop_gives_or_decline(counters: dict[str, Any]) -> None:
    quick = codec._counters_at_once(counters)
    try:
        checked = codec._read_counters(counters, "ports[1].counters")
    except PayloadError:
        assert quick is None
        return
    if quick is not None:
        assert dict(quick.values) == dict(checked.values)
        assert list(quick.values) == list(checked.values)
        assert quick.wide == checked.wide


@pytest.mark.parametrize("entry", [
    {"value": 1, "bits": 8, "wide": None}, {"value": 1, "bits": 8, "wide": 1}, {"value": True, "bits": 8},
    {"value": 1, "bits": 0}, {"value": 2**64, "bits": 64}, {"value": 1, "bits": 8, "other": 1}, {"value": 1}])
def test_a_bad_counter_is_left_to_the_loop(entry: dict[str, Any]) -> None:
    counters = {"port_xmit_data": {"value": 5, "bits": 64, "wide": True}, "port_rcv_data": entry}
    assert codec._counters_at_once(counters) is None
    with pytest.raises(PayloadError, match=r"^ports\[1\]\.counters\.port_rcv_data: expected a counter name"):
        codec._counters(counters, "ports[1].counters")


def test_counters_of_a_good_port_are_read_at_once() -> None:
    counters = {"port_xmit_data": {"value": 2**64 - 1, "bits": 64, "wide": True},
                "symbol_error_counter": {"value": 0, "bits": 16},
                "port_rcv_data": {"value": 5, "bits": 64, "wide": False}}
    quick = codec._counters_at_once(counters)
    assert quick is not None
    assert dict(quick.values) == {"port_xmit_data": 2**64 - 1, "symbol_error_counter": 0, "port_rcv_data": 5}
    assert quick.wide == frozenset({"port_xmit_data"})


def test_a_table_is_read_once_and_json_types_stay_apart() -> None:
    first = codec._vl_arb([[0, 4], [1, 0]], "ports[1].vl_arb_high")
    assert codec._vl_arb([[0, 4], [1, 0]], "ports[2].vl_arb_high") is first
    # The same numbers as a float or a bool are no table's: refused, not found.
    for bad in ([[0, 4.0], [1, 0]], [[0, 4], [True, 0]]):
        with pytest.raises(PayloadError, match=r"ports\[3\]\.vl_arb_high: expected a list of \[VL, weight\] pairs"):
            codec._vl_arb(bad, "ports[3].vl_arb_high")
    with pytest.raises(PayloadError, match=r"sl2vl: expected a list of 4-bit integers"):
        codec._int_list(["\ud800"], "ports[3].sl2vl", 4, 16)
    assert codec._int_list([1, 2], "pkeys", 16) == (1, 2)


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
              st.text(max_size=8)),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.text(max_size=6), children, max_size=4)),
    max_leaves=20)


@given(st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=4))
@settings(max_examples=300, deadline=None)
def test_msgspec_reads_json_as_json_loads_does(document: dict[str, Any]) -> None:
    text = json.dumps(document).encode()
    try:
        quick = codec._DECODE(text)
    except Exception:
        return  # declined: _load reads it with json.loads
    assert _same(quick, json.loads(text))


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


@pytest.mark.parametrize("time_text, says", [
    (b"NaN", "time: expected seconds since 1970, got nan"),
    (b"1e400", "time: expected seconds since 1970, got inf"),
])
def test_what_msgspec_refuses_json_loads_reads_as_before(time_text: bytes, says: str) -> None:
    fabric = _fabric()
    node = next(iter(fabric.nodes.values()))
    payload = encode_state(record_of(fabric, node, 5.0, 100.0))
    start = payload.index(b'"time":') + len(b'"time":')
    end = payload.index(b",", start)
    with pytest.raises(PayloadError, match=says):
        decode_state(payload[:start] + time_text + payload[end:], node.guid)


def test_generated_encoders_write_every_field_not_none_in_order() -> None:
    fabric = _fabric()
    for node in fabric.nodes.values():
        for port in node.ports:
            for codec_, record in ((PORT_FIELDS, port), (PORT_INFO_FIELDS, port.info)):
                expected = {name: encode(getattr(record, name)) for name, encode, *_ in codec_.fields
                            if getattr(record, name) is not None}
                written = codec_.encode(record)
                assert list(written.items()) == list(expected.items())


def test_an_enum_decoder_keeps_at_most_so_many_members() -> None:
    class Bits(enum.IntFlag):
        A = 1
        B = 2

    decoder = fields._EnumDecoder(Bits)
    for code in range(fields._MEMBERS_KEPT + 100):  # every combination is a member of a flag type
        assert decoder(code, "x") == code
    assert len(decoder.members) == fields._MEMBERS_KEPT
    with pytest.raises(PayloadError, match="out of range"):
        decoder(-1, "x")


def test_a_long_table_is_read_but_not_kept() -> None:
    long = list(range(codec._SHARED_LENGTH + 1))
    read = codec._int_list(long, "ports[1].pkeys", 16)
    assert read == tuple(long)
    assert read not in codec._SHARED
    assert codec._int_list(long, "ports[2].pkeys", 16) is not read  # read again, not found

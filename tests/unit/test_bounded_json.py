"""The nesting depth of a JSON text, read from its bytes before parsing
(ibsnmp.mqtt.bounded_json), against the parsed object and against a
byte-by-byte reader; and the depth of the records our encoder writes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.mqtt.bounded_json import deeper_than, depth
from ibsnmp.mqtt.codec import (MAX_DEPTH, EventRecord, counters_of, encode_counters, encode_event, encode_state,
                               record_of)
from ibsnmp.providers.sysfs import SysfsProvider
from tests.support import sysfs_trees as trees

# Strings full of what could fool a reader of brackets: brackets, quotes,
# backslashes (JSON escapes them as \" and \\), control characters (\n,
# \u0001), and characters past ASCII and the BMP (escaped as \uXXXX pairs
# or written as UTF-8 by ensure_ascii=False).
TRICKY = st.text(st.sampled_from('[]{}"\\/:,\n\x01aé€😀'), max_size=12)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TRICKY
DOCUMENTS = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                         | st.dictionaries(TRICKY, inner, max_size=4), max_leaves=40)
LAYOUTS = st.sampled_from([{"separators": (",", ":")}, {}, {"indent": 1}, {"ensure_ascii": False},
                           {"ensure_ascii": False, "indent": "\t"}])
QUOTE, BACKSLASH = ord('"'), ord("\\")


def object_depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max(map(object_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(object_depth, value.values()), default=0)
    return 0


def parser_reach(data: bytes) -> int:
    """The deepest a JSON parser can nest in `data`, byte by byte: brackets
    outside strings, the escapes in strings; a backslash outside a string
    is where any parser stops (other errors are allowed to count on)."""
    level = deepest = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == BACKSLASH:
                escaped = True
            elif byte == QUOTE:
                in_string = False
        elif byte == QUOTE:
            in_string = True
        elif byte == BACKSLASH:
            break
        elif byte in b"[{":
            level += 1
            deepest = max(deepest, level)
        elif byte in b"]}":
            level -= 1
    return deepest


@given(DOCUMENTS, LAYOUTS)
@settings(max_examples=400, deadline=None)
@example(["]]]\\\"[[", [[1]]], {})
@example({"a": '"]]]\\"[["', "b\\": ["[", {"}": "\\\\"}]}, {"ensure_ascii": False})
def test_the_depth_of_a_document_is_that_of_its_object(document: object,
                                                      layout: dict[str, Any]) -> None:
    data = json.dumps(document, **layout).encode()
    expected = object_depth(json.loads(data))
    assert depth(data) == expected == parser_reach(data)
    for limit in range(expected + 2):
        assert deeper_than(data, limit) is (expected > limit)


@given(st.binary(max_size=300))
@settings(max_examples=400, deadline=None)
@example(b'\\"' + b'"[[[')
@example(b']]]' + b'[' * 40)
@example(b'"\\\\\\"[[["[[')
def test_any_bytes_never_raise_and_never_seem_shallower_than_a_parser_gets(data: bytes) -> None:
    found = depth(data)
    assert found >= parser_reach(data)
    for limit in (0, 1, 2, found - 1, found, 32):
        assert deeper_than(data, limit) >= (parser_reach(data) > limit)
    try:
        parsed = json.loads(data)
    except ValueError:
        return
    assert found == object_depth(parsed)


@given(DOCUMENTS, st.data())
@settings(max_examples=300, deadline=None)
def test_a_broken_document_never_seems_shallower_than_a_parser_gets(document: object, data: st.DataObject) -> None:
    """Valid text with bytes taken out or put in: what a hostile publisher
    sends looks almost right."""
    text = bytearray(json.dumps(document).encode())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        if text and data.draw(st.booleans()):
            del text[min(at, len(text) - 1)]
        else:
            text[at:at] = data.draw(st.sampled_from([b'"', b"\\", b"[", b"]", b"{", b"}", b"\\\\"]))
    broken = bytes(text)
    assert depth(broken) >= parser_reach(broken)
    assert deeper_than(broken, 3) >= (parser_reach(broken) > 3)


def test_the_attack_is_found_at_once() -> None:
    arrays = b"[" * 5000 + b"]" * 5000
    objects = b'{"a":' * 5000 + b"1" + b"}" * 5000
    hidden = b'["' + b"]" * 5000 + b'\\"", ' + b"[" * 40 + b"]" * 40 + b"]"  # closings in a string
    for data, expected in ((arrays, 5000), (objects, 5000), (hidden, 41)):
        assert deeper_than(data, MAX_DEPTH)
        assert depth(data) == expected
    with pytest.raises(RecursionError):
        json.loads(arrays)  # what the check stands in front of


def _records(tmp_path: Path) -> list[bytes]:
    """Every kind of payload our encoder writes, from simulated fabrics (with
    SMs, SL-to-VL and VL arbitration tables, links) and sysfs hosts."""
    payloads = []
    for spec in ("single", "fat-tree:spines=2,leaves=2,hosts=2"):
        fabric = build_fabric(spec, seed=3)
        records = {guid: record_of(fabric, node, 10.0, 100.0, publisher="p", refresh=5.0)
                   for guid, node in fabric.nodes.items()}
        payloads += [encode_state(record) for record in records.values()]
        payloads.append(encode_counters({guid: counters_of(r, 90.0) for guid, r in records.items()}, 101.0))
    for make in (trees.mlx5_two_port, trees.roce_port, trees.no_pma, trees.switch):
        make(tmp_path)
    fabric = SysfsProvider(tmp_path).snapshot
    payloads += [encode_state(record_of(fabric, node, 0.0, 100.0)) for node in fabric.nodes.values()]
    event = TrapEvent(IbaTrap.BAD_P_KEY, 1, 7, key=0x8001, lid2=9, gid1=5, gid2=6, qp1=1, qp2=2, sl=3)
    payloads.append(encode_event(EventRecord(12, event, 1.5)))
    return payloads


def test_our_deepest_record_nests_five_levels_far_below_the_limit(tmp_path: Path) -> None:
    payloads = _records(tmp_path)
    depths = [depth(payload) for payload in payloads]
    assert depths == [object_depth(json.loads(payload)) for payload in payloads]
    # A state's ports[] {port} counters{} {counter} (and vl_arb_*[] [entry]);
    # a counters message's nodes{} {node} ports{} [values]: codec.MAX_DEPTH's comment.
    assert max(depths) == 5
    assert MAX_DEPTH >= 6 * max(depths)


def test_the_check_costs_a_small_part_of_parsing_a_large_switch() -> None:
    fabric = build_fabric("fat-tree:spines=1,leaves=254,hosts=1", seed=1)
    switch = max(fabric.nodes.values(), key=lambda node: len(node.ports))
    payload = encode_state(record_of(fabric, switch, 10.0, 100.0))
    assert len(payload) > 500_000

    def best(work: Callable[[], object], rounds: int = 7) -> float:
        times: list[float] = []
        for _ in range(rounds):
            start = time.perf_counter()
            work()
            times.append(time.perf_counter() - start)
        return min(times)

    parse = best(lambda: json.loads(payload))
    check = best(lambda: deeper_than(payload, MAX_DEPTH))
    # About a tenth when measured alone (bench: see the change's report);
    # half leaves room for a busy machine, not for a loop per byte.
    assert check < 0.5 * parse, (check, parse)

"""The MQTT payload codec: node records and events as versioned JSON."""

from __future__ import annotations

import json
import re
import time
import dataclasses
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs in the test dependencies
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import sysfs_trees as trees
from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric.counters import EXTENDED_NAMES, PortCounters, interface_counters_of, saturate
from ibsnmp.fabric.traffic import interface_counters, port_counters
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.model import Fabric
from ibsnmp.mqtt import schema
from ibsnmp.mqtt.codec import (
    COUNTER_BATCH,
    MAX_PAYLOAD_BYTES,
    EventRecord,
    PayloadError,
    decode_event,
    CountersRecord,
    counter_order,
    counters_of,
    decode_counters,
    decode_state,
    encode_counters,
    encode_event,
    encode_state,
    record_of,
    with_counters,
)
from ibsnmp.providers.sysfs import SysfsProvider

STATE_SCHEMA = json.loads(schema.STATE_FILE.read_text())
COUNTERS_SCHEMA = json.loads(schema.COUNTERS_FILE.read_text())
EVENT_SCHEMA = json.loads(schema.EVENT_FILE.read_text())
# A change made to a decoded JSON document in place.
Mutation = Callable[[dict[str, Any]], object]


@pytest.fixture
def sysfs_fabric(tmp_path: Path) -> Fabric:
    for make in (trees.mlx5_two_port, trees.roce_port, trees.no_pma, trees.switch):
        make(tmp_path)
    return SysfsProvider(tmp_path).snapshot


def test_schema_files_are_current() -> None:
    assert schema.STATE_FILE.read_text() == schema.render(schema.state_schema())
    assert schema.COUNTERS_FILE.read_text() == schema.render(schema.counters_schema())
    assert schema.EVENT_FILE.read_text() == schema.render(schema.event_schema())


def test_counters_carry_the_values_of_a_state_alone() -> None:
    fabric = build_fabric("fat-tree:spines=2,leaves=2,hosts=2", seed=3)
    states = {guid: decode_state(encode_state(record_of(fabric, node, 10.0, 100.0)), guid)
              for guid, node in fabric.nodes.items()}
    later = {guid: record_of(fabric, node, 70.0, 160.0) for guid, node in fabric.nodes.items()}
    payload = encode_counters({guid: counters_of(record, 100.0) for guid, record in later.items()}, 161.0)
    jsonschema.validate(json.loads(payload), COUNTERS_SCHEMA)
    assert len(payload) * 5 < sum(len(encode_state(record)) for record in later.values())  # a fraction
    received = decode_counters(payload)
    assert received.keys() == fabric.nodes.keys()
    for guid, counters in received.items():
        assert isinstance(counters, CountersRecord) and counters.state == 100.0 and counters.time == 160.0
        state = states[guid]
        taken = with_counters(state, counters, counter_order(state))
        assert taken is not None
        assert taken.node is state.node and taken.time == 160.0
        assert {num: dict(values) for num, values in taken.values.items()} == \
            {num: dict(values) for num, values in later[guid].values.items()}
        assert [sm.act_count for sm in taken.sms] == [sm.act_count for sm in later[guid].sms]
        # Values that do not fit the state's counters are refused, not guessed at.
        short = dataclasses.replace(counters, ports={num: values[:-1] for num, values in counters.ports.items()})
        assert with_counters(state, short, counter_order(state)) is None


@pytest.mark.parametrize(("node", "reason"), [
    ('{"time":5,"state":1,"ports":{"1":[-1]}}', "ports.1"),
    ('{"time":5,"state":1,"ports":{"x":[1]}}', "ports.x"),
    ('{"time":5,"state":1,"ports":{"1":[true]}}', "ports.1"),
    ('{"time":5,"state":1,"ports":[]}', "ports"),
    ('{"time":5,"state":1,"ports":{},"act_counts":[4294967296]}', "act_counts"),
    ('{"time":5,"ports":{}}', "time"),
    ('{"time":5,"state":1,"ports":{},"extra":1}', "expected"),
])
def test_a_bad_node_in_counters_is_refused_alone(node: str, reason: str) -> None:
    good = '{"time":5,"state":1,"ports":{"1":[7]}}'
    payload = ('{"version":1,"time":5,"nodes":{"0000000000000001":%s,"0000000000000002":%s}}'
               % (good, node)).encode()
    received = decode_counters(payload)
    assert isinstance(received[1], CountersRecord) and received[1].ports == {1: (7,)}
    assert isinstance(received[2], PayloadError) and reason in str(received[2])


@pytest.mark.parametrize(("payload", "reason"), [
    (b'{"version":2,"time":5,"nodes":{}}', "version"),
    (b'{"version":1,"time":5,"nodes":[]}', "nodes"),
    (b'{"version":1,"nodes":{}}', "time"),
    (b'{"version":1,"time":5,"nodes":{"xyz":{}}}', "nodes"),
    (b'{"version":1,"time":5,"nodes":{},"extra":1}', "extra"),
])
def test_an_unreadable_counters_message_is_refused(payload: bytes, reason: str) -> None:
    with pytest.raises(PayloadError, match=reason):
        decode_counters(payload)


def test_sysfs_nodes_come_back_equal_and_valid(sysfs_fabric: Fabric) -> None:
    assert len(sysfs_fabric.nodes) == 4
    for node in sysfs_fabric.nodes.values():
        record = record_of(sysfs_fabric, node, 5.0, time.time(), publisher="host-a", refresh=30.0)
        payload = encode_state(record)
        jsonschema.validate(json.loads(payload), STATE_SCHEMA)
        assert decode_state(payload, node.guid) == record
        assert record.node == node


def test_what_sysfs_cannot_tell_stays_absent(sysfs_fabric: Fabric) -> None:
    node = sysfs_fabric.nodes[trees.MLX_NODE_GUID]
    data = json.loads(encode_state(record_of(sysfs_fabric, node, 0.0, time.time())))
    assert "base_version" not in data["node"] and "class_version" not in data["node"]
    info = data["ports"][0]["info"]
    assert "m_key" not in info and "neighbor_mtu" not in info and info["lid"] == 0x5A
    assert "sl2vl" not in data["ports"][0] and "remote" not in data["ports"][0]
    assert "reliable_connection" not in data["ca"]
    # Extended 64-bit counters travel as read, with the width PMA-MIB saturates
    # them at and the mark of a 64-bit source.
    assert data["ports"][0]["counters"]["port_xmit_data"] == {"value": 9_876_543_210_123, "bits": 32, "wide": True}
    assert data["ports"][0]["counters"]["unicast_xmit_pkts"]["bits"] == 64


def test_a_node_description_not_read_stays_absent(tmp_path: Path) -> None:
    spec = trees.mlx5_two_port(tmp_path)
    (tmp_path / spec.name / "node_desc").unlink()
    fabric = SysfsProvider(tmp_path).snapshot
    record = record_of(fabric, fabric.local_node, 0.0, time.time())
    payload = encode_state(record)
    assert "description" not in json.loads(payload)["node"]
    jsonschema.validate(json.loads(payload), STATE_SCHEMA)
    assert decode_state(payload, fabric.local_node.guid).node.description is None


def test_simulated_nodes_carry_their_counters_at_publish_time() -> None:
    fabric = build_fabric("fat-tree:spines=2,leaves=2,hosts=2", seed=3)
    master = fabric.master_sm
    assert master is not None
    for node in fabric.nodes.values():
        record = record_of(fabric, node, 42.0, time.time())
        payload = encode_state(record)
        jsonschema.validate(json.loads(payload), STATE_SCHEMA)
        back = decode_state(payload, node.guid)
        assert back.node == record.node and back.sms == record.sms
        assert (back.sm_config is not None) == (node.guid == master.node_guid)
        assert back.values == record.values
        for port, sent in zip(node.ports, back.node.ports):
            expected = port_counters(fabric, port, 42.0)
            assert sent.counter_layout is not None and expected is not None
            # PortCounters as PMA-MIB serves them; the data and packet
            # counters 64-bit and wide, as a PortCountersExtended would give them.
            values = back.values[port.num]
            assert {name: saturate(values[name], bits) for name, bits in PortCounters.BITS.items()} == asdict(expected)
            assert sent.counter_layout.wide == frozenset(EXTENDED_NAMES)
            assert interface_counters_of(values, sent.counter_layout.wide) == interface_counters(fabric, port, 42.0)
            assert sent.remote == port.remote


def test_the_wide_mark_travels_and_old_payloads_have_none(sysfs_fabric: Fabric) -> None:
    node = sysfs_fabric.nodes[trees.MLX_NODE_GUID]
    port = node.ports[0]
    measured = sysfs_fabric.measured(port)
    assert measured is not None and measured.wide == frozenset(EXTENDED_NAMES)
    data = json.loads(encode_state(record_of(sysfs_fabric, node, 0.0, time.time())))
    sent = data["ports"][0]["counters"]
    assert "wide" not in sent["symbol_error_counter"]
    back = decode_state(json.dumps(data).encode(), node.guid).node.ports[0].counter_layout
    assert back is not None and back.wide == measured.wide
    for entry in sent.values():  # as a publisher before the mark sent it
        entry.pop("wide", None)
    old_record = decode_state(json.dumps(data).encode(), node.guid)
    old = old_record.node.ports[0].counter_layout
    assert old is not None and old.wide == frozenset()
    assert dict(old_record.values[port.num]) == dict(measured.values)
    sent["port_xmit_data"]["wide"] = "yes"
    with pytest.raises(PayloadError, match="wide"):
        decode_state(json.dumps(data).encode(), node.guid)


def test_events_round_trip_and_validate() -> None:
    event = TrapEvent(IbaTrap.BAD_P_KEY, 0x0002C903000A1B2C, 7, key=0x8001, lid2=9, gid1=(0xFE80 << 112) | 5,
                      gid2=(0xFE80 << 112) | 6, qp1=1, qp2=2, sl=3)
    payload = encode_event(EventRecord(12, event, 1700000000.5))
    jsonschema.validate(json.loads(payload), EVENT_SCHEMA)
    assert decode_event(payload, event.node_guid) == EventRecord(12, event, 1700000000.5)
    with pytest.raises(PayloadError, match="not the topic's"):
        decode_event(payload, event.node_guid + 1)


def _valid(sysfs_fabric: Fabric) -> tuple[int, dict[str, Any]]:
    node = sysfs_fabric.nodes[trees.MLX_NODE_GUID]
    return node.guid, json.loads(encode_state(record_of(sysfs_fabric, node, 0.0, time.time())))


@pytest.mark.parametrize("mutate, reason", [
    (lambda d: d.update(version=2), "wrong version 2"),
    (lambda d: d.pop("version"), "wrong version None"),
    (lambda d: d["ports"][0]["info"].update(lid="0x5a"), r"ports\[0\]\.info\.lid: expected an integer, got a string"),
    (lambda d: d["ports"][0]["info"].update(port_state=9), r"ports\[0\].info.port_state: 9 is not a PortState"),
    (lambda d: d["node"].update(surprise=1), r"node\.surprise: unknown key \(expected one of: guid, "),
    (lambda d: d["ports"][0].update(surprise=1), r"ports\[0\]\.surprise: unknown key \(expected one of: num, .*counters\)"),
    (lambda d: d.update(surprise=1), r"^surprise: unknown key \(expected one of: ca, node, ports, "),
    (lambda d: d["node"].update(base_version=None), "null; a value that is not known is left out"),
    (lambda d: d["node"].pop("local_port_num"), "node: local_port_num is missing"),
    (lambda d: d["ports"][0].update(guids=["xyz"]), r"ports\[0\].guids\[0\]: expected 16 lower-case hex"),
    (lambda d: d["ports"][0]["counters"].update(port_rcv_data={"value": -1, "bits": 32}),
     "a 64-bit counter value"),
    (lambda d: d.update(ports=[]), "ports: expected a list of 1 to 256 ports"),
    (lambda d: d["ports"].reverse(), "numbers must be consecutive and ascending"),
])
def test_schema_violations_are_refused_with_the_reason(sysfs_fabric: Fabric, mutate: Mutation,
                                                        reason: str) -> None:
    guid, data = _valid(sysfs_fabric)
    mutate(data)
    with pytest.raises(PayloadError, match=reason):
        decode_state(json.dumps(data).encode(), guid)
    if "consecutive" not in reason:  # ordering is beyond what a JSON Schema says
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(data, STATE_SCHEMA)


def test_a_topic_guid_that_disagrees_with_the_payload_is_refused(sysfs_fabric: Fabric) -> None:
    guid, data = _valid(sysfs_fabric)
    with pytest.raises(PayloadError, match=f"node GUID {guid:016x} is not the topic's"):
        decode_state(json.dumps(data).encode(), guid ^ 1)


def test_malformed_and_oversized_payloads_are_refused(sysfs_fabric: Fabric) -> None:
    guid, data = _valid(sysfs_fabric)
    with pytest.raises(PayloadError, match="malformed JSON"):
        decode_state(b'{"version": 1, "node": ', guid)
    with pytest.raises(PayloadError, match="malformed JSON"):
        decode_state(b"\xff\xfe", guid)
    with pytest.raises(PayloadError, match="expected a JSON object"):
        decode_state(b"[1]", guid)
    with pytest.raises(PayloadError, match=f"oversized: {MAX_PAYLOAD_BYTES + 1} bytes"):
        decode_state(b" " * (MAX_PAYLOAD_BYTES + 1), guid)
    small = json.dumps(data).encode()
    with pytest.raises(PayloadError, match="oversized"):
        decode_state(small, guid, max_bytes=len(small) - 1)


# -- bounds: what a hostile publisher sends is refused, never raised past the codec ----------------

@pytest.mark.parametrize(("payload", "reason"), [
    (b"[" * 5000 + b"]" * 5000, "nested deeper than 32 levels"),
    (b'{"a":' * 5000 + b"1" + b"}" * 5000, "nested deeper than 32 levels"),
    (b'{"version":1,"x":"' + b"]" * 5000 + b'\\"",' + b"[" * 33 + b"]" * 33 + b"}", "nested deeper than"),
    (b'{"version":' + b"1" * 5000 + b"}", "malformed JSON: Exceeds the limit"),
    ('["\\"", [[]]]'.encode("utf-16"), "malformed JSON: not UTF-8"),
])
def test_hostile_payloads_are_refused_before_or_while_parsing(payload: bytes, reason: str) -> None:
    for decode in (lambda p: decode_state(p, 1), lambda p: decode_event(p, 1), decode_counters):
        with pytest.raises(PayloadError, match=reason):
            decode(payload)


def test_a_deep_counters_or_events_message_is_refused() -> None:
    def counters(levels: int) -> bytes:  # the message's own 4 levels, then `levels` in a port's values
        deep = b"[" * levels + b"1" + b"]" * levels
        return b'{"version":1,"time":5,"nodes":{"0000000000000001":{"time":5,"state":1,"ports":{"1":%s}}}}' % deep

    with pytest.raises(PayloadError, match="nested deeper than 32 levels"):
        decode_counters(counters(29))
    # 32 levels are read (and the node's values refused for what they are).
    refused = decode_counters(counters(28))[1]
    assert isinstance(refused, PayloadError) and "ports.1: expected a port number" in str(refused)
    event = b'{"version":1,"sequence":1,"time":5,"event":{"trap":%s}}' % (b"[" * 40 + b"]" * 40)
    with pytest.raises(PayloadError, match="nested deeper than 32 levels"):
        decode_event(event, 1)


@pytest.mark.parametrize(("key", "why"), [
    ("\u00b2", "ports.\u00b2: expected a port number"),  # a digit to str.isdigit, not to int()
    ("1" * 5000, r"ports.1111.*\.\.\.$"),  # past int()'s 4,300 digits; the text cut short
    ("256", "ports.256: expected a port number"),
])
def test_a_counters_port_key_that_is_no_port_number_is_refused(key: str, why: str) -> None:
    payload = json.dumps({"version": 1, "time": 5, "nodes": {"0000000000000001": {
        "time": 5, "state": 1, "ports": {key: [1]}}}}).encode()
    refused = decode_counters(payload)[1]
    assert isinstance(refused, PayloadError)
    assert re.search(why, str(refused)) and len(str(refused)) < 600


def test_a_counters_message_carries_at_most_a_batch_of_nodes() -> None:
    def message(nodes: int) -> bytes:
        return json.dumps({"version": 1, "time": 5, "nodes": {
            f"{guid:016x}": {"time": 5, "state": 1, "ports": {"1": [guid]}} for guid in range(1, nodes + 1)}}).encode()

    assert len(decode_counters(message(COUNTER_BATCH))) == COUNTER_BATCH
    with pytest.raises(PayloadError, match=f"at most {COUNTER_BATCH}"):
        decode_counters(message(COUNTER_BATCH + 1))


@pytest.mark.parametrize("mutate, reason", [
    (lambda d: d["node"].update(description="d" * 65), r"node\.description: longer than 64 characters"),
    (lambda d: d["node"].update(model_name="m" * 129), r"node\.model_name: longer than 128 characters"),
    (lambda d: d["node"].update(description="a\ud800b"), r"node\.description: not Unicode text"),
    (lambda d: d.update(publisher="p\udc00"), "publisher: expected an MQTT client id"),
    (lambda d: d["ports"][0].update(sl2vl=[0] * 17), r"ports\[0\]\.sl2vl: more than 16 entries"),
    (lambda d: d["ports"][0].update(vl_arb_low=[[0, 1]] * 65), r"vl_arb_low: more than 64 entries"),
    (lambda d: d["ports"][0].update(guids=["0" * 16] * 257), r"guids: more than 256 entries"),
    (lambda d: d["ports"][0].update(vendor_diag="00" * 129), r"vendor_diag: more than 128 octets"),
    (lambda d: d.update(sms=[{}] * 257), "sms: expected a list of at most 256 SMs"),
    (lambda d: d.update(refresh=["x" * 1000]), "refresh: expected a period in seconds, got an array$"),
    (lambda d: d.update(time=["x" * 100_000]), "time: expected seconds since 1970, got an array$"),
    (lambda d: d["ports"][0].update({"k\n" * 500: 1}), r"^ports\[0\]\.(k\\n){10}"),
])
def test_counts_and_strings_past_their_bounds_are_refused(sysfs_fabric: Fabric, mutate: Mutation,
                                                          reason: str) -> None:
    guid, data = _valid(sysfs_fabric)
    mutate(data)
    with pytest.raises(PayloadError, match=reason) as refused:
        decode_state(json.dumps(data).encode(), guid)
    text = str(refused.value)
    assert len(text) < 600 and text.isprintable()  # one log line, whatever was sent


def test_strings_at_their_bounds_are_taken(sysfs_fabric: Fabric) -> None:
    guid, data = _valid(sysfs_fabric)
    data["node"].update(description="\ufffd" * 64, model_name="m" * 128)  # 64 octets read with errors="replace"
    data["ports"][0].update(sl2vl=[1] * 16, vendor_diag="ab" * 128)
    record = decode_state(json.dumps(data).encode(), guid)
    assert record.node.description == "\ufffd" * 64 and record.node.ports[0].vendor_diag == b"\xab" * 128


# What a hostile publisher puts anywhere in a record; the two sentinel strings
# become what json.dumps cannot write: a number past int()'s 4,300 digits,
# 2,000 nested arrays.
_HUGE, _DEEP = "\x00huge", "\x00deep"
_RAW = {json.dumps(_HUGE).encode(): b"9" * 5000, json.dumps(_DEEP).encode(): b"[" * 2000 + b"]" * 2000}
_KEYS = st.text(max_size=4) | st.sampled_from(["\u00b2", "1" * 5000, "\ud800", "0000000000000002", "256"])
_ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70) | st.floats() | st.text(max_size=8)
    | st.sampled_from(["\ud800", "0" * 16, "f" * 32, "\u00b2", "00" * 200, _HUGE, _DEEP]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8)


def _paths(value: object, path: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Every place in a decoded JSON document: a key of an object, an index of an array."""
    found = [path]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _paths(inner, (*path, index))
    return found


def _mutated(document: object, data: st.DataObject) -> bytes:
    """`document` with a few values replaced, keys taken out or put in."""
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(document)))
        if not path:
            continue
        parent: Any = document
        for step in path[:-1]:
            parent = parent[step]
        if isinstance(parent, dict) and data.draw(st.booleans()):
            del parent[path[-1]]
            parent[data.draw(_KEYS)] = data.draw(_ANY_JSON)
        else:
            parent[path[-1]] = data.draw(_ANY_JSON)
    payload = json.dumps(document).encode()
    for sentinel, raw in _RAW.items():
        payload = payload.replace(sentinel, raw)
    return payload


@given(st.data())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_mutated_message_is_taken_or_refused_never_raised(sysfs_fabric: Fabric,
                                                            data: st.DataObject) -> None:
    """Whatever a publisher changes in a valid message, a decoder returns a
    record or raises PayloadError: nothing else leaves the codec."""
    guid, state = _valid(sysfs_fabric)
    fabric = build_fabric("single", seed=1)
    counters = json.loads(encode_counters({g: counters_of(record_of(fabric, n, 5.0, 10.0), 9.0)
                                           for g, n in fabric.nodes.items()}, 11.0))
    event = TrapEvent(IbaTrap.BAD_P_KEY, guid, 7, key=0x8001, lid2=9, gid1=5, gid2=6, qp1=1, qp2=2, sl=3)
    events = json.loads(encode_event(EventRecord(12, event, 1.5)))
    kind = data.draw(st.sampled_from(["state", "counters", "event"]))
    document = {"state": state, "counters": counters, "event": events}[kind]
    payload = _mutated(document, data)
    try:
        if kind == "state":
            decode_state(payload, guid)
        elif kind == "counters":
            decode_counters(payload)
        else:
            decode_event(payload, guid)
    except PayloadError as exc:
        assert len(str(exc)) < 600 and str(exc).isprintable()

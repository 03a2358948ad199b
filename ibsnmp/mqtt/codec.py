"""The MQTT payloads, sans I/O: node states, counters and trap events as versioned JSON and back.

A state record is everything a node's own SNMP context serves (SMA-MIB, IB-CA-MIB, PMA-MIB
PortCounters) plus the links it knows and the SMs it runs, so an aggregator rebuilds the node
exactly as its provider held it (schema/*.json; `VERSION` is every payload's `version`).
Counters go as read, each with `bits` (its PMA-MIB width) and `wide` if read from a 64-bit
source that wraps. A payload is bounded before it is parsed (size, strict UTF-8, MAX_DEPTH)
and as it is read (ports, table sizes, fields.STRING_LIMITS); the decoders raise PayloadError
and nothing else, whatever the bytes. Reference: docs/providers.md, 'Payloads'.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sized
from dataclasses import dataclass, field, fields, replace
from itertools import compress
from operator import itemgetter, methodcaller
from types import MappingProxyType
from typing import Any, TypeGuard, TypeVar

import msgspec

from ibsnmp.documents import JSON, check_keys, type_name
from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric.counters import PortCounters
from ibsnmp.fabric.traffic import extended_counters, port_counters, sm_act_count
from ibsnmp.fabric.model import (
    CaInfo,
    Fabric,
    MeasuredCounters,
    Node,
    Port,
    PortInfo,
    PortRef,
    SmConfig,
    SmInfo,
    SwitchInfo,
    VlArbEntry,
)

from .bounded_json import deeper_than
from .fields import PayloadError, StructCodec, hex64, hex128, parse_hex64, parse_hex128

__all__ = [
    "VERSION",
    "MAX_PAYLOAD_BYTES",
    "MAX_DEPTH",
    "PayloadError",
    "NodeRecord",
    "EventRecord",
    "record_of",
    "encode_state",
    "decode_state",
    "encode_event",
    "decode_event",
    "COUNTER_BATCH",
    "CountersRecord",
    "counter_order",
    "counters_of",
    "encode_counters",
    "decode_counters",
    "with_counters",
]

VERSION = 1
# Bigger than any real node's record (a 254-port switch with its 64-bit
# counters); a larger message is refused unread.
MAX_PAYLOAD_BYTES = 1 << 20

# How deeply a payload's arrays and objects may nest.  The deepest record we
# write nests 5 levels (a state's ports[] {port} counters{} {counter}, or
# vl_arb_*[] [entry]; a counters message's nodes{} {node} ports{} [values]:
# tests/unit/test_bounded_json.py measures it); 32 leaves a margin of six
# times that for later versions, and is far below the thousand levels or
# so at which json.loads runs out of stack (RecursionError).
MAX_DEPTH = 32

_MAX_PORTS = 255
# Lists bounded by IBA: 16 SLs to map; 64 entries in each VL arbitration
# table (two blocks of 32); GUIDCap is 8 bits; a node runs at most one SM
# on each of its ports.
_MAX_SL2VL = 16
_MAX_VL_ARB = 64
_MAX_GUIDS = 256
_MAX_SMS = _MAX_PORTS + 1
# VendorDiag is one 128-octet attribute block (PMA-MIB serves 124 of them).
_MAX_VENDOR_DIAG = 128
# What a refusal's text may hold of a key or value a publisher sent: one
# log line, whatever it sent.
_REFUSAL_CHARS = 240
_COUNTER_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_DEFAULT_BITS = 64  # counters PortCounters has no field for (PortCountersExtended only)

NODE_FIELDS = StructCodec(Node, skip=frozenset({"ports", "switch", "ca"}))
SWITCH_FIELDS = StructCodec(SwitchInfo)
CA_FIELDS = StructCodec(CaInfo)
PORT_INFO_FIELDS = StructCodec(PortInfo)
PORT_FIELDS = StructCodec(Port, skip=frozenset({
    "node_guid", "info", "pkeys", "sl2vl", "vl_arb_high", "vl_arb_low", "guids", "remote", "vendor_diag",
    "gids", "counter_layout", "sl2vl_inputs"}))
SM_FIELDS = StructCodec(SmInfo, skip=frozenset({"node_guid"}))
SM_CONFIG_FIELDS = StructCodec(SmConfig)
EVENT_FIELDS = StructCodec(TrapEvent)


_NO_VALUES: Mapping[int, Mapping[str, int]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """What one state message carries: the node (its ports name their peers:
    the links it knows), the subnet managers running on it with their
    ActCount at `time`, and the SM's configuration if it is the master's
    node.  `time`: the publisher's wall clock (seconds since 1970);
    `publisher`: the client id whose last will covers the node; `refresh`:
    the publisher's full-refresh period in seconds (an aggregator judges
    the node stale after missing a few).  Every port has a counter layout
    (the counters sent for it); `values` holds their values by port number."""

    node: Node
    sms: tuple[SmInfo, ...]
    sm_config: SmConfig | None
    time: float
    publisher: str | None = None
    refresh: float | None = None
    values: Mapping[int, Mapping[str, int]] = field(default_factory=lambda: _NO_VALUES)


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One trap event with the publisher's sequence number for its node."""

    sequence: int
    event: TrapEvent
    time: float


# -- the model -> a record ---------------------------------------------------------


def record_of(fabric: Fabric, node: Node, elapsed: float, now: float, *, publisher: str | None = None,
              refresh: float | None = None) -> NodeRecord:
    """The node as `fabric` holds it `elapsed` seconds after the provider's
    epoch: simulated counters and SM activity counts are taken at that
    moment (measured counters are already values)."""
    measured = [_measured_at(fabric, port, elapsed) for port in node.ports]
    ports = tuple(port if port.counter_layout is not None else _replace(port, counter_layout=m.layout)
                  for port, m in zip(node.ports, measured))
    values = MappingProxyType({port.num: m.values for port, m in zip(node.ports, measured)})
    sms = tuple(
        SmInfo(sm.guid, sm.sm_key, sm_act_count(sm, elapsed), sm.priority, sm.state, sm.node_guid, sm.port_num,
               sm.act_rate)
        for sm in fabric.sms if sm.node_guid == node.guid)
    master = fabric.master_sm
    sm_config = fabric.sm_config if master is not None and master.node_guid == node.guid else None
    if any(port is not before for port, before in zip(ports, node.ports)):
        node = _replace_ports(node, ports)
    return NodeRecord(node, sms, sm_config, now, publisher, refresh, values)


_PORT_COUNTER_FIELDS = tuple(f.name for f in fields(PortCounters))


def _measured_at(fabric: Fabric, port: Port, elapsed: float) -> MeasuredCounters:
    """The counters a port reports: as read, or the simulated ones at `elapsed`
    (PortCounters, with the data and packet counters taken from the simulated
    PortCountersExtended and marked wide)."""
    measured = fabric.measured(port)
    if measured is not None:
        return measured
    counters = port_counters(fabric, port, elapsed)
    # The fields read by name: they hold ints or None, and dataclasses.asdict
    # deep-copies each (a third of what a record cost).
    values = {} if counters is None else {
        name: value for name in _PORT_COUNTER_FIELDS if (value := getattr(counters, name)) is not None}
    extended = extended_counters(fabric, port, elapsed)
    if extended is None:
        return MeasuredCounters(MappingProxyType(values))
    values.update(extended.values)
    return MeasuredCounters(MappingProxyType(values), extended.wide)


def _replace(port: Port, **changes: Any) -> Port:
    values = {name: getattr(port, name) for name in Port.__dataclass_fields__}
    values.update(changes)
    return Port(**values)


def _replace_ports(node: Node, ports: tuple[Port, ...]) -> Node:
    values = {name: getattr(node, name) for name in Node.__dataclass_fields__}
    values["ports"] = ports
    return Node(**values)


# -- a record -> JSON -----------------------------------------------------------------


def _encode_port(port: Port, values: Mapping[str, int] | None) -> dict[str, Any]:
    out = PORT_FIELDS.encode(port)
    out["info"] = PORT_INFO_FIELDS.encode(port.info)
    for name in ("pkeys", "sl2vl"):
        if getattr(port, name):
            out[name] = list(getattr(port, name))
    for name in ("vl_arb_high", "vl_arb_low"):
        if getattr(port, name):
            out[name] = [[entry.vl, entry.weight] for entry in getattr(port, name)]
    if port.guids is not None:
        out["guids"] = [hex64(guid) for guid in port.guids]
    if port.gids is not None:
        out["gids"] = [hex128(gid) for gid in port.gids]
    if port.remote is not None:
        out["remote"] = {"guid": hex64(port.remote.guid), "port": port.remote.port}
    if port.vendor_diag is not None:
        out["vendor_diag"] = port.vendor_diag.hex()
    layout = port.counter_layout
    if layout is not None:
        wide, read = layout.wide, values or {}
        out["counters"] = {name: _counter(read[name], PortCounters.BITS.get(name, _DEFAULT_BITS), name in wide)
                           for name in sorted(layout.names) if name in read}
    return out


def _counter(value: int, bits: int, wide: bool) -> dict[str, Any]:
    return {"value": value, "bits": bits, "wide": True} if wide else {"value": value, "bits": bits}


def state_dict(record: NodeRecord) -> dict[str, Any]:
    node = record.node
    # version and time first: an aggregator recognises an unchanged state
    # by what follows them (mqtt.aggregator._refresh_digest).
    out: dict[str, Any] = {"version": VERSION, "time": record.time}
    if record.publisher is not None:
        out["publisher"] = record.publisher
    if record.refresh is not None:
        out["refresh"] = record.refresh
    out["node"] = NODE_FIELDS.encode(node)
    if node.switch is not None:
        out["switch"] = SWITCH_FIELDS.encode(node.switch)
    if node.ca is not None:
        out["ca"] = CA_FIELDS.encode(node.ca)
    out["ports"] = [_encode_port(port, record.values.get(port.num)) for port in node.ports]
    if record.sms:
        out["sms"] = [SM_FIELDS.encode(sm) for sm in record.sms]
    if record.sm_config is not None:
        out["sm_config"] = SM_CONFIG_FIELDS.encode(record.sm_config)
    return out


# JSON in C (msgspec): about half of what writing or reading a state cost
# was json's (docs/performance.md, "MQTT at scale"). Key order is kept: the
# version and time stay first. Text goes as UTF-8 rather than \u escapes.
_ENCODE = msgspec.json.Encoder().encode
_DECODE = msgspec.json.Decoder().decode


def encode_state(record: NodeRecord) -> bytes:
    return _ENCODE(state_dict(record))


# -- JSON -> a record ---------------------------------------------------------------


def _load(payload: bytes, max_bytes: int, keys: frozenset[str]) -> dict[str, Any]:
    """The payload's top object, its bounds checked before it is parsed:
    size, UTF-8 (which the depth check reads), nesting depth."""
    if len(payload) > max_bytes:
        raise PayloadError(f"oversized: {len(payload)} bytes, the limit is {max_bytes}")
    try:
        # Strict UTF-8 (json.loads would take UTF-16 and UTF-32 too).
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PayloadError(f"malformed JSON: not UTF-8 ({exc.reason} at octet {exc.start})") from None
    if deeper_than(payload, MAX_DEPTH):
        raise PayloadError(f"nested deeper than {MAX_DEPTH} levels")
    try:
        data = _DECODE(payload)
    except (msgspec.DecodeError, msgspec.ValidationError):
        # Strict JSON only, and no number out of a float's range. What it
        # refuses, json.loads reads as before: the refusal (NaN as a time,
        # a lone surrogate in a description) is then the fields' to say.
        try:
            data = json.loads(text)
        except ValueError as exc:  # JSONDecodeError, or a number past int's 4,300 digits
            raise PayloadError(f"malformed JSON: {exc}") from None
    if not isinstance(data, dict):
        raise PayloadError(f"malformed: expected a JSON object, got {type(data).__name__}")
    version = data.get("version")
    if version != VERSION:
        raise PayloadError(f"wrong version {_seen(version)}: this agent reads version {VERSION}")
    if not keys.issuperset(data):
        check_keys(data, sorted(keys), "", PayloadError.at)
    return data


def _is_number(value: object) -> TypeGuard[int | float]:
    """A JSON number exactly (not bool, which is an int subclass)."""
    return type(value) in (int, float)


def _seen(value: object) -> str:
    """A refused value as a refusal shows it: a number, true, false or null
    as such (shortened), anything else by its type (a string, an array: a
    publisher's text does not reach the log)."""
    if value is None or type(value) in (bool, int, float):
        shown = repr(value)
        return shown if len(shown) <= 40 else f"{shown[:20]}...({len(shown)} digits)"
    return type_name(value, JSON)


def _fit(exc: PayloadError) -> PayloadError:
    """`exc` with a text fit for one log line: where and what, each shortened
    to _REFUSAL_CHARS, what is not printable escaped (a key a publisher made
    up may hold a newline or an unpaired surrogate)."""
    where, problem = _printable(exc.where), _printable(exc.problem)
    return exc if (where, problem) == (exc.where, exc.problem) else PayloadError(problem, where)


def _printable(text: str) -> str:
    if len(text) <= _REFUSAL_CHARS and text.isprintable():
        return text
    shown = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text[:_REFUSAL_CHARS])
    return shown[:_REFUSAL_CHARS] + "..." if len(shown) > _REFUSAL_CHARS or len(text) > _REFUSAL_CHARS else shown


def _time(value: object) -> float:
    if not _is_number(value) or not math.isfinite(value) or value < 0:
        raise PayloadError(f"time: expected seconds since 1970, got {_seen(value)}")
    return float(value)


# Tables most ports share (SL-to-VL maps, VL arbitration, default P_Keys,
# counter name sets) are kept once: an aggregator of 10,000 nodes holds
# hundreds of thousands of them.  Bounded, so odd input cannot grow it.
_T = TypeVar("_T")
_SizedT = TypeVar("_SizedT", bound=Sized)
_SHARED: dict[object, Any] = {}
_SHARED_MAX = 4096
# Entries of a value kept to share: more than any IBA table a port has (a
# P_Key table of a publisher's making may be as long as a payload allows).
_SHARED_LENGTH = 1024


def _shared(value: _SizedT) -> _SizedT:
    found: _SizedT | None = _SHARED.get(value)  # an equal value: of the same type
    if found is not None:
        return found
    if len(_SHARED) < _SHARED_MAX and len(value) <= _SHARED_LENGTH:
        _SHARED[value] = value
    return value


def _int_list(value: object, where: str, bits: int, most: int | None = None) -> tuple[int, ...]:
    return _table(("int", bits, most), value, lambda: _read_int_list(value, where, bits, most))


def _read_int_list(value: object, where: str, bits: int, most: int | None) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(type(v) is int and 0 <= v < 1 << bits for v in value):
        raise PayloadError(f"{where}: expected a list of {bits}-bit integers")
    if most is not None and len(value) > most:
        raise PayloadError(f"{where}: more than {most} entries")
    return _shared(tuple(value))


def _vl_arb(value: object, where: str) -> tuple[VlArbEntry, ...]:
    return _table(("vl_arb",), value, lambda: _read_vl_arb(value, where))


def _read_vl_arb(value: object, where: str) -> tuple[VlArbEntry, ...]:
    if not isinstance(value, list) or not all(
            isinstance(e, list) and len(e) == 2 and all(type(v) is int and 0 <= v <= 255 for v in e)
            for e in value):
        raise PayloadError(f"{where}: expected a list of [VL, weight] pairs")
    if len(value) > _MAX_VL_ARB:
        raise PayloadError(f"{where}: more than {_MAX_VL_ARB} entries")
    return _shared(tuple(_shared(VlArbEntry(vl, weight)) for vl, weight in value))


# Tables read before, by kind and JSON text: most ports of a fabric send the
# same SL-to-VL map, VL arbitration tables and P_Keys, which are then
# checked once. The text is exact (1.0, true and 1 differ in it); only
# tables that were read whole are kept, at most _SHARED_MAX of at most
# _TABLE_OCTETS each (a publisher's odd P_Key table is read every time).
_TABLES: dict[tuple[tuple[object, ...], bytes], Any] = {}
_TABLE_OCTETS = 2048


def _table(kind: tuple[object, ...], value: object, read: Callable[[], _T]) -> _T:
    """What `read()` gives for `value`, a table of `kind`: kept, if `read` took it."""
    try:
        text = _ENCODE(value)
    except ValueError:  # an unpaired surrogate: no table's, and read() says so
        return read()
    key = (kind, text)
    found: _T | None = _TABLES.get(key)
    if found is None:
        found = read()
        if len(text) <= _TABLE_OCTETS and len(_TABLES) < _SHARED_MAX:
            _TABLES[key] = found
    return found


class CounterValues(Mapping[str, int]):
    """Counter name -> value in two tuples, the names shared by every port
    that reports the same set (a dict per port costs much more)."""

    __slots__ = ("_names", "_values", "_index")

    def __init__(self, names: tuple[str, ...], values: tuple[int, ...],
                 index: dict[str, int] | None = None) -> None:
        self._names = names
        self._values = values
        self._index = _name_index(names) if index is None else index

    def __getitem__(self, name: str) -> int:
        return self._values[self._index[name]]

    def get(self, name: str, default: Any = None) -> Any:
        at = self._index.get(name)
        return default if at is None else self._values[at]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return f"CounterValues({dict(self)!r})"


_NAME_INDEXES: dict[tuple[str, ...], dict[str, int]] = {}


def _name_index(names: tuple[str, ...]) -> dict[str, int]:
    index = _NAME_INDEXES.get(names)
    if index is None:
        index = {name: i for i, name in enumerate(names)}
        if len(_NAME_INDEXES) < _SHARED_MAX:
            _NAME_INDEXES[names] = index
    return index


def _counters(value: object, where: str) -> MeasuredCounters:
    """A port's counters object: the values, and their layout (`layout`)."""
    if type(value) is dict and value:
        read = _counters_at_once(value)
        if read is not None:
            return read
    return _read_counters(value, where)


_COUNTER_KEYS = frozenset({frozenset({"value", "bits"}), frozenset({"value", "bits", "wide"})})
_COUNTER_VALUE, _COUNTER_BITS = itemgetter("value"), itemgetter("bits")
_COUNTER_WIDE = methodcaller("get", "wide", False)  # absent: False; null is no bool
_BOOLEANS, _DICTS = {bool}, {dict}
_NAMES_READ: set[tuple[str, ...]] = set()  # counter name sets found good


def _counters_at_once(value: dict[Any, Any]) -> MeasuredCounters | None:
    """`_read_counters` of a good object, each test over all its counters at
    once (in C: the sets of the types, min and max); None when any fails,
    and `_read_counters` then says which counter and why."""
    entries = list(value.values())
    if set(map(type, entries)) != _DICTS or not _COUNTER_KEYS.issuperset(map(frozenset, entries)):
        return None
    numbers, bits = list(map(_COUNTER_VALUE, entries)), list(map(_COUNTER_BITS, entries))
    if set(map(type, numbers)) != _INTEGERS or min(numbers) < 0 or max(numbers) >= _TOP64 \
            or set(map(type, bits)) != _INTEGERS or min(bits) < 1 or max(bits) > 64:
        return None
    wides = list(map(_COUNTER_WIDE, entries))
    if set(map(type, wides)) != _BOOLEANS:
        return None
    names = _shared(tuple(value))
    if names not in _NAMES_READ:
        if not all(_COUNTER_NAME.fullmatch(name) for name in names):
            return None
        if len(_NAMES_READ) < _SHARED_MAX:
            _NAMES_READ.add(names)
    return MeasuredCounters(CounterValues(names, tuple(numbers)), _shared(frozenset(compress(names, wides))))


def _read_counters(value: object, where: str) -> MeasuredCounters:
    if not isinstance(value, dict):
        raise PayloadError(f"{where}: expected an object of counters")
    numbers: list[int] = []
    wide: list[str] = []
    for name, entry in value.items():
        if (type(entry) is dict and len(entry) == 2 + ("wide" in entry) and type(bits := entry.get("bits")) is int
                and 1 <= bits <= 64 and type(number := entry.get("value")) is int and 0 <= number < 1 << 64
                and type(is_wide := entry.get("wide", False)) is bool and _COUNTER_NAME.fullmatch(name) is not None):
            numbers.append(number)
            if is_wide:
                wide.append(name)
            continue
        raise PayloadError(f"{where}.{name}: expected a counter name and "
                           "{\"value\": a 64-bit counter value, \"bits\": 1..64, optionally \"wide\": true}")
    return MeasuredCounters(CounterValues(_shared(tuple(value)), tuple(numbers)), _shared(frozenset(wide)))


# What a port's object holds besides PORT_FIELDS: read by _decode_port itself.
_PORT_PARTS = ("info", "pkeys", "sl2vl", "vl_arb_high", "vl_arb_low", "guids", "gids", "remote", "vendor_diag",
               "counters")


def _decode_port(data: object, where: str, node_guid: int) -> tuple[Port, MeasuredCounters | None]:
    if not isinstance(data, dict):
        raise PayloadError(f"{where}: expected an object")
    own = {name: data[name] for name in data if name in PORT_FIELDS.names}
    rest = {name: data[name] for name in data if name not in own}
    changes = PORT_FIELDS.read(own, where)
    changes.update(node_guid=node_guid, pkeys=(), sl2vl=(), vl_arb_high=(), vl_arb_low=(), guids=None,
                   remote=None, vendor_diag=None, gids=None, counter_layout=None)
    if "info" not in rest:
        raise PayloadError(f"{where}: info is missing")
    changes["info"] = PORT_INFO_FIELDS.decode(rest.pop("info"), f"{where}.info")
    for name, bits, most in (("pkeys", 16, None), ("sl2vl", 4, _MAX_SL2VL)):
        if name in rest:
            changes[name] = _int_list(rest.pop(name), f"{where}.{name}", bits, most)
    for name in ("vl_arb_high", "vl_arb_low"):
        if name in rest:
            changes[name] = _vl_arb(rest.pop(name), f"{where}.{name}")
    if "guids" in rest:
        items = rest.pop("guids")
        if not isinstance(items, list):
            raise PayloadError(f"{where}.guids: expected a list")
        if len(items) > _MAX_GUIDS:
            raise PayloadError(f"{where}.guids: more than {_MAX_GUIDS} entries")
        changes["guids"] = tuple(parse_hex64(g, f"{where}.guids[{i}]") for i, g in enumerate(items))
    if "gids" in rest:
        items = rest.pop("gids")
        if not isinstance(items, list):
            raise PayloadError(f"{where}.gids: expected a list")
        changes["gids"] = tuple(parse_hex128(g, f"{where}.gids[{i}]") for i, g in enumerate(items))
    if "remote" in rest:
        remote = rest.pop("remote")
        if not isinstance(remote, dict) or set(remote) != {"guid", "port"} or type(remote["port"]) is not int \
                or not 0 <= remote["port"] <= _MAX_PORTS:
            raise PayloadError(f"{where}.remote: expected {{\"guid\": GUID, \"port\": N}}")
        changes["remote"] = PortRef(parse_hex64(remote["guid"], f"{where}.remote.guid"), remote["port"])
    if "vendor_diag" in rest:
        text = rest.pop("vendor_diag")
        try:
            changes["vendor_diag"] = bytes.fromhex(text) if isinstance(text, str) else None
        except ValueError:
            changes["vendor_diag"] = None
        if changes["vendor_diag"] is None:
            raise PayloadError(f"{where}.vendor_diag: expected hex octets")
        if len(changes["vendor_diag"]) > _MAX_VENDOR_DIAG:
            raise PayloadError(f"{where}.vendor_diag: more than {_MAX_VENDOR_DIAG} octets")
    measured = None
    if "counters" in rest:
        measured = _counters(rest.pop("counters"), f"{where}.counters")
        changes["counter_layout"] = measured.layout
    if rest:
        check_keys(rest, PORT_FIELDS.order + _PORT_PARTS, where, PayloadError.at)
    port = Port(**changes)
    if port.num > _MAX_PORTS:
        raise PayloadError(f"{where}.num: {port.num} is not a port number")
    return port, measured


_STATE_KEYS = frozenset({"version", "time", "publisher", "refresh", "node", "switch", "ca", "ports", "sms",
                         "sm_config"})
# An MQTT client id as a topic level holds it, in Unicode text (no unpaired surrogate).
_PUBLISHER = re.compile("[^/+#\x00\ud800-\udfff]{1,128}")


def decode_state(payload: bytes, topic_guid: int, max_bytes: int = MAX_PAYLOAD_BYTES) -> NodeRecord:
    """The record of a state message published under `topic_guid`;
    PayloadError says why a message is refused (nothing else is raised)."""
    try:
        return _decode_state(payload, topic_guid, max_bytes)
    except PayloadError as exc:
        raise _fit(exc) from None


def _decode_state(payload: bytes, topic_guid: int, max_bytes: int) -> NodeRecord:
    data = _load(payload, max_bytes, _STATE_KEYS)
    when = _time(data.get("time"))
    publisher = data.get("publisher")
    if publisher is not None and (type(publisher) is not str or _PUBLISHER.fullmatch(publisher) is None):
        raise PayloadError("publisher: expected an MQTT client id (1 to 128 characters without '/', '+', '#' "
                           f"or NUL), got {_seen(publisher)}")
    refresh = data.get("refresh")
    if refresh is not None and (type(refresh) not in (int, float) or not 0 < refresh < 1e6):
        raise PayloadError(f"refresh: expected a period in seconds, got {_seen(refresh)}")
    if "node" not in data:
        raise PayloadError("node is missing")
    node_data = data["node"]
    if isinstance(node_data, dict) and "guid" in node_data:
        guid = parse_hex64(node_data["guid"], "node.guid")
        if guid != topic_guid:
            raise PayloadError(f"node GUID {guid:016x} is not the topic's {topic_guid:016x}")
    ports_data = data.get("ports")
    if not isinstance(ports_data, list) or not 1 <= len(ports_data) <= _MAX_PORTS + 1:
        raise PayloadError("ports: expected a list of 1 to 256 ports")
    decoded = [_decode_port(p, f"ports[{i}]", topic_guid) for i, p in enumerate(ports_data)]
    ports = tuple(port for port, _ in decoded)
    values = MappingProxyType({port.num: measured.values for port, measured in decoded if measured is not None})
    numbers = [p.num for p in ports]
    if numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        raise PayloadError(f"ports: numbers must be consecutive and ascending, got {numbers}")
    switch = SWITCH_FIELDS.decode(data["switch"], "switch") if "switch" in data else None
    ca = CA_FIELDS.decode(data["ca"], "ca") if "ca" in data else None
    node: Node = NODE_FIELDS.decode(node_data, "node", ports=ports, switch=switch, ca=ca)
    if switch is not None and not node.is_switch:
        raise PayloadError("switch: SwitchInfo on a node that is not a switch")
    if node.is_switch and numbers[0] != 0:
        raise PayloadError("ports: a switch's ports start at port 0")
    sms_data = data.get("sms", [])
    if not isinstance(sms_data, list) or len(sms_data) > _MAX_SMS:
        raise PayloadError(f"sms: expected a list of at most {_MAX_SMS} SMs")
    sms = tuple(SM_FIELDS.decode(s, f"sms[{i}]", node_guid=topic_guid) for i, s in enumerate(sms_data))
    sm_config = SM_CONFIG_FIELDS.decode(data["sm_config"], "sm_config") if "sm_config" in data else None
    return NodeRecord(node, sms, sm_config, when, publisher, float(refresh) if refresh is not None else None,
                      values)


# -- counter values alone -------------------------------------------------------------
# A node's counters move every poll while its structure stays: a publisher
# sends a state when the structure changed (and at each full refresh), and
# between states the values alone, in the order the state lists them: each
# port's counters by name, then the SMs' ActCounts. `state` is the time of
# the state they belong to; an aggregator that holds another state (a newer
# one, or none yet) waits for the next. One message carries the counters of
# up to COUNTER_BATCH of a publisher's nodes: what a message costs to
# receive is then shared by them.

COUNTER_BATCH = 64


@dataclass(frozen=True, slots=True)
class CountersRecord:
    """One node's counter values since its state (see above)."""

    time: float
    state: float  # the `time` of the state record whose structure these values fill
    ports: Mapping[int, tuple[int, ...]]  # port number -> values, in the state's order
    act_counts: tuple[int, ...] = ()


# Each port's number, its counter names in a state's order, and their positions.
CounterOrder = tuple[tuple[int, tuple[str, ...], dict[str, int]], ...]


def counter_order(record: NodeRecord) -> CounterOrder:
    """Each port's counter names in the order a state lists them (and a
    counters message gives their values in)."""
    out = []
    for port in record.node.ports:
        if port.counter_layout is not None:
            names = _shared(tuple(sorted(name for name in port.counter_layout.names
                                         if name in record.values.get(port.num, ()))))
            out.append((port.num, names, _name_index(names)))
    return tuple(out)


def counters_of(record: NodeRecord, state_time: float) -> CountersRecord:
    """The counters message of `record`, whose structure is that of the state sent at `state_time`."""
    return CountersRecord(record.time, state_time, {
        num: tuple(record.values[num][name] for name in names) for num, names, _ in counter_order(record)},
        tuple(sm.act_count for sm in record.sms if sm.act_count is not None))


def encode_counters(records: Mapping[int, CountersRecord], when: float) -> bytes:
    """One counters message: the records of several nodes (by GUID), sent at `when`."""
    return _ENCODE({"version": VERSION, "time": when, "nodes": {
        hex64(guid): {"time": record.time, "state": record.state,
                      "ports": {str(num): list(values) for num, values in record.ports.items()},
                      "act_counts": list(record.act_counts)}
        for guid, record in records.items()}})


_COUNTERS_KEYS = frozenset({"version", "time", "nodes"})
_NODE_COUNTERS_KEYS = frozenset({"time", "state", "ports", "act_counts"})


def decode_counters(payload: bytes, max_bytes: int = MAX_PAYLOAD_BYTES
                    ) -> dict[int, CountersRecord | PayloadError]:
    """A counters message: each node's record, or why that node's is refused
    (a node's bad record does not cost the others theirs); PayloadError
    for a message that cannot be read at all (nothing else is raised)."""
    try:
        decoded = _decode_counters(payload, max_bytes)
    except PayloadError as exc:
        raise _fit(exc) from None
    return {guid: _fit(record) if isinstance(record, PayloadError) else record for guid, record in decoded.items()}


def _decode_counters(payload: bytes, max_bytes: int) -> dict[int, CountersRecord | PayloadError]:
    data = _load(payload, max_bytes, _COUNTERS_KEYS)
    _time(data.get("time"))
    nodes = data.get("nodes")
    if not isinstance(nodes, dict):
        raise PayloadError("nodes: expected an object of node GUID -> counters")
    if len(nodes) > COUNTER_BATCH:
        raise PayloadError(f"nodes: {len(nodes)} nodes; a counters message carries at most {COUNTER_BATCH}")
    out: dict[int, CountersRecord | PayloadError] = {}
    for key, entry in nodes.items():
        guid = parse_hex64(key, "nodes")
        try:
            out[guid] = _node_counters(entry, f"nodes.{key}")
        except PayloadError as exc:
            out[guid] = exc
    return out


def _node_counters(entry: object, where: str) -> CountersRecord:
    if not isinstance(entry, dict) or not entry.keys() <= _NODE_COUNTERS_KEYS:
        raise PayloadError(f"{where}: expected {{time, state, ports, act_counts}}")
    ports = entry.get("ports")
    if not isinstance(ports, dict):
        raise PayloadError(f"{where}.ports: expected an object of port number -> values")
    decoded: dict[int, tuple[int, ...]] = {}
    for key, values in ports.items():
        # ASCII digits, few (str.isdigit alone takes '²', which int() does not, and
        # int() refuses more than 4,300 digits).
        if not (len(key) <= 3 and key.isascii() and key.isdigit()) or int(key) > _MAX_PORTS \
                or not _counter_values(values):
            raise PayloadError(f"{where}.ports.{key}: expected a port number and a list of 64-bit counter values")
        decoded[int(key)] = tuple(values)
    act_counts = entry.get("act_counts", [])
    if not isinstance(act_counts, list) or len(act_counts) > _MAX_SMS or not all(
            type(v) is int and 0 <= v < 1 << 32 for v in act_counts):
        raise PayloadError(f"{where}.act_counts: expected a list of at most {_MAX_SMS} 32-bit ActCounts")
    return CountersRecord(_time(entry.get("time")), _time(entry.get("state")), decoded, tuple(act_counts))


def _counter_values(values: object) -> bool:
    """A list of 64-bit counter values (checked in C: the set of the types,
    min and max; JSON's true is a bool, not an int, by type)."""
    return type(values) is list and (not values or (
        set(map(type, values)) == _INTEGERS and min(values) >= 0 and max(values) < _TOP64))


_INTEGERS = {int}
_TOP64 = 1 << 64


def with_counters(record: NodeRecord, counters: CountersRecord, order: CounterOrder) -> NodeRecord | None:
    """`record` (the state `counters` belongs to) with its values and
    ActCounts; None when they do not fit its structure (`order`)."""
    ports = counters.ports
    if len(ports) != len(order) or any(len(ports.get(num, ())) != len(names) for num, names, _ in order):
        return None
    counted = [sm for sm in record.sms if sm.act_count is not None]
    if len(counters.act_counts) != len(counted):
        return None
    values = MappingProxyType({num: CounterValues(names, ports[num], index) for num, names, index in order})
    act_counts = iter(counters.act_counts)
    sms = tuple(sm if sm.act_count is None else replace(sm, act_count=next(act_counts)) for sm in record.sms)
    return replace(record, time=counters.time, values=values, sms=sms)


# -- events -------------------------------------------------------------------------------


def encode_event(record: EventRecord) -> bytes:
    body = EVENT_FIELDS.encode(record.event)
    return _ENCODE({"version": VERSION, "sequence": record.sequence, "time": record.time, "event": body})


_EVENT_KEYS = frozenset({"version", "sequence", "time", "event"})


def decode_event(payload: bytes, topic_guid: int, max_bytes: int = MAX_PAYLOAD_BYTES) -> EventRecord:
    """The event of an events message published under `topic_guid`;
    PayloadError says why a message is refused (nothing else is raised)."""
    try:
        return _decode_event(payload, topic_guid, max_bytes)
    except PayloadError as exc:
        raise _fit(exc) from None


def _decode_event(payload: bytes, topic_guid: int, max_bytes: int) -> EventRecord:
    data = _load(payload, max_bytes, _EVENT_KEYS)
    sequence = data.get("sequence")
    if type(sequence) is not int or not 0 <= sequence < 1 << 63:
        raise PayloadError(f"sequence: expected a non-negative integer, got {_seen(sequence)}")
    when = _time(data.get("time"))
    event: TrapEvent = EVENT_FIELDS.decode(data.get("event"), "event")
    if event.node_guid != topic_guid:
        raise PayloadError(f"event node GUID {event.node_guid:016x} is not the topic's {topic_guid:016x}")
    if not isinstance(event.trap, IbaTrap):
        raise PayloadError("event.trap: not an IBA trap number")
    return EventRecord(sequence, event, when)

"""Scenario files: timed fabric events for the simulated provider.

A scenario is a TOML file of [[event]]s, each at a time in seconds after the provider's epoch
(examples/all-ten.toml fires all ten SMA traps). `load_scenario` checks the file's structure
(ScenarioError names the file, the event and the key); `Scenario.schedule(fabric, seed)`
resolves node names against a fabric and expands repeats and jitter into ordered Steps;
`apply_step` turns one step into a new snapshot and the TrapEvents IBA defines for it.
Reference: docs/providers.md, 'Scenario files' (the format and every action's keys).
"""

from __future__ import annotations

import logging
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ibsnmp import documents
from ibsnmp.documents import DocumentError
from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric.changes import (
    PortTransition,
    with_error_burst,
    with_node_info,
    with_port_info,
    with_port_state,
)
from ibsnmp.fabric.traffic import ERROR_NAMES
from ibsnmp.fabric.detrand import unit
from ibsnmp.fabric.iba import MAX_UNICAST_LID, CapabilityMask, PortPhysState, PortState
from ibsnmp.fabric.model import Fabric, Node, Port, PortRef

__all__ = [
    "ACTIONS",
    "ScenarioError",
    "EventSpec",
    "Scenario",
    "Step",
    "load_scenario",
    "parse_scenario",
    "apply_step",
]

log = logging.getLogger("ibsnmp.scenario")

_COMMON = ("at", "action", "repeat", "period", "jitter")
_ENDPOINTS = ("from", "to", "from_port", "to_port", "key", "sl", "qp1", "qp2", "grh")
# action -> its keys besides _COMMON; the kinds of error-burst's `errors` are counters.ERROR_NAMES.
ACTIONS: dict[str, tuple[str, ...]] = {
    "port-down": ("node", "port", "phys", "up_after"),
    "port-up": ("node", "port", "state"),
    "error-burst": ("node", "port", "errors"),
    "capability-mask": ("node", "port", "set", "clear", "mask"),
    "system-image-guid": ("node", "guid"),
    "bad-m-key": ("node", "port", "from", "from_port", "key", "method", "attribute", "attribute_modifier"),
    "bad-p-key": _ENDPOINTS,
    "bad-q-key": _ENDPOINTS,
    "bad-p-key-switch": ("node", "port", "data_valid") + _ENDPOINTS,
    "flow-control-watchdog": ("node", "port"),
}
_REQUIRED: dict[str, tuple[str, ...]] = {
    "port-down": ("node", "port"),
    "port-up": ("node", "port"),
    "error-burst": ("node", "port", "errors"),
    "capability-mask": ("node",),
    "system-image-guid": ("node",),
    "bad-m-key": ("node",),
    "bad-p-key": ("from", "to"),
    "bad-q-key": ("from", "to"),
    "bad-p-key-switch": ("node", "port"),
    "flow-control-watchdog": ("node", "port"),
}

# Defaults of the bad-key events (documented in examples/all-ten.toml).
DEFAULT_M_KEY = 0  # a tool sending SMPs without the subnet's M_Key
DEFAULT_METHOD = 0x02  # SubnSet: with M_Key protection a Set needs the key
DEFAULT_ATTRIBUTE = 0x0015  # PortInfo
DEFAULT_P_KEY = 0x8005  # a partition no port of a simulated fabric is in
DEFAULT_Q_KEY = 0x80010001  # not QP1's well-known Q_Key 0x80010000
DEFAULT_QP = 1  # the GSI QP: MADs carry P_Key and Q_Key
# Trap 259 DataValid bits (IBA Table 126): LID1, LID2, PKEY, SL, QP1, QP2, GID1, GID2.
_VALID_NO_GIDS = 0x003F
_VALID_ALL = 0x00FF

_PHYS = {"polling": PortPhysState.POLLING, "disabled": PortPhysState.DISABLED}
_UP_STATES = {"active": PortState.ACTIVE, "armed": PortState.ARMED, "init": PortState.INIT}
_JITTER_SALT = 0x5CE7A


class ScenarioError(DocumentError):
    """A scenario that cannot be loaded or bound to a fabric.  The message
    names the file, the event (1-based, as it appears in the file) and key;
    `where` is that part of it."""

    def __init__(self, path: str, problem: str, event: int | None = None, action: str | None = None,
                 key: str | None = None) -> None:
        places = [f"event {event}" + (f" ({action})" if action else "")] if event is not None else []
        places += [f"key '{key}'"] if key is not None else []
        super().__init__(problem, ", ".join(places), path)
        self.path, self.event, self.key = path, event, key


# -- the file -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One [[event]] as checked at load; node names are not yet resolved."""

    index: int  # 1-based position in the file
    action: str
    at: float
    repeat: int
    period: float
    jitter: float
    params: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Step:
    """One occurrence of an event, resolved against a fabric.  `at` is in
    scenario seconds after the epoch (the provider multiplies by time_scale);
    `target` is the port acted on (a node's management port for node-wide
    actions)."""

    at: float
    event: int
    occurrence: int
    action: str
    target: PortRef
    params: Mapping[str, Any]

    def describe(self, fabric: Fabric) -> str:
        node = fabric.nodes.get(self.target.guid)
        name = node.label if node is not None else f"{self.target.guid:016x}"
        return f"event {self.event} #{self.occurrence + 1} {self.action} {name} port {self.target.port}"


@dataclass(frozen=True, slots=True)
class Scenario:
    path: str
    name: str
    description: str
    time_scale: float
    watch_interval: float
    events: tuple[EventSpec, ...]

    def schedule(self, fabric: Fabric, seed: int = 0) -> tuple[Step, ...]:
        """Every occurrence of every event, resolved against `fabric` and in
        the order they run: by time, then by position in the file.  Jitter
        is drawn from (seed, event, occurrence), so a seed always gives the
        same times.  Raises ScenarioError for names the fabric lacks."""
        names = _NodeNames(fabric)
        steps: list[tuple[float, int, int, int, Step]] = []
        for spec in self.events:
            resolved = _Binder(self.path, spec, fabric, names).bind()
            for k in range(spec.repeat):
                offset = 0.0
                if spec.jitter:
                    offset = (2.0 * unit(seed, _JITTER_SALT, spec.index, k) - 1.0) * spec.jitter
                at = max(0.0, spec.at + k * spec.period + offset)
                for phase, (action, target, params, delay) in enumerate(resolved):
                    step = Step(at + delay, spec.index, k, action, target, params)
                    steps.append((step.at, spec.index, k, phase, step))
        steps.sort(key=lambda s: s[:4])
        return tuple(s[4] for s in steps)

    @property
    def duration(self) -> float:
        """Scenario seconds from the epoch to the last occurrence (jitter aside)."""
        end = 0.0
        for spec in self.events:
            last = spec.at + (spec.repeat - 1) * spec.period + spec.jitter
            end = max(end, last + float(spec.params.get("up_after") or 0.0))
        return end


def load_scenario(path: str | Path) -> Scenario:
    """Read and check a scenario file; ScenarioError says what is wrong where."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(name, f"cannot read: {exc.strerror or exc}") from None
    return parse_scenario(text, name)


def parse_scenario(text: str, path: str = "<scenario>") -> Scenario:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(path, f"not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"scenario", "event"})
    if unknown:
        raise ScenarioError(path, f"unknown top-level key '{unknown[0]}' (expected [scenario] and [[event]])")
    header = data.get("scenario", {})
    if not isinstance(header, dict):
        raise ScenarioError(path, "'scenario' must be a table: [scenario]")
    extra = sorted(set(header) - {"name", "description", "time_scale", "watch_interval"})
    if extra:
        raise ScenarioError(path, f"unknown key '{extra[0]}' in [scenario]"
                                  " (expected name, description, time_scale, watch_interval)")
    check = _Checker(path, None, None)
    name = check.text(header, "name", "")
    description = check.text(header, "description", "")
    time_scale = check.number(header, "time_scale", 1.0, positive=True)
    watch_interval = check.number(header, "watch_interval", 1.0, positive=True)
    raw_events = data.get("event", [])
    if not isinstance(raw_events, list) or not all(isinstance(e, dict) for e in raw_events):
        raise ScenarioError(path, "'event' must be an array of tables: [[event]]")
    events = tuple(_parse_event(path, i, raw) for i, raw in enumerate(raw_events, start=1))
    return Scenario(path, name, description, time_scale, watch_interval, events)


def _parse_event(path: str, index: int, raw: dict[str, Any]) -> EventSpec:
    action = raw.get("action")
    if action is None:
        raise ScenarioError(path, "missing (expected one of " + ", ".join(ACTIONS) + ")", index, None, "action")
    if not isinstance(action, str) or action not in ACTIONS:
        raise ScenarioError(path, f"unknown action {action!r} (expected one of {', '.join(ACTIONS)})",
                            index, None, "action")
    check = _Checker(path, index, action)
    allowed = set(_COMMON) | set(ACTIONS[action])
    for key in raw:
        if key not in allowed:
            raise check.error(key, f"not a key of '{action}' (expected: {', '.join(_COMMON + ACTIONS[action])})")
    for key in _REQUIRED[action]:
        if key not in raw:
            raise check.error(key, "missing")
    if "at" not in raw:
        raise check.error("at", "missing (seconds after the start)")
    at = check.number(raw, "at", 0.0)
    repeat = check.integer(raw, "repeat", 1, 1, 1_000_000)
    period = check.number(raw, "period", 0.0, positive=True) if "period" in raw else 0.0
    if repeat > 1 and "period" not in raw:
        raise check.error("period", f"missing: repeat = {repeat} needs the seconds between occurrences")
    jitter = check.number(raw, "jitter", 0.0)
    params = _parse_params(check, action, raw)
    up_after = params.get("up_after")
    if up_after is not None and repeat > 1 and up_after >= period:
        raise check.error("up_after", f"{up_after:g} s is not shorter than period = {period:g} s:"
                                      " the link would go down again before it came up")
    return EventSpec(index, action, at, repeat, period, jitter, params)


def _parse_params(check: _Checker, action: str, raw: dict[str, Any]) -> dict[str, Any]:
    p: dict[str, Any] = {}
    if "node" in raw:
        p["node"] = check.node_name(raw, "node")
    if "port" in raw:
        p["port"] = check.integer(raw, "port", None, 0, 254)
    if action == "port-down":
        p["phys"] = check.choice(raw, "phys", "polling", _PHYS)
        if "up_after" in raw:
            p["up_after"] = check.number(raw, "up_after", 0.0, positive=True)
    elif action == "port-up":
        p["state"] = check.choice(raw, "state", "active", _UP_STATES)
    elif action == "error-burst":
        p["errors"] = check.errors(raw, "errors")
    elif action == "capability-mask":
        if not any(k in raw for k in ("set", "clear", "mask")):
            raise check.error("set", "give at least one of set = [...], clear = [...] or mask = N")
        p["set"] = check.capabilities(raw, "set")
        p["clear"] = check.capabilities(raw, "clear")
        if "mask" in raw:
            p["mask"] = check.integer(raw, "mask", None, 0, 0xFFFF_FFFF)
    elif action == "system-image-guid":
        if "guid" in raw:
            p["guid"] = check.integer(raw, "guid", None, 0, (1 << 64) - 1)
    elif action == "bad-m-key":
        p["from"] = check.endpoint(raw, "from") if "from" in raw else "local"
        p["from_port"] = check.integer(raw, "from_port", None, 1, 254)
        p["key"] = check.integer(raw, "key", DEFAULT_M_KEY, 0, (1 << 64) - 1)
        p["method"] = check.integer(raw, "method", DEFAULT_METHOD, 0, 0xFF)
        p["attribute"] = check.integer(raw, "attribute", DEFAULT_ATTRIBUTE, 0, 0xFFFF)
        p["attribute_modifier"] = check.integer(raw, "attribute_modifier", None, 0, 0xFFFF_FFFF)
    elif action in ("bad-p-key", "bad-q-key", "bad-p-key-switch"):
        for end in ("from", "to"):
            p[end] = check.endpoint(raw, end) if end in raw else None
            p[f"{end}_port"] = check.integer(raw, f"{end}_port", None, 1, 254)
        if action == "bad-q-key":
            p["key"] = check.integer(raw, "key", DEFAULT_Q_KEY, 0, 0xFFFF_FFFF)
        else:
            p["key"] = check.integer(raw, "key", DEFAULT_P_KEY, 0, 0xFFFF)
        p["sl"] = check.integer(raw, "sl", 0, 0, 15)
        p["qp1"] = check.integer(raw, "qp1", DEFAULT_QP, 0, 0xFFFFFF)
        p["qp2"] = check.integer(raw, "qp2", DEFAULT_QP, 0, 0xFFFFFF)
        p["grh"] = check.boolean(raw, "grh", True)
        if action == "bad-p-key-switch":
            p["data_valid"] = check.integer(raw, "data_valid", None, 0, 0xFFFF)
    return p


_HEX_GUID = re.compile(r"(?:0x)?([0-9a-fA-F]{16})|([0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){3})")


class _Checker:
    """Typed reads of one table, raising ScenarioError that names the key."""

    def __init__(self, path: str, event: int | None, action: str | None) -> None:
        self.path, self.event, self.action = path, event, action

    def error(self, key: str, problem: str) -> ScenarioError:
        if self.event is None:
            return ScenarioError(self.path, problem, key=f"scenario.{key}")
        return ScenarioError(self.path, problem, self.event, self.action, key)

    def text(self, raw: Mapping[str, Any], key: str, default: str) -> str:
        return documents.text(raw.get(key, default), key, self.error)

    def number(self, raw: Mapping[str, Any], key: str, default: float, *, positive: bool = False) -> float:
        """A finite number (a time, a period, a scale): not negative, or (`positive`) more than 0."""
        if positive:
            return documents.number(raw.get(key, default), key, self.error, above=0.0)
        return documents.number(raw.get(key, default), key, self.error, low=0.0)

    def integer(self, raw: Mapping[str, Any], key: str, default: int | None, low: int, high: int) -> Any:
        if key not in raw:
            return default
        value = raw[key]
        if isinstance(value, str):  # "0x..." for values TOML integers cannot hold (64-bit keys)
            text = value.strip().replace("_", "")
            try:
                value = int(text, 16) if text.lower().startswith("0x") else int(text, 10)
            except ValueError:
                raise self.error(key, f"expected an integer (or a '0x...' hex string), got {raw[key]!r}") from None
        return documents.integer(value, key, self.error, low=low, high=high)

    def boolean(self, raw: Mapping[str, Any], key: str, default: bool) -> bool:
        return documents.boolean(raw.get(key, default), key, self.error)

    def choice(self, raw: Mapping[str, Any], key: str, default: str, choices: Mapping[str, Any]) -> Any:
        value = raw.get(key, default)
        return documents.lookup(value.lower() if isinstance(value, str) else value, key, choices, self.error)

    def node_name(self, raw: Mapping[str, Any], key: str) -> str | int:
        value = raw[key]
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value  # a node GUID
        raise self.error(key, f"expected a node description, a GUID or \"local\", got {value!r}")

    def endpoint(self, raw: Mapping[str, Any], key: str) -> str | _Lid:
        value = raw[key]
        if isinstance(value, int) and not isinstance(value, bool):
            if not 1 <= value <= MAX_UNICAST_LID:
                raise self.error(key, f"LID {value} is not a unicast LID (1..{MAX_UNICAST_LID:#x})")
            return _Lid(value)
        if isinstance(value, str) and value.strip():
            return value.strip()
        raise self.error(key, f"expected a LID (integer) or a node (string), got {value!r}")

    def errors(self, raw: Mapping[str, Any], key: str) -> dict[str, int]:
        value = raw[key]
        if not isinstance(value, dict) or not value:
            raise self.error(key, "expected a table of error kinds and counts, e.g. { symbol = 100 }")
        result = {}
        for kind, count in value.items():
            if kind not in ERROR_NAMES:
                raise self.error(f"{key}.{kind}", f"unknown error kind (expected one of {', '.join(ERROR_NAMES)})")
            result[kind] = documents.integer(count, f"{key}.{kind}", self.error, low=0, high=1_000_000_000)
        return result

    def capabilities(self, raw: Mapping[str, Any], key: str) -> int:
        value = raw.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise self.error(key, f"expected a list of capability names, got {value!r}")
        bits = 0
        for name in value:
            bit = _capability(name)
            if bit is None:
                raise self.error(key, f"unknown capability {name!r} (e.g. IS_SM, IsTrapSupported, "
                                      "IS_CAPABILITY_MASK_NOTICE_SUPPORTED)")
            bits |= bit
        return bits


@dataclass(frozen=True, slots=True)
class _Lid:
    lid: int


def _norm(name: str) -> str:
    text = re.sub(r"[^a-z0-9]", "", name.lower())
    return text[2:] if text.startswith("is") else text


_CAPABILITIES = {_norm(bit.name or ""): int(bit) for bit in CapabilityMask}


def _capability(name: Any) -> int | None:
    if isinstance(name, int) and not isinstance(name, bool) and name > 0 and name & (name - 1) == 0:
        return name if name <= 0x8000_0000 else None
    if isinstance(name, str):
        return _CAPABILITIES.get(_norm(name))
    return None


# -- binding to a fabric --------------------------------------------------------------


class _NodeNames:
    """Node lookup by "local", description, first word of the description
    (the host name, e.g. "host003") or GUID."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        self.by_description: dict[str, list[int]] = {}
        self.by_word: dict[str, list[int]] = {}
        for guid, node in fabric.nodes.items():
            if node.description is None:  # not read: the node is named by its GUID only
                continue
            self.by_description.setdefault(node.description, []).append(guid)
            words = node.description.split()
            if words:
                self.by_word.setdefault(words[0], []).append(guid)

    def find(self, name: str | int) -> Node | str:
        """The node, or a problem description."""
        fabric = self.fabric
        if isinstance(name, int):
            return fabric.nodes.get(name) or f"no node has GUID {name:#018x}"
        if name.lower() == "local":
            return fabric.local_node
        for index in (self.by_description, self.by_word):
            found = index.get(name)
            if found:
                if len(found) > 1:
                    guids = ", ".join(f"{g:016x}" for g in found[:4])
                    return f"{len(found)} nodes are named {name!r} ({guids}): name one by GUID"
                return fabric.nodes[found[0]]
        match = _HEX_GUID.fullmatch(name)
        if match:
            guid = int((match.group(1) or match.group(2)).replace(":", ""), 16)
            return fabric.nodes.get(guid) or f"no node has GUID {guid:016x}"
        return f"no node is named {name!r} (use a node description such as {self._example()!r}, a GUID or \"local\")"

    def _example(self) -> str:
        return next(iter(self.by_description), "leaf01")


class _Binder:
    """Resolves one event's names against the fabric: a list of
    (action, target port, params, delay) per occurrence (port-down with
    up_after gives two)."""

    def __init__(self, path: str, spec: EventSpec, fabric: Fabric, names: _NodeNames) -> None:
        self.path, self.spec, self.fabric, self.names = path, spec, fabric, names
        self.p = spec.params

    def error(self, key: str, problem: str) -> ScenarioError:
        return ScenarioError(self.path, problem, self.spec.index, self.spec.action, key)

    def bind(self) -> list[tuple[str, PortRef, Mapping[str, Any], float]]:
        action, p = self.spec.action, self.p
        if action in ("port-down", "port-up"):
            port = self._data_port("node", "port")
            if port.remote is None:
                node = self.fabric.nodes[port.node_guid]
                raise self.error("port", f"port {port.num} of {node.label!r} has no cable in this fabric"
                                         " (it is down as generated, with no peer port)")
            if action == "port-up":
                return [(action, port.ref, {"state": p["state"]}, 0.0)]
            steps: list[tuple[str, PortRef, Mapping[str, Any], float]] = [
                (action, port.ref, {"phys": p["phys"]}, 0.0)]
            if p.get("up_after"):
                steps.append(("port-up", port.ref, {"state": PortState.ACTIVE}, p["up_after"]))
            return steps
        if action == "error-burst":
            port = self._data_port("node", "port")
            return [(action, port.ref, {"errors": p["errors"]}, 0.0)]
        if action == "flow-control-watchdog":
            port = self._data_port("node", "port")
            return [(action, port.ref, {}, 0.0)]
        if action == "capability-mask":
            port = self._management_or_port("node", "port")
            return [(action, port.ref, {"set": p["set"], "clear": p["clear"], "mask": p.get("mask")}, 0.0)]
        if action == "system-image-guid":
            node = self._node("node")
            return [(action, node.management_port.ref, {"guid": p.get("guid")}, 0.0)]
        if action == "bad-m-key":
            port = self._management_or_port("node", "port")
            requester = self._endpoint("from", "from_port")
            modifier = p["attribute_modifier"]
            if modifier is None:
                modifier = port.num
            params = {"from": requester, "key": p["key"], "method": p["method"],
                      "attribute": p["attribute"], "attribute_modifier": modifier}
            return [(action, port.ref, params, 0.0)]
        # bad-p-key, bad-q-key, bad-p-key-switch
        if action == "bad-p-key-switch":
            switch = self._node("node")
            if not switch.is_switch:
                raise self.error("node", f"{switch.label!r} is not a switch (trap 259 is a switch trap)")
            port = self._data_port("node", "port")
            requester = self._endpoint("from", "from_port") if p["from"] is not None else self._peer_of(port)
            responder = self._endpoint("to", "to_port") if p["to"] is not None else self._local()
            target = port.ref
        else:
            requester = self._endpoint("from", "from_port")
            responder = self._endpoint("to", "to_port")
            if responder.ref is None:
                raise self.error("to", f"LID {responder.lid} is not a port of this fabric: the responder"
                                       " raises the trap, so it must be one")
            target = responder.ref
        params = {name: p[name] for name in ("key", "sl", "qp1", "qp2", "grh")}
        params.update({"from": requester, "to": responder})
        if action == "bad-p-key-switch":
            params["data_valid"] = p["data_valid"]
        return [(action, target, params, 0.0)]

    def _node(self, key: str) -> Node:
        found = self.names.find(self.p[key])
        if isinstance(found, str):
            raise self.error(key, found)
        return found

    def _data_port(self, node_key: str, port_key: str) -> Port:
        node = self._node(node_key)
        num = self.p[port_key]
        port = node.port(num)
        if port is None or (node.is_switch and num == 0):
            what = "data port" if node.is_switch and num == 0 else "port"
            raise self.error(port_key, f"{node.label!r} has no {what} {num}"
                                       f" (its data ports are 1..{node.num_ports})")
        return port

    def _management_or_port(self, node_key: str, port_key: str) -> Port:
        node = self._node(node_key)
        num = self.p.get(port_key)
        if num is None:
            return node.management_port
        port = node.port(num)
        if port is None:
            low = 0 if node.is_switch else 1
            raise self.error(port_key, f"{node.label!r} has no port {num}"
                                       f" (its ports are {low}..{node.num_ports})")
        return port

    def _endpoint(self, key: str, port_key: str) -> _End:
        value = self.p[key]
        fabric = self.fabric
        port: Port | None  # None: the node has no port of the number asked
        if isinstance(value, _Lid):
            if self.p.get(port_key) is not None:
                raise self.error(port_key, f"'{key}' is a LID, which names the port already")
            ref = fabric.resolve_lid(value.lid)
            if ref is None:
                return _End(value.lid, 0, None)
            port = fabric.port_at(ref)
            return _End(value.lid, _gid(fabric, port), ref)
        found = self.names.find(value)
        if isinstance(found, str):
            raise self.error(key, found)
        num = self.p.get(port_key)
        if found.is_switch:
            port = found.ports[0]  # a switch is addressed at port 0's LID
        elif num is not None:
            port = found.port(num)
            if port is None:
                raise self.error(port_key, f"{found.label!r} has no port {num}")
        else:
            port = found.management_port
        if port.lid == 0:
            raise self.error(port_key if num is not None else key,
                             f"port {port.num} of {found.label!r} has no LID (its link is down)")
        return _End(port.lid, _gid(fabric, port), port.ref)

    def _peer_of(self, port: Port) -> _End:
        if port.remote is None:
            raise self.error("from", f"port {port.num} has no peer to default 'from' to: give from = LID or node")
        peer = self.fabric.port_at(port.remote)
        node = self.fabric.nodes[peer.node_guid]
        if node.is_switch:
            peer = node.ports[0]
        return _End(peer.lid, _gid(self.fabric, peer), peer.ref)

    def _local(self) -> _End:
        port = self.fabric.local_node.management_port
        return _End(port.lid, _gid(self.fabric, port), port.ref)


@dataclass(frozen=True, slots=True)
class _End:
    """One end of a bad packet: its LID, GID (0 if unknown) and port."""

    lid: int
    gid: int
    ref: PortRef | None


def _gid(fabric: Fabric, port: Port) -> int:
    if port.guids:
        return port.gid(0)
    node = fabric.nodes[port.node_guid]
    return node.ports[0].gid(0) if node.is_switch and node.ports[0].guids else 0


# -- running a step -----------------------------------------------------------------------


def apply_step(fabric: Fabric, step: Step, at: float) -> tuple[Fabric, tuple[TrapEvent, ...]]:
    """The snapshot after `step` (executed at `at` seconds after the epoch)
    and the traps it raises, in order.  The new snapshot comes first: a
    listener reading the provider's snapshot sees the state the trap reports."""
    handler = _HANDLERS[step.action]
    return handler(fabric, step, at)


def _issuer_lid(fabric: Fabric, port: Port) -> int:
    """LIDADDR of a trap: a switch's port 0 LID, a CA port's own LID."""
    node = fabric.nodes[port.node_guid]
    return node.ports[0].lid if node.is_switch else port.lid


def _port_state(fabric: Fabric, step: Step, at: float) -> tuple[Fabric, tuple[TrapEvent, ...]]:
    if step.action == "port-down":
        state, phys = PortState.DOWN, step.params["phys"]
    else:
        state, phys = step.params["state"], None
    try:
        new, transitions = with_port_state(fabric, step.target, state, at=at, phys=phys)
    except ValueError as exc:
        log.warning("scenario: %s: %s", step.describe(fabric), exc)
        return fabric, ()
    return new, link_state_traps(new, transitions)


def link_state_traps(fabric: Fabric, transitions: tuple[PortTransition, ...]) -> tuple[TrapEvent, ...]:
    """Trap 128 from each switch whose port went Down or left Down (IBA
    14.2.5.1: a switch trap; a CA port's change raises none, its peer switch
    port's does).  One per switch per change."""
    events: list[TrapEvent] = []
    seen: set[int] = set()
    for t in transitions:
        node = fabric.nodes[t.ref.guid]
        if node.is_switch and t.crosses_down and node.guid not in seen:
            seen.add(node.guid)
            events.append(TrapEvent(IbaTrap.LINK_STATE_CHANGE, node.guid, node.ports[0].lid))
    return tuple(events)


def _error_burst(fabric: Fabric, step: Step, at: float) -> tuple[Fabric, tuple[TrapEvent, ...]]:
    # No trap here: the threshold watcher raises 129/130 if the burst crosses one.
    return with_error_burst(fabric, step.target, step.params["errors"], at=at), ()


def _watchdog(fabric: Fabric, step: Step, at: float) -> tuple[Fabric, tuple[TrapEvent, ...]]:
    port = fabric.port_at(step.target)
    event = TrapEvent(IbaTrap.FLOW_CONTROL_WATCHDOG, port.node_guid, _issuer_lid(fabric, port), port=port.num)
    return fabric, (event,)


def _capability_mask(fabric: Fabric, step: Step, at: float) -> tuple[Fabric, tuple[TrapEvent, ...]]:
    port = fabric.port_at(step.target)
    p = step.params
    mask = p["mask"] if p["mask"] is not None else port.info.capability_mask
    mask = (mask | p["set"]) & ~p["clear"] & 0xFFFF_FFFF
    new = with_port_info(fabric, step.target, capability_mask=mask)
    event = TrapEvent(IbaTrap.CAPABILITY_MASK_CHANGED, port.node_guid, _issuer_lid(fabric, port),
                      capability_mask=mask)
    return new, (event,)


def _system_image_guid(fabric: Fabric, step: Step, at: float) -> tuple[Fabric, tuple[TrapEvent, ...]]:
    node = fabric.nodes[step.target.guid]
    guid = step.params["guid"]
    if guid is None:
        assert node.system_image_guid is not None  # a simulated node has one
        guid = (node.system_image_guid + 1) & ((1 << 64) - 1)
    new = with_node_info(fabric, node.guid, system_image_guid=guid)
    event = TrapEvent(IbaTrap.SYSTEM_IMAGE_GUID_CHANGED, node.guid, _issuer_lid(fabric, node.management_port),
                      system_image_guid=guid)
    return new, (event,)


def _count_violation(fabric: Fabric, ref: PortRef, name: str) -> Fabric:
    """PortInfo M_/P_/Q_KeyViolations of the port that saw the bad key (16 bits, saturating)."""
    info = fabric.port_at(ref).info
    value = getattr(info, name)
    return fabric if value >= 0xFFFF else with_port_info(fabric, ref, **{name: value + 1})


def _bad_m_key(fabric: Fabric, step: Step, at: float) -> tuple[Fabric, tuple[TrapEvent, ...]]:
    p = step.params
    port = fabric.port_at(step.target)
    requester: _End = p["from"]
    event = TrapEvent(IbaTrap.BAD_M_KEY, port.node_guid, requester.lid, key=p["key"], method=p["method"],
                      attribute_id=p["attribute"], attribute_modifier=p["attribute_modifier"])
    return _count_violation(fabric, step.target, "m_key_violations"), (event,)


def _bad_key(fabric: Fabric, step: Step, at: float) -> tuple[Fabric, tuple[TrapEvent, ...]]:
    p = step.params
    requester: _End = p["from"]
    responder: _End = p["to"]
    grh = p["grh"]
    trap = {"bad-p-key": IbaTrap.BAD_P_KEY, "bad-q-key": IbaTrap.BAD_Q_KEY,
            "bad-p-key-switch": IbaTrap.BAD_P_KEY_AT_SWITCH_PORT}[step.action]
    port = fabric.port_at(step.target)
    fields: dict[str, Any] = {}
    if trap is IbaTrap.BAD_P_KEY_AT_SWITCH_PORT:
        valid = p["data_valid"]
        if valid is None:
            valid = _VALID_ALL if grh else _VALID_NO_GIDS
            if grh and not requester.gid:
                valid &= ~0x40
            if grh and not responder.gid:
                valid &= ~0x80
        fields = {"port": port.num, "switch_lid": _issuer_lid(fabric, port), "data_valid": valid}
    # IBA Tables 125/126: LID1/GID1/QP1 the requester, 2 the responder; the
    # MIB's ibSmaNodeLid carries LID1, so `lid` does too.
    event = TrapEvent(
        trap, port.node_guid, requester.lid, key=p["key"], lid2=responder.lid,
        gid1=requester.gid if grh else 0, gid2=responder.gid if grh else 0,
        qp1=p["qp1"], qp2=p["qp2"], sl=p["sl"], **fields,
    )
    counter = "q_key_violations" if trap is IbaTrap.BAD_Q_KEY else "p_key_violations"
    return _count_violation(fabric, step.target, counter), (event,)


_HANDLERS = {
    "port-down": _port_state,
    "port-up": _port_state,
    "error-burst": _error_burst,
    "flow-control-watchdog": _watchdog,
    "capability-mask": _capability_mask,
    "system-image-guid": _system_image_guid,
    "bad-m-key": _bad_m_key,
    "bad-p-key": _bad_key,
    "bad-q-key": _bad_key,
    "bad-p-key-switch": _bad_key,
}

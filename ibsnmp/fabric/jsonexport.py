"""Export a fabric snapshot as JSON.

GUIDs, keys and prefixes are written as 0x-prefixed hex strings, GIDs in
their colon form, enums by name, bit sets (widths, speeds) as integers and
byte strings as hex.  Simulated connections are left out unless asked for:
they are computed per node on demand and a big fabric has many.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from enum import Enum, IntFlag
from typing import Any

from .iba import format_gid
from .model import Fabric, Node

__all__ = ["to_json", "fabric_to_dict"]

FORMAT = "ibsnmp-fabric"
VERSION = 1

_HEX64 = {"guid", "node_guid", "system_image_guid", "m_key", "sm_key", "gid_prefix", "subnet_prefix",
          "service_id", "local_node_guid"}
_GID = {"gid", "mgid", "local_gid", "remote_gid"}
_HEX64_LISTS = {"guids"}


_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _fields_of(cls: type) -> tuple[str, ...] | None:
    """Field names of a dataclass or NamedTuple type (None for others), cached:
    the exporter visits hundreds of thousands of values on a large fabric."""
    try:
        return _FIELDS[cls]
    except KeyError:
        if dataclasses.is_dataclass(cls):
            names: tuple[str, ...] | None = tuple(
                f.name for f in dataclasses.fields(cls) if not f.name.startswith("_"))
        elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
            names = tuple(cls._fields)
        else:
            names = None
        _FIELDS[cls] = names
        return names


def _plain(value: Any, name: str = "") -> Any:
    kind = type(value)
    if kind is int:
        if name in _HEX64:
            return f"0x{value:016x}"
        if name in _GID:
            return format_gid(value)
        return value
    if kind in (bool, str, float) or value is None:
        return value
    names = _fields_of(kind)
    if names is not None:
        return {field: _plain(getattr(value, field), field) for field in names}
    if kind is tuple or kind is list:
        item_name = "guid" if name in _HEX64_LISTS else ""
        return [_plain(item, item_name) for item in value]
    if kind is bytes:
        return value.hex()
    if kind is frozenset:  # e.g. the names of measured counters read 64 bits wide
        return sorted(_plain(item) for item in value)
    if isinstance(value, IntFlag):
        return int(value)
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, Mapping):  # e.g. measured counters: name -> value
        return {str(key): _plain(item, str(key)) for key, item in value.items()}
    raise TypeError(f"cannot export {kind.__name__} ({name})")


def _node(fabric: Fabric, node: Node) -> dict[str, Any]:
    """A node, each port with `counters`: what was read for it (values and
    the wide names), null where the simulated traffic drives them."""
    out: dict[str, Any] = _plain(node)  # a dataclass exports as a dict
    for port, written in zip(node.ports, out["ports"]):
        del written["counter_layout"]
        written["counters"] = _plain(fabric.measured(port))
    return out


def fabric_to_dict(fabric: Fabric, include_connections: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "spec": fabric.spec,
        "seed": fabric.seed,
        "subnet_prefix": _plain(fabric.subnet_prefix, "subnet_prefix"),
        "local_node_guid": _plain(fabric.local_node_guid, "local_node_guid"),
        "sm_config": _plain(fabric.sm_config),
        "sms": _plain(fabric.sms),
        "nodes": [_node(fabric, node) for node in fabric.nodes.values()],
        "links": [[_plain(link.a), _plain(link.b)] for link in fabric.links],
        "lids": {str(lid): _plain(ref) for lid, ref in sorted(fabric.lid_map.items())},
        "partitions": _plain(fabric.partitions),
        "multicast_groups": _plain(fabric.multicast_groups),
        "services": _plain(fabric.services),
    }
    if include_connections:
        result["connections"] = {
            f"0x{guid:016x}": _plain(fabric.connections[guid]) for guid in fabric.connections
        }
    return result


def to_json(fabric: Fabric, include_connections: bool = False, indent: int | None = None) -> str:
    return json.dumps(fabric_to_dict(fabric, include_connections), indent=indent,
                      separators=None if indent else (",", ":"))

"""The JSON Schemas of the MQTT payloads (schema/*.json), built from the same
field tables the codec uses so the files cannot drift from the code:
`python -m ibsnmp.mqtt.schema` rewrites them and a test checks they are
current.  The codec validates on its own; the schemas are for readers and
for other implementations."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from . import codec
from .fields import HEX64_SCHEMA, HEX128_SCHEMA, UINT64_SCHEMA

SCHEMA_DIR = Path(__file__).parent / "schema"
STATE_FILE = SCHEMA_DIR / "node-state-v1.json"
COUNTERS_FILE = SCHEMA_DIR / "publisher-counters-v1.json"
EVENT_FILE = SCHEMA_DIR / "node-event-v1.json"
_DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _list(items: dict[str, Any], **limits: Any) -> dict[str, Any]:
    return {"type": "array", "items": items, **limits}


def _uint(bits: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": 0, "maximum": (1 << bits) - 1}


_TIME = {"type": "number", "minimum": 0, "description": "the publisher's clock, seconds since 1970"}


def state_schema() -> dict[str, Any]:
    vl_arb = _list({"type": "array", "prefixItems": [_uint(8), _uint(8)], "minItems": 2, "maxItems": 2})
    counter = {"type": "object", "properties": {
        "value": UINT64_SCHEMA, "bits": {"type": "integer", "minimum": 1, "maximum": 64},
        "wide": {"type": "boolean", "description": "read from a 64-bit counter that wraps (absent: false)"}},
        "required": ["value", "bits"], "additionalProperties": False}
    port = codec.PORT_FIELDS.schema(
        info=codec.PORT_INFO_FIELDS.schema(),
        pkeys=_list(_uint(16)), sl2vl=_list(_uint(4)), vl_arb_high=vl_arb, vl_arb_low=vl_arb,
        guids=_list(HEX64_SCHEMA), gids=_list(HEX128_SCHEMA),
        remote={"type": "object", "properties": {"guid": HEX64_SCHEMA, "port": _uint(8)},
                "required": ["guid", "port"], "additionalProperties": False},
        vendor_diag={"type": "string", "pattern": "^([0-9a-f]{2})*$"},
        counters={"type": "object", "propertyNames": {"pattern": "^[a-z][a-z0-9_]{0,63}$"},
                  "additionalProperties": counter},
    )
    port["required"] = sorted(set(port["required"]) | {"info"})
    return {
        "$schema": _DRAFT,
        "$id": "https://ibsnmp.invalid/mqtt/node-state-v1.json",
        "title": "ibsnmp node state (topic ibsnmp/v2/<fabric-id>/<owner>/<client id>/node/<node guid>/state)",
        "description": "A node's full record; a value the provider could not read is left out.",
        "type": "object",
        "properties": {
            "version": {"const": codec.VERSION},
            "time": _TIME,
            "publisher": {"type": "string", "pattern": "^[^/+#\\u0000]{1,128}$",
                          "description": "the MQTT client id whose last will covers this node"},
            "refresh": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1000000,
                        "description": "seconds between the publisher's full refreshes"},
            "node": codec.NODE_FIELDS.schema(),
            "switch": codec.SWITCH_FIELDS.schema(),
            "ca": codec.CA_FIELDS.schema(),
            "ports": _list(port, minItems=1, maxItems=256),
            "sms": _list(codec.SM_FIELDS.schema()),
            "sm_config": codec.SM_CONFIG_FIELDS.schema(),
        },
        "required": ["version", "time", "node", "ports"],
        "additionalProperties": False,
    }


def counters_schema() -> dict[str, Any]:
    node = {
        "type": "object",
        "properties": {
            "time": _TIME,
            "state": {**_TIME, "description": "the time of the state record these values belong to"},
            "ports": {"type": "object", "propertyNames": {"pattern": "^[0-9]{1,3}$"},
                      "additionalProperties": _list(UINT64_SCHEMA)},
            "act_counts": _list(_uint(32)),
        },
        "required": ["time", "state", "ports"],
        "additionalProperties": False,
    }
    return {
        "$schema": _DRAFT,
        "$id": "https://ibsnmp.invalid/mqtt/publisher-counters-v1.json",
        "title": "ibsnmp counters (topic ibsnmp/v2/<fabric-id>/<owner>/<client id>/counters)",
        "description": "Counter values of some of the publisher's nodes since their states: each port's in the "
                       "order its state lists them, then the ActCounts of the node's SMs that have one, in the "
                       "state's order.",
        "type": "object",
        "properties": {
            "version": {"const": codec.VERSION},
            "time": _TIME,
            "nodes": {"type": "object", "propertyNames": HEX64_SCHEMA, "additionalProperties": node,
                      "maxProperties": codec.COUNTER_BATCH},
        },
        "required": ["version", "time", "nodes"],
        "additionalProperties": False,
    }


def event_schema() -> dict[str, Any]:
    return {
        "$schema": _DRAFT,
        "$id": "https://ibsnmp.invalid/mqtt/node-event-v1.json",
        "title": "ibsnmp node event (topic ibsnmp/v2/<fabric-id>/<owner>/<client id>/node/<node guid>/events)",
        "description": "One IBA trap raised by the node; sequence grows by one per event of the node.",
        "type": "object",
        "properties": {
            "version": {"const": codec.VERSION},
            "sequence": _uint(63),
            "time": _TIME,
            "event": codec.EVENT_FIELDS.schema(),
        },
        "required": ["version", "sequence", "time", "event"],
        "additionalProperties": False,
    }


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2) + "\n"


def main() -> int:
    STATE_FILE.write_text(render(state_schema()))
    COUNTERS_FILE.write_text(render(counters_schema()))
    EVENT_FILE.write_text(render(event_schema()))
    print(f"wrote {STATE_FILE}, {COUNTERS_FILE} and {EVENT_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

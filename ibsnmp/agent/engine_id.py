"""An snmpEngineID as an operator writes it: in the state file, the configuration, a flag."""

from __future__ import annotations

from typing import Any

from ibsnmp.documents import Fail, text


def parse_engine_id(value: Any, key: str, fail: Fail) -> bytes:
    """An snmpEngineID in hex (`0x` and `:` allowed): 5 to 32 octets (RFC 3411)."""
    digits = text(value, key, fail).strip().lower().removeprefix("0x").replace(":", "")
    try:
        octets = bytes.fromhex(digits)
    except ValueError:
        raise fail(key, "expected hexadecimal digits, e.g. 0x8000000001020304") from None
    if not 5 <= len(octets) <= 32:
        raise fail(key, f"must be 5 to 32 octets, got {len(octets)}")
    if octets in (bytes(len(octets)), b"\xff" * len(octets)):
        raise fail(key, "must not be all zeros or all 'ff'H (RFC 3411 SnmpEngineID)")
    return octets

"""The SNMPv3 engine's identity across restarts: snmpEngineID and snmpEngineBoots.

USM's replay protection (RFC 3414 2.2) rests on snmpEngineBoots growing at every start of
an engine with the same snmpEngineID, and managers cache the engine ID. Both live in
`ibsnmp-engine.json` in the state directory (`save_engine_state`), with `booted_at`, the
zero of snmpEngineTime and sysUpTime, which a member joining a running group of agents
shares (agent.engine_group). `start_engine` advances them durably before the agent answers;
a file that is not valid is refused (one line naming it), never replaced: a new engine ID
or boots would silently reopen replay.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pysnmp.entity.engine import SnmpEngine

from ibsnmp.atomicfile import write_atomically

from .engine_id import parse_engine_id

log = logging.getLogger("ibsnmp.agent")

ENGINE_FILE_NAME = "ibsnmp-engine.json"
MAX_BOOTS = 2147483647  # RFC 3414 2.2.2: snmpEngineBoots latches here
# RFC 3411 SnmpEngineID format: first bit set, enterprise number (20408, the
# pysnmp project's, as pysnmp's own default IDs), format 5 (octets), then
# random octets that keep IDs of different agents apart.
ENGINE_ID_PREFIX = bytes.fromhex("80004fb805")
ENGINE_ID_RANDOM_OCTETS = 8


class EngineStateError(Exception):
    """The engine state file cannot be read, written or is not valid; names the file."""


@dataclass(frozen=True, slots=True)
class EngineState:
    engine_id: bytes
    boots: int
    # When this boot began (time.time()); 0.0: not recorded (a file of an
    # earlier version). Not part of the identity: states compare without it.
    booted_at: float = field(default=0.0, compare=False)


def new_engine_id() -> bytes:
    return ENGINE_ID_PREFIX + secrets.token_bytes(ENGINE_ID_RANDOM_OCTETS)


def load_engine_state(path: Path) -> EngineState | None:
    """The stored state, None when there is no file yet."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise EngineStateError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, too deep, too long
        raise EngineStateError(f"{path}: not a valid JSON document: {exc}") from None
    return _parse(doc, path)


def _parse(doc: Any, path: Path) -> EngineState:
    def fail(problem: str) -> EngineStateError:
        return EngineStateError(f"{path}: {problem}")

    if not isinstance(doc, dict):
        raise fail("expected a JSON object")
    unknown = sorted(set(doc) - {"engine_id", "boots", "booted_at"})
    if unknown:
        raise fail(f"{unknown[0]}: unknown key")
    if "engine_id" not in doc:
        raise fail("engine_id: missing")
    engine_id = parse_engine_id(doc["engine_id"], "engine_id",
                                lambda key, problem: fail(f"{key}: {problem}"))
    boots = doc.get("boots")
    if isinstance(boots, bool) or not isinstance(boots, int) or not 1 <= boots <= MAX_BOOTS:
        raise fail(f"boots: expected an integer from 1 to {MAX_BOOTS}")
    booted_at = doc.get("booted_at", 0.0)
    if isinstance(booted_at, bool) or not isinstance(booted_at, (int, float)) \
            or not 0 <= booted_at < 2**32:
        raise fail("booted_at: expected seconds since the epoch")
    return EngineState(engine_id, boots, float(booted_at))


def save_engine_state(path: Path, state: EngineState) -> None:
    """Write `state` as one JSON object, atomically:

        {"engine_id": "80004fb805...", "boots": 12, "booted_at": 1795950000.25}
    """
    doc = {"engine_id": state.engine_id.hex(), "boots": state.boots,
           "booted_at": round(state.booted_at, 3)}
    try:
        write_atomically(path, (json.dumps(doc) + "\n").encode("ascii"))
    except OSError as exc:
        raise EngineStateError(f"{path}: cannot write: {exc.strerror or exc}") from None


def next_engine_state(stored: EngineState | None, configured_id: bytes | None,
                      now: float = 0.0) -> EngineState:
    """The state of a boot at `now`, given the stored one and a configured engine ID.

    First start: a new engine ID (RFC 3411 format 5, random octets), boots 1.
    Every start: boots + 1; at MAX_BOOTS it latches (RFC 3414 2.2.2). A
    configured engine ID wins over the stored one; when it differs, boots
    starts again at 1 (snmpEngineBoots counts the starts "since snmpEngineID
    was last configured", SNMP-FRAMEWORK-MIB, and managers re-learn boots with
    the new ID), and the file keeps it, so removing `engine_id` from the
    config later keeps it too."""
    if stored is None:
        return EngineState(configured_id or new_engine_id(), 1, now)
    if configured_id is not None and configured_id != stored.engine_id:
        return EngineState(configured_id, 1, now)
    return EngineState(stored.engine_id, min(stored.boots + 1, MAX_BOOTS), now)


def start_engine(state_dir: Path, configured_id: bytes | None,
                 clock: Callable[[], float] = time.time) -> EngineState:
    """Load, advance (a boot beginning now) and durably save the engine
    state of `state_dir` (temporary file, fsync, rename; created with mode
    0600). At MAX_BOOTS, USM refuses every authenticated request as
    notInTimeWindow until the engine ID changes: a warning says so."""
    path = state_dir / ENGINE_FILE_NAME
    stored = load_engine_state(path)
    state = next_engine_state(stored, configured_id, clock())
    save_engine_state(path, state)
    if stored is not None and stored.engine_id != state.engine_id:
        log.info("snmpEngineID changed to the configured %s: snmpEngineBoots starts again "
                 "at 1", state.engine_id.hex())
    if state.boots == MAX_BOOTS:
        log.warning("snmpEngineBoots has reached %d (RFC 3414 2.2.2): authenticated SNMPv3 "
                    "requests are refused until the engine ID changes (configure another "
                    "engine_id, or remove %s)", MAX_BOOTS, path)
    log.debug("snmpEngineID %s, snmpEngineBoots %d", state.engine_id.hex(), state.boots)
    return state


def apply_engine_identity(engine: SnmpEngine, engine_id: bytes | None, boots: int | None,
                          booted_at: float | None = None) -> None:
    """Give a new engine its snmpEngineID and snmpEngineBoots, and with
    `booted_at` the zero of its snmpEngineTime and sysUpTime.

    pysnmp's SnmpEngine, when handed an engine ID, keeps boots in a file
    under the temporary directory (/tmp/__pysnmp/<id>/boots), which a /tmp
    clean-up resets; so the engine is built without one and both values are
    set here, in the MIB instances pysnmp's USM reads them from.
    """
    builder = engine.get_mib_builder()
    id_instance, boots_instance = builder.import_symbols(
        "__SNMP-FRAMEWORK-MIB", "snmpEngineID", "snmpEngineBoots")
    if engine_id is not None:
        id_instance.syntax = id_instance.syntax.clone(engine_id)
        engine.snmpEngineID = id_instance.syntax
    if boots is not None:
        boots_instance.syntax = boots_instance.syntax.clone(boots)
    if booted_at:
        # pysnmp's instances keep their zero: snmpEngineTime's value is it (in
        # whole seconds), sysUpTime's type a class attribute `createdAt`.
        (time_instance,) = builder.import_symbols("__SNMP-FRAMEWORK-MIB", "snmpEngineTime")
        time_instance.syntax = time_instance.syntax.clone(int(booted_at))
        (up_time,) = builder.import_symbols("__SNMPv2-MIB", "sysUpTime")
        type(up_time.syntax).createdAt = booted_at

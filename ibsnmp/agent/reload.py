"""Configuration reload (SIGHUP): new communities, users, limits and trap targets.

The fabric, the listening sockets and the engine ID stay; a file that does
not load is refused with one log line and the configuration in force stays.
What changed is logged without a secret: communities by count, users and
trap targets by name and address, each changed [limits] and [traps] key
with its old and new value as the file writes it (`limits.walk_cache:
262144 -> 0`).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from .config import AgentSettings, ConfigError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

log = logging.getLogger("ibsnmp.agent")

ReloadHook = Callable[[AgentSettings], Awaitable[None]]
# Settings that only a restart applies: the sockets are bound and the
# engine ID is what SNMPv3 peers know the agent by.
RESTART_ONLY = ("listen", "engine_id", "system", "agentx")


def describe_changes(old: AgentSettings, new: AgentSettings) -> list[str]:
    """What a reload changes, never naming a secret: one phrase for the
    communities (counted), one each for users and trap targets (named), and
    one per changed key of [limits] and [traps] (`traps.if_mib: true -> false`)."""
    changes: list[str] = []
    old_communities, new_communities = set(old.communities), set(new.communities)
    if old_communities != new_communities:
        changes.append(f"communities {len(old.communities)} -> {len(new.communities)} "
                       f"({len(new_communities - old_communities)} new, "
                       f"{len(old_communities - new_communities)} gone)")
    changes += _named("users", {u.name: u for u in old.users}, {u.name: u for u in new.users})
    changes += _named("trap targets", {t.label: t for t in old.trap_targets},
                      {t.label: t for t in new.trap_targets})
    changes += changed_keys("limits", old.limits, new.limits)
    changes += changed_keys("traps", old.traps, new.traps)
    return changes


def changed_keys(table: str, old: DataclassInstance, new: DataclassInstance) -> list[str]:
    """`table.key: old -> new` for each field of the dataclasses `old` and
    `new` (of one type) that differs, in field order; a field that is a
    dataclass itself is walked as a sub-table (`table.key.sub`). A field
    kept out of its class's repr (a secret, as User.auth_key) is said to
    have changed, its values unwritten."""
    phrases: list[str] = []
    for item in dataclasses.fields(old):
        before, after = getattr(old, item.name), getattr(new, item.name)
        if before == after:
            continue
        key = f"{table}.{item.name}"
        if not item.repr:
            phrases.append(f"{key}: changed")
        elif (dataclasses.is_dataclass(before) and not isinstance(before, type)
                and type(before) is type(after)):
            phrases += changed_keys(key, before, after)
        else:
            phrases.append(f"{key}: {toml_value(before)} -> {toml_value(after)}")
    return phrases


def toml_value(value: object) -> str:
    """`value` as a TOML file writes it: true/false, 64, 0.5, "text", [1, 2];
    a whole float without its ".0" (the files take 5000 for 5000.0), and
    None, a key the file leaves out, as `unset`."""
    if value is None:
        return "unset"
    if isinstance(value, enum.Enum):
        return toml_value(value.value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53:
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string escapes as JSON does
    if isinstance(value, (tuple, list, frozenset, set)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return "[" + ", ".join(toml_value(item) for item in items) + "]"
    return str(value)


def _named(kind: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    parts = [f"{verb} {', '.join(sorted(names))}" for verb, names in (
        ("added", new.keys() - old.keys()), ("removed", old.keys() - new.keys()),
        ("changed", {n for n in old.keys() & new.keys() if old[n] != new[n]})) if names]
    return [f"{kind}: {'; '.join(parts)}"] if parts else []


def restart_only_changes(old: AgentSettings, new: AgentSettings) -> list[str]:
    return [name for name in RESTART_ONLY if getattr(old, name) != getattr(new, name)]


async def reload_configuration(load: Callable[[], AgentSettings], current: AgentSettings,
                               apply: Callable[[AgentSettings], None],
                               hooks: Sequence[ReloadHook]) -> AgentSettings | None:
    """Load, check and apply new settings; None (and the old ones stay) if refused."""
    try:
        new = load()
    except ConfigError as exc:
        log.error("configuration not reloaded: %s; the configuration in force stays", exc)
        return None
    for name in restart_only_changes(current, new):
        log.warning("configuration reload: %s changed; it takes effect at the next start", name)
    changes = describe_changes(current, new)
    apply(new)
    for hook in hooks:
        await hook(new)
    log.info("configuration reloaded: %s", "; ".join(changes) if changes else "nothing changed")
    return new

"""Configuration reload (SIGHUP): new communities, users, limits and trap targets.

The fabric, the listening sockets and the engine ID stay; a file that does
not load is refused with one log line and the configuration in force stays.
What changed is logged without a secret: communities by count, users and
trap targets by name and address.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .config import AgentSettings, ConfigError

log = logging.getLogger("ibsnmp.agent")

ReloadHook = Callable[[AgentSettings], Awaitable[None]]
# Settings that only a restart applies: the sockets are bound and the
# engine ID is what SNMPv3 peers know the agent by.
RESTART_ONLY = ("listen", "engine_id", "system", "agentx")


def describe_changes(old: AgentSettings, new: AgentSettings) -> list[str]:
    """What a reload changes, one phrase per kind, never naming a secret."""
    changes: list[str] = []
    old_communities, new_communities = set(old.communities), set(new.communities)
    if old_communities != new_communities:
        changes.append(f"communities {len(old.communities)} -> {len(new.communities)} "
                       f"({len(new_communities - old_communities)} new, "
                       f"{len(old_communities - new_communities)} gone)")
    changes += _named("users", {u.name: u for u in old.users}, {u.name: u for u in new.users})
    changes += _named("trap targets", {t.label: t for t in old.trap_targets},
                      {t.label: t for t in new.trap_targets})
    if old.limits != new.limits:
        changes.append(f"limits {old.limits} -> {new.limits}")
    if old.traps != new.traps:
        changes.append(f"traps {old.traps} -> {new.traps}")
    return changes


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

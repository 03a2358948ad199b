"""What a SIGHUP reload logs it changed: one phrase per changed key of
[limits] and [traps], values as the TOML file writes them; communities
counted, never named; users and trap targets by name and address."""

from __future__ import annotations

import dataclasses
import enum
import logging
from typing import Any

import pytest

from ibsnmp.agent.config import AgentSettings, Community, Limits, TrapSettings, User, parse_config
from ibsnmp.agent.trap_targets import TrapTarget
from ibsnmp.agent.reload import changed_keys, describe_changes, reload_configuration, toml_value
from ibsnmp.agent.transport import Endpoint


def test_each_changed_limit_is_one_phrase_in_field_order() -> None:
    old = AgentSettings()
    new = AgentSettings(limits=dataclasses.replace(old.limits, max_varbinds=10, walk_cache=0),
                        traps=TrapSettings(if_mib=False))
    assert describe_changes(old, new) == [
        f"limits.max_varbinds: {old.limits.max_varbinds} -> 10",
        f"limits.walk_cache: {old.limits.walk_cache} -> 0",
        "traps.if_mib: true -> false",
    ]


def test_every_field_of_limits_and_trap_settings_is_told() -> None:
    """No field is named in the code: a field added later is told too."""
    for table, settings_field, values in (("limits", "limits", Limits()),
                                          ("traps", "traps", TrapSettings())):
        for item in dataclasses.fields(values):
            before = getattr(values, item.name)
            after = _another(before, str(item.type))
            changes: dict[str, Any] = {item.name: after}
            settings: dict[str, Any] = {settings_field: dataclasses.replace(values, **changes)}
            new = AgentSettings(**settings)
            assert describe_changes(AgentSettings(), new) == [
                f"{table}.{item.name}: {toml_value(before)} -> {toml_value(after)}"]


def _another(value: object, annotation: str) -> object:
    """A value of the field's type other than `value` (None: unset, a value of its type)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 7
    if value is None:
        return True if annotation.startswith("bool") else 2.5
    raise AssertionError(f"no other value made for {value!r} ({annotation})")


def test_values_are_written_as_toml_writes_them() -> None:
    assert [toml_value(v) for v in (True, False, 64, 0, 0.5, 5000.0, None, "x\"y", (1, 2))] == [
        "true", "false", "64", "0", "0.5", "5000", "unset", '"x\\"y"', "[1, 2]"]
    old = parse_config({"limits": {"requests_per_second": 5000, "getbulk_fill_ms": 0.5}})
    new = parse_config({"limits": {"requests_per_second": 250.5, "getbulk_fill_ms": 2,
                                   "requests_per_second_per_source": 20,
                                   "fast_path": False}})
    assert describe_changes(_settings(old.limits), _settings(new.limits)) == [
        "limits.getbulk_fill_ms: 0.5 -> 2",
        "limits.requests_per_second_per_source: unset -> 20",
        "limits.requests_per_second: 5000 -> 250.5",
        "limits.fast_path: true -> false",
    ]


def _settings(limits: Limits) -> AgentSettings:
    return AgentSettings(limits=limits)


def test_a_setting_without_a_change_says_nothing() -> None:
    assert describe_changes(AgentSettings(), AgentSettings()) == []
    assert describe_changes(AgentSettings(), AgentSettings(limits=Limits(), traps=TrapSettings())) == []


def test_nested_tables_secret_fields_and_enums() -> None:
    class Mode(enum.Enum):
        FAST = "fast"
        SLOW = "slow"

    @dataclasses.dataclass(frozen=True)
    class Inner:
        depth: int = 1

    @dataclasses.dataclass(frozen=True)
    class Table:
        inner: Inner = Inner()
        key: str = dataclasses.field(default="old-secret", repr=False)
        mode: Mode = Mode.FAST

    changed = changed_keys("t", Table(), Table(Inner(2), "new-secret", Mode.SLOW))
    assert changed == ["t.inner.depth: 1 -> 2", "t.key: changed", 't.mode: "fast" -> "slow"']
    assert "secret" not in "; ".join(changed)


def test_communities_are_counted_never_named() -> None:
    old = AgentSettings(communities=(Community("alpha-ro"), Community("gamma-rw", "write")))
    new = AgentSettings(communities=(Community("beta-ro"), Community("gamma-rw", "write")))
    changes = describe_changes(old, new)
    assert changes == ["communities 2 -> 2 (1 new, 1 gone)"]
    assert not any(name in changes[0] for name in ("alpha", "beta", "gamma"))


def test_users_and_trap_targets_by_name_and_address() -> None:
    ops = User("ops", "SHA256", "ops-auth-key-1", "AES", "ops-priv-key-1")
    target = TrapTarget(Endpoint("192.0.2.1", 162, ipv6=False), community="trap-secret")
    old = AgentSettings(users=(ops,))
    new = AgentSettings(users=(dataclasses.replace(ops, auth_key="ops-auth-key-2"),
                               User("noc", "SHA256", "noc-auth-key-1")),
                        trap_targets=(target,))
    changes = describe_changes(old, new)
    assert changes == ["users: added noc; changed ops",
                       "trap targets: added 192.0.2.1:162 (v2c trap)"]
    assert "key" not in "; ".join(changes) and "trap-secret" not in "; ".join(changes)


async def test_the_reload_log_line_joins_the_phrases(caplog: pytest.LogCaptureFixture) -> None:
    current = AgentSettings()
    new = AgentSettings(limits=dataclasses.replace(current.limits, max_varbinds=10),
                        traps=TrapSettings(if_mib=False))
    applied: list[AgentSettings] = []
    with caplog.at_level(logging.INFO, logger="ibsnmp.agent"):
        assert await reload_configuration(lambda: new, current, applied.append, ()) is new
    assert applied == [new]
    assert (f"configuration reloaded: limits.max_varbinds: {current.limits.max_varbinds} -> 10; "
            "traps.if_mib: true -> false") in caplog.messages

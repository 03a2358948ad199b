"""The configuration reference's `[limits]` table says what the parser does:
every key it lists is one the parser takes, with the default it has."""

from __future__ import annotations

import re
from dataclasses import fields

from ibsnmp.agent.config import LIMIT_KEYS, Limits
from tests.support.paths import PROJECT_ROOT

_ROW = re.compile(r"^\| `(\w+)` \| .* \| (.+?) \|$")


def _limits_table() -> dict[str, str]:
    """key -> the default as docs/configuration.md's `[limits]` table writes it."""
    text = (PROJECT_ROOT / "docs" / "configuration.md").read_text()
    table = text.split("## `[limits]`", 1)[1].split("\n\n", 2)[1]
    rows = {}
    for line in table.splitlines():
        found = _ROW.match(line)
        if found:
            rows[found.group(1)] = found.group(2)
    return rows


def _as_written(value: bool | int | float | None) -> str:
    """A default as the table writes it: None "off", a flag in code, numbers grouped."""
    if value is None:
        return "off"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and not value.is_integer():
        return str(value)
    return f"{int(value):,}"


def test_the_reference_lists_every_limit_key() -> None:
    assert sorted(_limits_table()) == sorted(LIMIT_KEYS)


def test_the_reference_gives_each_limit_its_default() -> None:
    defaults = Limits()
    documented = _limits_table()
    for limit in fields(Limits):
        value = getattr(defaults, limit.name)
        assert documented[limit.name] == _as_written(value), limit.name

"""Every module of ibsnmp states its contract in a docstring of at most ten lines:
the reference lives in docs/, a function's details at the function."""

from __future__ import annotations

import ast

from tests.unit.test_package_layers import PACKAGE_ROOT

MOST_LINES = 10


def test_every_module_docstring_is_a_short_contract() -> None:
    long: list[str] = []
    missing: list[str] = []
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        if "compiled_mibs" in path.parts:
            continue  # pysmi's output
        docstring = ast.get_docstring(ast.parse(path.read_text()), clean=False)
        name = str(path.relative_to(PACKAGE_ROOT))
        if docstring is None:
            missing.append(name)
        elif docstring.count("\n") + 1 > MOST_LINES:
            long.append(f"{name}: {docstring.count(chr(10)) + 1} lines")
    assert not long, long
    assert not missing, missing

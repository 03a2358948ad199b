"""No import cycle among ibsnmp's modules (test_package_layers keeps the
packages in layers, so none among them either).

Every import counts, at the top of a module or inside a function: one
deferred into a function to dodge a cycle is a cycle still, and the
reader of either module has to know about the other."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.support.paths import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "ibsnmp"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PROJECT_ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(name: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The ibsnmp modules `name` imports anywhere in its source."""
    found: set[str] = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1])
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            found.add(source)
            found.update(f"{source}.{alias.name}" for alias in node.names)
    return {module for module in found if module in known and module != name}


def _cycles(graph: Mapping[str, set[str]]) -> Iterator[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(node: str) -> Iterator[list[str]]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                yield from visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                yield sorted(component)

    for node in sorted(graph):
        if node not in index:
            yield from visit(node)


def _module_graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imported(name, path, known) for name, path in known.items()}


def test_no_module_imports_itself_through_others() -> None:
    assert list(_cycles(_module_graph())) == []


def test_a_cycle_is_found() -> None:
    """The finder itself: a -> b -> c -> a is one component, d alone is none."""
    assert list(_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})) == [["a", "b", "c"]]

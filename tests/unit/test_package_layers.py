"""The packages of ibsnmp import only the layers below their own.

Each package (a directory under ibsnmp/, or a top-level module) has a
layer; a module may import its own package and any package of a lower
layer, never one of its own layer or above. So there is no import cycle
between packages, and a new package must be given a place here.
Imports inside functions count as well: they are dependencies too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ibsnmp

PACKAGE_ROOT = Path(ibsnmp.__file__).parent
GENERATED = {"compiled_mibs"}  # pysmi's output: imports pysnmp only

# Bottom to top.
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(layer) for layer in (
    # Leaves: SNMP on the wire, events, files, logging, MIB compilation,
    # the checks the documents read share, the event loop's choice.
    {"ibsnmp", "wire", "events", "gc_freeze", "malloc_threshold", "atomicfile", "logsetup",
     "mib_compiler", "prometheus", "documents", "sd_notify", "event_loop"},
    # The fabric model; the state directory.
    {"fabric", "statedir"},
    # MADs: the InfiniBand management datagrams and their transport.
    {"mad"},
    # Subnet administration: SA queries computed from the model, and the
    # subnet's own SA asked over MADs (records, client, worker, backends).
    {"sa"},
    # The live subnet read over MADs.
    {"live"},
    # Where fabric snapshots come from.
    {"providers"},
    # The MQTT publisher and aggregator provider.
    {"mqtt"},
    # What managers configure (SETs) and the state file.
    {"state"},
    # The MIB objects bound to the model.
    {"mib"},
    # The SNMP agent.
    {"agent"},
    {"traps"},
    # AgentX; the options' three sources (flags, variables, the config file).
    {"agentx", "options"},
    {"commands"},
    {"cli"},
    {"__main__"},
))
LAYER_OF = {name: rank for rank, layer in enumerate(LAYERS) for name in layer}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _unit(module: str) -> str:
    """The package a module belongs to: ibsnmp.X... -> X ("ibsnmp" for the root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _imports(path: Path) -> set[str]:
    """The ibsnmp modules `path` imports, relative imports resolved."""
    return _imported(path.read_text(), _module_name(path), path.name == "__init__.py")


def _imported(source: str, module: str, is_package: bool) -> set[str]:
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                found.add(".".join(base + ([node.module] if node.module else [])))
            elif node.module:
                found.add(node.module)
    return {name for name in found if name == "ibsnmp" or name.startswith("ibsnmp.")}


def _sources() -> list[Path]:
    return [path for path in sorted(PACKAGE_ROOT.rglob("*.py"))
            if not GENERATED & set(path.relative_to(PACKAGE_ROOT).parts)]


def test_every_package_has_a_layer() -> None:
    units = {_unit(_module_name(path)) for path in _sources()}
    assert units - set(LAYER_OF) == set()
    assert set(LAYER_OF) - units == set()  # no layer names a package that is gone


def test_no_package_imports_its_own_layer_or_above() -> None:
    upward = []
    for path in _sources():
        unit = _unit(_module_name(path))
        for imported in _imports(path):
            target = _unit(imported)
            if target != unit and LAYER_OF[target] >= LAYER_OF[unit]:
                upward.append(f"{_module_name(path)} imports {imported}")
    assert upward == []


def test_the_checker_reads_imports_in_functions_and_relative_ones() -> None:
    source = ("import json\nfrom . import model\n\n\ndef later():\n"
              "    from ..agent import config\n    import ibsnmp.mib.api\n")
    assert _imported(source, "ibsnmp.fabric.probe", is_package=False) == {
        "ibsnmp.fabric", "ibsnmp.agent", "ibsnmp.mib.api"}
    assert _imported("from .model import Fabric\n", "ibsnmp.fabric", is_package=True) == {
        "ibsnmp.fabric.model"}

"""MibBuilderOnce loads what pysnmp's MibBuilder loads, compiling each source once."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from pysnmp.smi import builder, error

from ibsnmp.mib.builder_once import MibBuilderOnce, module_code
from ibsnmp.mib.loader import SERVED_MODULES
from ibsnmp.mib_compiler.paths import COMPILED_MIB_DIR

MODULES = (*SERVED_MODULES, "SNMPv2-MIB", "SNMP-FRAMEWORK-MIB", "SNMP-USER-BASED-SM-MIB")


def _loaded(made: Any, source: Path = COMPILED_MIB_DIR, modules: tuple[str, ...] = MODULES) -> Any:
    made.add_mib_sources(builder.DirMibSource(str(source)))
    made.load_modules(*modules)
    return made


def _described(symbol: Any) -> tuple[str, str, object]:
    kind = symbol if isinstance(symbol, type) else type(symbol)
    name = symbol.getName() if not isinstance(symbol, type) and hasattr(symbol, "getName") else None
    return kind.__module__, kind.__name__, name


def test_the_same_symbols_as_pysnmps_builder() -> None:
    theirs, ours = _loaded(builder.MibBuilder()), _loaded(MibBuilderOnce())
    assert ours.mibSymbols.keys() == theirs.mibSymbols.keys()
    for module, symbols in theirs.mibSymbols.items():
        assert {name: _described(s) for name, s in ours.mibSymbols[module].items()} == \
            {name: _described(s) for name, s in symbols.items()}, module


def test_a_second_builder_runs_the_code_the_first_compiled() -> None:
    _loaded(MibBuilderOnce())
    path = str(COMPILED_MIB_DIR / "IB-SM-MIB.py")
    assert module_code(path) is module_code(path)
    again = _loaded(MibBuilderOnce())
    (table,) = _loaded(builder.MibBuilder()).import_symbols("IB-SM-MIB", "ibSmNodeInfoTable")
    assert again.import_symbols("IB-SM-MIB", "ibSmNodeInfoTable")[0].getName() == table.getName()


def test_a_changed_source_is_compiled_again(tmp_path: Path) -> None:
    shutil.copy(COMPILED_MIB_DIR / "IB-TC-MIB.py", tmp_path)
    source = tmp_path / "IB-TC-MIB.py"
    first = module_code(str(source))
    source.write_text(source.read_text() + "\nADDED_LATER = 1\n")
    assert module_code(str(source)) is not first
    loaded = _loaded(MibBuilderOnce(), tmp_path, ("IB-TC-MIB",))
    assert "IbGuid" in loaded.mibSymbols["IB-TC-MIB"]


def test_a_module_that_fails_raises_as_pysnmp_and_loads_once_fixed(tmp_path: Path) -> None:
    source = tmp_path / "BROKEN-MIB.py"
    source.write_text("raise ValueError('not a MIB')\n")
    made = MibBuilderOnce()
    with pytest.raises(error.MibLoadError, match="not a MIB"):
        _loaded(made, tmp_path, ("BROKEN-MIB",))
    source.write_text("(identifier,) = mibBuilder.import_symbols('SNMPv2-SMI', 'MibIdentifier')\n"
                      "mibBuilder.export_symbols('BROKEN-MIB', fixed=identifier((1, 3, 6, 1, 99)))\n")
    made.load_modules("BROKEN-MIB")
    assert made.import_symbols("BROKEN-MIB", "fixed")[0].getName() == (1, 3, 6, 1, 99)


def test_a_missing_module_is_not_found() -> None:
    with pytest.raises(error.MibNotFoundError):
        _loaded(MibBuilderOnce(), COMPILED_MIB_DIR, ("NO-SUCH-MIB",))

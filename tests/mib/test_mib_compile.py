"""pysmi output: deterministic, current, and loadable by pysnmp as one tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from ibsnmp.cli import main
from ibsnmp.mib_compiler.compile import CompileError, compile_mibs
from ibsnmp.mib_compiler.paths import (
    BASE_MIB_DIR,
    COMPILED_MIB_DIR,
    MIB_SOURCE_DIR,
    PRODUCT_MODULES,
)
from pysnmp.smi import builder


@pytest.fixture(scope="module")
def fresh_compile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("compiled")
    assert main(["mibs", "compile", "--out", str(out)]) == 0
    return out


def test_compile_into_an_empty_folder_produces_every_module(fresh_compile: Path) -> None:
    produced = {p.stem for p in fresh_compile.glob("*.py")}
    assert set(PRODUCT_MODULES) | {"IF-MIB"} <= produced


def test_compiled_mibs_folder_is_current(fresh_compile: Path) -> None:
    committed = {p.name: p.read_bytes() for p in COMPILED_MIB_DIR.glob("*.py")}
    fresh = {p.name: p.read_bytes() for p in fresh_compile.glob("*.py")}
    stale = sorted(name for name in fresh if committed.get(name) != fresh[name])
    extra = sorted(set(committed) - set(fresh))
    assert not stale, f"compiled_mibs/ is stale, run `ibsnmp mibs compile`: {stale}"
    assert not extra, f"compiled_mibs/ holds modules no longer produced: {extra}"


def test_output_has_no_time_host_or_user(fresh_compile: Path) -> None:
    import getpass
    import platform

    text = (fresh_compile / "SMA-MIB.py").read_text()
    assert platform.node() not in text
    assert f"by user {getpass.getuser()}" not in text
    assert "Produced by" not in text


def test_all_six_modules_load_together() -> None:
    mib_builder = builder.MibBuilder()
    mib_builder.add_mib_sources(builder.DirMibSource(str(COMPILED_MIB_DIR)))
    mib_builder.load_modules(*PRODUCT_MODULES)
    for module in PRODUCT_MODULES:
        assert module in mib_builder.mibSymbols
    (ib_guid,) = mib_builder.import_symbols("IB-TC-MIB", "IbGuid")
    assert ib_guid().subtype(value=b"\x00" * 8)
    (root,) = mib_builder.import_symbols("IB-TC-MIB", "infinibandMIB")
    assert root.getName() == (1, 3, 6, 1, 3, 117)


def test_a_broken_module_fails_with_its_name(tmp_path: Path) -> None:
    sources = tmp_path / "src"
    sources.mkdir()
    text = (MIB_SOURCE_DIR / "IB-CA-MIB").read_text()
    (sources / "IB-CA-MIB").write_text(text.replace("MAX-ACCESS", "MAX-ACCES", 1))
    with pytest.raises(CompileError, match="IB-CA-MIB"):
        compile_mibs(
            tmp_path / "out",
            ["IB-CA-MIB"],
            (sources, MIB_SOURCE_DIR, BASE_MIB_DIR),
        )

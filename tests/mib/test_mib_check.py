"""`ibsnmp mibs check`: smilint level 3 and net-snmp over all six modules."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ibsnmp.cli import main
from ibsnmp.mib_compiler.check import check_mibs
from ibsnmp.mib_compiler.paths import BASE_MIB_DIR, MIB_SOURCE_DIR, PRODUCT_MODULES

pytestmark = pytest.mark.skipif(
    not (shutil.which("smilint") and shutil.which("snmptranslate")),
    reason="smilint and snmptranslate are installed by `make test`",
)


def test_mibs_check_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mibs", "check"]) == 0
    assert "no problem" in capsys.readouterr().out


def test_a_broken_module_is_named_with_its_line(tmp_path: Path) -> None:
    for module in PRODUCT_MODULES:
        shutil.copy(MIB_SOURCE_DIR / module, tmp_path / module)
    text = (tmp_path / "PMA-MIB").read_text().splitlines(keepends=True)
    line_number = next(i for i, line in enumerate(text) if "MAX-ACCESS" in line) + 1
    text[line_number - 1] = text[line_number - 1].replace("MAX-ACCESS", "MAX-ACCES")
    (tmp_path / "PMA-MIB").write_text("".join(text))
    problems = check_mibs(PRODUCT_MODULES, tmp_path, BASE_MIB_DIR)
    smilint = [p for p in problems if p.tool == "smilint"]
    assert smilint and all(p.module == "PMA-MIB" for p in smilint)
    assert any(f":{line_number}:" in p.message for p in smilint)
    assert any(p.tool == "snmptranslate" and "PMA-MIB" in str(p) for p in problems)

"""Draft text -> raw module (every layout) -> errata patches -> mib_sources/."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.paths import DRAFT_FILES

from ibsnmp.cli import main
from ibsnmp.mib_compiler.extract import ExtractError, extract
from ibsnmp.mib_compiler.patches import PatchError, apply_patch, make_patch
from ibsnmp.mib_compiler.paths import MIB_SOURCE_DIR

MODULE = """\
TEST-MIB DEFINITIONS ::= BEGIN
IMPORTS
   MODULE-IDENTITY, OBJECT-TYPE FROM SNMPv2-SMI;
testMIB MODULE-IDENTITY
   LAST-UPDATED "200101010000Z" -- a comment
   DESCRIPTION "Spans
      two lines"
   ::= { experimental 9999 }
testObject OBJECT-TYPE
   SYNTAX Integer32 (0..65535)
   ::= { testMIB 1 }
END
"""


def test_paged_layout_drops_footers_and_headers() -> None:
    lines = MODULE.splitlines()
    paged = "\n".join(
        ["Prose before the module.", ""] * 12
        + lines[:6]
        + ["", "Author             Expires June 2003              [Page 7]", "",
           "Internet-Draft        TEST MIB          December 2002", ""]
        + lines[6:]
        + ["", "Prose after the module."]
    )
    module = extract(paged)
    assert module.layout == "paged"
    assert module.name == "TEST-MIB"
    assert module.text == MODULE


def test_idnits_layout_cuts_at_embedded_line_numbers() -> None:
    # idnits leaves blank lines out, so numbers jump (46 -> 48 here); numbers
    # in the content (9999, 65535) are not line markers.
    numbers = [40, 41, 42, 43, 44, 45, 46, 48, 49, 50, 51, 52]
    lines = MODULE.splitlines()
    numbered = " ".join(f"{n} {line.strip()}" for n, line in zip(numbers, lines))
    report = "idnits 2.17.1 draft.txt: ... 39 " + numbered + " 60 5. Security"
    module = extract(report)
    assert module.layout == "idnits"
    text_lines = [line for line in module.text.splitlines() if line]
    assert text_lines == [line.strip() for line in MODULE.splitlines()]
    assert "(0..65535)" in module.text


def test_collapsed_layout_restores_clause_lines() -> None:
    collapsed = "Prose. " + " ".join(MODULE.split()) + " Author Internet Draft - Expires"
    module = extract(collapsed)
    assert module.layout == "collapsed"
    lines = module.text.splitlines()
    assert lines[0] == "TEST-MIB DEFINITIONS ::= BEGIN"
    assert "testObject OBJECT-TYPE" in lines
    assert "SYNTAX Integer32 (0..65535)" in lines
    assert lines[-1] == "END"
    # Quoted text keeps its words together even when they look like clauses.
    assert 'DESCRIPTION "Spans two lines"' in lines


def test_text_without_module_is_a_clear_error() -> None:
    with pytest.raises(ExtractError, match="DEFINITIONS ::= BEGIN"):
        extract("just prose\n" * 40)


def test_patch_round_trip_and_strict_mismatch() -> None:
    raw = "a\nb\nc\nd\n-- comment\ne\n"
    clean = "a\nB\nc\nd\n--- new comment\ne\nf"
    patch = make_patch(raw, clean, "X")
    assert apply_patch(raw, patch) == clean
    with pytest.raises(PatchError, match="line 2"):
        apply_patch(raw.replace("b", "x"), patch)


@pytest.mark.parametrize("module", sorted(DRAFT_FILES))
def test_extract_plus_errata_equals_mibs(module: str, seeds_dir: Path, tmp_path: Path) -> None:
    draft = seeds_dir / DRAFT_FILES[module]
    assert main(["mibs", "extract", str(draft), "--out", str(tmp_path), "--apply-errata"]) == 0
    produced = (tmp_path / module).read_text()
    assert produced == (MIB_SOURCE_DIR / module).read_text()

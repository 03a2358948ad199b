"""`ibsnmp mibs ...`: extract, errata, compile and check."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# pysmi and the tools are imported by the handlers only, so `ibsnmp run`
# does not pay for them.
from .paths import COMPILED_MIB_DIR, ERRATA_DIR, MIB_SOURCE_DIR


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mibs = subparsers.add_parser("mibs", help="extract, compile and check the MIB modules")
    actions = mibs.add_subparsers(dest="mibs_command", required=True)

    extract = actions.add_parser("extract", help="turn draft texts into MIB module files")
    extract.add_argument("drafts", nargs="+", type=Path, metavar="DRAFT")
    extract.add_argument("--out", type=Path, required=True, metavar="DIR")
    extract.add_argument(
        "--apply-errata", nargs="?", const=ERRATA_DIR, type=Path, metavar="DIR",
        help=f"apply the errata patches (default folder: {ERRATA_DIR})",
    )
    extract.set_defaults(handler=_extract)

    errata = actions.add_parser(
        "errata", help="rewrite the errata patches from raw extractions and mib_sources/"
    )
    errata.add_argument("--raw", type=Path, required=True, metavar="DIR")
    errata.add_argument("--out", type=Path, default=ERRATA_DIR, metavar="DIR")
    errata.set_defaults(handler=_errata)

    compile_ = actions.add_parser("compile", help="compile mib_sources/ into pysnmp modules")
    compile_.add_argument("--out", type=Path, default=COMPILED_MIB_DIR, metavar="DIR")
    compile_.set_defaults(handler=_compile)

    check = actions.add_parser("check", help="smilint (level 3) and snmptranslate -m ALL")
    check.set_defaults(handler=_check)

    path = actions.add_parser(
        "path", help="print the MIB folders as a MIBDIRS value for net-snmp tools",
        description="Prints BASE:MIBS, the folders of the SMIv2 base modules and of the "
                    "InfiniBand MIBs, e.g.: MIBDIRS=$(ibsnmp mibs path) MIBS=ALL snmpwalk ...")
    path.set_defaults(handler=_path)


def _path(args: argparse.Namespace) -> int:
    from .paths import net_snmp_mib_dirs

    print(net_snmp_mib_dirs())
    return 0


def _extract(args: argparse.Namespace) -> int:
    from .extract import ExtractError, extract_file
    from .patches import PatchError, apply_patch

    args.out.mkdir(parents=True, exist_ok=True)
    for draft in args.drafts:
        try:
            module = extract_file(draft)
            text = module.text
            if args.apply_errata is not None:
                patch_file = args.apply_errata / f"{module.name}.diff"
                if patch_file.exists():
                    text = apply_patch(text, patch_file.read_text())
        except (OSError, ExtractError, PatchError) as exc:
            print(f"ibsnmp mibs extract: {draft}: {exc}", file=sys.stderr)
            return 1
        (args.out / module.name).write_text(text)
        print(f"{draft} -> {args.out / module.name} ({module.layout} layout)")
    return 0


def _errata(args: argparse.Namespace) -> int:
    from .patches import make_patch

    args.out.mkdir(parents=True, exist_ok=True)
    raw_files = sorted(p for p in args.raw.iterdir() if p.is_file())
    if not raw_files:
        print(f"ibsnmp mibs errata: no raw modules in {args.raw}", file=sys.stderr)
        return 1
    for raw in raw_files:
        clean = MIB_SOURCE_DIR / raw.name
        if not clean.exists():
            print(f"ibsnmp mibs errata: {clean} does not exist", file=sys.stderr)
            return 1
        patch = make_patch(raw.read_text(), clean.read_text(), raw.name)
        patch_file = args.out / f"{raw.name}.diff"
        if not patch:  # the draft's module needed no change
            patch_file.unlink(missing_ok=True)
            print(f"{raw.name}: no errata")
            continue
        patch_file.write_text(patch)
        print(f"{patch_file}: {patch.count(chr(10))} lines")
    return 0


def _compile(args: argparse.Namespace) -> int:
    from .compile import CompileError, compile_mibs

    try:
        statuses = compile_mibs(args.out)
    except CompileError as exc:
        print(f"ibsnmp mibs compile: {exc}", file=sys.stderr)
        return 1
    for name, status in sorted(statuses.items()):
        print(f"{name}: {status}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from .check import ToolMissing, check_mibs

    try:
        problems = check_mibs()
    except ToolMissing as exc:
        print(f"ibsnmp mibs check: {exc}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"ibsnmp mibs check: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("ibsnmp mibs check: smilint -l 3 and snmptranslate -m ALL found no problem")
    return 0

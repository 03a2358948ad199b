"""Lint the product MIBs with smilint and load them with net-snmp.

Both tools are run over our sources only (mib_sources/ and mib_sources/base/), never the
system's MIB directories, and every problem is reported with its module and
line as the tool printed it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .paths import BASE_MIB_DIR, MIB_SOURCE_DIR, PRODUCT_MODULES

SMILINT_LEVEL = 3  # severities 0-3 are errors; 4 and up are warnings
# With -Pw net-snmp notes each MACRO definition it skips in the base modules.
MACRO_NOTICE = re.compile(r"MACRO \(lines \d+\.\.\d+ parsed and ignored\)")


@dataclass(frozen=True)
class Problem:
    tool: str
    module: str
    message: str

    def __str__(self) -> str:
        return f"{self.tool}: {self.module}: {self.message}"


class ToolMissing(RuntimeError):
    """smilint or snmptranslate is not installed."""


def check_mibs(
    modules: Iterable[str] = PRODUCT_MODULES,
    source_dir: Path = MIB_SOURCE_DIR,
    base_dir: Path = BASE_MIB_DIR,
) -> list[Problem]:
    modules = tuple(modules)
    problems: list[Problem] = []
    for module in modules:
        problems.extend(smilint(source_dir / module, module, (source_dir, base_dir)))
    problems.extend(snmptranslate_all(modules, (base_dir, source_dir), source_dir))
    return problems


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise ToolMissing(f"{tool} is not installed (Debian: apt-get install smitools snmp)")
    return path


def smilint(path: Path, module: str, search_dirs: Iterable[Path]) -> list[Problem]:
    """smilint at level 3 with no system configuration; every line is a problem."""
    env = dict(os.environ, SMIPATH=":".join(str(d) for d in search_dirs))
    run = subprocess.run(
        [_require("smilint"), "-c", "/dev/null", "-l", str(SMILINT_LEVEL), "-s", str(path)],
        capture_output=True, text=True, env=env, check=False,
    )
    output = (run.stdout + run.stderr).strip()
    problems = [Problem("smilint", module, line) for line in output.splitlines() if line.strip()]
    if run.returncode != 0 and not problems:
        problems.append(Problem("smilint", module, f"exited with status {run.returncode}"))
    return problems


def snmptranslate_all(
    modules: Iterable[str], mib_dirs: Iterable[Path], source_dir: Path = MIB_SOURCE_DIR
) -> list[Problem]:
    """Load every module with `-m ALL`; any diagnostic net-snmp prints is a problem.

    Each module's identity is also translated to a numeric OID, which fails
    if net-snmp dropped the module without a word.
    """
    env = dict(os.environ, MIBDIRS=":".join(str(d) for d in mib_dirs))
    env.pop("MIBS", None)
    identities = {m: module_identity(source_dir / m) for m in modules}
    names = [f"{m}::{identity}" for m, identity in identities.items()]
    run = subprocess.run(
        [_require("snmptranslate"), "-m", "ALL", "-Pw", "-On", *names],
        capture_output=True, text=True, env=env, check=False,
    )
    problems = [
        Problem("snmptranslate", _module_named_in(line, identities), line.strip())
        for line in run.stderr.splitlines()
        if line.strip() and not MACRO_NOTICE.search(line)
    ]
    if run.returncode != 0 and not problems:
        problems.append(Problem("snmptranslate", "?", f"exited with status {run.returncode}"))
    return problems


def module_identity(path: Path) -> str:
    match = re.search(r"^\s*([a-z][\w-]*)\s+MODULE-IDENTITY", path.read_text(), re.M)
    if match is None:
        raise ValueError(f"{path}: no MODULE-IDENTITY")
    return match.group(1)


def _module_named_in(message: str, identities: dict[str, str]) -> str:
    for module in identities:
        if module in message:
            return module
    return "?"

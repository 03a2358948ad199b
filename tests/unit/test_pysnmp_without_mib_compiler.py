"""ibsnmp keeps pysnmp from loading pysmi's run-time MIB compiler; pysmi still imports."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import ibsnmp.cli
from pysnmp.smi import compiler, error
assert "pysmi" not in sys.modules, sorted(m for m in sys.modules if m.startswith("pysmi"))
try:
    compiler.add_mib_compiler(None)
except error.SmiError as exc:
    print("no run-time compiler:", exc)
import pysmi.compiler
print("pysmi imports:", pysmi.compiler.MibCompiler.__name__)
"""


def test_the_agents_pysnmp_has_no_run_time_compiler_and_pysmi_still_imports() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "no run-time compiler: MIB compiler not available" in done.stdout
    assert "pysmi imports: MibCompiler" in done.stdout

"""Run the `ibsnmp` console script in this process, as the bench launchers do.

bench/heap_launcher.py and bench/yardstick.py add something to the agent's
process (a heap sampler, a signal handler) and then hand it over to the
console script, which must see what it sees when started on its own.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Sequence
from pathlib import Path

# The agent exactly as `make run` and the benches start it.
CONSOLE_SCRIPT = Path(sys.executable).parent / "ibsnmp"


def run_console_script(arguments: Sequence[str]) -> None:
    """Run `ibsnmp ARGUMENTS` here, until it returns or raises SystemExit."""
    # Its argv, and its folder (not bench/, whose modules could shadow
    # others) first on the path.
    sys.argv = [str(CONSOLE_SCRIPT), *arguments]
    sys.path[0] = str(CONSOLE_SCRIPT.parent)
    runpy.run_path(str(CONSOLE_SCRIPT), run_name="__main__")

"""`ibsnmp run --provider live` on this host, where there is no InfiniBand
device: exit 2 and one line on stderr that says what is wrong and what to
do, libibumad's own warning kept off it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.e2e import free_udp_port
from tests.support.paths import PROJECT_ROOT

CLASS_DIR = Path("/sys/class/infiniband")
EXIT_START_FAILED = 2


def run_live(state_dir: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ibsnmp", "run", "--provider", "live",
         "--listen", f"127.0.0.1:{free_udp_port()}", "--state-dir", str(state_dir), *flags],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize(("flags", "where"), [
    ((), "first CA, first active port"),
    (("--ca", "mlx5_0", "--port", "1"), "mlx5_0, port 1"),
], ids=["first-ca", "named-ca"])
def test_no_device_is_one_line_naming_the_modules(tmp_path: Path, flags: tuple[str, ...],
                                                  where: str) -> None:
    if CLASS_DIR.is_dir() and os.listdir(CLASS_DIR):
        pytest.skip("this host has InfiniBand devices")
    done = run_live(tmp_path / "state", *flags)
    assert done.returncode == EXIT_START_FAILED, done.stderr
    [line] = done.stderr.splitlines()
    # `ibsnmp: ` and how the command names the provider, then the provider's error.
    assert line.startswith("ibsnmp: ") and line.endswith(
        f"live: cannot open {where}: no InfiniBand device: {CLASS_DIR} is "
        f"{'empty' if CLASS_DIR.is_dir() else 'missing'}; load the drivers: "
        "modprobe mlx5_ib (or the driver of your HCA) and modprobe ib_umad"), line
    assert "ibwarn" not in done.stdout

"""packaging/ibsnmp.service: valid for systemd, hardened, and runs what it names."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.e2e import PROJECT_ROOT

UNIT = PROJECT_ROOT / "packaging" / "ibsnmp.service"
INSTALLED_COMMAND = "/opt/ibsnmp/bin/ibsnmp"
MAX_EXPOSURE = 2.0  # systemd-analyze security: 0 is locked down, 10 is fully exposed
needs_systemd_analyze = pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                                           reason="systemd-analyze is not installed")


def _service_section() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
    parser.read_string(UNIT.read_text())
    return parser["Service"]


def _local_copy(tmp_path: Path, text: str | None = None) -> Path:
    """The unit with ExecStart pointing at this environment's ibsnmp (verify checks it)."""
    command = Path(sys.executable).parent / "ibsnmp"
    unit = tmp_path / "ibsnmp.service"
    unit.write_text((text or UNIT.read_text()).replace(INSTALLED_COMMAND, str(command)))
    return unit


def test_unit_runs_unprivileged_with_one_capability_and_state() -> None:
    service = _service_section()
    assert service["DynamicUser"] == "yes"
    assert service["AmbientCapabilities"] == "CAP_NET_BIND_SERVICE"
    assert service["CapabilityBoundingSet"] == "CAP_NET_BIND_SERVICE"
    assert service["StateDirectory"] == "ibsnmp"
    assert service["ProtectSystem"] == "strict"
    assert service["Restart"] == "on-failure"
    assert service["ExecStart"].startswith(f"{INSTALLED_COMMAND} run ")
    assert "kill -HUP" in service["ExecReload"]


@needs_systemd_analyze
def test_systemd_analyze_verify_accepts_the_unit(tmp_path: Path) -> None:
    result = subprocess.run(["systemd-analyze", "verify", str(_local_copy(tmp_path))],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), (
        result.stdout + result.stderr)


@needs_systemd_analyze
def test_systemd_analyze_verify_would_see_a_broken_unit(tmp_path: Path) -> None:
    broken = UNIT.read_text().replace("ProtectSystem=strict", "ProtectSystem=everything")
    result = subprocess.run(["systemd-analyze", "verify", str(_local_copy(tmp_path, broken))],
                            capture_output=True, text=True, timeout=60, check=False)
    assert "protect system value" in result.stdout + result.stderr


@needs_systemd_analyze
def test_exposure_is_low(tmp_path: Path) -> None:
    result = subprocess.run(["systemd-analyze", "security", "--offline=yes",
                             str(_local_copy(tmp_path))],
                            capture_output=True, text=True, timeout=60, check=False)
    match = re.search(r"Overall exposure level for ibsnmp.service: ([0-9.]+)",
                      result.stdout + result.stderr)
    assert match, result.stdout + result.stderr
    print(f"\nsystemd-analyze security exposure: {match[1]}")
    assert float(match[1]) <= MAX_EXPOSURE

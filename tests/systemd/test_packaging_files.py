"""packaging/'s files agree with each other, read on the host (no container):
one group name across the sysusers file, the unit and the udev rule; the
rule reaches umad devices only; the unit with the live drop-in verifies.
test_unit.py starts them for real."""

from __future__ import annotations

import configparser
import fnmatch
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import PROJECT_ROOT

PACKAGING = PROJECT_ROOT / "packaging"
GROUP = "ibsnmp"
INSTALLED_COMMAND = "/opt/ibsnmp/bin/ibsnmp"
# A udev rule's key: NAME, NAME{attribute}; its operator; its quoted value.
UDEV_KEY = re.compile(r'\s*([A-Z_]+(?:\{[^}]*\})?)\s*(==|!=|\+=|-=|:=|=)\s*"([^"]*)"\s*(?:,|$)')


def _lines(path: Path) -> list[str]:
    """The lines of `path` that are neither blank nor comments."""
    return [line.strip() for line in path.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def _service(path: Path) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
    parser.read_string(path.read_text())
    return parser["Service"]


def _udev_rule() -> dict[str, tuple[str, str]]:
    """The one rule of 70-ibsnmp-umad.rules, key -> (operator, value)."""
    (rule,) = _lines(PACKAGING / "70-ibsnmp-umad.rules")
    keys, position = {}, 0
    while position < len(rule):
        match = UDEV_KEY.match(rule, position)
        assert match, f"not a udev key at {rule[position:]!r}"
        keys[match[1]] = (match[2], match[3])
        position = match.end()
    return keys


def test_sysusers_makes_the_group() -> None:
    assert _lines(PACKAGING / "ibsnmp.sysusers") == [f"g {GROUP} -"]


def test_the_unit_joins_the_group_as_a_dynamic_user_of_another_name() -> None:
    service = _service(PACKAGING / "ibsnmp.service")
    assert service["DynamicUser"] == "yes"
    assert service["SupplementaryGroups"] == GROUP
    # A dynamic user named like an existing group (and no such user) fails with 217/USER.
    assert service.get("User", "ibsnmp") != GROUP and "Group" not in service
    assert service["Type"] == "notify"
    assert service["PrivateDevices"] == "yes"


def test_the_udev_rule_gives_the_group_the_umad_devices_only() -> None:
    rule = _udev_rule()
    assert rule["SUBSYSTEM"] == ("==", "infiniband_mad")
    assert rule["GROUP"] == ("=", GROUP) and rule["MODE"] == ("=", "0660")
    operator, pattern = rule["KERNEL"]
    assert operator == "=="
    assert all(fnmatch.fnmatchcase(name, pattern) for name in ("umad0", "umad1", "umad31"))
    assert not any(fnmatch.fnmatchcase(name, pattern) for name in ("issm0", "umad", "issm12"))


def test_the_live_drop_in_opens_the_umad_class_and_nothing_else() -> None:
    live = _service(PACKAGING / "ibsnmp-live.conf")
    assert dict(live) == {"PrivateDevices": "no", "DevicePolicy": "closed",
                          "DeviceAllow": "char-infiniband_mad rw"}


@pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                    reason="systemd-analyze is not installed")
def test_systemd_analyze_verifies_the_unit_with_the_live_drop_in(tmp_path: Path) -> None:
    """Drop-ins beside a unit given by path are read with it."""
    command = Path(sys.executable).parent / "ibsnmp"  # verify checks ExecStart exists
    unit = tmp_path / "ibsnmp.service"
    unit.write_text((PACKAGING / "ibsnmp.service").read_text().replace(INSTALLED_COMMAND,
                                                                      str(command)))
    (tmp_path / "ibsnmp.service.d").mkdir()
    shutil.copy(PACKAGING / "ibsnmp-live.conf", tmp_path / "ibsnmp.service.d" / "live.conf")
    result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), (
        result.stdout + result.stderr)

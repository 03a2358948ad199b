"""The shipped alert rules (examples/prometheus/ibsnmp-alerts.yml) are valid
for Debian's promtool, and its unit tests (ibsnmp-alerts.test.yml: each alert
firing and not firing) pass; the worked prometheus.yml is a valid
configuration that names them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.e2e import PROJECT_ROOT

EXAMPLES = PROJECT_ROOT / "examples" / "prometheus"
PROMTOOL = "promtool"
ALERTS = ("IBPortDown", "IBLinkWidthDegraded", "IBLinkSpeedDegraded", "IBLinkRateDropped",
          "IBLinkDowned", "IBSymbolErrorsRising", "IBLinkErrorsRising", "IBAgentDown",
          "IBNodeTargetDown")

pytestmark = pytest.mark.skipif(shutil.which(PROMTOOL) is None,
                                reason="Debian's prometheus (promtool) is not installed")


def promtool(*args: str, cwd: Path = EXAMPLES) -> str:
    result = subprocess.run([PROMTOOL, *args], capture_output=True, text=True, cwd=cwd,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_the_rules_file_is_valid() -> None:
    out = promtool("check", "rules", "ibsnmp-alerts.yml")
    assert "SUCCESS: 12 rules found" in out, out


def test_every_alert_has_a_unit_test() -> None:
    tests = (EXAMPLES / "ibsnmp-alerts.test.yml").read_text()
    rules = (EXAMPLES / "ibsnmp-alerts.yml").read_text()
    for alert in ALERTS:
        assert f"- alert: {alert}\n" in rules, alert
        assert f"alertname: {alert}\n" in tests, alert


def test_the_rules_pass_their_unit_tests() -> None:
    out = promtool("test", "rules", "ibsnmp-alerts.test.yml")
    assert "SUCCESS" in out and "FAILED" not in out, out


def test_a_wrong_expectation_fails_the_unit_tests(tmp_path: Path) -> None:
    """The unit tests compare what fires: an alert expected on another port fails."""
    shutil.copy(EXAMPLES / "ibsnmp-alerts.yml", tmp_path / "ibsnmp-alerts.yml")
    tests = (EXAMPLES / "ibsnmp-alerts.test.yml").read_text()
    wrong = tests.replace('node_name: leaf01, port: "6"}', 'node_name: leaf01, port: "7"}')
    assert wrong != tests
    (tmp_path / "t.yml").write_text(wrong)
    result = subprocess.run([PROMTOOL, "test", "rules", "t.yml"], capture_output=True,
                            text=True, cwd=tmp_path, timeout=120, check=False)
    assert result.returncode != 0 and "alertname: IBPortDown" in result.stdout + result.stderr


def test_the_worked_prometheus_yml_is_valid_and_names_the_rules() -> None:
    out = promtool("check", "config", "prometheus.yml")
    assert "SUCCESS: 1 rule files found" in out and "12 rules found" in out, out

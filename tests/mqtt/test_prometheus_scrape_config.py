"""`ibsnmp fabric targets --prometheus-out`: a prometheus.yml that runs
unedited (the agent's, the exporter's and the file_sd list's addresses from
the options), the alert rules beside it, and the worked example in
examples/prometheus/ is that writer's output for `make run`."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ibsnmp.prometheus.scrape_config import (PrometheusSetup, default_timeout, duration_ms,
                                             prometheus_config)

from tests.support.e2e import PROJECT_ROOT

EXAMPLES = PROJECT_ROOT / "examples" / "prometheus"
SMALL_FABRIC = "fat-tree:spines=2,leaves=2,hosts=2"

needs_promtool = pytest.mark.skipif(shutil.which("promtool") is None,
                                    reason="Debian's prometheus (promtool) is not installed")


def run_targets(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`ibsnmp fabric targets` for the small fabric, its snmp.yml and file_sd
    list in tmp_path/out."""
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "ibsnmp", "fabric", "targets", "--fabric", SMALL_FABRIC,
         "--agent", "ib-agent.example.org:161", "--config-out", str(out / "snmp.yml"),
         "--targets-out", str(out / "ibsnmp-targets.json"), *extra],
        capture_output=True, text=True, cwd=PROJECT_ROOT, check=False)


def written(tmp_path: Path, *extra: str) -> str:
    result = run_targets(tmp_path, *extra)
    assert result.returncode == 0, result.stderr
    return result.stdout


@needs_promtool
def test_the_written_prometheus_yml_is_valid_with_its_rules(tmp_path: Path) -> None:
    config = tmp_path / "out" / "prometheus.yml"
    written(tmp_path, "--prometheus-out", str(config), "--exporter", "exporter.example.org:9116")
    text = config.read_text()
    # Inside the configuration's folder: relative, so the folder may move.
    assert '- files: ["ibsnmp-targets.json"]' in text
    assert 'rule_files:\n  - "ibsnmp-alerts.yml"' in text
    assert text.count('- targets: ["ib-agent.example.org:161"]') == 2
    assert text.count('replacement: "exporter.example.org:9116"') == 3
    rules = config.with_name("ibsnmp-alerts.yml")
    assert rules.read_bytes() == (EXAMPLES / "ibsnmp-alerts.yml").read_bytes()
    for path in (config, rules):
        assert path.stat().st_mode & 0o777 == 0o644  # no secret in either
    result = subprocess.run(["promtool", "check", "config", str(config)], capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 1 rule files found" in result.stdout


def test_paths_outside_the_configurations_folder_are_absolute(tmp_path: Path) -> None:
    config = tmp_path / "etc" / "prometheus.yml"
    config.parent.mkdir()
    rules = tmp_path / "rules" / "ib.yml"
    rules.parent.mkdir()
    out = written(tmp_path, "--prometheus-out", str(config), "--rules-out", str(rules))
    text = config.read_text()
    assert f'- files: ["{tmp_path / "out" / "ibsnmp-targets.json"}"]' in text
    assert f'rule_files:\n  - "{rules}"' in text
    assert f"alert rules in {rules}" in out


def test_the_defaults_are_a_local_exporter_and_a_minute(tmp_path: Path) -> None:
    config = tmp_path / "out" / "prometheus.yml"
    written(tmp_path, "--prometheus-out", str(config))
    text = config.read_text()
    assert text.count('replacement: "127.0.0.1:9116"') == 3
    assert "  scrape_interval: 60s\n  scrape_timeout: 30s\n  evaluation_interval: 60s\n" in text


def test_a_short_interval_shortens_the_default_timeout(tmp_path: Path) -> None:
    config = tmp_path / "out" / "prometheus.yml"
    written(tmp_path, "--prometheus-out", str(config), "--scrape-interval", "10s")
    assert "  scrape_interval: 10s\n  scrape_timeout: 10s\n" in config.read_text()


@pytest.mark.parametrize("extra, complaint", [
    (["--exporter", "127.0.0.1:9116"], "--exporter needs --prometheus-out"),
    (["--scrape-interval", "2m"], "--scrape-interval needs --prometheus-out"),
    (["--prometheus-out", "P", "--scrape-interval", "90"], "not a Prometheus duration: '90'"),
    (["--prometheus-out", "P", "--scrape-interval", "10s", "--scrape-timeout", "20s"],
     "scrape timeout 20s is longer than the scrape interval 10s"),
])
def test_a_mistaken_option_writes_nothing(tmp_path: Path, extra: list[str],
                                          complaint: str) -> None:
    extra = [str(tmp_path / "out" / "prometheus.yml") if arg == "P" else arg for arg in extra]
    result = run_targets(tmp_path, *extra)
    assert result.returncode == 2 and complaint in result.stderr, result.stderr
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("text, ms", [("60s", 60_000), ("1m30s", 90_000), ("2h", 7_200_000),
                                      ("1d", 86_400_000), ("500ms", 500)])
def test_prometheus_durations(text: str, ms: int) -> None:
    assert duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "0s", "90", "1.5m", "30s1m", "1x"])
def test_what_prometheus_refuses_as_a_duration(text: str) -> None:
    with pytest.raises(ValueError):
        duration_ms(text)


def test_the_default_timeout_is_the_shorter() -> None:
    assert default_timeout("60s") == "30s" and default_timeout("15s") == "15s"


def test_the_worked_example_is_the_writers_output_for_make_run() -> None:
    """examples/prometheus/prometheus.yml: comments on how to run it, then
    what the writer makes for the agent `make run` starts, the file_sd list
    in .run-state/ and the rules beside it."""
    agent = re.search(r"ibsnmp run --listen (\S+)", (PROJECT_ROOT / "Makefile").read_text())
    assert agent is not None
    expected = prometheus_config(PrometheusSetup(
        agent=agent[1], exporter="127.0.0.1:9116",
        targets_file="../../.run-state/ibsnmp-targets.json", rules_file="ibsnmp-alerts.yml"))
    example = (EXAMPLES / "prometheus.yml").read_text()
    assert example.endswith(expected)
    assert all(line.startswith("#") for line in example[:-len(expected)].splitlines())
    assert "--targets-out .run-state/ibsnmp-targets.json" in example

"""The shipped Prometheus configuration against Debian's snmp_exporter 0.21.

The generator regenerates examples/prometheus/snmp.yml from generator.yml;
`ibsnmp fabric targets` writes the per-node modules and file_sd targets,
which the real exporter loads.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ibsnmp.commands.prometheus_targets import (ScrapeAuth, TargetsError, exporter_config,
                                                module_bodies, read_auth)

from e2e import MIB_DIRS, PROJECT_ROOT

EXAMPLES = PROJECT_ROOT / "examples" / "prometheus"
EXPORTER = "prometheus-snmp-exporter"
GENERATOR = "prometheus-snmp-generator"
SMALL_FABRIC = "fat-tree:spines=2,leaves=2,hosts=2"

needs_exporter = pytest.mark.skipif(
    shutil.which(EXPORTER) is None or shutil.which(GENERATOR) is None,
    reason="Debian's prometheus-snmp-exporter is not installed")


def write_targets(tmp_path: Path, *extra: str) -> tuple[Path, Path]:
    """`ibsnmp fabric targets` for the small fabric; (config, targets)."""
    config, targets = tmp_path / "snmp.yml", tmp_path / "targets.json"
    result = subprocess.run(
        [sys.executable, "-m", "ibsnmp", "fabric", "targets", "--fabric", SMALL_FABRIC,
         "--agent", "127.0.0.1:161", "--snmp-yml", str(EXAMPLES / "snmp.yml"),
         "--config-out", str(config), "--targets-out", str(targets), *extra],
        capture_output=True, text=True, cwd=PROJECT_ROOT, check=False)
    assert result.returncode == 0, result.stderr
    return config, targets


def dry_run(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXPORTER, f"--config.file={config}", "--dry-run"],
                          capture_output=True, text=True, timeout=120, check=False)


# -- the shipped snmp.yml is what the generator makes of generator.yml ---------------------------


@needs_exporter
def test_shipped_snmp_yml_is_the_generators_output(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "generator.yml", tmp_path / "generator.yml")
    result = subprocess.run(
        [GENERATOR, "generate", "--fail-on-parse-errors"], cwd=tmp_path,
        env={"MIBDIRS": MIB_DIRS, "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    regenerated = (tmp_path / "snmp.yml").read_text()
    assert regenerated == (EXAMPLES / "snmp.yml").read_text(), (
        "examples/prometheus/snmp.yml differs from the generator's output: regenerate it with "
        "`cd examples/prometheus && MIBDIRS=$(ibsnmp mibs path) prometheus-snmp-generator generate`")
    assert set(module_bodies(regenerated)) == {"ib_if", "ib_pma", "ib_sm_nodes", "ib_sm_ports"}


# -- ibsnmp fabric targets ------------------------------------------------------------------------


@needs_exporter
def test_targets_v2c_config_loads_in_the_exporter(tmp_path: Path) -> None:
    config, targets = write_targets(tmp_path)
    groups = json.loads(targets.read_text())
    assert len(groups) == 8  # 4 switches and 4 CAs
    assert {g["labels"]["node_kind"] for g in groups} == {"switch", "ca"}
    assert all(g["targets"] == ["127.0.0.1:161"] for g in groups)
    assert all(len(g["labels"]["node_guid"]) == 16 for g in groups)
    modules = module_bodies(config.read_text())
    for group in groups:
        guid = group["labels"]["node_guid"]
        assert {f"ib_if@{guid}", f"ib_pma@{guid}"} <= set(modules)
        assert f'    community: "public@{guid}"' in modules[f"ib_if@{guid}"]
    assert config.stat().st_mode & 0o077 == 0  # it may hold secrets
    result = dry_run(config)
    assert result.returncode == 0, result.stderr


@needs_exporter
def test_targets_v3_config_loads_in_the_exporter(tmp_path: Path) -> None:
    auth = tmp_path / "auth.toml"
    auth.write_text('version = 3\n[auth]\nusername = "monitor"\nsecurity_level = "authPriv"\n'
                    'password = "a\\"quoted: secret"\nauth_protocol = "SHA256"\n'
                    'priv_protocol = "AES"\npriv_password = "priv-secret"\n')
    config, targets = write_targets(tmp_path, "--auth", str(auth), "--kinds", "switch")
    groups = json.loads(targets.read_text())
    assert {g["labels"]["node_kind"] for g in groups} == {"switch"} and len(groups) == 4
    guid = groups[0]["labels"]["node_guid"]
    body = module_bodies(config.read_text())[f"ib_if@{guid}"]
    assert f'    context_name: "{guid}"' in body and "  version: 3" in body
    assert '    password: "a\\"quoted: secret"' in body
    result = dry_run(config)
    assert result.returncode == 0, result.stderr


def test_node_auth_points_at_the_context() -> None:
    v2c = ScrapeAuth(2, {"community": "ro"})
    assert v2c.for_node("0123456789abcdef") == {"community": "ro@0123456789abcdef"}
    v3 = ScrapeAuth(3, {"username": "u"})
    assert v3.for_node("0123456789abcdef") == {"username": "u",
                                               "context_name": "0123456789abcdef"}


@pytest.mark.parametrize("text, complaint", [
    ("version = 4\n", "version must be"),
    ('version = 3\n[auth]\ncommunity = "x"\n', "needs [auth] username"),
    ('[auth]\ncontext_name = "x"\n', "unknown [auth] keys"),
    ("[auth]\ncommunity = 1\n", "table of strings"),
])
def test_auth_file_mistakes_are_refused(tmp_path: Path, text: str, complaint: str) -> None:
    path = tmp_path / "auth.toml"
    path.write_text(text)
    with pytest.raises(TargetsError, match=re.escape(complaint)):
        read_auth(path)


def test_a_module_with_its_own_auth_is_refused() -> None:
    shipped = "m:\n  walk:\n  - 1.3.6.1\n  auth:\n    community: x\n"
    with pytest.raises(TargetsError, match="sets auth"):
        exporter_config(shipped, read_auth(None), [], per_node=["m"])

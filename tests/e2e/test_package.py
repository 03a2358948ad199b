"""The wheel and sdist carry the MIBs; an installed wheel serves outside the checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from tests.support.e2e import PROJECT_ROOT, free_udp_port, stop

from ibsnmp import __version__
from ibsnmp.mib_compiler.paths import DRAFT_MODULES

MODULE_PREFIXES = ("SMA-MIB::", "IB-SM-MIB::", "IB-CA-MIB::", "PMA-MIB::", "IBCONNECTION-MIB::")
# A fabric with a connection table and a switch: every module has instances.
FABRIC = "fat-tree:spines=1,leaves=1,hosts=2"


def _ibsnmp_wheel(wheelhouse: Path) -> Path:
    (wheel,) = wheelhouse.glob("ibsnmp-*.whl")
    return wheel


def test_wheel_holds_compiled_modules_and_sources(wheelhouse: Path) -> None:
    names = set(zipfile.ZipFile(_ibsnmp_wheel(wheelhouse)).namelist())
    for module in DRAFT_MODULES + ("IB-TC-MIB",):
        assert f"ibsnmp/compiled_mibs/{module}.py" in names
        assert f"ibsnmp/mib_sources/{module}" in names
    for base in ("SNMPv2-SMI", "SNMPv2-TC", "SNMPv2-CONF", "SNMPv2-MIB", "IF-MIB",
                 "IANAifType-MIB"):
        assert f"ibsnmp/mib_sources/base/{base}" in names
    for compiled in ("IF-MIB", "IANAifType-MIB"):
        assert f"ibsnmp/compiled_mibs/{compiled}.py" in names
    assert "ibsnmp/mib_sources/ERRATA.md" in names
    # `ibsnmp fabric targets` copies the shipped snmp_exporter modules by default.
    assert {"ibsnmp/prometheus/snmp.yml", "ibsnmp/prometheus/generator.yml"} <= names


def test_sdist_holds_compiled_modules_and_sources(tmp_path: Path) -> None:
    build = subprocess.run([sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path),
                            str(PROJECT_ROOT)], capture_output=True, text=True, timeout=600,
                           check=False)
    assert build.returncode == 0, build.stderr[-3000:]
    (sdist,) = tmp_path.glob("ibsnmp-*.tar.gz")
    names = {name.split("/", 1)[1] for name in tarfile.open(sdist).getnames() if "/" in name}
    for module in DRAFT_MODULES:
        assert f"ibsnmp/compiled_mibs/{module}.py" in names
        assert f"ibsnmp/mib_sources/{module}" in names


@pytest.fixture(scope="module")
def installed(wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment outside the checkout with the wheel installed offline."""
    env_dir = tmp_path_factory.mktemp("venv")
    venv.create(env_dir, with_pip=True)
    install = subprocess.run(
        [str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index",
         "--find-links", str(wheelhouse), "ibsnmp"],
        capture_output=True, text=True, timeout=600, check=False)
    assert install.returncode == 0, install.stderr[-3000:]
    return env_dir / "bin" / "ibsnmp"


def _outside_checkout(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    assert not tmp_path.resolve().is_relative_to(PROJECT_ROOT)
    return env


def test_version_and_mib_path(installed: Path, tmp_path: Path) -> None:
    env = _outside_checkout(tmp_path)
    version = subprocess.run([str(installed), "--version"], capture_output=True, text=True,
                             cwd=tmp_path, env=env, check=True)
    assert version.stdout.strip() == f"ibsnmp {__version__}"
    path = subprocess.run([str(installed), "mibs", "path"], capture_output=True, text=True,
                          cwd=tmp_path, env=env, check=True).stdout.strip()
    folders = [Path(folder) for folder in path.split(":")]
    assert all(not folder.is_relative_to(PROJECT_ROOT) for folder in folders)
    assert (folders[0] / "SNMPv2-SMI").is_file() and (folders[1] / "SMA-MIB").is_file()


def test_installed_wheel_serves_all_five_mibs(installed: Path, tmp_path: Path) -> None:
    env = _outside_checkout(tmp_path)
    port = free_udp_port()
    agent = subprocess.Popen(
        [str(installed), "run", "--listen", f"127.0.0.1:{port}", "--fabric", FABRIC,
         "--state-dir", str(tmp_path / "state")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert agent.stdout is not None
        banner = ""
        while "ibsnmp: serving" not in banner:
            line = agent.stdout.readline()
            assert line, f"agent exited:\n{banner}"
            banner += line
        mib_dirs = subprocess.run([str(installed), "mibs", "path"], capture_output=True,
                                  text=True, cwd=tmp_path, env=env, check=True).stdout.strip()
        walk_env = dict(env, MIBDIRS=mib_dirs, MIBS="ALL", SNMPCONFPATH="/nonexistent")
        seen: set[str] = set()
        guids = ["", *_node_contexts(banner)]
        for context in guids:
            community = f"public@{context}" if context else "public"
            walk = subprocess.run(["snmpbulkwalk", "-v2c", "-c", community, "-Cr50",
                                   f"127.0.0.1:{port}", ".1.3.6.1.3.117"],
                                  capture_output=True, text=True, env=walk_env, timeout=120)
            assert walk.returncode == 0, walk.stderr
            seen.update(prefix for prefix in MODULE_PREFIXES if prefix in walk.stdout)
        assert seen == set(MODULE_PREFIXES)
    finally:
        stop(agent)


def _node_contexts(banner: str) -> list[str]:
    """The switch context the banner names (its walk shows the switch tables)."""
    return [word.split("@", 1)[1] for word in banner.split() if "@" in word]

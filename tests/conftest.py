from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = TESTS_DIR.parent
SEEDS_DIR = PROJECT_ROOT.parent / "shared" / "seeds"

sys.path.insert(0, str(TESTS_DIR))

# The draft each product module was taken from.
DRAFT_FILES = {
    "SMA-MIB": "000_5e76716e829c1960.txt",
    "IB-SM-MIB": "001_af9e88286be2fddf.txt",
    "IB-CA-MIB": "002_9d9cf18579496bb6.txt",
    "PMA-MIB": "003_6d372e076bdead7e.txt",
    "IBCONNECTION-MIB": "004_cc0d235aae0e4113.txt",
}


@pytest.fixture(scope="session")
def seeds_dir() -> Path:
    if not SEEDS_DIR.is_dir():
        pytest.skip(f"the drafts are not present at {SEEDS_DIR}")
    return SEEDS_DIR


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Wheels of ibsnmp and every dependency, as `pip wheel . -w wheelhouse` makes them."""
    import subprocess

    target = tmp_path_factory.mktemp("wheelhouse")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", str(PROJECT_ROOT), "-w",
                    str(target)], check=True, capture_output=True, timeout=900)
    return target

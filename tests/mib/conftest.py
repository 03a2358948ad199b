from __future__ import annotations

from pathlib import Path

import pytest

from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.model import Fabric
from tests.support.paths import SEEDS_DIR


@pytest.fixture(scope="session")
def seeds_dir() -> Path:
    if not SEEDS_DIR.is_dir():
        pytest.skip(f"the drafts are not present at {SEEDS_DIR}")
    return SEEDS_DIR


@pytest.fixture(scope="module")
def fabric() -> Fabric:
    """The fabric the test_mib_bind_* modules walk (one per module: walks may not share it)."""
    return build_fabric("fat-tree:spines=2,leaves=4,hosts=3", seed=1)

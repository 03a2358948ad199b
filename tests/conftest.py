from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import PROJECT_ROOT, TESTS_DIR

# The folders under tests/, each the marker of what its tests need
# (registered in pyproject.toml).
KINDS = ("unit", "wire", "mib", "e2e", "ibsim", "mqtt", "container", "systemd")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        try:
            folder = item.path.resolve().relative_to(TESTS_DIR).parts[0]
        except ValueError:
            continue
        if folder in KINDS:
            item.add_marker(getattr(pytest.mark, folder))


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Wheels of ibsnmp and every dependency, as `pip wheel . -w wheelhouse` makes them."""
    target = tmp_path_factory.mktemp("wheelhouse")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", str(PROJECT_ROOT), "-w",
                    str(target)], check=True, capture_output=True, timeout=900)
    return target

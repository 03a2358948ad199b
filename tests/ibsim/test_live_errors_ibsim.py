"""`ibsnmp run --provider live` under ibsim's preload with a CA or a port that
the fabric's host does not have: exit 2, one line on stderr naming what
there is (ibsim's host has one CA, ibsim0, with one port)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.e2e import free_udp_port
from tests.support.ibsim import NET_DIR, Fabric, ibsim_fabric

EXIT_START_FAILED = 2
PREFIX = "live: "


@pytest.fixture(scope="module")
def fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fabric]:
    with ibsim_fabric(NET_DIR / "live.net", tmp_path_factory.mktemp("ibsim-errors")) as running:
        yield running


def run_live(fabric: Fabric, state_dir: Path, *flags: str) -> tuple[int, list[str]]:
    """The exit code and the stderr lines, each without `ibsnmp: ` and how
    the command names the provider (up to `live: `)."""
    done = fabric.run([sys.executable, "-m", "ibsnmp", "run", "--provider", "live",
                       "--listen", f"127.0.0.1:{free_udp_port()}",
                       "--state-dir", str(state_dir), *flags])
    lines = done.stderr.splitlines()
    assert all(line.startswith("ibsnmp: ") and PREFIX in line for line in lines), lines
    return done.returncode, [line.split(PREFIX, 1)[1] for line in lines]


@pytest.mark.parametrize(("flags", "message"), [
    (("--ca", "mlx5_7"),
     "cannot open mlx5_7, first active port: no CA named mlx5_7; this host has CA ibsim0"),
    (("--ca", "mlx5_7", "--port", "1"),
     "cannot open mlx5_7, port 1: no CA named mlx5_7; this host has CA ibsim0"),
    (("--port", "2"), "cannot open first CA, port 2: ibsim0 has no port 2; its ports: 1"),
    (("--ca", "ibsim0", "--port", "9"),
     "cannot open ibsim0, port 9: ibsim0 has no port 9; its ports: 1"),
], ids=["ca", "ca-and-port", "port", "port-of-ca"])
def test_a_ca_or_port_that_does_not_exist(fabric: Fabric, tmp_path: Path,
                                          flags: tuple[str, ...], message: str) -> None:
    assert run_live(fabric, tmp_path / "state", *flags) == (EXIT_START_FAILED, [message])

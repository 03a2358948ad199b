"""The container image, really built and run with podman.

The image is built offline (`--network none`) from a wheelhouse made by
`pip wheel . -w wheelhouse`, on a debootstrapped Debian base, then run with
the host's network on a free port. Skipped, with the reason, where podman
cannot run (not root, podman/runc/debootstrap missing); `make test` installs
them on Debian.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import sysfs_trees
from tests.support.container import Podman, copy_build_context, missing_prerequisite
from tests.support.e2e import PROJECT_ROOT, free_udp_port, net_snmp
from tests.e2e.test_sysfs_agent import octets

pytestmark = pytest.mark.skipif(missing_prerequisite() is not None,
                                reason=missing_prerequisite() or "")

IMAGE = "localhost/ibsnmp-test:latest"
MAX_GROWTH_BYTES = 60 * 1000 * 1000  # the image may add at most 60 MB to its base
SYS_UPTIME_0 = "1.3.6.1.2.1.1.3.0"
SWEEP = "IB-SM-MIB::ibSmConfigSweepInterval.254.128.0.0.0.0.0.0"


@pytest.fixture(scope="module")
def podman(tmp_path_factory: pytest.TempPathFactory) -> Podman:
    return Podman(tmp_path_factory.mktemp("podman"))


@pytest.fixture(scope="module")
def image(podman: Podman, wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    work = tmp_path_factory.mktemp("image")
    base = podman.ensure_base_image(work)
    context = copy_build_context(PROJECT_ROOT, work / "context")
    shutil.copytree(wheelhouse, context / "wheelhouse")
    podman("build", "--format", "docker", "--network", "none", "--build-arg", f"BASE={base}",
           "-t", IMAGE, str(context), timeout=900)
    growth = podman.image_size(IMAGE) - podman.image_size(base)
    print(f"\nimage {IMAGE}: {podman.image_size(IMAGE) / 1e6:.1f} MB, base {base}: "
          f"{podman.image_size(base) / 1e6:.1f} MB, growth {growth / 1e6:.1f} MB")
    assert growth <= MAX_GROWTH_BYTES, f"the image adds {growth / 1e6:.1f} MB to its base"
    return IMAGE


class Container:
    def __init__(self, podman: Podman, image: str, port: int, volume: str,
                 *options: str) -> None:
        self.podman, self.port = podman, port
        self.name = f"ibsnmp-test-{uuid.uuid4().hex[:12]}"
        podman("run", "-d", "--name", self.name, "--network", "host",
               "-e", f"IBSNMP_LISTEN=127.0.0.1:{port}", "-e", "IBSNMP_FABRIC=single",
               "-v", f"{volume}:/var/lib/ibsnmp", *options, image)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def wait_healthy(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.podman("healthcheck", "run", self.name, check=False).returncode == 0:
                return
            time.sleep(0.5)
        logs = self.podman("logs", self.name, check=False)
        raise AssertionError(f"never healthy:\n{logs.stdout[-3000:]}{logs.stderr[-3000:]}")

    def stop(self) -> tuple[int, float]:
        """SIGTERM (the image's STOPSIGNAL): (exit code, seconds it took)."""
        started = time.monotonic()
        self.podman("stop", "-t", "10", self.name)
        took = time.monotonic() - started
        code = int(self.podman("inspect", "--format", "{{.State.ExitCode}}",
                               self.name).stdout.strip())
        return code, took

    def remove(self) -> None:
        self.podman("rm", "-f", self.name, check=False)


@pytest.fixture
def volume(podman: Podman) -> Iterator[str]:
    name = f"ibsnmp-test-state-{uuid.uuid4().hex[:12]}"
    podman("volume", "create", name)
    yield name
    podman("volume", "rm", "-f", name, check=False)


def test_image_serves_snmp_as_non_root_and_stops_cleanly(podman: Podman, image: str,
                                                         volume: str) -> None:
    container = Container(podman, image, free_udp_port(), volume)
    try:
        container.wait_healthy()
        result = net_snmp("snmpget", "-v2c", "-c", "public", "-On", container.address,
                          SYS_UPTIME_0, "SMA-MIB::ibSmaNodeString.0")
        assert result.returncode == 0, result.stderr
        assert "Timeticks" in result.stdout and "HCA" in result.stdout
        user = podman("top", container.name, "user").stdout.split()
        assert user[0] == "USER" and user[1] not in ("root", "0"), user
        assert podman("exec", container.name, "id", "-u").stdout.strip() != "0"
        code, took = container.stop()
        print(f"\nstopped by SIGTERM in {took:.2f} s, exit code {code}")
        assert code == 0
    finally:
        container.remove()


def test_state_survives_a_restart_in_its_volume(podman: Podman, image: str,
                                                volume: str) -> None:
    port = free_udp_port()
    write = ("-e", "IBSNMP_WRITE_COMMUNITY=private")
    first = Container(podman, image, port, volume, *write)
    try:
        first.wait_healthy()
        result = net_snmp("snmpset", "-v2c", "-c", "private", first.address, SWEEP, "i", "42")
        assert result.returncode == 0, result.stderr
        assert first.stop()[0] == 0
    finally:
        first.remove()
    second = Container(podman, image, port, volume, *write)
    try:
        second.wait_healthy()
        result = net_snmp("snmpget", "-v2c", "-c", "public", "-Oqv", second.address, SWEEP)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "42"
    finally:
        second.remove()


def test_health_check_fails_when_nobody_answers(podman: Podman, image: str,
                                                volume: str) -> None:
    # The agent answers "public"; a health check configured with another
    # community gets no answer and must say unhealthy (exit 1).
    container = Container(podman, image, free_udp_port(), volume)
    try:
        container.wait_healthy()
        wrong = podman("exec", "-e", "IBSNMP_COMMUNITY=not-the-community", container.name,
                       "ibsnmp", "health", "--timeout", "0.5", "--retries", "0", check=False)
        assert wrong.returncode == 1, wrong.stdout + wrong.stderr
        assert "unhealthy" in wrong.stderr
    finally:
        container.remove()


def test_sysfs_tree_bind_mounted_read_only(podman: Podman, image: str, volume: str,
                                      tmp_path: Path) -> None:
    tree = tmp_path / "infiniband"
    sysfs_trees.mlx5_two_port(tree)
    container = Container(podman, image, free_udp_port(), volume,
                          "-e", "IBSNMP_PROVIDER=sysfs",
                          "-e", "IBSNMP_SYSFS_ROOT=/host/sys/class/infiniband",
                          "-v", f"{tree}:/host/sys/class/infiniband:ro")
    try:
        container.wait_healthy()
        result = net_snmp("snmpget", "-v2c", "-c", "public", "-Oqv", container.address,
                          "SMA-MIB::ibSmaNodeGuid.0")
        assert result.returncode == 0, result.stderr
        assert octets(result.stdout) == sysfs_trees.MLX_NODE_GUID.to_bytes(8, "big")
    finally:
        container.remove()

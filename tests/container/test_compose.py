"""examples/compose.yaml, really run with podman-compose.

mosquitto, two publishers, the aggregating agent and snmptrapd come up from
a copy of the repository (with a wheelhouse, so the ibsnmp image installs
offline; mosquitto and snmptrapd come from Debian's packages at build time),
on the debootstrapped base image the container tests use. The agent must
serve both publishers' nodes and the scenario's traps must reach snmptrapd.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.container import Podman, copy_build_context, missing_prerequisite
from tests.support.e2e import PROJECT_ROOT, free_udp_port, net_snmp

from ibsnmp.fabric.generators import build_fabric


def _missing() -> str | None:
    return missing_prerequisite() or (
        None if shutil.which("podman-compose") else "podman-compose is not installed")


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")

# What the two publishers of the example serve (compose.yaml's flags).
PUBLISHER_A = build_fabric("single", 1)
PUBLISHER_B = build_fabric("fat-tree:spines=1,leaves=2,hosts=2", 2)
NODES = len(PUBLISHER_A.nodes) + len(PUBLISHER_B.nodes)


class Compose:
    def __init__(self, podman: Podman, project_dir: Path, port: int, base: str) -> None:
        self.file = project_dir / "examples" / "compose.yaml"
        self.project = f"ibsnmp-test-{uuid.uuid4().hex[:8]}"
        self.env = dict(podman.env, BASE=base, IBSNMP_DEMO_PORT=str(port))
        self.podman = podman

    def __call__(self, *args: str, timeout: float = 1200,
                 check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(["podman-compose", "-p", self.project, "-f", str(self.file),
                                 *args], env=self.env, capture_output=True, text=True,
                                timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"podman-compose {' '.join(args)} failed:\n"
                                 f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
        return result

    def remove_images(self) -> None:
        """The project's images (one per built service) and the build stages left over."""
        listing = self.podman("images", "--format", "{{.Repository}}", check=False).stdout
        mine = [name for name in listing.split() if name.startswith(f"localhost/{self.project}_")]
        if mine:
            self.podman("rmi", "-f", *mine, check=False)
        self.podman("image", "prune", "-f", check=False)

    def logs(self, service: str) -> str:
        result = self.podman("logs", f"{self.project}_{service}_1", check=False)
        return result.stdout + result.stderr


@pytest.fixture(scope="module")
def compose(wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Compose]:
    work = tmp_path_factory.mktemp("compose")
    podman = Podman(work)
    base = podman.ensure_base_image(work)
    project_dir = copy_build_context(PROJECT_ROOT, work / "repo")
    shutil.copytree(wheelhouse, project_dir / "wheelhouse")
    running = Compose(podman, project_dir, free_udp_port(), base)
    try:
        running("up", "-d", "--build")
        yield running
    finally:
        running("down", "-v", timeout=300, check=False)
        running.remove_images()


def _walk(address: str, community: str, oid: str) -> str:
    result = net_snmp("snmpbulkwalk", "-v2c", "-c", community, "-r", "1", "-t", "3", address,
                      oid)
    return result.stdout if result.returncode == 0 else ""


def test_the_agent_serves_both_publishers_and_traps_arrive(compose: Compose) -> None:
    address = f"127.0.0.1:{compose.env['IBSNMP_DEMO_PORT']}"
    deadline = time.monotonic() + 180
    rows: list[str] = []
    while time.monotonic() < deadline:
        walk = _walk(address, "public", "IB-SM-MIB::ibSmNodeInfoDescription")
        rows = [line for line in walk.splitlines() if "ibSmNodeInfoDescription" in line]
        if len(rows) >= NODES:
            break
        time.sleep(2)
    assert len(rows) == NODES, (rows, compose.logs("agent")[-3000:])
    # Each host answers in its own context, as on its own machine.
    (host_a,) = PUBLISHER_A.nodes.values()
    node_string = net_snmp("snmpget", "-v2c", "-c", f"public@{host_a.guid:016x}", "-Oqv",
                           address, "SMA-MIB::ibSmaNodeString.0")
    assert node_string.returncode == 0, node_string.stderr
    assert node_string.stdout.strip().strip('"') == host_a.description
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and "ibSmaBadQueueKey" not in compose.logs("snmptrapd"):
        time.sleep(2)
    assert "ibSmaBadQueueKey" in compose.logs("snmptrapd"), compose.logs("snmptrapd")[-3000:]
    print(f"\ncompose example: {len(rows)} nodes served; a Bad Q_Key trap reached snmptrapd")


def test_every_service_runs(compose: Compose) -> None:
    listing = compose("ps").stdout
    for service in ("mosquitto", "publisher-a", "publisher-b", "agent", "snmptrapd"):
        assert f"{compose.project}_{service}_1" in listing, listing
    assert "Exited" not in listing, listing

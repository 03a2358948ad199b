"""Directed-route SMPs through libibumad on an ibsim fabric, compared with
what infiniband-diags' `smpquery` reads from the same fabric."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ibsim import NET_DIR, Fabric, ibsim_fabric

PROBE = Path(__file__).parent / "mad_probe.py"

# smpquery's labels for the NodeInfo fields, and how it prints node types.
SMPQUERY_NODE_INFO = {
    "BaseVers": "BaseVersion", "ClassVers": "ClassVersion", "NodeType": "NodeType",
    "NumPorts": "NumPorts", "SystemGuid": "SystemImageGUID", "Guid": "NodeGUID",
    "PortGuid": "PortGUID", "PartCap": "PartitionCap", "DevId": "DeviceID",
    "Revision": "Revision", "LocalPort": "LocalPortNum", "VendorId": "VendorID",
}
NODE_TYPES = {"Channel Adapter": 1, "Switch": 2, "Router": 3}


@pytest.fixture(scope="module")
def ring(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fabric]:
    with ibsim_fabric(NET_DIR / "ring.net", tmp_path_factory.mktemp("ibsim")) as fabric:
        yield fabric


def probe(fabric: Fabric, attribute: str, path: str, modifier: int = 0) -> dict[str, object]:
    done = fabric.run([sys.executable, str(PROBE), attribute, path, str(modifier)])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def smpquery_node_info(fabric: Fabric, path: str) -> dict[str, int]:
    if shutil.which("smpquery") is None:
        pytest.skip("smpquery is not installed (Debian package infiniband-diags)")
    done = fabric.run(["smpquery", "-D", "nodeinfo", path])
    assert done.returncode == 0, done.stderr
    values: dict[str, int] = {}
    for line in done.stdout.splitlines():
        label, dots, value = line.partition(":")
        if not dots or label not in SMPQUERY_NODE_INFO:
            continue
        value = value.lstrip(".")
        values[SMPQUERY_NODE_INFO[label]] = (
            NODE_TYPES[value] if label == "NodeType" else int(value, 0))
    assert len(values) == len(SMPQUERY_NODE_INFO), done.stdout
    return values


@pytest.mark.parametrize("path", ["0", "0,1", "0,1,7"])
def test_node_info_matches_smpquery(ring: Fabric, path: str) -> None:
    ours = probe(ring, "NODE_INFO", path)
    assert ours["status"] == 0
    assert ours["attribute"] == smpquery_node_info(ring, path)


def test_local_ca_and_neighbour_switch(ring: Fabric) -> None:
    local = probe(ring, "NODE_INFO", "0")["attribute"]
    switch = probe(ring, "NODE_INFO", "0,1")["attribute"]
    assert isinstance(local, dict) and isinstance(switch, dict)
    assert (local["NodeType"], switch["NodeType"]) == (1, 2)
    assert probe(ring, "NODE_DESCRIPTION", "0,1")["attribute"] == {"NodeString": "S-1"}
    assert probe(ring, "NODE_DESCRIPTION", "0,1,8")["attribute"] == {"NodeString": "S-3"}


def test_port_info_of_a_switch_port(ring: Fabric) -> None:
    info = probe(ring, "PORT_INFO", "0,1", modifier=7)["attribute"]
    assert isinstance(info, dict)
    # Ports of the ring are up with 4X at SDR (ibsim's defaults), not yet armed by an SM.
    assert (info["PortPhysicalState"], info["PortState"], info["LinkWidthActive"]) == (5, 2, 2)


def test_unconnected_port_times_out_after_retries(ring: Fabric) -> None:
    # Port 2 of H-1 has no cable: ibsim drops the SMP and no answer comes.
    assert probe(ring, "NODE_INFO", "0,2") == {"timeout": True}

"""Directed-route SMPs through libibumad on an ibsim fabric, compared with
what infiniband-diags' `smpquery` reads from the same fabric."""

from __future__ import annotations

import json
import re
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


def test_window_answers_each_request_and_retries_the_lost_one(ring: Fabric) -> None:
    done = ring.run([sys.executable, str(PROBE), "window", "2",
                     "0", "0,1", "0,2", "0,1,7", "0,1,8", "0,1,7,1"])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["guids"] == {"0": 0x100000, "0,1": 0x200000, "0,2": None,
                               "0,1,7": 0x200001, "0,1,8": 0x200002, "0,1,7,1": 0x100006}
    # Six requests, one retry of the unanswered one (retries=1), then its timeout.
    assert result["stats"] == {"sent": 7, "answered": 5, "retried": 1, "timed_out": 1,
                               "stray": 0}


IBNETDISCOVER_NODE = re.compile(r'^(Switch|Ca)\s+(\d+)\s+"[SH]-([0-9a-f]{16})"\s+#\s+"([^"]*)"')
IBNETDISCOVER_PORT = re.compile(
    r'^\[(\d+)\](?:\([0-9a-f]+\))?\s+"[SH]-([0-9a-f]{16})"\[(\d+)\].*\b(\d+)x(SDR|DDR|QDR)\b')
WIDTHS = {1: 1, 4: 2, 8: 4, 12: 8}  # ibnetdiscover's "4x" as a LinkWidthActive bit
SPEEDS = {"SDR": 1, "DDR": 2, "QDR": 4}


def ibnetdiscover(fabric: Fabric) -> tuple[dict[int, tuple[int, int, str]],
                                           dict[tuple[int, int], tuple[int, int, int, int]]]:
    """Nodes (type, ports, description) and each port's (peer GUID, peer port, width, speed)."""
    if shutil.which("ibnetdiscover") is None:
        pytest.skip("ibnetdiscover is not installed (Debian package infiniband-diags)")
    done = fabric.run(["ibnetdiscover"])
    assert done.returncode == 0, done.stderr
    nodes: dict[int, tuple[int, int, str]] = {}
    ports: dict[tuple[int, int], tuple[int, int, int, int]] = {}
    guid = 0
    for line in done.stdout.splitlines():
        if match := IBNETDISCOVER_NODE.match(line):
            kind, count, hex_guid, description = match.groups()
            guid = int(hex_guid, 16)
            nodes[guid] = (2 if kind == "Switch" else 1, int(count), description)
        elif match := IBNETDISCOVER_PORT.match(line):
            port, peer, peer_port, width, speed = match.groups()
            ports[(guid, int(port))] = (int(peer, 16), int(peer_port), WIDTHS[int(width)],
                                        SPEEDS[speed])
    return nodes, ports


def test_discovery_sweep_matches_ibnetdiscover(ring: Fabric) -> None:
    done = ring.run([sys.executable, str(PROBE), "discover", "16"])
    assert done.returncode == 0, done.stderr
    sweep = json.loads(done.stdout)
    assert sweep["unanswered"] == []
    nodes, ports = ibnetdiscover(ring)
    assert len(nodes) == 7 and len(ports) == 14
    ours_nodes = {int(guid, 16): (n["info"]["NodeType"], n["info"]["NumPorts"], n["description"])
                  for guid, n in sweep["nodes"].items()}
    assert ours_nodes == nodes
    ours_ports = {}
    for (guid, port), (peer, peer_port) in sweep["links"]:
        info = sweep["nodes"][f"{guid:#x}"]["ports"][str(port)]
        ours_ports[(guid, port)] = (peer, peer_port, info["LinkWidthActive"],
                                    info["LinkSpeedActive"])
    assert ours_ports == ports
    # Every port of every node was read, management port 0 of switches included.
    for node in sweep["nodes"].values():
        first = 0 if node["info"]["NodeType"] == 2 else 1
        assert sorted(map(int, node["ports"])) == list(range(first, node["info"]["NumPorts"] + 1))

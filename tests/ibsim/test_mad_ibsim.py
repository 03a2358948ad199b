"""Directed-route SMPs through libibumad on an ibsim fabric, compared with
what infiniband-diags' `smpquery` reads from the same fabric."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.ibsim import NET_DIR, Fabric, ibsim_fabric
from tests.support.infiniband_diags import ibnetdiscover, smpquery_node_info
from tests.support.paths import SUPPORT_DIR

PROBE = SUPPORT_DIR / "mad_probe.py"

@pytest.fixture(scope="module")
def ring(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fabric]:
    with ibsim_fabric(NET_DIR / "ring.net", tmp_path_factory.mktemp("ibsim")) as fabric:
        yield fabric


def probe(fabric: Fabric, attribute: str, path: str, modifier: int = 0) -> dict[str, object]:
    done = fabric.run([sys.executable, str(PROBE), attribute, path, str(modifier)])
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_ibsim_lists_one_channel_adapter(ring: Fabric) -> None:
    done = ring.run([sys.executable, str(PROBE), "cas"])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["ibsim0"]


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


def test_a_transaction_id_given_to_send_is_the_one_on_the_wire(ring: Fabric) -> None:
    done = ring.run([sys.executable, str(PROBE), "tid", "0x12345678"])
    assert done.returncode == 0, done.stderr
    # The low 32 bits come back as sent (the top 32 name the sender's agent).
    assert json.loads(done.stdout)["answer_tid"] & 0xFFFFFFFF == 0x12345678
    done = ring.run([sys.executable, str(PROBE), "tid", str(1 << 64)])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"refused": f"a transaction ID has 64 bits: {1 << 64}"}


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

"""The topology provider and `ibsnmp fabric show|export --topology`."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from types import MappingProxyType

import pytest
from tests.support.mib_walk import walk

from ibsnmp.cli import main
from ibsnmp.mib.targets import FabricContexts, context_name, sm_node_guids
from ibsnmp.fabric import export_ibnetdiscover
from ibsnmp.fabric.iba import NodeType
from ibsnmp.fabric.ibnetdiscover_read import TopologyError, load_topology, read_topology
from ibsnmp.fabric.model import Node
from ibsnmp.mib.api import INFINIBAND_MIB, ContextTarget
from ibsnmp.mib.registry import build_mib
from ibsnmp.providers.base import Provider
from ibsnmp.providers.topology import TopologyProvider
from tests.support.paths import DATA_DIR

DATA = DATA_DIR
EDR = DATA / "edr_hdr_router.topo"
HOST1 = 0x248A070300A0B100


def test_the_snapshot_is_there_after_construction() -> None:
    provider: Provider = TopologyProvider(EDR)
    fabric = provider.snapshot
    assert len(fabric.nodes) == 7 and fabric.local_node_guid == HOST1
    assert provider.epoch > 0
    assert isinstance(provider, TopologyProvider) and provider.load_seconds < 5
    provider.add_listener(lambda event: None)

    async def run() -> None:
        await provider.start()
        await provider.stop()

    asyncio.run(run())
    assert provider.snapshot is fabric  # a file describes one moment


def test_a_bad_file_fails_in_the_constructor_naming_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.topo"
    lines = EDR.read_text().splitlines()
    lines[11] = lines[11].replace("4xHDR", "4xHDX")
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(TopologyError) as caught:
        TopologyProvider(bad)
    assert caught.value.line_no == 12
    assert str(caught.value).startswith(f"{bad}, line 12: unknown link speed 'HDX'")
    with pytest.raises(TopologyError, match="cannot read"):
        TopologyProvider(tmp_path / "missing.topo")


def test_reload_swaps_in_a_new_snapshot_and_keeps_the_old_on_error(tmp_path: Path) -> None:
    path = tmp_path / "fabric.topo"
    path.write_text(EDR.read_text())
    provider = TopologyProvider(path)
    first = provider.snapshot
    path.write_text(EDR.read_text().replace('"host002 HCA-1"', '"host002 mlx5_0"'))
    second = provider.reload()
    assert provider.snapshot is second is not first
    assert second.nodes[0x0C42A10300D0E010].description == "host002 mlx5_0"
    path.write_text("garbage\n")
    with pytest.raises(TopologyError, match="line 1"):
        provider.reload()
    assert provider.snapshot is second


def test_contexts_default_is_the_initiating_node_and_every_node_has_one() -> None:
    provider = TopologyProvider(EDR, sm_guid=HOST1)
    contexts = FabricContexts(provider)
    default = contexts(b"")
    assert default is not None and default.node.guid == HOST1 and default.serves_sm
    for guid in provider.snapshot.nodes:
        target = contexts(context_name(guid).encode())
        assert target is not None and target.node.guid == guid
        assert target.serves_sm == (guid in sm_node_guids(provider.snapshot))
    assert TopologyProvider(EDR, local_guid=0x7CFE900300A1B2C0).snapshot.local_node.is_switch


@pytest.mark.parametrize("sm_guid", [None, HOST1], ids=["no-sm", "sm"])
def test_every_mib_walks_every_kind_of_node(sm_guid: int | None) -> None:
    fabric = load_topology(EDR, sm_guid=sm_guid)
    mib = build_mib()
    sms = sm_node_guids(fabric)
    kinds: dict[NodeType, Node] = {}
    for node in fabric.nodes.values():
        kinds.setdefault(node.node_type, node)
    for node in (*kinds.values(), fabric.local_node):
        target = ContextTarget(fabric, node, node.guid in sms or node is fabric.local_node and bool(sms), 3.0)
        values = walk(mib, target, INFINIBAND_MIB)
        assert values, node.description
    # With the SM given, its node's context serves IB-SM-MIB for the whole fabric.
    if sm_guid is not None:
        values = walk(mib, ContextTarget(fabric, fabric.nodes[HOST1], True, 3.0), INFINIBAND_MIB + (7,))
        node_types = [v for oid, v in values.items() if oid[:12] == INFINIBAND_MIB + (7, 1, 2, 1, 1, 5)]
        assert len(node_types) == 7


def test_no_invented_counters_or_ca_attributes() -> None:
    """A dump has no counters and no CA attributes: PMA-MIB (infinibandMIB 6)
    and IB-CA-MIB (4) have nothing in a topology node's context, and
    IBCONNECTION-MIB (8) has no connections."""
    fabric = load_topology(EDR)
    mib = build_mib()
    for guid in (HOST1, 0x7CFE900300A1B2C0, 0x7CFE900300A1B300):
        target = ContextTarget(fabric, fabric.nodes[guid], False, 1000.0)
        for arc in (4, 6, 8):
            assert walk(mib, target, INFINIBAND_MIB + (arc,)) == {}, (hex(guid), arc)
        assert walk(mib, target, INFINIBAND_MIB + (3,))  # SMA-MIB: what the file says


# -- the command line --------------------------------------------------------------------------


def test_fabric_export_round_trips_a_topology_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["fabric", "export", "--topology", str(EDR), "--format", "ibnetdiscover"]) == 0
    text = capsys.readouterr().out
    # The same file, but for the date in the header.
    assert text.splitlines()[3:] == EDR.read_text().splitlines()[3:]
    again = tmp_path / "again.topo"
    again.write_text(text)
    assert main(["fabric", "export", "--topology", str(again), "--format", "ibnetdiscover"]) == 0
    assert capsys.readouterr().out.splitlines()[3:] == text.splitlines()[3:]


def test_fabric_export_simulated_then_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = "fat-tree:spines=2,leaves=3,hosts=4,ports=2"
    assert main(["fabric", "export", "--fabric", spec, "--seed", "5", "--format", "ibnetdiscover"]) == 0
    path = tmp_path / "sim.topo"
    path.write_text(capsys.readouterr().out)
    assert main(["fabric", "export", "--topology", str(path), "--format", "ibnetdiscover"]) == 0
    assert capsys.readouterr().out.splitlines()[3:] == path.read_text().splitlines()[3:]
    assert main(["fabric", "export", "--topology", str(path), "--format", "json"]) == 0
    assert '"local_node_guid"' in capsys.readouterr().out


def test_fabric_show_with_an_sm_and_with_a_bad_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["fabric", "show", "--topology", str(EDR), "--sm-guid", "248a:0703:00a0:b101"]) == 0
    out = capsys.readouterr().out
    assert "nodes: 4 ca, 1 router, 2 switch" in out
    assert "12 links" in out and "LIDs: 10 base LIDs, highest 12" in out
    assert "SM: master on 248a070300a0b100 'host001 HCA-1' priority 0" in out
    bad = tmp_path / "bad.topo"
    bad.write_text(EDR.read_text().replace("devid=0xcf08", "devid=cf08x"))
    assert main(["fabric", "show", "--topology", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"ibsnmp: {bad}, line 20: malformed id line" in err and "'devid=cf08x'" in err


def test_fabric_show_lists_every_node_with_guid_kind_lids_and_name(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fabric", "show", "--topology", str(EDR), "--sm-guid", "248a:0703:00a0:b101"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines.index("GUID              KIND    LIDS   NAME")
    rows = [line.split(None, 3) for line in lines[header + 1:]]  # as awk reads them
    fabric = load_topology(EDR)
    assert [row[0] for row in rows] == [f"{guid:016x}" for guid in sorted(fabric.nodes)]
    by_guid = {row[0]: row[1:] for row in rows}
    assert by_guid["248a070300a0b100"] == ["ca", "3,4", "host001"]  # 'host001 HCA-1', 2 ports
    assert by_guid["7cfe900300a1b2c0"] == ["switch", "1", "MF0;switch-1:MSB7800/U1"]
    assert by_guid["7cfe900300a1b300"] == ["router", "12", "MF0;router-1:SB7780/U1"]
    assert len(rows) == len(fabric.nodes) == 7


def test_export_read_of_a_read_fabric_is_stable() -> None:
    once = load_topology(EDR)
    text = export_ibnetdiscover(once, 0)
    assert export_ibnetdiscover(read_topology(text), 0) == text


def test_a_node_description_not_read_is_exported_as_ibnetdiscover_prints_it() -> None:
    fabric = load_topology(EDR)
    local = fabric.local_node
    nameless = dataclasses.replace(fabric, nodes=MappingProxyType(
        {**fabric.nodes, local.guid: dataclasses.replace(local, description=None)}))
    text = export_ibnetdiscover(nameless, 0)
    assert f'"H-{local.guid:016x}"\t\t# ""\n' in text
    assert read_topology(text).local_node.description == ""  # what such a dump holds

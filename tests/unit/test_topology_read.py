"""Reading ibnetdiscover topology files into the fabric model.

The files in tests/data are in the layout rdma-core's ibnetdiscover writes
(plain, and with -f full info); hand_trimmed.topo is one a person cut down.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ibsnmp.fabric import build_fabric, export_ibnetdiscover, routing
from ibsnmp.fabric.iba import (
    UNROUTED_PORT,
    CapabilityMask,
    LinkSpeed,
    LinkSpeedExt,
    LinkWidth,
    NodeType,
    PortPhysState,
    PortState,
    VLCap,
)
from ibsnmp.fabric.ibnetdiscover_read import (
    UNKNOWN,
    TopologyError,
    load_topology,
    parse_guid,
    read_topology,
)
from ibsnmp.fabric.model import Fabric, PortRef
from tests.support.paths import DATA_DIR

DATA = DATA_DIR
EDR = DATA / "edr_hdr_router.topo"
FDR = DATA / "fdr10_qdr_full.topo"
B2B = DATA / "back_to_back_ndr.topo"
TRIMMED = DATA / "hand_trimmed.topo"

S1, S2 = 0x7CFE900300A1B2C0, 0xB8599F0300C0FFE0
HOST1, HOST2, HOST3 = 0x248A070300A0B100, 0x0C42A10300D0E010, 0x98039B0300F1A2C4
STORAGE, ROUTER = 0x248A070300A0C200, 0x7CFE900300A1B300

T = TypeVar("T")


def present(value: T | None) -> T:
    """`value`, which the test expects to be there."""
    assert value is not None
    return value


def signature(fabric: Fabric) -> dict[str, Any]:
    """Everything a topology file says, to compare two fabrics by."""
    nodes = {}
    for node in fabric.nodes.values():
        ports = tuple(
            (p.num, p.guid, p.lid, p.lmc, p.remote, p.info.port_state, p.info.link_width_active,
             p.info.link_speed_active, p.info.link_speed_ext_active)
            for p in node.ports
        )
        enhanced = node.switch.enhanced_port0 if node.switch else None
        nodes[node.guid] = (node.node_type, node.num_ports, node.description, node.vendor_id,
                            node.device_id, node.system_image_guid, enhanced, ports)
    return {
        "nodes": nodes,
        "links": fabric.links,
        "lids": dict(fabric.lid_map),
        "local": fabric.local_node_guid,
        "fdr10": fabric.fdr10_ports,
    }


@pytest.fixture(scope="module")
def edr() -> Fabric:
    return load_topology(EDR)


# -- a real-layout EDR/HDR fabric with a router ------------------------------------------------


def test_every_node_and_its_ids(edr: Fabric) -> None:
    kinds = {guid: node.node_type for guid, node in edr.nodes.items()}
    assert kinds == {S1: NodeType.SWITCH, S2: NodeType.SWITCH, HOST1: NodeType.CA, HOST2: NodeType.CA,
                     HOST3: NodeType.CA, STORAGE: NodeType.CA, ROUTER: NodeType.ROUTER}
    s1, s2, router = edr.nodes[S1], edr.nodes[S2], edr.nodes[ROUTER]
    assert (s1.num_ports, s1.description, s1.vendor_id, s1.device_id) == (
        36, "MF0;switch-1:MSB7800/U1", 0x2C9, 0xCF08)
    assert (s2.num_ports, s2.device_id, s2.system_image_guid) == (40, 0xD2F0, S2)
    assert s1.switch is not None and s1.switch.enhanced_port0
    assert len(s1.ports) == 37 and s1.ports[0].num == 0  # port 0 .. 36
    assert (router.num_ports, router.description, router.device_id) == (2, "MF0;router-1:SB7780/U1", 0xCF09)
    assert edr.nodes[HOST3].num_ports == 1 and len(edr.nodes[HOST3].ports) == 1
    assert edr.nodes[HOST1].description == "host001 HCA-1"
    assert edr.nodes[HOST1].ca is None  # CA attributes are not in a dump: IB-CA-MIB has nothing


def test_links_both_ends_and_port_guids(edr: Fabric) -> None:
    assert len(edr.links) == 5 + 3 + 4  # switch-1's hosts, switch-2's hosts, four ISLs
    for link in edr.links:
        a, b = edr.port_at(link.a), edr.port_at(link.b)
        assert a.remote == link.b and b.remote == link.a
        assert a.is_active and b.is_active and a.is_link_up
    assert edr.peer(S1, 33) == PortRef(S2, 37)
    assert edr.peer(HOST1, 2) == PortRef(S2, 1)
    assert edr.peer(ROUTER, 1) == PortRef(S1, 5)
    assert present(edr.port(HOST1, 2)).guid == 0x248A070300A0B101
    # written without its leading zero
    assert present(edr.port(HOST2, 1)).guid == 0x0C42A10300D0E010
    assert present(edr.port(ROUTER, 1)).guid == 0x7CFE900300A1B301
    # switch ports share port 0's GUID
    assert present(edr.port(S1, 0)).guid == present(edr.port(S1, 12)).guid == S1
    # Ports the file does not list have no link.
    for num in (6, 32):
        port = edr.port(S1, num)
        assert port is not None
        assert port.remote is None
        # Down; which physical state a port without a link is in, the file does not say.
        assert (port.info.port_state, port.info.phys_state) == (PortState.DOWN, None)
    router2 = present(edr.port(ROUTER, 2))
    assert router2.remote is None and router2.guid == 0  # not in the file


def test_lids_and_lmc(edr: Fabric) -> None:
    assert {lid: (ref.guid, ref.port) for lid, ref in edr.lid_map.items()} == {
        1: (S1, 0), 2: (S2, 0), 3: (HOST1, 1), 4: (HOST1, 2), 5: (HOST2, 1), 6: (HOST2, 2),
        8: (HOST3, 1), 10: (STORAGE, 1), 11: (STORAGE, 2), 12: (ROUTER, 1),
    }
    assert present(edr.port(HOST3, 1)).lmc == 1
    assert edr.resolve_lid(9) == PortRef(HOST3, 1)  # inside the LMC block
    assert edr.max_lid == 12
    assert present(edr.port(S2, 38)).lid == 0  # only port 0 of a switch holds its LID
    assert present(edr.nodes[S1].switch).linear_fdb_top is None  # SwitchInfo is not in the file


def test_width_speed_and_extended_speed_capability(edr: Fabric) -> None:
    info = present(edr.port(STORAGE, 1)).info
    assert (info.link_width_active, info.link_speed_ext_active) == (LinkWidth.X1, LinkSpeedExt.EDR)
    assert info.link_width_supported is None and info.link_speed_supported is None
    hdr = present(edr.port(HOST2, 2)).info
    assert (hdr.link_width_active, hdr.link_speed_active, hdr.link_speed_ext_active) == (
        LinkWidth.X4, LinkSpeed.QDR, LinkSpeedExt.HDR)
    assert hdr.rate_gbps == 200.0 and hdr.speed_name == "HDR"
    assert present(edr.port(S2, 2)).info.link_speed_ext_active == LinkSpeedExt.HDR
    assert present(edr.port(S1, 33)).info.link_speed_ext_active == LinkSpeedExt.EDR
    for ref in (PortRef(S1, 0), PortRef(HOST1, 1), PortRef(ROUTER, 1)):
        assert edr.port_at(ref).info.capability_mask is None  # not in the file
    # Switch port 0 has no link: no rate.
    port0 = present(edr.port(S1, 0)).info
    assert port0.link_width_active is None and port0.link_speed_active is None


def test_local_node_is_where_discovery_started(edr: Fabric) -> None:
    assert edr.local_node_guid == HOST1
    assert edr.local_node.local_port_num == 1
    order = list(edr.nodes)
    assert order[:3] == [HOST1, S1, S2]  # breadth first from host001 port 1, ports in order
    assert edr.nodes[S2].local_port_num == 1  # first reached from host001's port 2
    assert edr.nodes[HOST2].local_port_num == 1
    other = load_topology(EDR, local_guid=S2)
    assert other.local_node_guid == S2 and list(other.nodes)[0] == S2


def test_no_forwarding_tables_are_computed(edr: Fabric) -> None:
    # The SM routes the fabric; without its tables there are none to serve.
    assert edr.computes_routes is False and edr.forwarding is None
    assert routing.linear_forwarding_table(edr, S1) == b""
    assert routing.multicast_forwarding_table(edr, S1) == {}
    with pytest.raises(routing.NoRoute):
        routing.trace(edr, 3, 12)


def test_what_the_file_does_not_say_is_absent(edr: Fabric) -> None:
    assert edr.sms == () and edr.multicast_groups == () and edr.services == ()
    assert dict(edr.connections) == {} and edr.seed is None
    assert edr.partitions == () and edr.sm_config is None
    port = edr.port(HOST1, 1)
    assert port is not None
    assert port.pkeys == () and port.sl2vl == () and port.vl_arb_low == () and port.vl_arb_high == ()
    read = {"lid", "lmc", "local_port_num", "port_state", "phys_state", "link_width_active",
            "link_speed_active", "link_speed_ext_active", "gid_prefix"}
    assert {name for name, value in port.info._asdict().items() if value is not None} == read
    assert UNKNOWN is None
    node = edr.nodes[S1]
    assert node.revision is None and node.partition_cap is None
    switch = node.switch
    assert switch is not None
    assert {name for name in type(switch).__slots__ if getattr(switch, name) is not None} == {"enhanced_port0"}


def test_an_sm_named_by_port_or_node_guid() -> None:
    by_port = load_topology(EDR, sm_guid=0x248A070300A0B101, sm_priority=14)
    (sm,) = by_port.sms
    assert (sm.node_guid, sm.port_num, sm.guid, sm.priority, sm.state.name) == (
        HOST1, 2, 0x248A070300A0B101, 14, "MASTER")
    assert (sm.sm_key, sm.act_count) == (None, None)  # SMInfo is not in the file
    assert {p.info.master_sm_lid for n in by_port.nodes.values() for p in n.ports if p.lid} == {4}
    by_switch = load_topology(EDR, sm_guid=S2)
    assert (by_switch.sms[0].node_guid, by_switch.sms[0].port_num) == (S2, 0)
    assert present(by_switch.port(HOST3, 1)).info.master_sm_lid == 2
    with pytest.raises(TopologyError, match="neither a node GUID nor a port GUID"):
        load_topology(EDR, sm_guid=0x1234)


# -- FDR10, QDR and -f full information --------------------------------------------------------


def test_fdr10_qdr_and_full_info() -> None:
    fabric = load_topology(FDR)
    sx, is4 = fabric.nodes[0x0002C90300A1B2C3], fabric.nodes[0x0002C903004E7F60]
    assert len(fabric.nodes) == 22 and len(fabric.links) == 20 + 4 + 4
    assert (present(sx.switch).enhanced_port0, present(is4.switch).enhanced_port0) == (True, False)
    node002 = 0x0002C9030012AB74
    fdr10 = fabric.fdr10_ports
    assert PortRef(node002, 1) in fdr10 and PortRef(sx.guid, 2) in fdr10
    info = present(fabric.port(node002, 1)).info
    assert (info.link_speed_active, info.link_speed_ext_active) == (LinkSpeed.QDR, 0)  # FDR10 reads QDR
    assert (present(fabric.port(0x0002C9030012AB34, 1)).info.link_speed_ext_active
            == LinkSpeedExt.FDR)
    assert present(fabric.port(0x0002C9030012AB34, 1)).info.vl_cap == VLCap.VL0_7  # v=4
    # ConnectX-3: ports are node GUID + 1 and + 2, the system image GUID + 3.
    host = fabric.nodes[0x0002C9030012AB34]
    assert [p.guid for p in host.ports] == [host.guid + 1, host.guid + 2]
    assert host.system_image_guid == host.guid + 3
    assert fabric.local_node_guid == host.guid and host.local_port_num == 1
    text = export_ibnetdiscover(fabric, 0)
    assert re.search(r'^\[2\]\t"H-0002c9030012ab74"\[1\]\(2c9030012ab75\) \t\t# "node002 HCA-1" lid 9 4xFDR10$',
                     text, re.M)


def test_back_to_back_ndr_without_switches() -> None:
    fabric = load_topology(B2B)
    a, b = 0xA088C20300112230, 0x946DAE0300445560
    assert list(fabric.nodes) == [a, b] and fabric.links == (fabric.links[0],)
    info = present(fabric.port(a, 1)).info
    assert (info.link_width_active, info.link_speed_ext_active) == (LinkWidth.X2, LinkSpeedExt.NDR)
    assert info.rate_gbps == 200.0
    b1 = present(fabric.port(b, 1))
    assert b1.remote == PortRef(a, 1) and b1.lid == 2
    assert routing.trace(fabric, 1, 2).hop_count == 1


def test_what_one_end_omits_the_other_says() -> None:
    fabric = load_topology(TRIMMED)
    switch, lab1, lab3 = 0x248A0703006A5E10, 0xB8599F0300AA0010, 0xB8599F0300AA0030
    assert fabric.local_node_guid == switch  # no header: the first node
    lab1_1 = present(fabric.port(lab1, 1))
    assert lab1_1.lid == 2 and lab1_1.guid == lab1  # both from the switch's line
    assert present(fabric.port(lab1, 1)).info.link_speed_ext_active == LinkSpeedExt.EDR
    # from lab02's line
    assert present(fabric.port(switch, 2)).info.link_speed_ext_active == LinkSpeedExt.HDR
    assert present(fabric.port(lab3, 1)).lid == 0  # said nowhere: not assigned
    assert present(fabric.port(lab3, 1)).remote == PortRef(switch, 3)
    assert fabric.nodes[lab1].vendor_id == 0  # no vendid= line
    assert len(fabric.lid_map) == 3


def test_the_grouping_layout() -> None:
    """ibnetdiscover -g: chassis lines, section comments, [ext N] port
    numbers and comments after the ids; none of it changes the fabric."""
    text = EDR.read_text()
    s1 = "switchguid=0x7cfe900300a1b2c0(7cfe900300a1b2c0)"
    grouped = text.replace(
        "\nvendid=0x2c9\ndevid=0xd2f0",
        "\nChassis 1 (guid 0x7cfe900300a1b2c0)\n\n# Spine Nodes\nvendid=0x2c9\ndevid=0xd2f0", 1)
    grouped = grouped.replace("sysimgguid=0x7cfe900300a1b2c0\n", "sysimgguid=0x7cfe900300a1b2c0\t\t# Chassis 1\n")
    grouped = grouped.replace(s1 + "\n", s1 + "\t# MSB7800 \n")
    grouped = re.sub(r'^\[(3[3-6])\]\t"S-b8599f0300c0ffe0"\[(\d+)\]', r'[\1][ext \1]\t"S-b8599f0300c0ffe0"[\2][ext 2]',
                     grouped, flags=re.M)
    grouped = grouped.replace("\nvendid=0x2c9\ndevid=0x101b", "\nNon-Chassis Nodes\n\nvendid=0x2c9\ndevid=0x101b")
    assert grouped.count("[ext ") == 8 and "Non-Chassis Nodes" in grouped
    assert signature(read_topology(grouped)) == signature(read_topology(text))


def test_unknown_rates_are_not_errors() -> None:
    text = EDR.read_text().replace("lid 10 1xEDR", "lid 10 ??EDR").replace("lid 11 4xEDR", "lid 11 4x???")
    fabric = read_topology(text)
    # Each end of the storage links still names the rate from its own line.
    assert present(fabric.port(S1, 3)).info.link_width_active == LinkWidth.X1
    assert present(fabric.port(STORAGE, 1)).info.link_width_active == LinkWidth.X1


# -- round trips -------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", [
    "fat-tree:spines=3,leaves=4,hosts=5",
    "fat-tree:spines=2,leaves=3,hosts=4,ports=2,lmc=2",
    "fat-tree:spines=2,leaves=2,hosts=3,speed=fdr",
    "fat-tree:spines=2,leaves=2,hosts=3,speed=ndr,faults=3",
    "single",
])
def test_export_read_export_is_the_same_text(spec: str) -> None:
    fabric = build_fabric(spec, seed=7)
    text = export_ibnetdiscover(fabric, 0)
    again = read_topology(text)
    assert export_ibnetdiscover(again, 0) == text
    # Every node, linked port, link and LID of the simulated fabric.
    assert set(again.nodes) == set(fabric.nodes)
    assert again.links == fabric.links
    assert dict(again.lid_map) == {lid: ref for lid, ref in fabric.lid_map.items()
                                   if ref.port == 0 or fabric.port_at(ref).remote is not None}
    for link in fabric.links:
        for ref in (link.a, link.b):
            mine, theirs = fabric.port_at(ref), again.port_at(ref)
            assert (mine.guid, mine.remote) == (theirs.guid, theirs.remote)
            if not fabric.nodes[ref.guid].is_switch:  # a switch data port's LID is not in the file
                assert (mine.lid, mine.lmc) == (theirs.lid, theirs.lmc)
            assert mine.info.rate == theirs.info.rate
    assert [n.description for n in again.nodes.values()] == [n.description for n in fabric.nodes.values()]


@pytest.mark.parametrize("path", [EDR, FDR, B2B, TRIMMED], ids=lambda p: p.stem)
def test_sample_export_read_keeps_everything(path: Path) -> None:
    first = load_topology(path)
    second = read_topology(export_ibnetdiscover(first, 0))
    assert signature(second) == signature(first)


@pytest.mark.slow  # seconds of its own: left out of make quick
def test_the_10k_node_fat_tree_round_trips() -> None:
    fabric = build_fabric("fat-tree:spines=18,leaves=72,hosts=138", seed=1)
    text = export_ibnetdiscover(fabric, 0)
    again = read_topology(text, source="10k.topo")
    assert len(again.nodes) == len(fabric.nodes) == 10026
    assert again.links == fabric.links
    assert export_ibnetdiscover(again, 0) == text


# -- malformed files: the error names the line --------------------------------------------------

_PORT_LINE = '[2]\t"H-98039b0300f1a2c4"[1](98039b0300f1a2c4) \t\t# "host003 HCA-1" lid 8 4xEDR'


def _error(text: str) -> TopologyError:
    with pytest.raises(TopologyError) as caught:
        read_topology(text, source="bad.topo")
    return caught.value


def _line_of(text: str, fragment: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if fragment in line)


@pytest.mark.parametrize(("old", "new", "message"), [
    (_PORT_LINE, '[2]\t"H-98039b0300f1a2c4"[1](98039b0300f1a2c4 \t\t# "host003 HCA-1" lid 8 4xEDR',
     "malformed port line"),
    (_PORT_LINE, _PORT_LINE.replace("[2]", "[37]"), "port 37 outside 1..36"),
    (_PORT_LINE, _PORT_LINE.replace("4xEDR", "4xQQR"), "unknown link speed 'QQR'"),
    (_PORT_LINE, _PORT_LINE.replace("4xEDR", "3xEDR"), "unknown link width '3x'"),
    (_PORT_LINE, _PORT_LINE.replace("4xEDR", "4xEDR bogus"), "unexpected text in the port comment"),
    (_PORT_LINE, _PORT_LINE.replace("98039b0300f1a2c4", "98039b0300f1a2c9", 1),
     "the peer H-98039b0300f1a2c9 has no block of its own"),
    (_PORT_LINE, _PORT_LINE.replace('"H-98039b0300f1a2c4"[1]', '"H-248a070300a0c200"[1]'),
     "linked to"),
    (_PORT_LINE, _PORT_LINE.replace("lid 8", "lid 9"), "the LID of 98039b0300f1a2c4 port 1 is "),
    (_PORT_LINE, _PORT_LINE.replace("lid 8", "lid 70000"), "LID 70000 above the unicast range"),
    (_PORT_LINE, _PORT_LINE.replace('"H-', '"S-'), "is a channel adapter"),
    ("devid=0x1017", "devid=0xzz17", "malformed id line"),
    ("devid=0x1017", "devid=0x1017\n", "node ids not followed by a Switch, Ca or Rt line"),
    ('Ca\t1 "H-98039b0300f1a2c4"', 'Ca 1 H-98039b0300f1a2c4', "not a topology line"),
    ('Ca\t1 "H-98039b0300f1a2c4"', 'Ca\t0 "H-98039b0300f1a2c4"', "port count 0 outside"),
    ('Ca\t1 "H-98039b0300f1a2c4"', 'Switch\t1 "H-98039b0300f1a2c4"', 'a Switch named "H-..."'),
    ("caguid=0x98039b0300f1a2c4", "caguid=0x98039b0300f1a2c5", "names 98039b0300f1a2c4"),
    ("lid 8 lmc 1", "lid 8 lmc 9", "LMC 9 outside 0..7"),
    ("lid 8 lmc 1", "lid 9 lmc 1", "the LID of 98039b0300f1a2c4 port 1 is "),
    ('"storage01 HCA-1" lid 11', '"storage01 HCA-1" lid 10', "the LID of 248a070300a0c200 port 2 is "),
])
def test_a_malformed_line_names_its_number_and_text(old: str, new: str, message: str) -> None:
    text = EDR.read_text()
    assert old in text
    bad = text.replace(old, new, 1)
    error = _error(bad)
    assert message in str(error)
    assert error.line_no is not None and error.line is not None
    assert f"bad.topo, line {error.line_no}: " in str(error)
    assert error.line == bad.splitlines()[error.line_no - 1]
    assert repr(error.line.rstrip()) in str(error) or len(error.line) > 160


def test_overlapping_lids() -> None:
    text = EDR.read_text()
    bad = text.replace("lid 10 1xEDR", "lid 9 1xEDR").replace("lid 10 lmc 0", "lid 9 lmc 0")
    error = _error(bad)
    assert "LID 9 of 248a070300a0c200 port 1 is also the LID of 98039b0300f1a2c4 port 1" in error.message
    assert error.line_no in (_line_of(bad, "lid 9 1xEDR"), _line_of(bad, "lid 9 lmc 0"))
    misaligned = text.replace("lid 8 4xEDR", "lid 7 4xEDR").replace("lid 8 lmc 1", "lid 7 lmc 1")
    assert "LID 7 is not aligned to its LMC block of 2" in _error(misaligned).message


def test_error_line_numbers_are_exact() -> None:
    text = EDR.read_text()
    bad = text.replace(_PORT_LINE, _PORT_LINE.replace("[2]", "[two]"))
    error = _error(bad)
    assert error.line_no == _line_of(text, _PORT_LINE)
    assert str(error).startswith(f"bad.topo, line {error.line_no}: malformed port line")
    assert "'[two]\\t\"H-98039b0300f1a2c4\"" in str(error)


def test_more_malformed_files() -> None:
    assert _error("").message.startswith("no Switch, Ca or Rt block")
    error = _error('[1]\t"S-0002c90300a1b2c3"[1]\n')
    assert error.line_no == 1 and "port line outside a node block" in str(error)
    twice = EDR.read_text() + '\nCa\t1 "H-98039b0300f1a2c4"\t\t# "again"\n'
    assert "already has a block at line" in _error(twice).message
    header = EDR.read_text().replace("from node 248a070300a0b100", "from node 248a070300a0b1ff")
    error = _error(header)
    assert error.line_no == 4 and "initiated from node 248a070300a0b1ff" in error.message
    with pytest.raises(TopologyError, match="cannot read"):
        load_topology(DATA / "no-such-file.topo")


def test_parse_guid() -> None:
    assert parse_guid("0x0002c90300a1b2c3") == parse_guid("0002:c903:00a1:b2c3") == 0x0002C90300A1B2C3
    assert parse_guid("2c90300a1b2c3") == 0x0002C90300A1B2C3
    for bad in ("", "0x", "xyz", "1:2:3", "0x1234567890abcdef0"):
        with pytest.raises(ValueError):
            parse_guid(bad)

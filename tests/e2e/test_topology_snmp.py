"""A fabric read from an ibnetdiscover file, served over SNMP.

The agent runs in this process (tests.support.agent_support.AgentThread, the same
engine `ibsnmp run` starts) over FabricContexts(TopologyProvider(file));
net-snmp's own snmptable/snmpget, with ibsnmp's MIBs loaded, read it.

snmptable runs with -Ob (numeric indexes): it tells rows apart by the
printed index, and IB-SM-MIB's GUID indexes are plain 8-octet strings that
net-snmp prints with a dot for every unprintable octet, so real GUIDs such
as 248a070300a0b100 and 248a070300a0c200 both print '$.......' and their
rows would be merged.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.e2e import net_snmp
from tests.support.narrow import present
from tests.support.agent_support import AgentThread, Backend, agent_settings, needs_net_snmp

from ibsnmp.mib.targets import FabricContexts
from ibsnmp.fabric.model import Fabric, PortRef
from ibsnmp.mib.registry import build_mib
from ibsnmp.providers.topology import TopologyProvider
from tests.support.paths import DATA_DIR

pytestmark = needs_net_snmp

TOPOLOGY = DATA_DIR / "edr_hdr_router.topo"
SM_PORT_GUID = 0x248A070300A0B101  # host001 port 2
SWITCH_1 = 0x7CFE900300A1B2C0
STORAGE = 0x248A070300A0C200
PREFIX_INDEX = "254.128.0.0.0.0.0.0"


@pytest.fixture(scope="module")
def provider() -> TopologyProvider:
    return TopologyProvider(TOPOLOGY, sm_guid=SM_PORT_GUID, sm_priority=14)


@pytest.fixture(scope="module")
def fabric(provider: TopologyProvider) -> Fabric:
    return provider.snapshot


@pytest.fixture(scope="module")
def address(provider: TopologyProvider) -> Iterator[str]:
    backend = Backend(FabricContexts(provider), build_mib())
    thread = AgentThread(agent_settings(("127.0.0.1:0",)), backend).start()
    try:
        yield f"127.0.0.1:{thread.endpoint().port}"
    finally:
        thread.close()


def table(address: str, name: str, community: str = "public") -> list[dict[str, str]]:
    """snmptable rows as {column: value}, with the numeric 'index'."""
    result = net_snmp("snmptable", "-v2c", "-c", community, "-Ob", "-Ci", "-Cf", "|", "-Cr", "50",
                      address, name)
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert lines[0] == f"SNMP table: {name}"
    header = lines[1].split("|")
    return [dict(zip(header, line.split("|"), strict=True)) for line in lines[2:]]


def get(address: str, community: str, *names: str) -> dict[str, str]:
    result = net_snmp("snmpget", "-v2c", "-c", community, "-Oqv", address, *names)
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr
    return dict(zip(names, result.stdout.splitlines(), strict=True))


def octets(value: str) -> int:
    """'"24 8A 07 03 00 A0 B1 00 "' -> 0x248a070300a0b100."""
    return int(value.strip('" ').replace(" ", ""), 16)


def guid_index(guid: int) -> str:
    return ".".join(str(b) for b in guid.to_bytes(8, "big"))


# -- IB-SM-MIB in the default context ----------------------------------------------------------


def test_node_table_lists_every_node_of_the_file(address: str, fabric: Fabric) -> None:
    rows = table(address, "IB-SM-MIB::ibSmNodeInfoTable")
    assert len(rows) == len(fabric.nodes) == 7
    for row in rows:
        node = fabric.nodes[octets(row["ibSmNodeInfoNodeGUID"])]
        assert row["index"] == f"{PREFIX_INDEX}.{guid_index(node.guid)}"
        assert int(row["ibSmNodeInfoType"]) == int(node.node_type)
        assert int(row["ibSmNodeInfoNumPorts"]) == node.num_ports
        assert row["ibSmNodeInfoDescription"] == node.description
        assert octets(row["ibSmNodeInfoDeviceID"]) == node.device_id
        assert octets(row["ibSmNodeInfoVendorID"]) == 0x2C9
        assert octets(row["ibSmNodeInfoSystemImageGUID"]) == node.system_image_guid
        assert octets(row["ibSmNodeInfoPortGUID"]) == node.port_guid
    by_guid = {octets(r["ibSmNodeInfoNodeGUID"]): r for r in rows}
    assert by_guid[0x7CFE900300A1B300]["ibSmNodeInfoDescription"] == "MF0;router-1:SB7780/U1"
    assert by_guid[0x7CFE900300A1B300]["ibSmNodeInfoType"] == "3"  # router
    assert by_guid[SWITCH_1]["ibSmNodeInfoDescription"] == "MF0;switch-1:MSB7800/U1"


def test_port_table_has_every_port_with_its_lid_and_rate(address: str, fabric: Fabric) -> None:
    rows = table(address, "IB-SM-MIB::ibSmPortInfoTable")
    assert len(rows) == sum(len(node.ports) for node in fabric.nodes.values())
    seen = {}
    for row in rows:
        ref = PortRef(octets(row["ibSmPortInfoNodeGUID"]), int(row["ibSmPortInfoLocalPortNum"]))
        port = fabric.port_at(ref)
        seen[ref] = row
        assert int(row["ibSmPortInfoState"]) == (4 if port.is_active else 1), ref  # IBA PortState
        if port.lid:
            assert int(row["ibSmPortInfoLID"]) == port.lid
            assert int(row["ibSmPortInfoLMC"]) == port.lmc
        width = port.info.link_width_active
        assert row["ibSmPortInfoLinkWidthActive"] == ("?" if width is None else str(int(width)))
        # Not in the file: no instance (snmptable's "?").
        assert row["ibSmPortInfoMTUCap"] == row["ibSmPortInfoCapMask"] == "?"
    host003 = seen[PortRef(0x98039B0300F1A2C4, 1)]
    assert (host003["ibSmPortInfoLID"], host003["ibSmPortInfoLMC"]) == ("8", "1")
    degraded = seen[PortRef(STORAGE, 1)]
    assert (degraded["ibSmPortInfoLID"], degraded["ibSmPortInfoLinkWidthActive"]) == ("10", "1")  # 1xEDR
    assert seen[PortRef(SWITCH_1, 0)]["ibSmPortInfoLID"] == "1"
    assert seen[PortRef(SWITCH_1, 6)]["ibSmPortInfoState"] == "1"  # down: not in the file
    # Every port's MasterSMLID is the LID of the SM's port (host001 port 2).
    assert {r["ibSmPortInfoMasterSmLID"] for r in rows if r["ibSmPortInfoLID"] not in ("", "?")} == {"4"}


def test_switch_table(address: str, fabric: Fabric) -> None:
    rows = table(address, "IB-SM-MIB::ibSmSwitchInfoTable")
    assert {octets(r["ibSmSwitchInfoNodeGUID"]) for r in rows} == set(fabric.sorted_switch_guids())
    for row in rows:
        assert row["ibSmSwitchInfoLinearFdbTop"] == "?"  # SwitchInfo is not in the file
        assert row["ibSmSwitchInfoEnhanced0"] == "true"


def test_link_table_has_both_directions_of_every_link(address: str, fabric: Fabric) -> None:
    rows = table(address, "IB-SM-MIB::ibSmLinkTable")
    assert len(rows) == 2 * len(fabric.links) == 24
    pairs = {(PortRef(octets(r["ibSmLinkFromNodeGUID"]), int(r["ibSmLinkFromPortNum"])),
              PortRef(octets(r["ibSmLinkToNodeGUID"]), int(r["ibSmLinkToPortNum"]))) for r in rows}
    expected = {(link.a, link.b) for link in fabric.links} | {(link.b, link.a) for link in fabric.links}
    assert pairs == expected
    assert (PortRef(SWITCH_1, 33), PortRef(0xB8599F0300C0FFE0, 37)) in pairs


def test_sm_info_table_shows_the_sm_given(address: str) -> None:
    (row,) = table(address, "IB-SM-MIB::ibSmSMInfoTable")
    assert octets(row["ibSmSMInfoGUID"]) == SM_PORT_GUID
    assert (row["ibSmSMInfoPriority"], row["ibSmSMInfoSMState"]) == ("14", "3")  # master


# -- a node's own context --------------------------------------------------------------------


def test_switch_context(address: str, fabric: Fabric) -> None:
    community = f"public@{SWITCH_1:016x}"
    values = get(address, community, "SMA-MIB::ibSmaNodeString.0", "SMA-MIB::ibSmaNodeNumPorts.0",
                 "SMA-MIB::ibSmaNodeType.0", "SMA-MIB::ibSmaPortLid.0", "SMA-MIB::ibSmaSwEnhancedPort0.0")
    assert values["SMA-MIB::ibSmaNodeString.0"] == "MF0;switch-1:MSB7800/U1"
    assert values["SMA-MIB::ibSmaNodeNumPorts.0"] == "36"
    assert values["SMA-MIB::ibSmaNodeType.0"] == "switch"
    assert values["SMA-MIB::ibSmaPortLid.0"] == "1"
    assert values["SMA-MIB::ibSmaSwEnhancedPort0.0"] == "true"
    ports = table(address, "SMA-MIB::ibSmaPortInfoTable", community)
    assert sorted(int(r["index"]) for r in ports) == list(range(1, 37))
    node = fabric.nodes[SWITCH_1]
    for row in ports:
        port = present(node.port(int(row["index"])))
        assert row["ibSmaPortLinkState"] == ("active" if port.is_active else "down")
    by_port = {int(r["index"]): r for r in ports}
    assert by_port[3]["ibSmaPortLinkWidthActive"] == "oneX"  # storage01 at 1xEDR
    assert by_port[3]["ibSmaPortMtuCapacity"] == by_port[3]["ibSmaPortNeighborMtu"] == "?"
    # Without the SM's tables there is no linear forwarding table to serve.
    walked = net_snmp("snmpwalk", "-v2c", "-c", community, address, "SMA-MIB::ibSmaLinForTable")
    assert "No Such Object" in walked.stdout or "No more variables" in walked.stdout, walked.stdout


def test_channel_adapter_context(address: str, fabric: Fabric) -> None:
    community = f"public@{STORAGE:016x}"
    values = get(address, community, "SMA-MIB::ibSmaNodeString.0", "SMA-MIB::ibSmaNodeNumPorts.0",
                 "SMA-MIB::ibSmaPortLid.0", "SMA-MIB::ibSmaNodeLocalPortNumOrZero.0")
    assert values == {
        "SMA-MIB::ibSmaNodeString.0": "storage01 HCA-1",
        "SMA-MIB::ibSmaNodeNumPorts.0": "2",
        "SMA-MIB::ibSmaPortLid.0": str(fabric.nodes[STORAGE].management_port.lid),
        "SMA-MIB::ibSmaNodeLocalPortNumOrZero.0": str(fabric.nodes[STORAGE].local_port_num),
    }
    ports = table(address, "SMA-MIB::ibSmaPortInfoTable", community)
    assert [(r["index"], r["ibSmaPortLinkWidthActive"], r["ibSmaPortLinkState"]) for r in ports] == [
        ("1", "oneX", "active"), ("2", "fourX", "active")]
    # A node that runs no SM does not answer IB-SM-MIB in its context.
    result = net_snmp("snmpget", "-v2c", "-c", community, address, "IB-SM-MIB::ibSmNodeInfoNumPorts."
                      f"{PREFIX_INDEX}.{guid_index(STORAGE)}")
    assert "No Such Object" in result.stdout

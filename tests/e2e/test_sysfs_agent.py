"""A sysfs host over SNMP: the real agent, the real polling provider, net-snmp
clients with the project's MIBs.  Every value read is compared with the
file it comes from, after the documented conversion (providers/sysfs.py).

The host: mlx5_0 (2 ports: 1 Active 4X EDR, 2 Down), mlx5_1 (one 4X FDR
port), mlx5_2 (a RoCE port) and rxe0 (no PMA).
"""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.support import sysfs_trees as trees
from tests.support.e2e import net_snmp, varbinds

from ibsnmp.agent import parse_endpoint
from ibsnmp.agent.config import AgentSettings, Community, SystemInfo
from ibsnmp.agent.runner import Agent, start_agent
from ibsnmp.mib.targets import FabricContexts
from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric.counters import PortCounters
from ibsnmp.fabric.iba import CapabilityMask
from ibsnmp.mib.registry import build_mib
from ibsnmp.providers.sysfs import SysfsProvider
from ibsnmp.providers.sysfs_read import COUNTER_FILES

pytestmark = pytest.mark.skipif(shutil.which("snmpget") is None, reason="net-snmp tools not installed")

MLX1 = f"{trees.MLX1_NODE_GUID:016x}"
ROCE = f"{trees.ROCE_NODE_GUID:016x}"
RXE = f"{trees.RXE_NODE_GUID:016x}"
NO_INSTANCE = "No Such Instance currently exists at this OID"


def build_host(root: Path) -> None:
    trees.down_port(root)  # mlx5_0: port 1 Active, port 2 Down
    trees.second_hca(root)
    trees.roce_port(root)
    trees.no_pma(root)


class HostAgent:
    """The agent and a SysfsProvider polling `root` on one event loop in a
    thread, as `ibsnmp run --provider sysfs` runs them."""

    def __init__(self, root: Path, poll_interval: float = 0.05) -> None:
        self.root = root
        self.provider = SysfsProvider(root, poll_interval)
        self.events: list[TrapEvent] = []
        self.agent: Agent | None = None
        self.error: BaseException | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, daemon=True)

    def __enter__(self) -> HostAgent:
        self._thread.start()
        if not self._ready.wait(30) or self.error is not None:
            raise RuntimeError(f"agent did not start: {self.error!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:
            self.error = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        settings = AgentSettings(listen=(parse_endpoint("127.0.0.1:0"),), system=SystemInfo(),
                                 # with-keys: what sysfs cannot tell includes the M_Key
                                 communities=(Community("public", "read", "with-keys"),))
        self.agent = await start_agent(settings, FabricContexts(self.provider), build_mib())
        self.provider.add_listener(self.events.append)
        await self.provider.start()
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await self.provider.stop()
            self.agent.close()

    @property
    def address(self) -> str:
        assert self.agent is not None
        return str(self.agent.endpoints[0])

    def snmp(self, tool: str, *oids: str, context: str = "") -> dict[str, str]:
        """name -> value (-OQes: no module, no type, numeric enums; -Ox hex strings)."""
        community = f"public@{context}" if context else "public"
        result = net_snmp(tool, "-v2c", "-c", community, "-OQesx", "-t", "2", "-r", "1", self.address, *oids)
        assert result.returncode == 0 and not result.stderr.strip(), result.stderr + result.stdout
        return dict(varbinds(result.stdout))

    def walk(self, subtree: str, context: str = "") -> dict[str, str]:
        return {name: value for name, value in self.snmp("snmpbulkwalk", subtree, context=context).items()
                if not value.startswith("No Such")}  # an empty subtree answers that


def octets(value: str) -> bytes:
    """An OCTET STRING as net-snmp prints it: `c:42:a1:3:...` (the GUID
    DISPLAY-HINT) or `"0C 42 A1 "` (hex)."""
    value = value.strip().strip('"').strip()
    if ":" in value:
        return bytes(int(part, 16) for part in value.split(":"))
    return bytes.fromhex(value)


def text(root: Path, relative: str) -> str:
    return (root / relative).read_text().rstrip("\n")


def guid_file(root: Path, relative: str) -> bytes:
    return bytes.fromhex(text(root, relative).replace(":", ""))


def wait_for(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostAgent]:
    root = tmp_path_factory.mktemp("sys-class-infiniband")
    build_host(root)
    with HostAgent(root) as running:
        yield running


# -- SMA-MIB ---------------------------------------------------------------------------


def test_node_info_equals_files(host: HostAgent) -> None:
    root = host.root
    got = host.snmp("snmpget", *(f"SMA-MIB::{name}.0" for name in (
        "ibSmaNodeString", "ibSmaNodeType", "ibSmaNodeNumPorts", "ibSmaSystemImageGuid", "ibSmaNodeGuid",
        "ibSmaNodePortGuid", "ibSmaNodePartitionTableNum", "ibSmaNodeDeviceId", "ibSmaNodeRevision",
        "ibSmaNodeLocalPortNumOrZero", "ibSmaNodeVendorId")))
    assert got["ibSmaNodeString.0"] == text(root, "mlx5_0/node_desc")
    assert got["ibSmaNodeType.0"] == text(root, "mlx5_0/node_type").split(":")[0]  # CA: channelAdapter(1)
    assert got["ibSmaNodeNumPorts.0"] == str(len(list((root / "mlx5_0/ports").iterdir())))
    assert octets(got["ibSmaNodeGuid.0"]) == guid_file(root, "mlx5_0/node_guid")
    assert octets(got["ibSmaSystemImageGuid.0"]) == guid_file(root, "mlx5_0/sys_image_guid")
    # the port GUID is GID 0's interface id
    assert octets(got["ibSmaNodePortGuid.0"]) == bytes.fromhex(
        text(root, "mlx5_0/ports/1/gids/0").replace(":", ""))[8:]
    assert got["ibSmaNodePartitionTableNum.0"] == str(len(list((root / "mlx5_0/ports/1/pkeys").iterdir())))
    assert octets(got["ibSmaNodeDeviceId.0"]) == int(text(root, "mlx5_0/device/device"), 16).to_bytes(2, "big")
    assert octets(got["ibSmaNodeRevision.0"]) == int(text(root, "mlx5_0/hw_rev"), 16).to_bytes(4, "big")
    assert octets(got["ibSmaNodeVendorId.0"]) == bytes.fromhex("0002c9")  # PCI 0x15b3 -> OUI
    assert got["ibSmaNodeLocalPortNumOrZero.0"] == "1"


def test_management_port_equals_files(host: HostAgent) -> None:
    root, port = host.root, "mlx5_0/ports/1"
    bits = {
        "ibSmaPortIsSubnetManager": CapabilityMask.IS_SM,
        "ibSmaPortIsNoticeSupported": CapabilityMask.IS_NOTICE_SUPPORTED,
        "ibSmaPortIsTrapSupported": CapabilityMask.IS_TRAP_SUPPORTED,
        "ibSmaPortIsAutoMigrateSupported": CapabilityMask.IS_AUTOMATIC_MIGRATION_SUPPORTED,
        "ibSmaPortIsSlMappingSupported": CapabilityMask.IS_SL_MAPPING_SUPPORTED,
        "ibSmaPortIsLedInfoSupported": CapabilityMask.IS_LED_INFO_SUPPORTED,
        "ibSmaPortIsSysImgGuidSupported": CapabilityMask.IS_SYSTEM_IMAGE_GUID_SUPPORTED,
        "ibSmaPortIsCommManageSupported": CapabilityMask.IS_COMMUNICATION_MANAGEMENT_SUPPORTED,
        "ibSmaPortIsVendorClassSupported": CapabilityMask.IS_VENDOR_CLASS_SUPPORTED,
        "ibSmaPortIsCapMaskNoticSupported": CapabilityMask.IS_CAPABILITY_MASK_NOTICE_SUPPORTED,
        "ibSmaPortIsBootMgmtSupported": CapabilityMask.IS_BOOT_MANAGEMENT_SUPPORTED,
    }
    names = ["ibSmaPortLid", "ibSmaPortMasterSmLid", "ibSmaPortMasterSmSl", "ibSmaPortGidPrefix",
             "ibSmaPortNumGuid", *bits]
    got = host.snmp("snmpget", *(f"SMA-MIB::{name}.0" for name in names))
    assert got["ibSmaPortLid.0"] == str(int(text(root, f"{port}/lid"), 16))
    assert got["ibSmaPortMasterSmLid.0"] == str(int(text(root, f"{port}/sm_lid"), 16))
    assert got["ibSmaPortMasterSmSl.0"] == text(root, f"{port}/sm_sl")
    assert octets(got["ibSmaPortGidPrefix.0"]) == bytes.fromhex(text(root, f"{port}/gids/0").replace(":", ""))[:8]
    assert got["ibSmaPortNumGuid.0"] == str(len(list((root / port / "gids").iterdir())))
    mask = int(text(root, f"{port}/cap_mask"), 16)
    for name, bit in bits.items():
        assert got[f"{name}.0"] == ("1" if mask & bit else "2"), name  # TruthValue


def test_port_table_equals_files(host: HostAgent) -> None:
    root = host.root
    walk = host.walk("SMA-MIB::ibSmaPortInfoTable")
    for n in (1, 2):
        port = f"mlx5_0/ports/{n}"
        # IBA codes plus one: down(2) .. active(5); sleep(2) .. linkUp(6)
        assert walk[f"ibSmaPortLinkState.{n}"] == str(int(text(root, f"{port}/state").split(":")[0]) + 1)
        assert walk[f"ibSmaPortPhysState.{n}"] == str(int(text(root, f"{port}/phys_state").split(":")[0]) + 1)
        assert walk[f"ibSmaPortLidMaskCount.{n}"] == text(root, f"{port}/lid_mask_count")
        assert walk[f"ibSmaPortLinkWidthActive.{n}"] == "2"  # 4X: fourX(2)
    assert walk["ibSmaPortLinkSpeedActive.1"] == "2"  # EDR: other(2), the draft names 2.5 Gb/s only
    assert walk["ibSmaPortLinkSpeedActive.2"] == "1"  # 10 Gb/sec (4X SDR): twoPoint5Gbps(1)
    # the only PortInfo columns sysfs tells
    columns = {name.split(".")[0] for name in walk}
    assert columns == {"ibSmaPortLinkState", "ibSmaPortPhysState", "ibSmaPortLidMaskCount",
                       "ibSmaPortLinkWidthActive", "ibSmaPortLinkSpeedActive"}


def test_pkey_and_guid_tables_equal_files(host: HostAgent) -> None:
    root = host.root
    pkeys = [int(text(root, f"mlx5_0/ports/1/pkeys/{i}"), 16) for i in range(16)]
    walk = host.walk("SMA-MIB::ibSmaPKeyTable")
    for i, pkey in enumerate(pkeys, start=1):
        membership = "1" if pkey & 0x7FFF == 0 else ("3" if pkey & 0x8000 else "2")
        assert walk[f"ibSmaPKeyMembership.255.{i}"] == membership
        assert walk.get(f"ibSmaPKeyBase.255.{i}") == (str(pkey & 0x7FFF) if pkey & 0x7FFF else None)
    guids = host.walk("SMA-MIB::ibSmaGuidInfoTable")
    assert {k: octets(v) for k, v in guids.items()} == {
        f"ibSmaGuidVal.{n}.1": bytes.fromhex(text(root, f"mlx5_0/ports/{n}/gids/0").replace(":", ""))[8:]
        for n in (1, 2)
    }


def test_what_sysfs_cannot_tell_is_absent(host: HostAgent) -> None:
    got = host.snmp("snmpget", "SMA-MIB::ibSmaPortMKey.0", "SMA-MIB::ibSmaNodeBaseVersion.0",
                    "SMA-MIB::ibSmaPortMKeyLeasePeriod.0", "SMA-MIB::ibSmaPortNeighborMtu.1",
                    "SMA-MIB::ibSmaPortMtuCapacity.1", "SMA-MIB::ibSmaPortLocalPhysErrorThreshold.1",
                    "SMA-MIB::ibSmaLedState.1", "SMA-MIB::ibSmaPortGenericDiagCode.1",
                    "SMA-MIB::ibSmaSwLinearFdbTop.0")
    assert set(got.values()) == {NO_INSTANCE}, got
    for table in ("SMA-MIB::ibSmaSL2VLMapTable", "SMA-MIB::ibSmaHiPriVlArbTable",
                  "SMA-MIB::ibSmaLowPriVlArbTable", "SMA-MIB::ibSmaLinForTable", "SMA-MIB::ibSmaMulForTable",
                  "SMA-MIB::ibSmaVendDiagInfoTable", "SMA-MIB::ibSmaLedInfoTable", "SMA-MIB::ibSmaSmInfoTable",
                  "IB-CA-MIB::ibCaAttributeTable", "PMA-MIB::ibPmaPortRcvErrTable",
                  "PMA-MIB::ibPmaPortOpCodeRcvCntrsTable", "PMA-MIB::ibPmaPortVlXmitWaitCntrsTable",
                  "IB-SM-MIB::ibSmMIB", "IBCONNECTION-MIB::ibConnMIB"):
        assert host.walk(table) == {}, table


# -- IB-CA-MIB and PMA-MIB ----------------------------------------------------------------


def test_ca_tables_equal_files(host: HostAgent) -> None:
    root = host.root
    walk = host.walk("IB-CA-MIB::ibCaMIB")
    assert walk["ibCaType.1"] == "2"  # hca(2)
    assert octets(walk["ibCaNodeGuid.1"]) == guid_file(root, "mlx5_0/node_guid")
    assert walk["ibCaNumPorts.1"] == "2"
    for n in (1, 2):
        gids = sorted((root / f"mlx5_0/ports/{n}/gids").iterdir(), key=lambda p: int(p.name))
        assert walk[f"ibCaMaxGidsPerPort.1.{n}"] == str(len(gids))
        in_use = {f"ibCaPortGidValue.1.{n}.{int(p.name) + 1}": bytes.fromhex(p.read_text().strip().replace(":", ""))
                  for p in gids if set(p.read_text().strip()) != {"0", ":"}}
        assert {k: octets(v) for k, v in walk.items() if k.startswith(f"ibCaPortGidValue.1.{n}.")} == in_use


def test_counters_equal_files(host: HostAgent) -> None:
    root = host.root
    walk = host.walk("PMA-MIB::ibPmaMIB")
    columns = {
        "symbol_error": "ibPmaSymbolErrCounter", "link_error_recovery": "ibPmaLinkErrRecoveryCntr",
        "link_downed": "ibPmaLinkDownedCntr", "port_rcv_errors": "ibPmaPortRcvErr",
        "port_rcv_remote_physical_errors": "ibPmaPortRcvRemPhysErr",
        "port_rcv_switch_relay_errors": "ibPmaPortRcvSwitchRelayErr", "port_xmit_discards": "ibPmaPortXmitDiscard",
        "port_xmit_constraint_errors": "ibPmaPortXmitConstraintErr",
        "port_rcv_constraint_errors": "ibPmaPortRcvConstraintErr",
        "local_link_integrity_errors": "ibPmaLocalLinkIntegrityErr",
        "excessive_buffer_overrun_errors": "ibPmaExcessBufOverrunErr", "VL15_dropped": "ibPmaVl15Dropped",
        "port_xmit_data": "ibPmaPortXmitData", "port_rcv_data": "ibPmaPortRcvData",
        "port_xmit_packets": "ibPmaPortXmitPkts", "port_rcv_packets": "ibPmaPortRcvPkts",
    }
    expected = {}
    for n in (1, 2):
        for name, column in columns.items():
            bits = PortCounters.BITS[COUNTER_FILES[name]]
            # the file's value (data already in 4-octet words), saturated at the IBA width
            expected[f"{column}.{n}"] = str(min(int(text(root, f"mlx5_0/ports/{n}/counters/{name}")),
                                                (1 << bits) - 1))
    assert walk == expected
    assert walk["ibPmaPortXmitData.1"] == "4294967295"  # 9,876,543,210,123 words: all ones, never wrapped


# -- the other devices' contexts ---------------------------------------------------------


def test_second_hca_has_its_own_context(host: HostAgent) -> None:
    root = host.root
    got = host.snmp("snmpget", "SMA-MIB::ibSmaNodeGuid.0", "SMA-MIB::ibSmaPortLid.0",
                    "SMA-MIB::ibSmaSystemImageGuid.0", "IB-CA-MIB::ibCaNumPorts.1",
                    "PMA-MIB::ibPmaSymbolErrCounter.1", context=MLX1)
    assert octets(got["ibSmaNodeGuid.0"]) == guid_file(root, "mlx5_1/node_guid")
    assert octets(got["ibSmaSystemImageGuid.0"]) == guid_file(root, "mlx5_1/sys_image_guid")
    assert got["ibSmaPortLid.0"] == str(int(text(root, "mlx5_1/ports/1/lid"), 16))
    assert got["ibCaNumPorts.1"] == "1"
    assert got["ibPmaSymbolErrCounter.1"] == text(root, "mlx5_1/ports/1/counters/symbol_error")
    default = host.snmp("snmpget", "SMA-MIB::ibSmaNodeGuid.0")
    assert octets(default["ibSmaNodeGuid.0"]) == guid_file(root, "mlx5_0/node_guid")


def test_roce_port_serves_what_it_has(host: HostAgent) -> None:
    root = host.root
    assert host.walk("SMA-MIB::ibSmaGuidInfoTable", context=ROCE) == {}
    got = host.snmp("snmpget", "SMA-MIB::ibSmaPortGidPrefix.0", "SMA-MIB::ibSmaPortLid.0",
                    "SMA-MIB::ibSmaPortLinkState.1", "SMA-MIB::ibSmaPortLinkWidthActive.1", context=ROCE)
    assert got["ibSmaPortGidPrefix.0"] == NO_INSTANCE
    assert got["ibSmaPortLid.0"] == "0" and got["ibSmaPortLinkState.1"] == "5"
    assert got["ibSmaPortLinkWidthActive.1"] == "1"  # 25 Gb/sec (1X EDR): oneX(1)
    gids = host.walk("IB-CA-MIB::ibCaPortGidTable", context=ROCE)
    assert {k: octets(v) for k, v in gids.items()} == {
        f"ibCaPortGidValue.1.1.{i + 1}": bytes.fromhex(text(root, f"mlx5_2/ports/1/gids/{i}").replace(":", ""))
        for i in range(4)
    }
    assert gids["ibCaPortGidValue.1.1.3"].replace(" ", "").strip('"').endswith("FFFFC0A8010A")  # 192.168.1.10
    counters = host.walk("PMA-MIB::ibPmaPortCntrsOptTable", context=ROCE)
    assert counters["ibPmaPortRcvData.1"] == text(root, "mlx5_2/ports/1/counters/port_rcv_data")


def test_device_without_pma(host: HostAgent) -> None:
    root = host.root
    assert host.walk("PMA-MIB::ibPmaPortCntrsTable", context=RXE) == {}
    assert host.walk("PMA-MIB::ibPmaPortCntrsOptTable", context=RXE) == {
        "ibPmaPortXmitPkts.1": text(root, "rxe0/ports/1/hw_counters/sent_pkts"),
        "ibPmaPortRcvPkts.1": text(root, "rxe0/ports/1/hw_counters/rcvd_pkts"),
    }
    got = host.snmp("snmpget", "SMA-MIB::ibSmaNodeString.0", "SMA-MIB::ibSmaNodeDeviceId.0",
                    "SMA-MIB::ibSmaNodeVendorId.0", context=RXE)
    assert got == {"ibSmaNodeString.0": "rxe0", "ibSmaNodeDeviceId.0": NO_INSTANCE,
                   "ibSmaNodeVendorId.0": NO_INSTANCE}


# -- changes between polls ----------------------------------------------------------------


def test_changes_between_polls(tmp_path: Path) -> None:
    """Files change under a running agent: SNMP shows the new values after
    the next poll, a vanished file keeps its last value, and the state,
    capability mask, system image GUID and threshold changes become events."""
    build_host(tmp_path)
    with HostAgent(tmp_path) as host:
        def value(name: str, context: str = "") -> str:
            return host.snmp("snmpget", name, context=context)[name.split("::")[1]]

        trees.set_file(tmp_path, "mlx5_0/ports/1/counters/symbol_error", "77")
        wait_for(lambda: value("PMA-MIB::ibPmaSymbolErrCounter.1") == "77")

        (tmp_path / "mlx5_0/ports/1/counters/port_rcv_data").unlink()
        (tmp_path / "mlx5_0/ports/1/lid").unlink()
        trees.set_file(tmp_path, "mlx5_0/ports/1/counters/symbol_error", "78")
        wait_for(lambda: value("PMA-MIB::ibPmaSymbolErrCounter.1") == "78")
        assert value("PMA-MIB::ibPmaPortRcvData.1") == str(trees.ACTIVE_COUNTERS["port_rcv_data"])
        assert value("SMA-MIB::ibSmaPortLid.0") == "90"

        trees.set_file(tmp_path, "mlx5_0/ports/2/state", "4: ACTIVE")  # a CA port: logged, no trap
        trees.set_file(tmp_path, "mlx5_0/ports/2/phys_state", "5: LinkUp")
        wait_for(lambda: value("SMA-MIB::ibSmaPortLinkState.2") == "5")

        trees.set_file(tmp_path, "mlx5_1/ports/1/cap_mask", "0x2651e84a")
        trees.set_file(tmp_path, "mlx5_2/sys_image_guid", "0c42:a103:00b3:d400")
        trees.set_file(tmp_path, "mlx5_0/ports/1/counters/local_link_integrity_errors", "9")
        trees.set_file(tmp_path, "mlx5_0/ports/1/counters/excessive_buffer_overrun_errors", "8")
        wait_for(lambda: len(host.events) >= 4)
        # Nothing more comes of them: the next event is the next change's.
        trees.set_file(tmp_path, "mlx5_1/ports/1/cap_mask", "0x2651e84b")
        wait_for(lambda: len(host.events) >= 5)
        assert host.events[4] == TrapEvent(IbaTrap.CAPABILITY_MASK_CHANGED, trees.MLX1_NODE_GUID, 0x5C,
                                           capability_mask=0x2651E84B)
        assert sorted(host.events[:4], key=lambda e: e.trap) == [
            TrapEvent(IbaTrap.LOCAL_LINK_INTEGRITY, trees.MLX_NODE_GUID, 0x5A, port=1),
            TrapEvent(IbaTrap.EXCESSIVE_BUFFER_OVERRUN, trees.MLX_NODE_GUID, 0x5A, port=1),
            TrapEvent(IbaTrap.CAPABILITY_MASK_CHANGED, trees.MLX1_NODE_GUID, 0x5C, capability_mask=0x2651E84A),
            TrapEvent(IbaTrap.SYSTEM_IMAGE_GUID_CHANGED, trees.ROCE_NODE_GUID, 0,
                      system_image_guid=0x0C42A10300B3D400),
        ]
        assert value("SMA-MIB::ibSmaPortIsSubnetManager.0", context=MLX1) == "1"
        assert octets(value("SMA-MIB::ibSmaSystemImageGuid.0", context=ROCE)) == bytes.fromhex("0c42a10300b3d400")

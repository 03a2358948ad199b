"""The sysfs provider: the model it builds and the events of a change."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
from pathlib import Path

import pytest
from tests.support import sysfs_trees as trees

from ibsnmp.mib.targets import FabricContexts
from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric import to_json
from ibsnmp.fabric.counters import EXTENDED_NAMES, InterfaceCounters
from ibsnmp.fabric.traffic import MeasuredProfile, interface_counters, port_counters, traffic_profile
from ibsnmp.fabric.iba import CaType, LinkSpeed, LinkSpeedExt, LinkWidth, NodeType, PortPhysState, PortState
from ibsnmp.mib.api import NO_SUCH_INSTANCE, ContextTarget
from ibsnmp.mib.loader import definitions
from ibsnmp.mib.sma import SMA_MIB
from ibsnmp.mib.virtual import InfinibandMib
from ibsnmp.providers.sysfs import SysfsError, SysfsProvider


def provider(root: Path) -> tuple[SysfsProvider, list[TrapEvent]]:
    p = SysfsProvider(root, poll_interval=1.0)
    events: list[TrapEvent] = []
    p.add_listener(events.append)
    return p, events


# -- the model ------------------------------------------------------------------------


def test_two_port_hca(tmp_path: Path) -> None:
    trees.mlx5_two_port(tmp_path)
    p, _ = provider(tmp_path)
    fabric = p.snapshot
    node = fabric.local_node
    assert node.guid == trees.MLX_NODE_GUID and p.devices == {node.guid: "mlx5_0"}
    assert node.node_type is NodeType.CA and node.description == "node01 HCA-1"
    assert (node.num_ports, node.local_port_num, node.partition_cap) == (2, 1, 16)
    assert (node.vendor_id, node.device_id, node.revision) == (0x0002C9, 0x101B, 0)
    assert node.base_version is None and node.class_version is None and node.switch is None
    assert node.ca is not None and node.ca.ca_type is CaType.HCA and node.ca.reliable_connection is None
    one, two = node.ports
    assert (one.guid, two.guid) == (trees.MLX_NODE_GUID, trees.MLX_NODE_GUID + 1)
    info = one.info
    assert (info.port_state, info.phys_state) == (PortState.ACTIVE, PortPhysState.LINK_UP)
    assert (info.lid, info.master_sm_lid, info.master_sm_sl, info.lmc) == (0x5A, 1, 0, 0)
    assert info.capability_mask == 0x2651E848 and info.gid_prefix == trees.SUBNET_PREFIX
    assert (info.link_width_active, info.link_speed_active, info.link_speed_ext_active) == (
        LinkWidth.X4, LinkSpeed.QDR, LinkSpeedExt.EDR)
    assert two.info.link_speed_ext_active is LinkSpeedExt.HDR
    # what sysfs cannot tell is absent, not invented
    for name in ("m_key", "diag_code", "neighbor_mtu", "mtu_cap", "vl_cap", "operational_vls",
                 "link_width_supported", "local_phy_errors_threshold", "p_key_violations", "subnet_timeout"):
        assert getattr(info, name) is None, name
    assert one.sl2vl == () and one.vl_arb_high == () and one.vl_arb_low == ()
    assert one.led_on is None and one.vendor_diag is None and one.physical_interface is None
    assert one.guids == (trees.MLX_NODE_GUID,) and len(one.gids or ()) == 16
    assert fabric.sms == () and fabric.links == () and fabric.sm_config is None
    assert fabric.lid_map == {0x5A: one.ref, 0x5B: two.ref}
    counters = port_counters(fabric, one, 123.0)
    assert counters is not None
    assert counters.symbol_error_counter == 3 and counters.port_rcv_data == 1_234_567_890
    assert counters.port_xmit_data == 2**32 - 1  # 64-bit value, saturated at IBA's 32 bits
    assert counters.port_xmit_wait == 123_456


def test_two_hcas(tmp_path: Path) -> None:
    first, second = trees.two_hcas(tmp_path)
    p, _ = provider(tmp_path)
    fabric = p.snapshot
    assert list(fabric.nodes) == [first.node_guid, second.node_guid]
    assert fabric.local_node_guid == first.node_guid  # mlx5_0, the first by name
    contexts = FabricContexts(p)
    local = contexts(b"")
    assert local is not None and local.node.guid == first.node_guid
    other = contexts(f"{second.node_guid:016x}".encode())
    assert other is not None and other.node.guid == second.node_guid
    local = contexts(b"")
    assert local is not None and local.serves_sm is False  # a host knows no SM: no IB-SM-MIB
    assert fabric.nodes[second.node_guid].system_image_guid == trees.MLX_NODE_GUID
    assert fabric.nodes[second.node_guid].ports[0].info.link_speed_ext_active is LinkSpeedExt.FDR


def test_down_port(tmp_path: Path) -> None:
    trees.down_port(tmp_path)
    p, _ = provider(tmp_path)
    node = p.snapshot.local_node
    down = node.port(2)
    assert down is not None
    assert (down.info.port_state, down.info.phys_state, down.lid) == (PortState.DOWN, PortPhysState.POLLING, 0)
    assert (down.info.link_width_active, down.info.link_speed_active) == (LinkWidth.X4, LinkSpeed.SDR)
    assert node.local_port_num == 1 and list(p.snapshot.lid_map) == [0x5A]


def test_down_first_port_moves_the_management_port(tmp_path: Path) -> None:
    spec = trees.DeviceSpec("mlx5_0", 0x10, 0x10, ports={
        1: trees.ib_port(0x10, lid=0, state=1, phys_state=3), 2: trees.ib_port(0x11, lid=7)})
    trees.write_device(tmp_path, spec)
    node = SysfsProvider(tmp_path).snapshot.local_node
    assert node.local_port_num == 2 and node.port_guid == 0x11


def test_roce_port(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    trees.roce_port(tmp_path)
    with caplog.at_level(logging.INFO, "ibsnmp.providers.sysfs"):
        p, _ = provider(tmp_path)
        p.poll(full=True)
    port = p.snapshot.local_node.ports[0]
    assert port.guids is None and port.info.gid_prefix is None and port.info.guid_cap is None
    assert port.guid == 0x0EC42AFFFEB3D4E0  # GID 0's interface id, as ibstat shows it
    assert port.gids is not None and port.gids[2] == trees.ipv4_gid(192, 168, 1, 10)
    assert port.info.link_width_active is LinkWidth.X1 and port.info.lid == 0
    assert port.pkeys == (0xFFFF,)
    assert sum("RoCE" in r.getMessage() for r in caplog.records) == 1


def test_no_pma(tmp_path: Path) -> None:
    trees.no_pma(tmp_path)
    p, _ = provider(tmp_path)
    fabric = p.snapshot
    port = fabric.local_node.ports[0]
    profile = traffic_profile(fabric, port)
    assert isinstance(profile, MeasuredProfile)
    counters = profile.counters_at(0)
    assert counters is not None
    assert (counters.port_xmit_pkts, counters.port_rcv_pkts) == (4242, 4141)
    assert counters.symbol_error_counter is None and counters.port_xmit_data is None
    assert not profile.serves("rcv_error_details_at")
    node = fabric.local_node
    assert node.device_id is None and node.vendor_id is None and node.model_name == ""


def test_extended_counters_are_the_interface_counters(tmp_path: Path) -> None:
    trees.mlx5_two_port(tmp_path)
    fabric = SysfsProvider(tmp_path).snapshot
    port = fabric.local_node.ports[0]
    c = trees.ACTIVE_COUNTERS
    assert interface_counters(fabric, port, 0.0) == InterfaceCounters(
        c["port_rcv_data"] * 4, c["port_xmit_data"] * 4, c["unicast_rcv_packets"], c["unicast_xmit_packets"],
        c["multicast_rcv_packets"], c["multicast_xmit_packets"])
    # PMA-MIB's view of the same port saturates the 32-bit field.
    read = port_counters(fabric, port, 0.0)
    assert read is not None and read.port_xmit_data == (1 << 32) - 1


def test_without_the_extended_set_no_interface_counters(tmp_path: Path) -> None:
    spec = trees.mlx5_two_port(tmp_path)
    for name in ("unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets"):
        (tmp_path / spec.name / "ports" / "1" / "counters" / name).unlink()
    fabric = SysfsProvider(tmp_path).snapshot
    one, two = fabric.local_node.ports
    assert one.counter_layout is not None and one.counter_layout.wide == frozenset()
    assert interface_counters(fabric, one, 0.0) is None  # 32-bit PortCounters may have saturated
    read = port_counters(fabric, one, 0.0)
    assert read is not None and read.port_rcv_data == trees.ACTIVE_COUNTERS["port_rcv_data"]
    assert interface_counters(fabric, two, 0.0) is not None  # port 2 keeps its files


def test_json_export_names_the_wide_counters(tmp_path: Path) -> None:
    trees.mlx5_two_port(tmp_path)
    data = json.loads(to_json(SysfsProvider(tmp_path).snapshot))
    counters = data["nodes"][0]["ports"][0]["counters"]
    assert counters["wide"] == sorted(EXTENDED_NAMES)
    assert counters["values"]["port_xmit_data"] == trees.ACTIVE_COUNTERS["port_xmit_data"]


def test_no_pma_no_interface_counters(tmp_path: Path) -> None:
    trees.no_pma(tmp_path)
    fabric = SysfsProvider(tmp_path).snapshot
    assert interface_counters(fabric, fabric.local_node.ports[0], 0.0) is None


def test_a_node_desc_that_cannot_be_read_is_no_description(tmp_path: Path) -> None:
    spec = trees.mlx5_two_port(tmp_path)
    (tmp_path / spec.name / "node_desc").unlink()
    fabric = SysfsProvider(tmp_path).snapshot
    node = fabric.local_node
    assert node.description is None
    string = definitions().objects["ibSmaNodeString"].oid + (0,)
    sma = InfinibandMib([SMA_MIB])
    assert sma.get(ContextTarget(fabric, node, False, 1.0), string) is NO_SUCH_INSTANCE


def test_port_without_any_counter(tmp_path: Path) -> None:
    trees.switch(tmp_path)
    fabric = SysfsProvider(tmp_path).snapshot
    node = fabric.local_node
    assert node.node_type is NodeType.SWITCH and node.num_ports is None and node.local_port_num == 0
    profile = traffic_profile(fabric, node.ports[0])
    assert profile.counters_at(0) is None and not profile.serves("counters_at")


def test_no_device(tmp_path: Path) -> None:
    with pytest.raises(SysfsError, match="no InfiniBand device"):
        SysfsProvider(tmp_path)
    trees.write_device(tmp_path, trees.DeviceSpec("iwp3s0", 5, 5, node_type="4: RNIC",
                                                  ports={1: trees.ib_port(5)}))
    with pytest.raises(SysfsError, match="iwp3s0"):
        SysfsProvider(tmp_path)
    with pytest.raises(ValueError):
        SysfsProvider(tmp_path, poll_interval=0)


def test_skipped_devices(tmp_path: Path) -> None:
    trees.mlx5_two_port(tmp_path, name="mlx5_1")
    trees.write_device(tmp_path, trees.DeviceSpec("iwp3s0", 5, 5, node_type="4: RNIC",
                                                  ports={1: trees.ib_port(5)}))
    trees.mlx5_two_port(tmp_path, name="mlx5_0")  # the same GUID again
    p = SysfsProvider(tmp_path)
    assert p.devices == {trees.MLX_NODE_GUID: "mlx5_0"}


# -- polling and events ----------------------------------------------------------------


def test_unchanged_files_keep_the_snapshot(tmp_path: Path) -> None:
    trees.mlx5_two_port(tmp_path)
    p, events = provider(tmp_path)
    before = p.snapshot
    assert p.poll() == () and p.snapshot is before
    trees.set_file(tmp_path, "mlx5_0/ports/1/counters/port_rcv_data", "1234567999")
    assert p.poll() == () and p.snapshot is not before
    port = p.snapshot.local_node.ports[0]
    read = port_counters(p.snapshot, port, 0)
    assert read is not None and read.port_rcv_data == 1_234_567_999
    assert events == []


def test_ca_state_change_is_logged_not_trapped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    trees.mlx5_two_port(tmp_path)
    p, events = provider(tmp_path)
    trees.set_file(tmp_path, "mlx5_0/ports/2/state", "1: DOWN")
    trees.set_file(tmp_path, "mlx5_0/ports/2/phys_state", "3: Disabled")
    with caplog.at_level(logging.INFO, "ibsnmp.providers.sysfs"):
        assert p.poll() == ()
    port = p.snapshot.local_node.port(2)
    assert port is not None and port.info.port_state is PortState.DOWN
    assert port.info.phys_state is PortPhysState.DISABLED
    assert any("port 2: ACTIVE/LINK_UP -> DOWN/DISABLED" in r.getMessage() for r in caplog.records)
    assert events == []


def test_switch_state_change_raises_128(tmp_path: Path) -> None:
    trees.switch(tmp_path)
    p, events = provider(tmp_path)
    trees.set_file(tmp_path, "mlxsw_0/ports/0/state", "2: INIT")
    trees.set_file(tmp_path, "mlxsw_0/ports/0/state", "1: DOWN")
    (event,) = p.poll()
    assert event == TrapEvent(IbaTrap.LINK_STATE_CHANGE, trees.SWITCH_NODE_GUID, 0x3)
    assert events == [event]
    trees.set_file(tmp_path, "mlxsw_0/ports/0/state", "2: INIT")  # Down -> Init crosses Down too
    assert [e.trap for e in p.poll()] == [IbaTrap.LINK_STATE_CHANGE]
    trees.set_file(tmp_path, "mlxsw_0/ports/0/state", "4: ACTIVE")  # Init -> Active does not
    assert p.poll() == ()


def test_capability_mask_change_raises_144(tmp_path: Path) -> None:
    trees.mlx5_two_port(tmp_path)
    p, events = provider(tmp_path)
    trees.set_file(tmp_path, "mlx5_0/ports/2/cap_mask", "0x2651e84a")  # IsSM set
    (event,) = p.poll()
    assert event == TrapEvent(IbaTrap.CAPABILITY_MASK_CHANGED, trees.MLX_NODE_GUID, 0x5B,
                              capability_mask=0x2651E84A)
    assert events == [event]
    second = p.snapshot.local_node.port(2)
    assert second is not None and second.info.capability_mask == 0x2651E84A


def test_system_image_guid_change_raises_145(tmp_path: Path) -> None:
    trees.mlx5_two_port(tmp_path)
    p, events = provider(tmp_path)
    trees.set_file(tmp_path, "mlx5_0/sys_image_guid", "0c42:a103:0017:c000")
    (event,) = p.poll()
    assert event == TrapEvent(IbaTrap.SYSTEM_IMAGE_GUID_CHANGED, trees.MLX_NODE_GUID, 0x5A,
                              system_image_guid=0x0C42A1030017C000)
    assert events == [event]


def test_threshold_crossings_raise_129_and_130(tmp_path: Path) -> None:
    """IBA's default thresholds (8) apply, sysfs having none: growth of 8 since
    the last crossing fires once; nothing clears the real counter."""
    trees.mlx5_two_port(tmp_path)
    p, events = provider(tmp_path)
    counters = "mlx5_0/ports/1/counters/"
    trees.set_file(tmp_path, counters + "local_link_integrity_errors", "8")  # 1 -> 8: +7
    assert p.poll() == ()
    trees.set_file(tmp_path, counters + "local_link_integrity_errors", "9")  # +8 since armed at 1
    trees.set_file(tmp_path, counters + "excessive_buffer_overrun_errors", "8")  # 0 -> 8
    fired = p.poll()
    assert sorted((e.trap, e.port, e.lid) for e in fired) == [
        (IbaTrap.LOCAL_LINK_INTEGRITY, 1, 0x5A), (IbaTrap.EXCESSIVE_BUFFER_OVERRUN, 1, 0x5A)]
    assert events == list(fired)
    trees.set_file(tmp_path, counters + "local_link_integrity_errors", "15")  # +6: no
    assert p.poll() == ()
    # a counter someone cleared (perfquery -R) is re-armed at its new value
    trees.set_file(tmp_path, counters + "local_link_integrity_errors", "0")
    assert p.poll() == ()
    trees.set_file(tmp_path, counters + "local_link_integrity_errors", "8")
    (again,) = p.poll()
    assert again.trap is IbaTrap.LOCAL_LINK_INTEGRITY
    assert p.snapshot.local_node.ports[0].counter_layout is not None


def test_vanished_file_mid_run(tmp_path: Path) -> None:
    trees.mlx5_two_port(tmp_path)
    p, events = provider(tmp_path)
    port_dir = tmp_path / "mlx5_0" / "ports" / "1"
    (port_dir / "counters" / "port_rcv_data").unlink()
    (port_dir / "state").unlink()
    (port_dir / "cap_mask").unlink()
    trees.set_file(tmp_path, "mlx5_0/ports/1/counters/symbol_error", "4")
    assert p.poll(full=True) == ()
    port = p.snapshot.local_node.ports[0]
    assert port.info.port_state is PortState.ACTIVE and port.info.capability_mask == 0x2651E848
    counters = port_counters(p.snapshot, port, 0)
    assert counters is not None and counters.port_rcv_data == 1_234_567_890 and counters.symbol_error_counter == 4
    assert events == []


def test_devices_come_and_go(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    trees.mlx5_two_port(tmp_path)
    p, _ = provider(tmp_path)
    trees.roce_port(tmp_path)
    with caplog.at_level(logging.INFO, "ibsnmp.providers.sysfs"):
        p.poll()
        assert set(p.devices.values()) == {"mlx5_0", "mlx5_2"}
        shutil.rmtree(tmp_path / "mlx5_2")
        p.poll()
        assert set(p.devices.values()) == {"mlx5_0"}
        shutil.rmtree(tmp_path / "mlx5_0")  # the last one: kept as last read
        p.poll()
    assert set(p.devices.values()) == {"mlx5_0"} and p.snapshot.local_node.guid == trees.MLX_NODE_GUID
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "mlx5_2 (node 0c42a10300b3d4e0) is served" in messages
    assert "no usable device left" in messages


async def test_polling_task(tmp_path: Path) -> None:
    """start() polls at the interval (reading in a worker thread), swaps the
    snapshot and emits; stop() ends it."""
    trees.mlx5_two_port(tmp_path)
    p = SysfsProvider(tmp_path, poll_interval=0.05)
    events: list[TrapEvent] = []
    p.add_listener(events.append)
    await p.start()
    try:
        trees.set_file(tmp_path, "mlx5_0/ports/1/cap_mask", "0x2651e84a")
        for _ in range(100):
            if events:
                break
            await asyncio.sleep(0.02)
        assert [e.trap for e in events] == [IbaTrap.CAPABILITY_MASK_CHANGED]
        assert p.snapshot.local_node.ports[0].info.capability_mask == 0x2651E84A
    finally:
        await p.stop()
    # Stopped: nothing is left scheduled that could poll again.
    assert [task for task in asyncio.all_tasks() if task is not asyncio.current_task()] == []
    assert len(events) == 1


async def test_failing_listener_does_not_stop_polling(tmp_path: Path) -> None:
    trees.mlx5_two_port(tmp_path)
    p = SysfsProvider(tmp_path, poll_interval=0.05)
    seen: list[TrapEvent] = []

    def broken(event: TrapEvent) -> None:
        raise RuntimeError("listener bug")

    p.add_listener(broken)
    p.add_listener(seen.append)
    await p.start()
    try:
        trees.set_file(tmp_path, "mlx5_0/sys_image_guid", "0c42:a103:0017:c001")
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.02)
        trees.set_file(tmp_path, "mlx5_0/ports/1/cap_mask", "0x2651e84a")
        for _ in range(100):
            if len(seen) == 2:
                break
            await asyncio.sleep(0.02)
    finally:
        await p.stop()
    assert [e.trap for e in seen] == [IbaTrap.SYSTEM_IMAGE_GUID_CHANGED, IbaTrap.CAPABILITY_MASK_CHANGED]


def test_constructor_defaults() -> None:
    """What `ibsnmp run --provider sysfs` relies on."""
    import inspect

    params = inspect.signature(SysfsProvider).parameters
    assert params["root"].default == Path("/sys/class/infiniband")
    assert params["poll_interval"].default == 5.0


def test_active_defer_is_active(tmp_path: Path) -> None:
    spec = trees.DeviceSpec("mlx5_bond_0", 0x20, 0x20,
                            ports={1: trees.ib_port(0x20, state=5, link_layer="Ethernet")})
    trees.write_device(tmp_path, spec)
    port = SysfsProvider(tmp_path).snapshot.local_node.ports[0]
    assert port.info.port_state is PortState.ACTIVE

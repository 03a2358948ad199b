"""Reading sysfs files in the kernel's formats (providers.sysfs_read)."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from tests.support import sysfs_trees as trees

from ibsnmp.fabric.iba import LinkSpeed, LinkSpeedExt, LinkWidth
from ibsnmp.providers import sysfs_read
from ibsnmp.providers.sysfs_read import Rate, SysfsReader, parse_guid, parse_rate

NO_EXT = LinkSpeedExt(0)


@pytest.mark.parametrize(("text", "rate"), [
    ("100 Gb/sec (4X EDR)", Rate(LinkWidth.X4, LinkSpeed.QDR, LinkSpeedExt.EDR)),
    ("56 Gb/sec (4X FDR)", Rate(LinkWidth.X4, LinkSpeed.QDR, LinkSpeedExt.FDR)),
    ("200 Gb/sec (4X HDR)", Rate(LinkWidth.X4, LinkSpeed.QDR, LinkSpeedExt.HDR)),
    ("400 Gb/sec (4X NDR)", Rate(LinkWidth.X4, LinkSpeed.QDR, LinkSpeedExt.NDR)),
    ("2.5 Gb/sec (1X SDR)", Rate(LinkWidth.X1, LinkSpeed.SDR, NO_EXT)),
    ("2.5 Gb/sec (1X)", Rate(LinkWidth.X1, LinkSpeed.SDR, NO_EXT)),  # kernels that print no SDR name
    ("10 Gb/sec (4X)", Rate(LinkWidth.X4, LinkSpeed.SDR, NO_EXT)),
    ("25 Gb/sec (1X EDR)", Rate(LinkWidth.X1, LinkSpeed.QDR, LinkSpeedExt.EDR)),
    ("20 Gb/sec (4X DDR)", Rate(LinkWidth.X4, LinkSpeed.DDR, NO_EXT)),
    ("40 Gb/sec (4X QDR)", Rate(LinkWidth.X4, LinkSpeed.QDR, NO_EXT)),
    ("40 Gb/sec (4X FDR10)", Rate(LinkWidth.X4, LinkSpeed.QDR, NO_EXT)),  # PortInfo says QDR
    ("100 Gb/sec (2X HDR)", Rate(LinkWidth.X2, LinkSpeed.QDR, LinkSpeedExt.HDR)),
    ("300 Gb/sec (12X EDR)", Rate(LinkWidth.X12, LinkSpeed.QDR, LinkSpeedExt.EDR)),
])
def test_rate(text: str, rate: Rate) -> None:
    assert parse_rate((text + "\n").encode()) == rate


@pytest.mark.parametrize("text", ["800 Gb/sec (4X XDR)", "100 Gb/sec (3X EDR)", "Invalid argument", ""])
def test_rate_portinfo_cannot_name(text: str) -> None:
    with pytest.raises(ValueError):
        parse_rate(text.encode())


def test_guid() -> None:
    assert parse_guid(b"0c42:a103:0017:c078\n") == 0x0C42A1030017C078
    for bad in (b"0c42a1030017c078\n", b"0c42:a103:0017\n", b"zz42:a103:0017:c078\n"):
        with pytest.raises(ValueError):
            parse_guid(bad)


def test_two_port_hca(tmp_path: Path) -> None:
    spec = trees.mlx5_two_port(tmp_path)
    (device,) = SysfsReader(tmp_path).read()
    assert device.name == "mlx5_0"
    assert device.node_guid == trees.MLX_NODE_GUID
    assert device.sys_image_guid == trees.MLX_NODE_GUID
    assert (device.node_type, device.node_desc) == (1, "node01 HCA-1")
    assert (device.fw_ver, device.hca_type, device.board_id, device.hw_rev) == (
        "20.31.1014", "MT4123", "MT_0000000010", 0)
    assert (device.pci_vendor, device.pci_device) == (0x15B3, 0x101B)
    assert [p.num for p in device.ports] == [1, 2]
    for reading, port in zip(device.ports, spec.ports.values()):
        assert (reading.state, reading.phys_state) == (4, 5)
        assert (reading.lid, reading.sm_lid, reading.sm_sl, reading.lmc) == (port.lid, 1, 0, 0)
        assert reading.cap_mask == 0x2651E848
        assert reading.link_layer == "InfiniBand"
        assert reading.gids == tuple(port.gids)
        assert reading.pkeys == tuple(port.pkeys)
        # every counters/ file, named as the model names them; no mlx5 hw_counter maps
        assert reading.counters == {
            sysfs_read.COUNTER_FILES[name]: value for name, value in trees.ACTIVE_COUNTERS.items()
        }
    assert device.ports[1].rate == Rate(LinkWidth.X4, LinkSpeed.QDR, LinkSpeedExt.HDR)


def test_natural_device_order(tmp_path: Path) -> None:
    for name in ("mlx5_10", "mlx5_2", "mlx5_1"):
        trees.write_device(tmp_path, trees.DeviceSpec(name, 0x10 + len(name), 1, ports={1: trees.ib_port(7)}))
    assert [d.name for d in SysfsReader(tmp_path).read()] == ["mlx5_1", "mlx5_2", "mlx5_10"]


def test_no_pma_na_text(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Counters reading "N/A (no PMA)": none, logged once; hw_counters that
    are PMA counters fill in."""
    trees.no_pma(tmp_path)
    reader = SysfsReader(tmp_path)
    with caplog.at_level(logging.INFO, "ibsnmp.providers.sysfs"):
        for _ in range(3):
            (device,) = reader.read()
            assert device.ports[0].counters == {"port_xmit_pkts": 4242, "port_rcv_pkts": 4141}
    assert sum("no PMA" in r.getMessage() for r in caplog.records) == 1
    assert device.pci_vendor is None and device.hca_type is None


def test_no_pma_einval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       caplog: pytest.LogCaptureFixture) -> None:
    """Newer kernels fail the read of a counter with EINVAL when the device
    has no PMA: no counters, logged once, nothing raised."""
    trees.mlx5_two_port(tmp_path)
    real_open, real_read = os.open, os.read
    counter_fds: set[int] = set()

    def fake_open(path: str | os.PathLike[str], flags: int, *args: Any, **kwargs: Any) -> int:
        fd = real_open(path, flags, *args, **kwargs)
        if "/ports/2/counters/" in str(path):
            counter_fds.add(fd)
        else:
            counter_fds.discard(fd)
        return fd

    def fake_read(fd: int, size: int) -> bytes:
        if fd in counter_fds:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        return real_read(fd, size)

    monkeypatch.setattr("ibsnmp.providers.sysfs_read.os.open", fake_open)
    monkeypatch.setattr("ibsnmp.providers.sysfs_read.os.read", fake_read)
    reader = SysfsReader(tmp_path)
    with caplog.at_level(logging.INFO, "ibsnmp.providers.sysfs"):
        for _ in range(2):
            (device,) = reader.read()
            assert device.ports[0].counters["symbol_error_counter"] == 3
            assert device.ports[1].counters == {}
    messages = [r.getMessage() for r in caplog.records]
    assert sum("ports/2/counters" in m and "no PMA" in m for m in messages) == 1, messages


def test_no_counters_directory(tmp_path: Path) -> None:
    spec = trees.DeviceSpec("mlx5_0", 1, 1, ports={1: trees.ib_port(1, counters=None, hw_counters=None)})
    trees.write_device(tmp_path, spec)
    (device,) = SysfsReader(tmp_path).read()
    assert device.ports[0].counters == {}
    assert device.ports[0].state == 4


def test_vanished_files_keep_last_value(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    trees.mlx5_two_port(tmp_path)
    reader = SysfsReader(tmp_path)
    (before,) = reader.read()
    port = tmp_path / "mlx5_0" / "ports" / "1"
    (port / "counters" / "port_rcv_data").unlink()
    (port / "lid").unlink()
    (tmp_path / "mlx5_0" / "sys_image_guid").unlink()
    with caplog.at_level(logging.WARNING, "ibsnmp.providers.sysfs"):
        for full in (False, True, False):  # a re-listing keeps the vanished file too
            (after,) = reader.read(full=full)
            assert after.ports[0].counters["port_rcv_data"] == trees.ACTIVE_COUNTERS["port_rcv_data"]
            assert after.ports[0].lid == 0x5A
            assert after.sys_image_guid == trees.MLX_NODE_GUID
            assert after == before
    vanished = [r.getMessage() for r in caplog.records if "missing" in r.getMessage()]
    assert len(vanished) == 3, vanished  # each file once
    assert all("keeping the last value" in m for m in vanished)


def test_vanished_gid_keeps_last_value(tmp_path: Path) -> None:
    trees.mlx5_two_port(tmp_path)
    reader = SysfsReader(tmp_path)
    (before,) = reader.read()
    (tmp_path / "mlx5_0" / "ports" / "1" / "gids" / "0").unlink()
    (after,) = reader.read(full=True)
    assert after.ports[0].gids == before.ports[0].gids


def test_unused_gid_entries(tmp_path: Path) -> None:
    """A GID slot without data reads zeros (or fails with EINVAL on newer
    kernels for RoCE); either way an unused entry, 0."""
    trees.roce_port(tmp_path)
    gid = tmp_path / "mlx5_2" / "ports" / "1" / "gids" / "5"
    gid.unlink()
    gid.mkdir()  # reading it fails (EISDIR), as an empty RoCE slot fails
    (device,) = SysfsReader(tmp_path).read()
    gids = device.ports[0].gids
    assert len(gids) == 16 and gids[5] == 0
    assert gids[2] == trees.ipv4_gid(192, 168, 1, 10)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_tables_reread_on_refresh_or_port_change(tmp_path: Path) -> None:
    trees.mlx5_two_port(tmp_path)
    clock = Clock()
    reader = SysfsReader(tmp_path, table_refresh=60.0, clock=clock)
    reader.read()
    port = tmp_path / "mlx5_0" / "ports" / "1"
    trees.set_file(tmp_path, "mlx5_0/ports/1/pkeys/1", "0x8001")
    trees.set_file(tmp_path, "mlx5_0/fw_ver", "20.32.1010")
    clock.now += 5
    (device,) = reader.read()
    assert device.ports[0].pkeys[1] == 0 and device.fw_ver == "20.31.1014"  # not yet
    trees.set_file(tmp_path, "mlx5_0/ports/1/lid", "0x60")  # the SM reprogrammed the port
    clock.now += 5
    (device,) = reader.read()
    assert device.ports[0].pkeys[1] == 0x8001 and device.ports[0].lid == 0x60
    assert device.fw_ver == "20.31.1014"
    (port / "pkeys" / "1").write_text("0x0000\n")
    clock.now += 60
    (device,) = reader.read()
    assert device.ports[0].pkeys[1] == 0 and device.fw_ver == "20.32.1010"


def test_device_added_and_removed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    first, _ = trees.two_hcas(tmp_path)
    reader = SysfsReader(tmp_path)
    assert [d.name for d in reader.read()] == ["mlx5_0", "mlx5_1"]
    for path in sorted((tmp_path / "mlx5_1").rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    (tmp_path / "mlx5_1").rmdir()
    with caplog.at_level(logging.WARNING, "ibsnmp.providers.sysfs"):
        assert [d.name for d in reader.read()] == ["mlx5_0"]
    assert any("mlx5_1 is gone" in r.getMessage() for r in caplog.records)
    trees.roce_port(tmp_path)
    assert [d.name for d in reader.read()] == ["mlx5_0", "mlx5_2"]


def test_missing_root(tmp_path: Path) -> None:
    assert SysfsReader(tmp_path / "nothing").read() == ()


def test_table_refreshes_are_spread_over_the_polls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the full first read, each port's tables come due at its own
    time: a poll re-reads one port's tables, not every port's."""
    trees.two_hcas(tmp_path)
    trees.mlx5_two_port(tmp_path, name="mlx5_3", guid=0x77)
    clock = Clock()
    reader = SysfsReader(tmp_path, table_refresh=60.0, clock=clock)
    reader.read(full=True)
    opened: list[str] = []
    real_open = os.open

    def recording_open(path: str | os.PathLike[str], flags: int, *args: Any,
                       **kwargs: Any) -> int:
        opened.append(str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr("ibsnmp.providers.sysfs_read.os.open", recording_open)
    refreshed = []
    for _ in range(12):  # 5 s polls for one period
        clock.now += 5
        opened.clear()
        reader.read()
        refreshed.append(sorted({p.split("/gids/")[0] for p in opened if "/gids/" in p}))
    assert all(len(ports) <= 1 for ports in refreshed), refreshed
    assert sum(len(ports) for ports in refreshed) == 4  # each of the 4 ports once per period

"""Why a umad port would not open, read from fake sysfs and /dev trees: one
line per cause, naming what to do (ibsnmp.mad.diagnose); and libibumad's
own stderr kept off the terminal (ibsnmp.mad.c_stderr)."""

from __future__ import annotations

import ctypes.util
import errno
import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from tests.support import sysfs_trees as trees
from tests.support.paths import PROJECT_ROOT

from ibsnmp.mad.c_stderr import call_capturing_stderr
from ibsnmp.mad.diagnose import UmadHost, explain_open_failure, open_read_write

# What libibumad returns for each failure (negated): a CA or port it cannot
# resolve, a port without a umad device, an open(2) that failed.
ENODEV, EINVAL, EIO = errno.ENODEV, errno.EINVAL, errno.EIO


def _opens(path: Path) -> None:
    """A device that opens."""


def _refuses(error: int) -> Callable[[Path], None]:
    def refuse(path: Path) -> None:
        raise OSError(error, os.strerror(error), str(path))
    return refuse


class FakeHost:
    """A fake host under `root`: class/infiniband (the devices), class/infiniband_mad
    (ib_umad's devices) and dev/infiniband/umadN."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.devices = root / "class" / "infiniband"
        self.umad_dir = root / "class" / "infiniband_mad"
        self.dev = root / "dev"

    def umad(self, ports: Iterable[tuple[str, int]], *, device_files: bool = True) -> None:
        """ib_umad loaded: umad0, umad1 ... for `ports` in order (and issmN, as the
        kernel makes them), their /dev files too unless `device_files` is False."""
        trees.write(self.umad_dir / "abi_version", "5\n")
        for n, (ca, port) in enumerate(ports):
            for kind in ("umad", "issm"):
                trees.write(self.umad_dir / f"{kind}{n}" / "ibdev", f"{ca}\n")
                trees.write(self.umad_dir / f"{kind}{n}" / "port", f"{port}\n")
            if device_files:
                trees.write(self.dev / "infiniband" / f"umad{n}", "")

    def host(self, open_device: Callable[[Path], None] = _opens) -> UmadHost:
        return UmadHost(self.root / "class", self.dev, open_device)


@pytest.fixture
def fake(tmp_path: Path) -> FakeHost:
    return FakeHost(tmp_path)


def _ready(fake: FakeHost) -> None:
    """mlx5_0 with two active ports, ib_umad loaded, its device files there."""
    trees.mlx5_two_port(fake.devices)
    fake.umad([("mlx5_0", 1), ("mlx5_0", 2)])


# -- no device, no ib_umad ----------------------------------------------------------------

def test_no_infiniband_class_directory_names_the_modules(fake: FakeHost) -> None:
    message = explain_open_failure(None, 0, errno.EOPNOTSUPP, fake.host())
    assert message == (f"no InfiniBand device: {fake.devices} is missing; load the drivers: "
                       "modprobe mlx5_ib (or the driver of your HCA) and modprobe ib_umad")


def test_an_empty_class_directory_is_no_device_either(fake: FakeHost) -> None:
    fake.devices.mkdir(parents=True)
    assert explain_open_failure("mlx5_0", 1, EINVAL, fake.host()).startswith(
        f"no InfiniBand device: {fake.devices} is empty; load the drivers: modprobe mlx5_ib")


def test_an_iwarp_device_is_no_infiniband_device(fake: FakeHost) -> None:
    trees.write_device(fake.devices, trees.DeviceSpec(
        name="iwp1s0", node_guid=1, sys_image_guid=1, node_type="4: RNIC",
        ports={1: trees.PortSpec()}))
    assert explain_open_failure(None, 0, ENODEV, fake.host()).startswith("no InfiniBand device:")


def test_devices_without_ib_umad(fake: FakeHost) -> None:
    trees.two_hcas(fake.devices)
    expected = (f"ib_umad is not loaded: {fake.umad_dir} has no umad device for CAs "
                "mlx5_0, mlx5_1; load it: modprobe ib_umad")
    assert explain_open_failure(None, 0, errno.EOPNOTSUPP, fake.host()) == expected
    # The class directory without umad entries (abi_version only) says the same.
    trees.write(fake.umad_dir / "abi_version", "5\n")
    assert explain_open_failure("mlx5_1", 1, errno.EOPNOTSUPP, fake.host()) == expected


# -- the CA and the port ------------------------------------------------------------------

def test_a_ca_that_does_not_exist_lists_those_that_do(fake: FakeHost) -> None:
    trees.two_hcas(fake.devices)
    fake.umad([("mlx5_0", 1), ("mlx5_1", 1)])
    assert (explain_open_failure("mlx5_4", 0, ENODEV, fake.host())
            == "no CA named mlx5_4; this host has CAs mlx5_0, mlx5_1")
    # Checked before ib_umad: the name is what the operator typed wrong.
    alone = FakeHost(fake.root / "alone")
    trees.mlx5_two_port(alone.devices)
    assert (explain_open_failure("mlx5_1", 1, EINVAL, alone.host())
            == "no CA named mlx5_1; this host has CA mlx5_0")


def test_a_port_that_does_not_exist(fake: FakeHost) -> None:
    _ready(fake)
    assert (explain_open_failure("mlx5_0", 3, EINVAL, fake.host())
            == "mlx5_0 has no port 3; its ports: 1, 2")
    assert (explain_open_failure(None, 3, EINVAL, fake.host())
            == "mlx5_0 has no port 3; its ports: 1, 2")


def test_a_port_no_ca_has_names_every_cas_ports(fake: FakeHost) -> None:
    trees.two_hcas(fake.devices)
    fake.umad([("mlx5_0", 1), ("mlx5_1", 1)])
    assert (explain_open_failure(None, 2, EINVAL, fake.host())
            == "no CA has a port 2; mlx5_0 has port 1; mlx5_1 has port 1")
    trees.mlx5_two_port(fake.devices, "mlx5_2", trees.MLX_NODE_GUID + 0x10)
    assert (explain_open_failure(None, 3, EINVAL, fake.host())
            == "no CA has a port 3; mlx5_0 has port 1; mlx5_1 has port 1; mlx5_2 has ports 1, 2")
    assert explain_open_failure(None, 2, EIO, fake.host(_refuses(errno.EBUSY))).startswith(
        "ib_umad offers no device for mlx5_2 port 2")


def test_no_port_can_be_used(fake: FakeHost) -> None:
    disabled = trees.ib_port(trees.MLX_NODE_GUID, lid=0, state=1, phys_state=3)
    trees.write_device(fake.devices, trees.DeviceSpec(
        name="mlx5_0", node_guid=trees.MLX_NODE_GUID, sys_image_guid=trees.MLX_NODE_GUID,
        ports={1: disabled}))
    trees.roce_port(fake.devices)
    fake.umad([("mlx5_0", 1), ("mlx5_2", 1)])
    assert explain_open_failure(None, 0, EINVAL, fake.host()) == (
        "no active InfiniBand port (mlx5_0: port 1 DOWN, Disabled; mlx5_2: port 1 Ethernet "
        "(RoCE: no subnet to read)): connect and enable a port of an InfiniBand link, with a "
        "subnet manager on the fabric, or name the port")
    assert explain_open_failure("mlx5_0", 0, ENODEV, fake.host()) == (
        "no active InfiniBand port (mlx5_0: port 1 DOWN, Disabled): connect and enable a port "
        "of an InfiniBand link, with a subnet manager on the fabric, or name the port")


def test_port_0_is_the_first_active_as_libibumad_picks_it(fake: FakeHost) -> None:
    """mlx5_0's port 1 is down (link polling), mlx5_1's active: libibumad opens
    mlx5_1 port 1, so its device is the one diagnosed."""
    trees.write_device(fake.devices, trees.DeviceSpec(
        name="mlx5_0", node_guid=trees.MLX_NODE_GUID, sys_image_guid=trees.MLX_NODE_GUID,
        ports={1: trees.ib_port(trees.MLX_NODE_GUID, lid=0, state=1, phys_state=2)}))
    trees.second_hca(fake.devices)
    fake.umad([("mlx5_0", 1), ("mlx5_1", 1)])
    host = fake.host(_refuses(errno.ENXIO))
    assert explain_open_failure(None, 0, EIO, host).startswith(
        f"cannot open {fake.dev}/infiniband/umad1 (mlx5_1 port 1):")
    # Named, mlx5_0 has no active port but one that is not disabled: libibumad takes it.
    assert explain_open_failure("mlx5_0", 0, EIO, host).startswith(
        f"cannot open {fake.dev}/infiniband/umad0 (mlx5_0 port 1):")


def test_a_switch_answers_on_its_port_0(fake: FakeHost) -> None:
    trees.switch(fake.devices)
    fake.umad([("mlxsw_0", 0)])
    assert explain_open_failure(None, 0, EIO, fake.host(_refuses(errno.EBUSY))) == (
        f"cannot open {fake.dev}/infiniband/umad0 (mlxsw_0 port 0): Device or resource busy")


# -- the device file ----------------------------------------------------------------------

def test_ib_umad_without_a_device_for_the_port(fake: FakeHost) -> None:
    trees.two_hcas(fake.devices)
    fake.umad([("mlx5_1", 1)])
    assert explain_open_failure("mlx5_0", 1, EINVAL, fake.host()) == (
        f"ib_umad offers no device for mlx5_0 port 1 ({fake.umad_dir} has mlx5_1 port 1); "
        "reload it: modprobe -r ib_umad && modprobe ib_umad")


def test_a_missing_device_file(fake: FakeHost) -> None:
    trees.mlx5_two_port(fake.devices)
    fake.umad([("mlx5_0", 1), ("mlx5_0", 2)], device_files=False)
    assert explain_open_failure("mlx5_0", 2, EIO, fake.host()) == (
        f"{fake.dev}/infiniband/umad1 (mlx5_0 port 2) is missing although ib_umad is loaded: "
        "udev did not make it (udevadm trigger), or this container was not given "
        "/dev/infiniband")


def test_permission_denied_names_the_file_its_mode_and_the_remedies(fake: FakeHost) -> None:
    _ready(fake)
    device = fake.dev / "infiniband" / "umad0"
    device.chmod(0o660)
    message = explain_open_failure(None, 0, EIO, fake.host(_refuses(errno.EACCES)))
    owner = _name_of_uid(device.stat().st_uid)
    group = _name_of_gid(device.stat().st_gid)
    assert message == (
        f"permission denied opening {device} (mlx5_0 port 1; owner {owner}, group {group}, "
        "mode -rw-rw----): run as root, or install the udev rule 70-ibsnmp-umad.rules and run "
        "in group ibsnmp (under systemd the drop-in "
        "/etc/systemd/system/ibsnmp.service.d/live.conf grants the device)")


def _name_of_uid(uid: int) -> str:
    import pwd
    return pwd.getpwuid(uid).pw_name


def _name_of_gid(gid: int) -> str:
    import grp
    return grp.getgrgid(gid).gr_name


def test_another_open_error_says_its_strerror_device_and_ca(fake: FakeHost) -> None:
    _ready(fake)
    assert explain_open_failure("mlx5_0", 2, EIO, fake.host(_refuses(errno.EBUSY))) == (
        f"cannot open {fake.dev}/infiniband/umad1 (mlx5_0 port 2): Device or resource busy")


def test_a_device_that_opens_leaves_libibumads_errno(fake: FakeHost) -> None:
    _ready(fake)
    assert explain_open_failure("mlx5_0", 1, errno.EPROTO, fake.host()) == (
        f"libibumad cannot open mlx5_0 port 1 ({fake.dev}/infiniband/umad0): Protocol error")
    # The real opener, on a file that opens (this test runs as anyone).
    explain_open_failure("mlx5_0", 1, errno.EPROTO, fake.host(open_read_write))


def test_unreadable_umad_files_are_no_cause(fake: FakeHost) -> None:
    """Under ibsim's preload the umad directory lists but its files do not read:
    the diagnosis does not blame ib_umad then."""
    trees.mlx5_two_port(fake.devices)
    (fake.umad_dir / "umad0").mkdir(parents=True)
    assert (explain_open_failure("mlx5_0", 1, EINVAL, fake.host())
            == "libibumad cannot open mlx5_0 port 1: Invalid argument")


# -- through UmadPort, and libibumad's stderr ---------------------------------------------

def _libibumad() -> None:
    if ctypes.util.find_library("ibumad") is None:
        pytest.skip("libibumad is not installed (Debian package libibumad3)")


def test_umad_port_raises_the_diagnosis(fake: FakeHost, capfd: pytest.CaptureFixture[str]) -> None:
    """A CA no host has: libibumad refuses it everywhere; the fake tree is what is read."""
    _libibumad()
    from ibsnmp.mad.umad import PortOpenError, UmadError, UmadPort

    _ready(fake)
    with pytest.raises(PortOpenError) as raised:
        UmadPort("ibsnmp_no_such_ca", 0, fake.host())
    assert str(raised.value) == "no CA named ibsnmp_no_such_ca; this host has CA mlx5_0"
    assert raised.value.errno is not None and raised.value.errno > 0
    assert isinstance(raised.value, UmadError)
    assert capfd.readouterr().err == ""


def test_libibumad_warnings_stay_off_stderr(fake: FakeHost) -> None:
    """Where libibumad warns on opening the first CA (no ib_umad here: an
    ibwarn line), UmadPort keeps it off descriptor 2. Each in a fresh process:
    libibumad warns once per process."""
    _libibumad()
    raw = _python("import ctypes\n"
                  "lib = ctypes.CDLL('libibumad.so.3')\n"
                  "lib.umad_init()\n"
                  "lib.umad_open_port(None, 0)\n")
    if "ibwarn" not in raw.stderr:
        pytest.skip("libibumad prints nothing on this host (it has ib_umad)")
    quiet = _python("import sys\n"
                    "from pathlib import Path\n"
                    "from ibsnmp.mad.diagnose import UmadHost\n"
                    "from ibsnmp.mad.umad import PortOpenError, UmadPort\n"
                    "try:\n"
                    "    UmadPort(None, 0, UmadHost(Path(sys.argv[1]), Path(sys.argv[2])))\n"
                    "except PortOpenError as exc:\n"
                    "    print(exc)\n",
                    str(fake.root / "class"), str(fake.dev))
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert quiet.stdout.startswith("no InfiniBand device: ")


def _python(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                          timeout=60, check=False, cwd=PROJECT_ROOT)


def test_capturing_stderr_takes_what_descriptor_2_got_and_restores_it(
        capfd: pytest.CaptureFixture[str]) -> None:
    before = os.fstat(2)
    result, said = call_capturing_stderr(lambda: os.write(2, b"ibwarn: [1] said\n") and 7)
    assert (result, said) == (7, "ibwarn: [1] said")
    after = os.fstat(2)
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "after\n"


def test_capturing_stderr_restores_it_when_the_call_raises(
        capfd: pytest.CaptureFixture[str]) -> None:
    def fails() -> None:
        os.write(2, b"noise\n")
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        call_capturing_stderr(fails)
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "after\n"

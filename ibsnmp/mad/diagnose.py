"""Why a umad port would not open, said in one line an operator can act on.

libibumad answers a failed umad_open_port with a bare errno (-ENODEV, -EINVAL, -EIO,
-EOPNOTSUPP) that does not tell a missing driver from a mistyped CA or a device file the user
may not open. `explain_open_failure` looks where libibumad looked, in its order, and names the
first missing piece; with none missing, the errno. Every path is read under a `UmadHost`'s
roots, so a fake tree stands in for a host's in tests. Under ibsim's preload library listing a
directory is redirected but reading a file is not: a file that cannot be read tells nothing
and is passed over, never taken for a cause.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DRIVER_HINT", "UDEV_RULE", "UmadHost", "explain_open_failure", "open_read_write"]

# What loading the stack takes: the HCA's driver (mlx5_ib for every
# ConnectX-4 and later) and the module that gives user space its MADs.
DRIVER_HINT = "modprobe mlx5_ib (or the driver of your HCA) and modprobe ib_umad"
UDEV_RULE = "70-ibsnmp-umad.rules"
SYSTEMD_DROP_IN = "/etc/systemd/system/ibsnmp.service.d/live.conf"
UMAD_NAME = re.compile(r"umad(\d+)")
# sysfs codes (IBA PortInfo PortState / PortPhysicalState, NodeInfo NodeType).
ACTIVE = 4
PHYS_DISABLED = 3
PHYS_LINK_UP = 5
SWITCH = 2
INFINIBAND_NODE_TYPES = range(1, 4)  # CA, switch, router: libibumad skips the rest (iWARP)


def open_read_write(path: Path) -> None:
    """Open `path` read-write, as libibumad opens a umad device, and close it;
    OSError as open(2) fails."""
    os.close(os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC))


@dataclass(frozen=True)
class UmadHost:
    """Where a host shows its InfiniBand devices: `sysfs` the sysfs class
    directory (infiniband/ and infiniband_mad/ under it), `dev` the device
    directory (infiniband/umadN under it). `open_device` opens a device
    file and closes it again, raising OSError as open(2) fails (tests pass
    a fake one: running as root, no mode bit refuses an open)."""

    sysfs: Path = Path("/sys/class")
    dev: Path = Path("/dev")
    open_device: Callable[[Path], None] = open_read_write

    @property
    def devices_dir(self) -> Path:
        return self.sysfs / "infiniband"

    @property
    def umad_dir(self) -> Path:
        return self.sysfs / "infiniband_mad"


@dataclass(frozen=True)
class _Port:
    """One port as sysfs shows it; a field is None where its file cannot be read."""

    number: int
    state: int | None
    state_name: str | None
    physical: int | None
    physical_name: str | None
    link_layer: str | None

    @property
    def infiniband(self) -> bool:
        return self.link_layer in (None, "InfiniBand", "IB")

    def usable_rank(self) -> int | None:
        """libibumad's preference for port 0 ("the first active"): 0 an active
        port, 1 one whose link is up, 2 one not disabled; None none of these."""
        if not self.infiniband:
            return None
        if self.state == ACTIVE:
            return 0
        if self.physical == PHYS_LINK_UP:
            return 1
        return None if self.physical == PHYS_DISABLED else 2

    def describe(self) -> str:
        if not self.infiniband:
            return f"port {self.number} {self.link_layer} (RoCE: no subnet to read)"
        said = [name for name in (self.state_name, self.physical_name) if name]
        return f"port {self.number} " + (", ".join(said) if said else "state unknown")


def explain_open_failure(ca: str | None, port: int, code: int,
                         host: UmadHost = UmadHost()) -> str:
    """Why libibumad could not open `port` of `ca` (None: its first CA; port
    0: the first active), given the errno `code` it returned: one line that
    says what is wrong and what to do. It looks where libibumad looked, in
    this order: the devices in sysfs (/sys/class/infiniband), the CA asked
    for, ib_umad's devices (/sys/class/infiniband_mad), the port, the device
    file (/dev/infiniband/umadN) and opening it; the first missing piece is
    the message, and with none missing the errno is. Never raises: what
    cannot be read is passed over."""
    cas = _ca_names(host)
    if not cas:
        devices = host.devices_dir
        return (f"no InfiniBand device: {devices} is "
                f"{'empty' if devices.is_dir() else 'missing'}; load the drivers: {DRIVER_HINT}")
    if ca is not None and ca not in cas:
        return f"no CA named {ca}; this host has {_listed(cas)}"
    umads = _umad_devices(host)
    if not umads:
        return (f"ib_umad is not loaded: {host.umad_dir} has no umad device for "
                f"{_listed(cas)}; load it: modprobe ib_umad")
    chosen = _resolve(host, [ca] if ca is not None else cas, port)
    if isinstance(chosen, str):
        return chosen
    name, number = chosen
    where = f"{name} port {number}"
    umad = umads.get((name, number))
    if umad is None:
        if None in umads:  # a umad device whose files say nothing: it may be this one
            return f"libibumad cannot open {where}: {os.strerror(code)}"
        return (f"ib_umad offers no device for {where} ({host.umad_dir} has "
                f"{', '.join(sorted(f'{key[0]} port {key[1]}' for key in umads if key))}); "
                f"reload it: modprobe -r ib_umad && modprobe ib_umad")
    device = host.dev / "infiniband" / umad
    if not device.exists():
        return (f"{device} ({where}) is missing although ib_umad is loaded: udev did not "
                f"make it (udevadm trigger), or this container was not given /dev/infiniband")
    try:
        host.open_device(device)
    except PermissionError:
        return (f"permission denied opening {device} ({where}; {_ownership(device)}): run as "
                f"root, or install the udev rule {UDEV_RULE} and run in group ibsnmp (under "
                f"systemd the drop-in {SYSTEMD_DROP_IN} grants the device)")
    except OSError as exc:
        return f"cannot open {device} ({where}): {exc.strerror or exc}"
    return f"libibumad cannot open {where} ({device}): {os.strerror(code)}"


def _resolve(host: UmadHost, cas: Sequence[str], port: int) -> tuple[str, int] | str:
    """The (CA, port) libibumad opens for `port` among `cas`, or why there is none."""
    ports = {name: _ports(host, name) for name in cas}
    if port:
        for name in cas:
            if any(p.number == port for p in ports[name]):
                return name, port
        if len(cas) == 1:
            return f"{cas[0]} has no port {port}; its ports: {_numbers(ports[cas[0]])}"
        return f"no CA has a port {port}; " + "; ".join(
            f"{name} has {'port' if len(ports[name]) == 1 else 'ports'} {_numbers(ports[name])}"
            for name in cas)
    # libibumad takes the first CA with an active port, else the first with
    # a port it can use at all; a switch answers on its port 0.
    fallback: tuple[str, int] | None = None
    for name in cas:
        if _node_type(host, name) == SWITCH:
            return name, 0
        ranked = [(rank, p.number) for p in ports[name] if (rank := p.usable_rank()) is not None]
        if ranked:
            rank, number = min(ranked)
            if rank == 0:
                return name, number
            fallback = fallback or (name, number)
    if fallback is not None:
        return fallback
    seen = "; ".join(f"{name}: " + (", ".join(p.describe() for p in ports[name]) or "no ports")
                     for name in cas)
    return (f"no active InfiniBand port ({seen}): connect and enable a port of an InfiniBand "
            f"link, with a subnet manager on the fabric, or name the port")


def _ca_names(host: UmadHost) -> list[str]:
    """The devices libibumad lists, by name: those of an InfiniBand node type
    (or whose type cannot be read)."""
    names = _listdir(host.devices_dir)
    return [n for n in names if _node_type(host, n) in (None, *INFINIBAND_NODE_TYPES)]


def _umad_devices(host: UmadHost) -> dict[tuple[str, int] | None, str]:
    """ib_umad's devices (umadN) by the (CA, port) their ibdev and port files
    name; under None the last one whose files cannot be read."""
    found: dict[tuple[str, int] | None, str] = {}
    for entry in _listdir(host.umad_dir):
        if UMAD_NAME.fullmatch(entry) is None:
            continue  # abi_version, and issmN (the SM's device)
        ibdev = _read(host.umad_dir / entry / "ibdev")
        number = _integer(_read(host.umad_dir / entry / "port"))
        found[(ibdev, number) if ibdev and number is not None else None] = entry
    return found


def _ports(host: UmadHost, ca: str) -> list[_Port]:
    directory = host.devices_dir / ca / "ports"
    ports = []
    for entry in _listdir(directory):
        if not entry.isdigit():
            continue
        state, state_name = _coded(_read(directory / entry / "state"))
        physical, physical_name = _coded(_read(directory / entry / "phys_state"))
        ports.append(_Port(int(entry), state, state_name, physical, physical_name,
                           _read(directory / entry / "link_layer")))
    return sorted(ports, key=lambda p: p.number)


def _node_type(host: UmadHost, ca: str) -> int | None:
    return _coded(_read(host.devices_dir / ca / "node_type"))[0]


def _coded(text: str | None) -> tuple[int | None, str | None]:
    """sysfs's `4: ACTIVE` as (4, "ACTIVE")."""
    if text is None:
        return None, None
    code, _, name = text.partition(":")
    return _integer(code), name.strip() or None


def _integer(text: str | None) -> int | None:
    try:
        return int(text, 0) if text is not None else None
    except ValueError:
        return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def _listdir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _listed(cas: Sequence[str]) -> str:
    return ("CA " if len(cas) == 1 else "CAs ") + ", ".join(cas)


def _numbers(ports: Sequence[_Port]) -> str:
    return ", ".join(str(p.number) for p in ports) or "none"


def _ownership(path: Path) -> str:
    """`owner root, group rdma, mode crw-rw----`, names where the system knows them."""
    try:
        st = path.stat()
    except OSError as exc:
        return f"cannot stat: {exc.strerror}"
    try:
        owner = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        owner = str(st.st_uid)
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    return f"owner {owner}, group {group}, mode {stat.filemode(st.st_mode)}"

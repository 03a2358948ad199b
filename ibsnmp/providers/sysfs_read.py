"""Reading `/sys/class/infiniband` in the kernel's own formats (drivers/infiniband/core/sysfs.c).

`SysfsReader.read` returns every device as a DeviceReading of PortReadings: kernel codes and
raw values, None where unknown; `parse_rate` and `parse_guid` parse single files. Counters
are the PMA's own fields, unconverted (data in 4-octet words); the extended ones are marked
wide only where the kernel shows the unicast_/multicast_ files. Reading never raises: a value
that cannot be read keeps its last good value (else None), each failure logged once. Slow
files and the GID and P_Key tables are re-read every `table_refresh` s, spread over polls.
Reference: docs/providers.md, 'A host: sysfs' (every file, its format and meaning).
"""

from __future__ import annotations

import errno
import logging
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from ibsnmp.fabric.counters import EXTENDED_NAMES
from ibsnmp.fabric.iba import LinkSpeed, LinkSpeedExt, LinkWidth, parse_gid

__all__ = [
    "COUNTER_FILES",
    "HW_COUNTERS",
    "Rate",
    "PortReading",
    "DeviceReading",
    "SysfsReader",
    "parse_rate",
    "parse_guid",
]

log = logging.getLogger("ibsnmp.providers.sysfs")

DEFAULT_TABLE_REFRESH_S = 60.0

# counters/<file> -> the counters.PortCounters field (or, for the four
# PortCountersExtended-only counters, the name model.MeasuredCounters keeps
# them under; PMA-MIB has no object for those, nor for PortXmitWait).
COUNTER_FILES: dict[str, str] = {
    "symbol_error": "symbol_error_counter",
    "link_error_recovery": "link_error_recovery_counter",
    "link_downed": "link_downed_counter",
    "port_rcv_errors": "port_rcv_errors",
    "port_rcv_remote_physical_errors": "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors": "port_rcv_switch_relay_errors",
    "port_xmit_discards": "port_xmit_discards",
    "port_xmit_constraint_errors": "port_xmit_constraint_errors",
    "port_rcv_constraint_errors": "port_rcv_constraint_errors",
    "local_link_integrity_errors": "local_link_integrity_errors",
    "excessive_buffer_overrun_errors": "excessive_buffer_overrun_errors",
    "VL15_dropped": "vl15_dropped",
    "port_xmit_data": "port_xmit_data",
    "port_rcv_data": "port_rcv_data",
    "port_xmit_packets": "port_xmit_pkts",
    "port_rcv_packets": "port_rcv_pkts",
    "port_xmit_wait": "port_xmit_wait",
    "unicast_xmit_packets": "unicast_xmit_pkts",
    "unicast_rcv_packets": "unicast_rcv_pkts",
    "multicast_xmit_packets": "multicast_xmit_pkts",
    "multicast_rcv_packets": "multicast_rcv_pkts",
}

# The counters read from PortCountersExtended when the unicast files are there.
_WIDE = frozenset(EXTENDED_NAMES)
_NOT_WIDE: frozenset[str] = frozenset()

# hw_counters/<file> -> the PortCounters field it is, used only where
# counters/ has no value for that field.  Only counters that mean exactly
# the PMA counter map: rxe (soft RoCE, no PMA) counts every packet it sends
# and receives.  The rest are transport (QP) statistics with no PMA-MIB
# object (mlx5's out_of_buffer, rnr_nak_retry_err, duplicate_request ...,
# bnxt_re's unicast-only rx_pkts) and are not read.
HW_COUNTERS: dict[str, str] = {
    "sent_pkts": "port_xmit_pkts",
    "rcvd_pkts": "port_rcv_pkts",
}


class Rate(NamedTuple):
    """The active width and speed a `rate` file names, as PortInfo codes.
    FDR10 (a Mellanox extension) is LinkSpeedActive QDR in PortInfo, and an
    extended speed (FDR and faster) has LinkSpeedActive QDR beside it, as
    ConnectX ports report it."""

    width: LinkWidth
    speed: LinkSpeed
    speed_ext: LinkSpeedExt


_WIDTHS = {1: LinkWidth.X1, 2: LinkWidth.X2, 4: LinkWidth.X4, 8: LinkWidth.X8, 12: LinkWidth.X12}
_NO_EXT = LinkSpeedExt(0)
_SPEEDS: dict[str, tuple[LinkSpeed, LinkSpeedExt]] = {
    "": (LinkSpeed.SDR, _NO_EXT),  # kernels before 6.x print no name for SDR: "10 Gb/sec (4X)"
    "SDR": (LinkSpeed.SDR, _NO_EXT),
    "DDR": (LinkSpeed.DDR, _NO_EXT),
    "QDR": (LinkSpeed.QDR, _NO_EXT),
    "FDR10": (LinkSpeed.QDR, _NO_EXT),
    "FDR": (LinkSpeed.QDR, LinkSpeedExt.FDR),
    "EDR": (LinkSpeed.QDR, LinkSpeedExt.EDR),
    "HDR": (LinkSpeed.QDR, LinkSpeedExt.HDR),
    "NDR": (LinkSpeed.QDR, LinkSpeedExt.NDR),
}
_RATE = re.compile(rb"\s*\d+(?:\.\d+)? Gb/sec \((\d+)X ?([A-Z0-9]*)\)\s*")


def parse_rate(data: bytes) -> Rate:
    """`100 Gb/sec (4X EDR)` -> Rate(X4, QDR, EDR); ValueError for anything
    else (an unknown width or speed, such as XDR, which PortInfo cannot
    name)."""
    match = _RATE.fullmatch(data)
    if match is None:
        raise ValueError(f"not a rate: {data!r}")
    width = _WIDTHS.get(int(match[1]))
    speed = _SPEEDS.get(match[2].decode())
    if width is None or speed is None:
        raise ValueError(f"width or speed PortInfo cannot name: {data!r}")
    return Rate(width, *speed)


def parse_guid(data: bytes) -> int:
    """`0c42:a103:0017:c078` -> 0x0c42a1030017c078."""
    groups = data.strip().split(b":")
    if len(groups) != 4 or any(len(g) != 4 for g in groups):
        raise ValueError(f"not a GUID: {data!r}")
    return int(b"".join(groups), 16)


def _code(data: bytes) -> int:
    """`4: ACTIVE` -> 4."""
    return int(data.split(b":", 1)[0])


def _hex(data: bytes) -> int:
    return int(data, 16)


def _dec(data: bytes) -> int:
    return int(data)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace").rstrip("\n")


def _word(data: bytes) -> str:
    return data.decode("utf-8", "replace").strip()


def _gid(data: bytes) -> int:
    if len(data) >= 39 and data[4:5] == b":":  # the kernel's full form (%pI6)
        return int(data[:39].replace(b":", b""), 16)
    return parse_gid(data.decode().strip())


class PortReading(NamedTuple):
    """One port as read: kernel codes and raw values, None where unknown.
    `counters` maps MeasuredCounters names to raw values (empty: no PMA);
    `wide` names those read as 64-bit values (MeasuredCounters.wide)."""

    num: int
    state: int | None
    phys_state: int | None
    lid: int | None
    sm_lid: int | None
    sm_sl: int | None
    lmc: int | None
    cap_mask: int | None
    rate: Rate | None
    link_layer: str | None
    gids: tuple[int, ...]
    pkeys: tuple[int, ...]
    counters: dict[str, int]
    wide: frozenset[str] = _NOT_WIDE


class DeviceReading(NamedTuple):
    """One device (`mlx5_0`) as read."""

    name: str
    node_guid: int | None
    sys_image_guid: int | None
    node_type: int | None
    node_desc: str | None
    fw_ver: str | None
    hca_type: str | None
    board_id: str | None
    hw_rev: int | None
    pci_vendor: int | None
    pci_device: int | None
    ports: tuple[PortReading, ...]


# ports/<n>/<file>: PortReading fields state .. link_layer, in order.
_PORT_ATTRS: tuple[tuple[str, Callable[[bytes], Any]], ...] = (
    ("state", _code),
    ("phys_state", _code),
    ("lid", _hex),
    ("sm_lid", _hex),
    ("sm_sl", _dec),
    ("lid_mask_count", _dec),
    ("cap_mask", _hex),
    ("rate", parse_rate),
    ("link_layer", _word),
)
# <dev>/<file> read every poll, then the ones read with the tables.
_DEVICE_FAST: tuple[tuple[str, Callable[[bytes], Any]], ...] = (
    ("node_guid", parse_guid),
    ("sys_image_guid", parse_guid),
    ("node_type", _code),
    ("node_desc", _text),
)
_DEVICE_SLOW: tuple[tuple[str, Callable[[bytes], Any]], ...] = (
    ("fw_ver", _word),
    ("hca_type", _word),
    ("board_id", _word),
    ("hw_rev", _hex),
    ("device/vendor", _hex),
    ("device/device", _hex),
)
# Failures that mean "this device has no PMA" rather than "the file broke".
_NO_PMA_ERRNOS = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENODATA})
_READ_SIZE = 4096
_FAILED = object()


def _natural(name: str) -> tuple[Any, ...]:
    """mlx5_2 before mlx5_10."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def _numbered(directory: str) -> list[tuple[int, str]]:
    """(n, path) of the entries named by a number, in order; [] if missing."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted((int(name), f"{directory}/{name}") for name in names if name.isdigit())


def _listing(directory: str, before: list[str]) -> list[str]:
    """The paths of a GID or P_Key table directory (entries 0..n-1), in
    order; the paths listed before if the listing did not grow (a table
    keeps its size; entries that vanished keep their last values)."""
    names = _names(directory)
    if names is None or len(names) <= len(before):
        return before
    return [path for _, path in _numbered(directory)]


def _names(directory: str) -> list[str] | None:
    try:
        return os.listdir(directory)
    except OSError:
        return None


class _PortPlan:
    """The paths of one port, listed when its device is (re)planned, and
    what was last read of its tables.  A re-listing keeps the paths of
    files that vanished since (their last values stay)."""

    __slots__ = ("num", "dir", "attrs", "counters", "wide", "hw", "gid_paths", "pkey_paths", "gids", "pkeys",
                 "tables_at", "key")

    def __init__(self, num: int, directory: str, before: _PortPlan | None = None) -> None:
        self.num = num
        self.dir = directory
        self.attrs = [f"{directory}/{name}" for name, _ in _PORT_ATTRS]
        self.counters: list[tuple[str, str]] = self._files(f"{directory}/counters", COUNTER_FILES, before.counters if before else [])
        self.wide = _WIDE if any(name == "unicast_xmit_pkts" for name, _ in self.counters) else _NOT_WIDE
        self.hw: list[tuple[str, str]] = self._files(f"{directory}/hw_counters", HW_COUNTERS, before.hw if before else [])
        self.gid_paths: list[str] = _listing(f"{directory}/gids", before.gid_paths if before else [])
        self.pkey_paths: list[str] = _listing(f"{directory}/pkeys", before.pkey_paths if before else [])
        self.gids: tuple[int, ...] = before.gids if before else ()
        self.pkeys: tuple[int, ...] = before.pkeys if before else ()
        self.tables_at: float | None = before.tables_at if before else None  # when the tables were read
        self.key: tuple[Any, ...] | None = before.key if before else None  # (state, lid, sm_lid) then

    @staticmethod
    def _files(directory: str, known: dict[str, str], before: list[tuple[str, str]]) -> list[tuple[str, str]]:
        names = _names(directory) or []
        files = [(known[n], f"{directory}/{n}") for n in sorted(names) if n in known]
        return files if len(files) >= len(before) else before


class _DevicePlan:
    __slots__ = ("name", "dir", "fast", "slow", "static", "ports", "planned_at")

    def __init__(self, name: str, directory: str) -> None:
        self.name = name
        self.dir = directory
        self.fast = [f"{directory}/{name}" for name, _ in _DEVICE_FAST]
        self.slow = [f"{directory}/{name}" for name, _ in _DEVICE_SLOW]
        self.static: tuple[Any, ...] = (None,) * len(_DEVICE_SLOW)
        self.ports: list[_PortPlan] = []
        self.planned_at: float | None = None  # when the device was listed


class SysfsReader:
    """Reads every InfiniBand device under `root` (see the module text).
    `read()` never raises for what it finds; it returns the devices in
    natural name order (mlx5_2 before mlx5_10)."""

    def __init__(self, root: str | Path, *, table_refresh: float = DEFAULT_TABLE_REFRESH_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.root = str(root).rstrip("/") or "/"
        self.table_refresh = table_refresh
        self._clock = clock
        self._devices: dict[str, _DevicePlan] = {}
        self._last: dict[str, Any] = {}  # path -> last good value
        self._said: set[tuple[str, str]] = set()

    # -- logging once -----------------------------------------------------------

    def _once(self, key: str, kind: str, message: str, *args: Any, level: int = logging.WARNING) -> None:
        if (key, kind) not in self._said:
            self._said.add((key, kind))
            log.log(level, message, *args)

    def _where(self, path: str) -> str:
        return path[len(self.root) + 1:] if path.startswith(self.root + "/") else path

    # -- one value ----------------------------------------------------------------

    def _get(self, path: str, parse: Callable[[bytes], Any], pma: str | None = None,
             optional: bool = False) -> Any:
        """The parsed content of `path`, else its last good value (or None).
        `pma`: the port directory, for a counter (a missing PMA is logged
        once per port, not per file).  `optional`: a file many devices do
        not have (fw_ver, device/vendor ...): its absence is not a problem."""
        try:
            fd = os.open(path, os.O_RDONLY)
            try:
                data = os.read(fd, _READ_SIZE)
            finally:
                os.close(fd)
            value = parse(data)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            return self._failed(path, exc, pma, optional)
        self._last[path] = value
        return value

    def _failed(self, path: str, exc: Exception, pma: str | None, optional: bool = False) -> Any:
        last = self._last.get(path)
        keep = "; keeping the last value read" if last is not None else ""
        if isinstance(exc, FileNotFoundError):
            level = logging.DEBUG if optional and last is None else logging.WARNING
            self._once(path, "missing", "sysfs: %s is missing%s", self._where(path), keep, level=level)
        elif pma is not None and (
            (isinstance(exc, OSError) and exc.errno in _NO_PMA_ERRNOS)
            or (isinstance(exc, ValueError) and "N/A" in str(exc))
        ):
            why = exc.strerror if isinstance(exc, OSError) else "N/A (no PMA)"
            self._once(pma, "no-pma", "sysfs: %s/counters: %s: the device has no PMA here; "
                       "PMA-MIB serves no counter it does not report", self._where(pma), why)
        elif isinstance(exc, OSError):
            self._once(path, f"errno-{exc.errno}", "sysfs: %s: %s%s", self._where(path), exc.strerror, keep)
        else:
            self._once(path, "parse", "sysfs: %s: %s%s", self._where(path), exc, keep)
        return last

    def _table(self, paths: list[str], parse: Callable[[bytes], int], last: tuple[int, ...]) -> tuple[int, ...]:
        """A GID or P_Key table: entry i of `paths`; 0 for an entry without
        data; the last value read where the file vanished."""
        out: list[int] = []
        append = out.append
        open_, read, close, flags = os.open, os.read, os.close, os.O_RDONLY
        for path in paths:
            try:
                fd = open_(path, flags)
                try:
                    data = read(fd, 128)
                finally:
                    close(fd)
                append(parse(data))
            except FileNotFoundError:
                i = len(out)
                append(last[i] if i < len(last) else 0)
                self._once(path, "missing", "sysfs: %s is missing; keeping the last value read",
                           self._where(path))
            except (OSError, ValueError):
                append(0)
        return tuple(out)

    # -- devices and ports ---------------------------------------------------------

    def read(self, *, full: bool = False) -> tuple[DeviceReading, ...]:
        """Every device now: its GUIDs, type and description, and each port's
        nine attributes and counters.  `full`: re-read every table and slow
        file and re-list the directories too; the next refreshes are then
        spread evenly over `table_refresh` (one port's tables at a time), so
        no later poll reads them all at once.  Otherwise each device is
        re-listed, its slow files and each port's tables re-read,
        `table_refresh` seconds after the last time (or at once for a port
        whose state, LID or SM LID changed: an SM that programs a port
        changes its tables)."""
        now = self._clock()
        names = _names(self.root)
        if names is None:
            self._once(self.root, "root", "sysfs: %s cannot be listed", self.root)
            names = []
        listed = set(names)
        for gone in [name for name in self._devices if name not in listed]:
            del self._devices[gone]
            log.warning("sysfs: device %s is gone", gone)
        readings = []
        for name in sorted(names, key=_natural):
            plan = self._devices.get(name)
            if plan is None:
                plan = self._devices[name] = _DevicePlan(name, f"{self.root}/{name}")
            if full or plan.planned_at is None or now - plan.planned_at >= self.table_refresh:
                self._plan(plan, now)
            readings.append(self._device(plan, now, full))
        if full:
            self._stagger(now)
        return tuple(readings)

    def _stagger(self, now: float) -> None:
        """Spread the next refreshes of devices and of port tables evenly."""
        period = self.table_refresh
        plans = list(self._devices.values())
        for i, plan in enumerate(plans):
            plan.planned_at = now - period * i / len(plans)
        ports = [port for plan in plans for port in plan.ports]
        for i, port in enumerate(ports):
            port.tables_at = now - period * i / len(ports)

    def _plan(self, plan: _DevicePlan, now: float) -> None:
        old = {port.num: port for port in plan.ports}
        ports = []
        for num, directory in _numbered(f"{plan.dir}/ports"):
            port = _PortPlan(num, directory, old.get(num))
            if not port.counters and not port.hw:
                self._once(directory, "no-pma", "sysfs: %s has no counters: the device has no PMA here; "
                           "PMA-MIB serves no counters for it", self._where(directory), level=logging.INFO)
            ports.append(port)
        if not ports and plan.ports:  # the ports directory vanished: keep the ports read
            ports = plan.ports
        plan.ports = ports
        plan.static = tuple(
            self._get(path, parse, optional=True) for path, (_, parse) in zip(plan.slow, _DEVICE_SLOW)
        )
        plan.planned_at = now

    def _device(self, plan: _DevicePlan, now: float, full: bool) -> DeviceReading:
        fast = [self._get(path, parse) for path, (_, parse) in zip(plan.fast, _DEVICE_FAST)]
        ports = tuple(self._port(port, now, full) for port in plan.ports)
        return DeviceReading._make((plan.name, *fast, *plan.static, ports))

    def _port(self, plan: _PortPlan, now: float, full: bool) -> PortReading:
        get = self._get
        attrs = [get(path, parse) for path, (_, parse) in zip(plan.attrs, _PORT_ATTRS)]
        key = (attrs[0], attrs[2], attrs[3])  # state, lid, sm_lid
        if full or key != plan.key or plan.tables_at is None or now - plan.tables_at >= self.table_refresh:
            plan.gids = self._table(plan.gid_paths, _gid, plan.gids)
            plan.pkeys = self._table(plan.pkey_paths, _hex, plan.pkeys)
            plan.tables_at = now
            plan.key = key
        counters: dict[str, int] = {}
        directory = plan.dir
        for field, path in plan.counters:
            value = get(path, _dec, directory)
            if value is not None:
                counters[field] = value
        for field, path in plan.hw:
            if field not in counters:
                value = get(path, _dec, directory)
                if value is not None:
                    counters[field] = value
        return PortReading._make((plan.num, *attrs, plan.gids, plan.pkeys, counters, plan.wide))

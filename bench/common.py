"""Helpers for the ibsnmp benchmarks: processes, free ports, a raw SNMPv2c client.

Everything here binds to 127.0.0.1 only, and every process started through
`Processes` is ended (SIGTERM, then SIGKILL) when its `with` block exits.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import re
import signal
import socket
import statistics
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pyasn1.codec.ber import decoder, encoder
from pysnmp.proto import api

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = ROOT / ".venv" / "bin"
LOCALHOST = "127.0.0.1"

Oid = tuple[int, ...]

_V2C = api.PROTOCOL_MODULES[api.SNMP_VERSION_2C]


# -- small utilities ------------------------------------------------------------------------


def free_udp_port() -> int:
    """A UDP port on 127.0.0.1 that nothing is bound to right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((LOCALHOST, 0))
        return sock.getsockname()[1]


def parse_oid(text: str) -> Oid:
    return tuple(int(part) for part in text.strip().strip(".").split("."))


def oid_text(oid: Sequence[int]) -> str:
    return "." + ".".join(map(str, oid))


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def vm_status(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM... of a process, in kB, from /proc/<pid>/status."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
        for line in fh:
            if line.startswith("Vm"):
                key, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    out[key] = int(parts[0])
    return out


_LIBC = ctypes.CDLL(None, use_errno=True)


def cpu_seconds(pid: int) -> float:
    """CPU time a process has used, all its threads (exited ones too): its CPU
    clock (clock_getcpuclockid, in nanoseconds), or where that is not to be
    had, user + system time from /proc/<pid>/stat (in clock ticks: 10 ms,
    too coarse for a per-packet figure)."""
    clock_id = ctypes.c_int()
    if _LIBC.clock_getcpuclockid(pid, ctypes.byref(clock_id)) == 0:
        try:
            return time.clock_gettime(clock_id.value)
        except OSError:
            pass
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rpartition(")")[2].split()
    # After the command name: state is field 3, utime and stime fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def udp_drops(port: int) -> int:
    """Datagrams the kernel dropped at the UDP sockets bound to local `port`
    (their receive buffer was full): /proc/net/udp's and udp6's "drops"."""
    dropped = 0
    for table in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            with open(table, encoding="ascii") as fh:
                next(fh)
                for line in fh:
                    fields = line.split()
                    if int(fields[1].rpartition(":")[2], 16) == port:
                        dropped += int(fields[-1])
        except FileNotFoundError:
            continue
    return dropped


# -- processes ------------------------------------------------------------------------------


class Proc:
    """One started process, its output collected line by line with timestamps."""

    def __init__(self, name: str, argv: Sequence[str], env: dict[str, str] | None = None,
                 cwd: str | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.lines: list[tuple[float, str]] = []
        self._cond = threading.Condition()
        self.started_at = time.monotonic()
        self.popen = subprocess.Popen(
            self.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, cwd=cwd, start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for raw in self.popen.stdout:  # drains until EOF so the pipe never fills
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self._cond:
                self.lines.append((time.monotonic(), line))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for_line(self, pattern: str, timeout: float) -> float:
        """Seconds from start until a line matching `pattern` (regex) appeared."""
        return self._await(pattern, timeout, 0)[1] - self.started_at

    def next_match(self, pattern: str, timeout: float, after: int) -> tuple[int, re.Match[str]]:
        """The first line from the `after`-th on that matches `pattern`: its
        number and the match (number + 1 is where to look for the next)."""
        number, _, match = self._await(pattern, timeout, after)
        return number, match

    def _await(self, pattern: str, timeout: float,
               seen: int) -> tuple[int, float, re.Match[str]]:
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for number in range(seen, len(self.lines)):
                    stamp, line = self.lines[number]
                    match = regex.search(line)
                    if match:
                        return number, stamp, match
                seen = len(self.lines)
                if self.popen.poll() is not None and not self._reader.is_alive():
                    raise RuntimeError(f"{self.name} exited (code {self.popen.returncode}) "
                                       f"before printing {pattern!r}:\n{self.tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{self.name}: no line matching {pattern!r} "
                                       f"within {timeout:.0f} s:\n{self.tail()}")
                self._cond.wait(min(left, 0.05))

    def tail(self, count: int = 15) -> str:
        with self._cond:
            return "\n".join("    " + line for _, line in self.lines[-count:])

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM this process (and its session), SIGKILL if it lingers."""
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.popen.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.popen.wait(5)
        else:  # its own children, if any, must not outlive it
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._reader.join(2)
        return self.popen.returncode


class Processes:
    """Context manager that stops, in reverse order, every process it started."""

    def __init__(self) -> None:
        self._procs: list[Proc] = []

    def start(self, name: str, argv: Sequence[str], **kwargs: Any) -> Proc:
        proc = Proc(name, argv, **kwargs)
        self._procs.append(proc)
        return proc

    def stop(self, proc: Proc) -> None:
        proc.stop()
        if proc in self._procs:
            self._procs.remove(proc)

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, *exc: Any) -> None:
        while self._procs:
            proc = self._procs.pop()
            try:
                proc.stop()
            except Exception as err:  # keep cleaning up the others
                print(f"warning: could not stop {proc.name} (pid {proc.pid}): {err}")


def start_ibsnmp(procs: Processes, fabric: str, *, seed: int = 1, port: int | None = None,
                 timeout: float = 60.0, extra: Sequence[str] = (),
                 name: str = "ibsnmp", launcher: Sequence[str] = ()) -> tuple[Proc, int, float]:
    """Start `ibsnmp run` (with `extra` arguments) and wait for its 'ibsnmp: serving' line.

    `launcher`: a command that takes the console script's arguments after
    `--` and runs it (bench/heap_launcher.py), in place of the script.
    Returns the process, its port and the start-up time in seconds.
    """
    port = port or free_udp_port()
    # A state directory of its own: a bench run leaves nothing behind.
    state_dir = tempfile.mkdtemp(prefix="ibsnmp-bench-state-")
    atexit.register(shutil.rmtree, state_dir, True)
    command = [*launcher, "--"] if launcher else [str(VENV_BIN / "ibsnmp")]
    argv = [*command, "run", "--listen", f"{LOCALHOST}:{port}",
            "--community", "public", "--fabric", fabric, "--seed", str(seed),
            "--state-dir", state_dir, *extra]
    proc = procs.start(f"{name}[{fabric}]", argv)
    startup = proc.wait_for_line(r"^ibsnmp: serving", timeout)
    return proc, port, startup


# -- a raw SNMPv2c client over one UDP socket --------------------------------------------------

# BER identifiers of the SNMP value types (the byte on the wire).
INTEGER, OCTET_STRING, NULL, OBJECT_IDENTIFIER = 0x02, 0x04, 0x05, 0x06
IP_ADDRESS, COUNTER32, GAUGE32, TIMETICKS, OPAQUE, COUNTER64 = 0x40, 0x41, 0x42, 0x43, 0x44, 0x46
NO_SUCH_OBJECT, NO_SUCH_INSTANCE, END_OF_MIB_VIEW = 0x80, 0x81, 0x82

Varbind = tuple[Oid, int, Any]  # (OID, BER tag of the value, int | bytes | Oid | None)


class SnmpError(RuntimeError):
    pass


def _tlv(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, first value byte, end) of the BER TLV at `pos`."""
    tag = data[pos]
    length = data[pos + 1]
    pos += 2
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(data[pos:pos + count], "big")
        pos += count
    return tag, pos, pos + length


def _decode_oid(raw: bytes) -> Oid:
    arcs: list[int] = []
    value = 0
    for byte in raw:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    first = arcs[0]
    head = (0, first) if first < 40 else (1, first - 40) if first < 80 else (2, first - 80)
    return head + tuple(arcs[1:])


def decode_response(data: bytes) -> tuple[int, int, int, list[Varbind]]:
    """(request id, error status, error index, varbinds) of an SNMPv2c response.

    A small BER reader for the few types SNMP uses: pyasn1 spends ~100 us a
    varbind, which would make recording a 200,000-varbind walk take minutes.
    `check_decoder` compares it with pysnmp's decoder.
    """
    _t, vpos, _e = _tlv(data, 0)  # Message SEQUENCE
    _t, vpos, vend = _tlv(data, vpos)  # version
    _t, vpos, vend = _tlv(data, vend)  # community
    _t, vpos, _e = _tlv(data, vend)  # the PDU
    fields = []
    for _ in range(3):
        _t, fpos, fend = _tlv(data, vpos)
        fields.append(int.from_bytes(data[fpos:fend], "big", signed=True))
        vpos = fend
    _t, vpos, list_end = _tlv(data, vpos)  # VarBindList
    varbinds: list[Varbind] = []
    while vpos < list_end:
        _t, bpos, bend = _tlv(data, vpos)  # VarBind
        _t, opos, oend = _tlv(data, bpos)
        oid = _decode_oid(data[opos:oend])
        vtag, xpos, xend = _tlv(data, oend)
        raw = data[xpos:xend]
        if vtag == INTEGER:
            value: Any = int.from_bytes(raw, "big", signed=True)
        elif vtag in (COUNTER32, GAUGE32, TIMETICKS, COUNTER64):
            value = int.from_bytes(raw, "big")
        elif vtag == OBJECT_IDENTIFIER:
            value = _decode_oid(raw)
        elif vtag in (OCTET_STRING, IP_ADDRESS, OPAQUE):
            value = bytes(raw)
        else:
            value = None  # NULL and the exceptions
        varbinds.append((oid, vtag, value))
        vpos = bend
    return fields[0], fields[1], fields[2], varbinds


def _response_id(data: bytes) -> int | None:
    try:
        _t, pos, _e = _tlv(data, 0)
        _t, pos, end = _tlv(data, pos)  # version
        _t, pos, end = _tlv(data, end)  # community
        _t, pos, _e = _tlv(data, end)  # PDU
        _t, pos, end = _tlv(data, pos)  # request-id
        return int.from_bytes(data[pos:end], "big", signed=True)
    except (IndexError, ValueError):
        return None


class SnmpClient:
    """Blocking SNMPv2c GET/GETNEXT/GETBULK over a raw UDP socket.

    Requests are encoded with pysnmp's protocol API and pyasn1's BER
    encoder; responses are read with `decode_response`. No engine, no
    asyncio: a request costs one sendto and one recv, so timings show the
    agent, not the manager.
    """

    def __init__(self, port: int, community: str = "public", host: str = LOCALHOST,
                 timeout: float = 5.0, retries: int = 2) -> None:
        self.address = (host, port)
        self.community = community
        self.timeout = timeout
        self.retries = retries
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((LOCALHOST, 0))
        self.sock.connect(self.address)
        self.sock.settimeout(timeout)
        self._request_id = 1000
        self.requests = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> SnmpClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def next_request_id(self) -> int:
        self._request_id = self._request_id % 2_000_000_000 + 1
        return self._request_id

    def encode(self, kind: str, oids: Sequence[Oid], request_id: int, *,
               max_repetitions: int = 10) -> bytes:
        if kind == "get":
            pdu = _V2C.GetRequestPDU()
        elif kind == "next":
            pdu = _V2C.GetNextRequestPDU()
        elif kind == "bulk":
            pdu = _V2C.GetBulkRequestPDU()
        else:
            raise ValueError(kind)
        if kind == "bulk":
            _V2C.apiBulkPDU.set_defaults(pdu)
            _V2C.apiBulkPDU.set_non_repeaters(pdu, 0)
            _V2C.apiBulkPDU.set_max_repetitions(pdu, max_repetitions)
        else:
            _V2C.apiPDU.set_defaults(pdu)
        _V2C.apiPDU.set_request_id(pdu, request_id)
        _V2C.apiPDU.set_varbinds(pdu, [(oid, _V2C.Null("")) for oid in oids])
        msg = _V2C.Message()
        _V2C.apiMessage.set_defaults(msg)
        _V2C.apiMessage.set_community(msg, self.community)
        _V2C.apiMessage.set_pdu(msg, pdu)
        return encoder.encode(msg)

    def exchange(self, data: bytes, request_id: int) -> bytes:
        """Send one request; return the response carrying the same request id."""
        for _attempt in range(self.retries + 1):
            self.sock.send(data)
            self.requests += 1
            deadline = time.monotonic() + self.timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.sock.settimeout(left)
                try:
                    answer = self.sock.recv(65535)
                except (TimeoutError, ConnectionRefusedError):
                    break
                if _response_id(answer) == request_id:
                    return answer
        raise SnmpError(f"no answer from {self.address[0]}:{self.address[1]} "
                        f"after {self.retries + 1} tries")

    def request(self, kind: str, oids: Sequence[Oid], **kwargs: Any) -> list[Varbind]:
        request_id = self.next_request_id()
        answer = self.exchange(self.encode(kind, oids, request_id, **kwargs), request_id)
        _rid, status, index, varbinds = decode_response(answer)
        if status:
            raise SnmpError(f"{kind} {[oid_text(o) for o in oids][:3]}: error-status {status} "
                            f"index {index}")
        return varbinds

    def get_next(self, oid: Oid) -> Varbind:
        return self.request("next", [oid])[0]

    def walk(self, root: Oid, max_repetitions: int = 50,
             limit: int = 5_000_000) -> Iterator[Varbind]:
        """GETBULK walk of the subtree under `root` (at most `limit` varbinds)."""
        oid = root
        depth = len(root)
        count = 0
        while count < limit:
            varbinds = self.request("bulk", [oid], max_repetitions=max_repetitions)
            if not varbinds:
                return
            for name, tag, value in varbinds:
                if name[:depth] != root or tag == END_OF_MIB_VIEW:
                    return
                if name <= oid:
                    raise SnmpError(f"OID not increasing: {oid_text(name)} after {oid_text(oid)}")
                yield name, tag, value
                oid = name
                count += 1
                if count >= limit:
                    return


def check_decoder(port: int, root: Oid, community: str = "public") -> int:
    """Decode one GETBULK answer with both decoders; raise if they differ."""
    with SnmpClient(port, community) as client:
        request_id = client.next_request_id()
        answer = client.exchange(client.encode("bulk", [root], request_id, max_repetitions=50),
                                 request_id)
    mine = decode_response(answer)[3]
    msg, _ = decoder.decode(answer, asn1Spec=_V2C.Message())
    theirs = _V2C.apiPDU.get_varbinds(_V2C.apiMessage.get_pdu(msg))
    if len(mine) != len(theirs):
        raise AssertionError("decoder: varbind counts differ")
    for (oid, tag, value), (name, asn1) in zip(mine, theirs, strict=True):
        if oid != tuple(name) or tag != asn1.tagSet[0][0] + asn1.tagSet[0][1] + asn1.tagSet[0][2]:
            raise AssertionError(f"decoder: {oid_text(oid)} differs from pysnmp's")
        if isinstance(value, bytes):
            same = value == asn1.asOctets()
        elif isinstance(value, tuple):
            same = value == tuple(asn1)
        elif value is None:
            same = True
        else:
            same = value == int(asn1)
        if not same:
            raise AssertionError(f"decoder: value of {oid_text(oid)} differs from pysnmp's")
    return len(mine)


def wait_until_answers(port: int, oid: Oid, timeout: float, proc: Proc | None = None) -> float:
    """Poll with GETNEXT until the agent on `port` answers; seconds waited."""
    start = time.monotonic()
    deadline = start + timeout
    with SnmpClient(port, timeout=0.5, retries=0) as client:
        while True:
            if proc is not None and not proc.alive():
                raise RuntimeError(f"{proc.name} exited (code {proc.popen.returncode}):\n"
                                   f"{proc.tail()}")
            try:
                client.get_next(oid)
                return time.monotonic() - start
            except SnmpError:
                time.sleep(0.02)  # a refused port answers at once: do not spin
                if time.monotonic() > deadline:
                    detail = f":\n{proc.tail()}" if proc is not None else ""
                    raise TimeoutError(f"nothing answers on UDP {LOCALHOST}:{port} "
                                       f"after {timeout:.0f} s{detail}") from None


# -- .snmprec and snmpd.conf records ------------------------------------------------------------

_PRINTABLE = frozenset(range(0x20, 0x7F))

# snmpsim's tag is the sum of the BER tag's class, format and number, which
# for SNMP's primitive types is the identifier byte itself (Counter32 = 0x41 = 65).
SNMPREC_TAGS = {INTEGER: "2", OCTET_STRING: "4", OBJECT_IDENTIFIER: "6", IP_ADDRESS: "64",
                COUNTER32: "65", GAUGE32: "66", TIMETICKS: "67", OPAQUE: "68", COUNTER64: "70"}


def snmprec_line(oid: Oid, tag: int, value: Any) -> str:
    """One `OID|TAG|VALUE` line of snmpsim's .snmprec format (no newline).

    Octet strings are written as text only when every octet is printable
    ASCII and there is no leading or trailing blank (snmpsim strips lines);
    otherwise as `4x|<hex>`. IpAddress is `64x|<hex>` as snmpsim records it.
    """
    rec_tag = SNMPREC_TAGS.get(tag)
    if rec_tag is None:
        raise ValueError(f"{oid_text(oid)}: no .snmprec tag for BER type 0x{tag:02x}")
    text_oid = ".".join(map(str, oid))
    if tag in (OCTET_STRING, OPAQUE):
        if not value:
            return f"{text_oid}|{rec_tag}|"
        if all(b in _PRINTABLE for b in value) and value.strip() == value:
            return f"{text_oid}|{rec_tag}|{value.decode('ascii')}"
        return f"{text_oid}|{rec_tag}x|{value.hex()}"
    if tag == IP_ADDRESS:
        return f"{text_oid}|{rec_tag}x|{value.hex()}"
    if tag == OBJECT_IDENTIFIER:
        return f"{text_oid}|{rec_tag}|{'.'.join(map(str, value))}"
    return f"{text_oid}|{rec_tag}|{int(value)}"


# net-snmp's `override` knows integer, uinteger (Gauge32), counter, octet_str, object_id.
_OVERRIDE_TYPES = {INTEGER: "integer", GAUGE32: "uinteger", COUNTER32: "counter",
                   OCTET_STRING: "octet_str", OBJECT_IDENTIFIER: "object_id"}


def snmpd_override_line(oid: Oid, tag: int, value: Any) -> str | None:
    """An snmpd.conf `override` line serving the same value, or None if it cannot."""
    kind = _OVERRIDE_TYPES.get(tag)
    if kind is None:
        return None
    if kind == "octet_str":
        text = "0x" + value.hex() if value else '""'  # read_config_read_octet_string
    elif kind == "object_id":
        text = oid_text(value)
    else:
        text = str(int(value))
    return f"override {oid_text(oid)} {kind} {text}"


# What `override` lacks, as the nearest type it has: same name, same place in a
# walk, a value of about the same size (Counter64: its low 32 bits).
_NEAREST_OVERRIDE: dict[int, tuple[int, Callable[[Any], Any]]] = {
    COUNTER64: (COUNTER32, lambda value: value & 0xFFFFFFFF),
    IP_ADDRESS: (OCTET_STRING, bytes), OPAQUE: (OCTET_STRING, bytes)}


def nearest_override_line(oid: Oid, tag: int, value: Any) -> str:
    """An `override` line for the varbind, in the nearest type `override` has
    where it lacks the varbind's own (a walk of the same names in the same
    order, for a peer's speed; not its values)."""
    if tag == TIMETICKS:
        return f"override {oid_text(oid)} timeticks {int(value)}"
    kind, convert = _NEAREST_OVERRIDE.get(tag, (tag, lambda v: v))
    line = snmpd_override_line(oid, kind, convert(value))
    if line is None:
        raise ValueError(f"{oid_text(oid)}: no `override` type near BER type 0x{tag:02x}")
    return line


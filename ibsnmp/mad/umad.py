"""MADs through libibumad, the user-space MAD library every InfiniBand tool uses.

libibumad (rdma-core) is loaded with ctypes so that whatever provides its symbols answers: the
kernel's /dev/infiniband/umad* on a host, or ibsim's preloaded libumad2sim on a simulated
fabric. Timeouts and retries are kept here rather than handed to the kernel, so both behave the
same. A port that does not open is a PortOpenError whose message says why and what to do
(ibsnmp.mad.diagnose); what libibumad prints on stderr while a port opens is kept off the
terminal and logged at debug level.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import struct
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from ibsnmp.mad.attributes import (
    CLASS_PERF_MGT,
    CLASS_SUBN_DIRECTED_ROUTE,
    CLASS_SUBN_LID_ROUTED,
    MAD_HEADER,
    MAD_SIZE,
)
from ibsnmp.mad.c_stderr import call_capturing_stderr
from ibsnmp.mad.diagnose import UmadHost, explain_open_failure
from ibsnmp.mad.layout import LayoutError

LIBRARY = "libibumad.so.3"
CA_NAME_LEN = 20  # UMAD_CA_NAME_LEN
MAX_CAS = 32
# The general services QP and the well-known Q_Key GS MADs are sent with (IBA 13.5.3).
GSI_QP = 1
GSI_QKEY = 0x80010000
_TRANSACTION_ID = MAD_HEADER.by_name["TransactionID"]
# The kernel owns the top 32 bits of a transaction ID (they name the agent),
# so replies are matched on the low 32.
_TID_MASK = 0xFFFFFFFF
_TID_START = _TRANSACTION_ID.offset // 8
_TID_END = _TRANSACTION_ID.end // 8
_TID_STRUCT = struct.Struct({4: ">I", 8: ">Q"}[_TID_END - _TID_START])
# Where an answer carries the part of its transaction ID that is ours: the low 32 bits.
TID_OURS_START, TID_OURS_END = _TID_END - (_TID_MASK.bit_length() // 8), _TID_END
# The longest one umad_recv waits: nothing can wake a thread blocked in it (under
# ibsim no descriptor can be polled beside the port's), so a receive asked to
# wait longer waits in slices and looks between them whether the port is
# being closed (UmadPort.interrupt). Longer than a sweep's MAD timeout (0.2 s),
# so a sweep's receives stay one call each.
RECEIVE_SLICE_S = 0.25

log = logging.getLogger("ibsnmp.mad.umad")
_T = TypeVar("_T")


class UmadError(OSError):
    """libibumad refused a call, or no answer came in time."""


class MadTimeout(UmadError):
    """No answer within the timeout, after every retry."""


class PortClosing(UmadError):
    """The port is being closed: a send or receive after `UmadPort.interrupt`
    (or an SA call its worker interrupted, ibsnmp.sa.worker)."""

    def __init__(self, strerror: str = "the port is being closed") -> None:
        super().__init__(errno.ECANCELED, strerror)


class UmadInitError(UmadError):
    """umad_init failed (older libibumad: ib_umad's ABI version is unreadable)."""


class PortOpenError(UmadError):
    """A umad port that did not open: `errno` is libibumad's, the message
    (and str) says why and what to do, in one line."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(code, reason)

    def __str__(self) -> str:
        return str(self.strerror)


@dataclass(frozen=True)
class Address:
    """Where a MAD goes: a LID (0xFFFF for directed routes), a QP and its Q_Key."""

    lid: int
    qp: int = 0
    qkey: int = 0
    sl: int = 0


DIRECTED_ROUTE = Address(lid=0xFFFF)


def perf_address(lid: int) -> Address:
    return Address(lid=lid, qp=GSI_QP, qkey=GSI_QKEY)


def _quietly(function: Callable[..., _T], *args: object) -> _T:
    """`function(*args)` with what libibumad prints meanwhile moved to the debug log."""
    result, said = call_capturing_stderr(lambda: function(*args))
    if said:
        log.debug("libibumad: %s", said)
    return result


def _load() -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL(LIBRARY, use_errno=True)
    except OSError as exc:
        raise UmadError(f"cannot load {LIBRARY} (Debian package libibumad3): {exc}") from exc
    lib.umad_init.restype = ctypes.c_int
    lib.umad_get_cas_names.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.umad_open_port.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.umad_close_port.argtypes = [ctypes.c_int]
    lib.umad_register.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_uint8,
                                  ctypes.c_void_p]
    lib.umad_size.restype = ctypes.c_size_t
    lib.umad_get_mad.argtypes = [ctypes.c_void_p]
    lib.umad_get_mad.restype = ctypes.c_void_p
    lib.umad_set_addr.argtypes = [ctypes.c_void_p] + [ctypes.c_int] * 4
    lib.umad_status.argtypes = [ctypes.c_void_p]
    lib.umad_send.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
                              ctypes.c_int, ctypes.c_int]
    lib.umad_recv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int),
                              ctypes.c_int]
    if _quietly(lib.umad_init) < 0:
        raise UmadInitError(errno.EOPNOTSUPP, "umad_init failed")
    return lib


_lib: ctypes.CDLL | None = None


def library() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        _lib = _load()
    return _lib


def ca_names() -> list[str]:
    """The names of the channel adapters libibumad sees."""
    lib = library()
    buffer = ctypes.create_string_buffer(MAX_CAS * CA_NAME_LEN)
    count = _quietly(lib.umad_get_cas_names, buffer, MAX_CAS)
    if count < 0:
        raise UmadError(f"umad_get_cas_names failed ({count})")
    raw = buffer.raw
    return [raw[i * CA_NAME_LEN:(i + 1) * CA_NAME_LEN].split(b"\0", 1)[0].decode()
            for i in range(count)]


def with_transaction_id(mad: bytes, tid: int) -> bytes:
    if not 0 <= tid < 1 << _TRANSACTION_ID.width:
        raise LayoutError(f"a transaction ID has {_TRANSACTION_ID.width} bits: {tid}")
    return mad[:_TID_START] + tid.to_bytes(_TID_END - _TID_START, "big") + mad[_TID_END:]


class UserMadHead(ctypes.Structure):
    """The start of libibumad's `struct ib_user_mad` (<infiniband/umad.h>), which
    heads every buffer it sends or receives: `umad_status` returns its status."""

    _fields_ = [("agent_id", ctypes.c_uint32), ("status", ctypes.c_uint32),
                ("timeout_ms", ctypes.c_uint32), ("retries", ctypes.c_uint32),
                ("length", ctypes.c_uint32)]


class UmadPort:
    """One open port with agents for SMPs (both routings) and PerfMgt.

    `query` sends one MAD and waits for the answer with the same
    transaction ID; `send` and `receive` are the halves for callers that
    keep many MADs in flight (see `ibsnmp.mad.window`).
    """

    CLASSES: tuple[int, ...] = (CLASS_SUBN_DIRECTED_ROUTE, CLASS_SUBN_LID_ROUTED, CLASS_PERF_MGT)

    def __init__(self, ca: str | None = None, port: int = 0,
                 host: UmadHost = UmadHost()) -> None:
        """Open `port` of `ca` (None: libibumad's first CA; port 0: its first
        active port). PortOpenError if it does not open, its message found
        under `host`'s sysfs and /dev; UmadError without libibumad."""
        self._interrupted = False  # set by interrupt(), from any thread
        try:
            self._lib = library()
        except UmadInitError:
            code = errno.EOPNOTSUPP  # what a newer libibumad's umad_open_port says then
            raise PortOpenError(code, explain_open_failure(ca, port, code, host)) from None
        portid = _quietly(self._lib.umad_open_port, ca.encode() if ca else None, port)
        if portid < 0:
            raise PortOpenError(-portid, explain_open_failure(ca, port, -portid, host))
        self._portid = portid
        self._agents: dict[int, int] = {}
        try:
            for mgmt_class in self.CLASSES:
                agent = _quietly(self._lib.umad_register, portid, mgmt_class, 1, 0, None)
                if agent < 0:
                    raise UmadError(f"cannot register for management class {mgmt_class:#04x}")
                self._agents[mgmt_class] = agent
        except UmadError:
            self.close()
            raise
        self._umad_size = int(self._lib.umad_size())
        self._next_tid = (os.getpid() << 12) & _TID_MASK
        # One buffer each way, reused: libibumad copies a MAD out on send and
        # into the caller's buffer on receive, so none outlives its call. The
        # MADs are ctypes arrays over them: `.raw` copies in and out without a
        # foreign call.
        self._send_buffer = ctypes.create_string_buffer(self._umad_size + MAD_SIZE)
        self._outgoing = (ctypes.c_char * MAD_SIZE).from_address(
            self._lib.umad_get_mad(self._send_buffer))
        self._receive_buffer = ctypes.create_string_buffer(self._umad_size + MAD_SIZE)
        self._received = (ctypes.c_char * MAD_SIZE).from_address(
            self._lib.umad_get_mad(self._receive_buffer))
        # The status is read from the buffer's own header, not by a foreign call.
        self._received_head = UserMadHead.from_buffer(self._receive_buffer)
        self._receive_length = ctypes.c_int(MAD_SIZE)
        self._receive_length_ref = ctypes.byref(self._receive_length)
        self._address: Address | None = None
        # The two calls a sweep makes per MAD, looked up once and without
        # argtypes: converting through them cost as much as the call, and every
        # argument is already a C int or a ctypes buffer (lib[name] is a new
        # function object; the typed ones stay as they were).
        self._umad_send, self._umad_recv = self._lib["umad_send"], self._lib["umad_recv"]

    # -- GMP agents: a class version of their own and unsolicited methods ------
    def register(self, mgmt_class: int, class_version: int,
                 unsolicited: Iterable[int] = ()) -> None:
        """An agent for `mgmt_class` that also receives the request methods in
        `unsolicited` (an SA's Report). RMPP stays with the caller (rmpp_version
        0): libibumad then hands over every segment, as it arrived."""
        mask = (ctypes.c_ulong * (128 // (8 * ctypes.sizeof(ctypes.c_ulong))))()
        bits_per_word = 8 * ctypes.sizeof(ctypes.c_ulong)
        for method in unsolicited:
            mask[method // bits_per_word] |= 1 << (method % bits_per_word)
        agent = _quietly(self._lib.umad_register, self._portid, mgmt_class, class_version, 0,
                         ctypes.byref(mask))
        if agent < 0:
            raise UmadError(f"cannot register for management class {mgmt_class:#04x}")
        self._agents[mgmt_class] = agent

    def receive_sized(self, timeout: float) -> bytes | None:
        """Like `receive`, but only the octets the sender sent: a GMP shorter
        than 256 octets (ibsim forwards a MAD at the length it was sent) ends
        where its data ends, so what lies past it is never read as records."""
        if self._interrupted:
            raise PortClosing()
        if timeout > RECEIVE_SLICE_S:
            return self._in_slices(self.receive_sized, timeout)
        buffer = ctypes.create_string_buffer(self._umad_size + MAD_SIZE)
        length = ctypes.c_int(MAD_SIZE)
        agent = self._lib.umad_recv(self._portid, buffer, ctypes.byref(length),
                                    max(int(timeout * 1000), 0))
        if agent < 0:
            if -agent in (errno.EAGAIN, errno.ETIMEDOUT, errno.EWOULDBLOCK):
                return None
            raise UmadError(-agent, f"umad_recv: {os.strerror(-agent)}")
        if self._lib.umad_status(buffer):
            return None
        return ctypes.string_at(self._lib.umad_get_mad(buffer), min(max(length.value, 0),
                                                                    MAD_SIZE))

    def _in_slices(self, receive: Callable[[float], bytes | None], timeout: float
                   ) -> bytes | None:
        """`receive` for `timeout` seconds in RECEIVE_SLICE_S slices: PortClosing
        at the first slice after `interrupt`."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            answer = receive(min(left, RECEIVE_SLICE_S))
            if answer is not None:
                return answer
        return None

    def interrupt(self) -> None:
        """From any thread: every send and receive from now on raises
        PortClosing, and a receive under way ends within RECEIVE_SLICE_S, so
        a thread still exchanging MADs leaves the port soon. The port stays
        open: whoever knows that thread is out of it closes it."""
        self._interrupted = True

    def close(self) -> None:
        if self._portid >= 0:
            self._lib.umad_close_port(self._portid)
            self._portid = -1

    def __enter__(self) -> UmadPort:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def new_transaction_id(self) -> int:
        self._next_tid = (self._next_tid + 1) & _TID_MASK or 1
        return self._next_tid

    def send(self, mad: bytes, address: Address, transaction_id: int | None = None) -> None:
        """Send `mad`; with `transaction_id`, that ID in place of the one it carries
        (written into the send buffer: the caller's MAD is not copied to change it)."""
        if self._interrupted:
            raise PortClosing()
        if len(mad) != MAD_SIZE:
            raise UmadError(f"a MAD is {MAD_SIZE} octets, got {len(mad)}")
        agent = self._agents.get(mad[1])
        if agent is None:
            raise UmadError(f"no agent for management class {mad[1]:#04x}")
        buffer = self._send_buffer
        self._outgoing.raw = mad
        if transaction_id is not None:
            try:
                _TID_STRUCT.pack_into(self._outgoing, _TID_START, transaction_id)
            except struct.error as exc:
                raise LayoutError(f"a transaction ID has {_TRANSACTION_ID.width} bits: "
                                  f"{transaction_id}") from exc
        # A sweep sends thousands to one address object: identity first, cheap.
        if address is not self._address and address != self._address:
            self._lib.umad_set_addr(buffer, address.lid, address.qp, address.sl, address.qkey)
            self._address = address
        # No kernel-side timeout: answers are matched and retried here.
        failed = self._umad_send(self._portid, agent, buffer, MAD_SIZE, 0, 0)
        if failed < 0:
            raise UmadError(-failed, f"umad_send: {os.strerror(-failed)}")

    def receive(self, timeout: float) -> bytes | None:
        """The next MAD that arrives within `timeout` seconds, or None;
        PortClosing once the port is interrupted (see `interrupt`)."""
        if self._interrupted:
            raise PortClosing()
        if timeout > RECEIVE_SLICE_S:
            return self._in_slices(self.receive, timeout)
        buffer = self._receive_buffer
        self._receive_length.value = MAD_SIZE
        # umad_recv waits itself: under ibsim the descriptor is a fake one
        # (from 1024 up) that only the preloaded library can poll.
        timeout_ms = max(int(timeout * 1000), 0)
        agent = self._umad_recv(self._portid, buffer, self._receive_length_ref, timeout_ms)
        if agent < 0:
            if -agent in (errno.EAGAIN, errno.ETIMEDOUT, errno.EWOULDBLOCK):
                return None
            raise UmadError(-agent, f"umad_recv: {os.strerror(-agent)}")
        if self._received_head.status:
            return None  # a send the kernel gave up on: its retry is ours to make
        return self._received.raw

    def query(self, mad: bytes, address: Address, timeout: float = 0.2,
              retries: int = 2) -> bytes:
        """The answer to `mad`, sent again up to `retries` times after `timeout` seconds."""
        tid = self.new_transaction_id()
        request = with_transaction_id(mad, tid)
        for _ in range(retries + 1):
            self.send(request, address)
            deadline = time.monotonic() + timeout
            while (left := deadline - time.monotonic()) > 0:
                answer = self.receive(left)
                if answer is not None and matches(answer, (tid,)):
                    return answer
        raise MadTimeout(errno.ETIMEDOUT, f"no answer after {retries + 1} tries of {timeout} s")


def reply_tid(answer: bytes) -> int:
    """The part of an answer's transaction ID that the sender owns."""
    return int.from_bytes(answer[TID_OURS_START:TID_OURS_END], "big")


def matches(answer: bytes, tids: Iterable[int]) -> bool:
    """Whether `answer` carries one of `tids`."""
    return reply_tid(answer) in {t & _TID_MASK for t in tids}

"""What the subagent answers to a master's request, from the served MIB.

The same read and write path as UDP: the ContextDirectory resolves a context name (a
ContextTarget with this request's `elapsed`), values are the VirtualMib's cells, a SET is the
WritableMib's `prepare_write` then `commit`. The read view is the read-only one (no M_Key /
SM_Key columns): the master applies its own access control and cannot tell the subagent who
asked. Only instances inside the subtrees registered for the context are answered (a GetNext
never wanders into another subagent's or the master's), never at or past a SearchRange's end.
Reference: docs/agentx.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyasn1.type import univ
from pysnmp.proto import rfc1902

from ibsnmp.agent.context_hooks import ContextDirectory
from ibsnmp.agent.read_view import ReadView
from ibsnmp.agent.views import View, past_key_subtree
from ibsnmp.mib.api import Cell, ContextTarget, Missing, Oid, SetError, VirtualMib
from ibsnmp.mib.subtrees import Subtrees
from ibsnmp.wire import ber

from . import pdu as ax
from .kept import KeptAnswers
from .pdu import Header, Packet, SearchRange, VarBind

log = logging.getLogger("ibsnmp.agentx")

# GetBulk: at most this many varbinds in one Response, and no more filling
# after this many seconds (once some repetitions are in): the master gives a
# subagent about a second before it answers genErr.
MAX_BULK_VARBINDS = 2048
BULK_FILL_SECONDS = 0.2

# AgentX value type (= BER tag) -> the pysnmp class a SET value is decoded to,
# as pysnmp's own decoder makes them for prepare_write.
_SET_VALUE_CLASSES: dict[int, Callable[[Any], Any]] = {
    ber.INTEGER: rfc1902.Integer32, ber.OCTET_STRING: rfc1902.OctetString,
    ber.OBJECT_IDENTIFIER: rfc1902.ObjectIdentifier, ber.IP_ADDRESS: rfc1902.IpAddress,
    ber.COUNTER32: rfc1902.Counter32, ber.GAUGE32: rfc1902.Gauge32,
    ber.TIMETICKS: rfc1902.TimeTicks, ber.OPAQUE: rfc1902.Opaque,
    ber.COUNTER64: rfc1902.Counter64,
}
_MISSING_TYPES = {"noSuchObject": ber.NO_SUCH_OBJECT, "noSuchInstance": ber.NO_SUCH_INSTANCE}


def varbind_of_cell(name: Oid, cell: Cell | Missing) -> VarBind:
    if isinstance(cell, Missing):
        return VarBind(name, _MISSING_TYPES[cell.name])
    return VarBind(name, cell.tag, cell.value)


def set_value(varbind: VarBind) -> Any:
    """A TestSet varbind's value as the pysnmp object a UDP SET decodes to."""
    if varbind.type == ber.NULL:
        return univ.Null("")
    make = _SET_VALUE_CLASSES.get(varbind.type)
    if make is None:
        raise SetError("wrongType", 0, f"a SET value of type {varbind.type}")
    return make(varbind.value)


@dataclass(slots=True)
class _Transaction:
    prepared: Any = None  # PreparedWrite once TestSet passed
    committed: bool = False


@dataclass(slots=True)
class MasterRequests:
    """Answers Get/GetNext/GetBulk and the SET phases for one MIB.

    `regions(context)` names the subtrees registered for a context (None:
    the default context); `uptime()` is sysUpTime in hundredths.
    """

    mib: VirtualMib
    directory: ContextDirectory
    regions: Callable[[bytes | None], Subtrees]
    uptime: Callable[[], int] = lambda: 0
    view: View = "no-keys"
    kept: KeptAnswers = field(default_factory=KeptAnswers)
    _read_view: ReadView = field(init=False)
    _transactions: dict[tuple[int, int], _Transaction] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._read_view = ReadView(self.view)

    def answer(self, packet: Packet) -> ax.Response | None:
        """The Response to `packet` (a request or SET phase, or a Ping), None for
        CleanupSet (which takes none)."""
        request = packet.pdu
        if isinstance(request, (ax.Get, ax.GetNext, ax.GetBulk)):  # first: a walk's PDUs
            return self._read(request)
        key = (packet.session_id, packet.transaction_id)
        if isinstance(request, ax.TestSet):
            return self._test(key, self.directory.resolve(request.context or b""),
                              request.varbinds)
        if isinstance(request, ax.CommitSet):
            return self._commit(key)
        if isinstance(request, ax.UndoSet):
            return self._undo(key)
        if isinstance(request, ax.CleanupSet):
            self._transactions.pop(key, None)
            return None
        if isinstance(request, ax.Ping):
            return ax.Response(self.uptime())
        return ax.Response(self.uptime(), ax.PROCESSING_ERROR)

    def answer_read(self, header: Header, data: bytes) -> bytes:
        """The Response octets to the Get or GetNext in `data` (one whole PDU;
        `header` read from it, as SubagentSession.lone_request does): the
        answer `answer` gives, without its objects. A GetNext of one
        SearchRange whose answer is static is kept (KeptAnswers) and answered
        from there while it holds. AgentxParseError when the payload is not
        one AgentX allows."""
        big_endian = header.big_endian
        context, start = ax.read_context(header, data)
        search = data[start:]  # the SearchRange octets: a kept answer's key
        target = self.directory.resolve(context or b"")
        answers = None
        if target is not None and header.pdu_type == ax.GET_NEXT:
            answers = self.kept.answers_for(context, big_endian, target, self.mib.version(target))
            if answers is not None:
                kept = answers.get(search)
                if kept is not None:
                    return ax.encode_response(header, self.uptime(), kept)
        ranges = ax.read_ranges(header, data, start)
        regions = self.regions(context)
        if header.pdu_type == ax.GET:
            varbinds = tuple(self._get(target, regions, r.start) for r in ranges)
        elif len(ranges) == 1:
            varbind, static = self._next_step(target, regions, ranges[0])
            varbinds = (varbind,)
            if answers is not None and static and not ranges[0].include:
                octets = ax.encode_varbinds(varbinds, big_endian)
                self.kept.keep(answers, search, octets)
                return ax.encode_response(header, self.uptime(), octets)
        else:
            varbinds = tuple(self._next(target, regions, r) for r in ranges)
        return ax.encode_response(header, self.uptime(), ax.encode_varbinds(varbinds, big_endian))

    def _read(self, request: ax.Get | ax.GetNext | ax.GetBulk) -> ax.Response:
        context = request.context
        target = self.directory.resolve(context or b"")
        regions = self.regions(context)
        if isinstance(request, ax.GetNext):
            return self._response([self._next(target, regions, r) for r in request.ranges])
        if isinstance(request, ax.Get):
            return self._response([self._get(target, regions, r.start) for r in request.ranges])
        return self._response(self._bulk(target, regions, request))

    def _response(self, varbinds: list[VarBind]) -> ax.Response:
        return ax.Response(self.uptime(), ax.NO_AGENTX_ERROR, 0, tuple(varbinds))

    # -- reads ------------------------------------------------------------------------

    def _get(self, target: ContextTarget | None, regions: Subtrees, name: Oid) -> VarBind:
        if target is None or not regions.holds(name) or \
                not self._read_view.contains_below_root(name):
            return VarBind(name, ber.NO_SUCH_OBJECT)
        return varbind_of_cell(name, self.mib.get_cell(target, name))

    def _next(self, target: ContextTarget | None, regions: Subtrees,
              search: SearchRange) -> VarBind:
        return self._next_step(target, regions, search)[0]

    def _next_step(self, target: ContextTarget | None, regions: Subtrees,
                   search: SearchRange) -> tuple[VarBind, bool]:
        """The GetNext answer to `search`, and whether it holds while the
        snapshot's structure and the MIB's version do (no object read on the
        way reads the time; see KeptAnswers)."""
        if target is None:
            return VarBind(search.start, ber.END_OF_MIB_VIEW), False
        found, static = self._next_cell(target, regions, search)
        if found is None:
            return VarBind(search.start, ber.END_OF_MIB_VIEW), static
        return varbind_of_cell(*found), static

    def _next_cell(self, target: ContextTarget, regions: Subtrees,
                   search: SearchRange) -> tuple[tuple[Oid, Cell] | None, bool]:
        """The first visible instance in `regions` at or after the range's start
        (at only with `include`), before its end; and whether that answer is static."""
        end, visible = search.end, self._read_view.contains_below_root
        oid = search.start
        if search.include and regions.holds(oid) and visible(oid):
            cell = self.mib.get_cell(target, oid)
            if not isinstance(cell, Missing):
                return ((oid, cell) if not end or oid < end else None), False
        if not regions.holds(oid):
            root = regions.next_root(oid)
            if root is None:
                return None, True
            oid = root
        static = True
        while True:
            found = self.mib.next_step(target, oid)
            if found is None:
                return None, static
            next_oid, cell, step_static, _tag = found
            static = static and step_static
            if end and next_oid >= end:
                return None, static
            if not regions.holds(next_oid):
                root = regions.next_root(next_oid)
                if root is None:
                    return None, static
                oid = root
                continue
            if visible(next_oid):
                return (next_oid, cell), static
            oid = past_key_subtree(next_oid)  # hidden whole: leave it in one step

    def _bulk(self, target: ContextTarget | None, regions: Subtrees,
              request: ax.GetBulk) -> list[VarBind]:
        """RFC 2741 7.2.3.3: the non-repeaters once, then the repeaters
        `max_repetitions` times each, interleaved, as GETBULK orders them."""
        ranges = request.ranges
        non_repeaters = min(request.non_repeaters, len(ranges))
        varbinds = [self._next(target, regions, r) for r in ranges[:non_repeaters]]
        repeaters = list(ranges[non_repeaters:])
        if not repeaters:
            return varbinds
        deadline = time.monotonic() + BULK_FILL_SECONDS
        for repetition in range(request.max_repetitions):
            if len(varbinds) + len(repeaters) > MAX_BULK_VARBINDS or \
                    (repetition and time.monotonic() > deadline):
                break
            row = [self._next(target, regions, r) for r in repeaters]
            varbinds += row
            if all(v.type == ber.END_OF_MIB_VIEW for v in row):
                break
            # The next repetition starts after this one's names, same end bounds.
            repeaters = [SearchRange(v.name, r.end) for v, r in zip(row, repeaters)]
        return varbinds

    # -- SET (RFC 2741 7.2.4) ------------------------------------------------------

    def _test(self, key: tuple[int, int], target: ContextTarget | None,
              varbinds: Sequence[VarBind]) -> ax.Response:
        transaction = self._transactions[key] = _Transaction()
        prepare = getattr(self.mib, "prepare_write", None)
        if prepare is None or target is None:
            why = "notWritable" if target is not None else "inconsistentName"
            return self._set_error(why, 0)
        try:
            values = [(v.name, self._set_value_at(v, index)) for index, v in enumerate(varbinds)]
            transaction.prepared = prepare(target, values)
        except SetError as exc:
            if exc.reason:
                log.debug("AgentX SET refused (%s): %s", exc.status, exc.reason)
            return self._set_error(exc.status, exc.index)
        except Exception:
            log.exception("AgentX TestSet failed")
            return self._set_error("genErr", 0)
        return ax.Response(self.uptime())

    @staticmethod
    def _set_value_at(varbind: VarBind, index: int) -> Any:
        try:
            return set_value(varbind)
        except SetError as exc:
            raise SetError(exc.status, index, exc.reason) from None
        except Exception:
            raise SetError("wrongValue", index, "not a value of its type") from None

    def _commit(self, key: tuple[int, int]) -> ax.Response:
        transaction = self._transactions.get(key)
        if transaction is None or transaction.prepared is None:
            return self._set_error("commitFailed", 0)
        try:
            transaction.prepared.commit()
        except SetError as exc:
            log.error("AgentX SET not committed: %s", exc.reason or exc.status)
            return self._set_error("commitFailed", exc.index)
        except Exception:
            log.exception("AgentX CommitSet failed")
            return self._set_error("commitFailed", 0)
        transaction.committed = True
        return ax.Response(self.uptime())

    def _undo(self, key: tuple[int, int]) -> ax.Response:
        transaction = self._transactions.get(key)
        # A commit is all or nothing and durable at once: one that failed left
        # nothing to undo; one that succeeded cannot be taken back.
        if transaction is not None and transaction.committed:
            log.error("AgentX UndoSet after a committed SET: a committed SET cannot be undone")
            return self._set_error("undoFailed", 0)
        return ax.Response(self.uptime())

    def _set_error(self, status: str, index: int) -> ax.Response:
        # AgentX counts varbinds from 1 (RFC 2741 7.2.4.1); SetError from 0.
        return ax.Response(self.uptime(), ax.SNMP_ERRORS[status], index + 1)

"""The fast responder: SNMPv1/v2c GET, GETNEXT and GETBULK answered from cells.

`FastReads.answer` writes the Response to a read request, octet for octet as pysnmp would,
without pysnmp's per-object access checks and pyasn1 values: the community picks the read
view once, the served subtrees (IF-MIB's, InfiniBand's) are read as cells (mib.api.Cell) and
the agent's other objects from pysnmp's own instances (agent.base_objects). A walk's steps
are kept encoded (agent.walk_cache); the answers' counters are added as integers
(agent.pending_counts). It returns None to leave a request to pysnmp's command responders
(agent.handover). The path: docs/architecture.md, "The fast read path".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from pysnmp.entity.engine import SnmpEngine

from ibsnmp.mib.api import (
    NO_SUCH_INSTANCE,
    NO_SUCH_OBJECT,
    ContextTarget,
    Missing,
    Oid,
    VirtualMib,
)
from ibsnmp.wire import ber
from ibsnmp.wire.ber import (
    COUNTER64,
    END_OF_MIB_VIEW,
    EXCEPTIONS,
    SEQUENCE,
    HeaderError,
    OidEncodings,
    encode_value,
    arc_count,
    more_arcs,
    oid_head_of_element,
    oid_octets,
    oid_of_element,
    read_element,
)
from ibsnmp.wire.header import GET, GET_NEXT, V1
from ibsnmp.wire.request import (
    Request,
    encode_response,
    message_varbind_room,
    request_of,
    varbind,
)

from .causes import current_exception_summary
from .base_objects import BaseObjects
from .pysnmp_cells import Cell
from .context_hooks import ContextDirectory
from .pending_counts import (IN_TOTAL_REQ_VARS, OUT_GET_RESPONSES,
                             OUT_NO_SUCH_NAMES, OUT_PKTS, PendingCounts)
from .prefilter import IN_REQUEST, PassedRequest, allowed_from
from .read_view import ReadView
from .repeats import (MAX_REQUEST, KeptAnswer, Repeat, Repeats, request_key,
                      response_parts, written_as_is)
from .views import VIEWS, View, default_view, past_key_subtree
from .walk_cache import DEFAULT_LIMIT, Alteration, Steps, WalkCache

log = logging.getLogger(__name__)

NO_SUCH_NAME = 2  # SNMPv1 error-status (RFC 3584 4.4: exceptions and Counter64)
_MISSING = {NO_SUCH_OBJECT: Cell(ber.NO_SUCH_OBJECT, b""),
            NO_SUCH_INSTANCE: Cell(ber.NO_SUCH_INSTANCE, b"")}
_END_OF_MIB_VIEW_VALUE = bytes((END_OF_MIB_VIEW, 0))
# Arcs decoded of every asked name (more only under a longer table): more than
# any bound object's and the agent's own instances' (checked at start).
HEAD_ARCS = 14
# Names up to this many octets (a GUID-indexed instance takes about 30) are
# decoded whole; longer ones only as far as an instance can reach.
SHORT_NAME = 64
# The most octets HEAD_ARCS arcs take (HEAD_ARCS - 1 sub-identifiers of at most
# five octets each, as the reader checked): names alike in these (and in
# whether more follow) share them.
_HEAD_OCTETS = 5 * (HEAD_ARCS - 1)
# GET answers are kept beside the walk steps, under the asked OID's element
# with this octet before it (an element starts with its tag, 0x06).
_GET_KEY = b"\x00"
# Where a step's answer reads the time (a counter), the walk cache keeps the
# instance it lands on, not the varbind: the OID element of the answer, under
# the asked element with this octet before it. Where that instance is follows
# the structure alone, as a kept step does; its value is read when asked.
_PLACE_KEY = b"\x01"
# The value octets of VIEW_ROOT (1.3.6.1): every readable OID's start with them.
_VIEW_ROOT_ELEMENT_VALUE = bytes((0x2B, 6, 1))

# One answered varbind: (its OID's element, the whole varbind, the BER tag of its
# value, its OID when known: a walk's next step then decodes nothing).
Step = tuple[bytes, bytes, int, "Oid | None"]


class ElementPlacer(Protocol):
    """Asked names placed among one context's rows by their octets, for one
    request (mib.virtual.ElementPlacer)."""

    def origin(self, element: bytes, start: int) -> bytes | None: ...


class _Declined(Exception):
    """This request is pysnmp's command responders' to answer."""


@runtime_checkable
class ChangeJudgingMib(Protocol):
    """A MIB that tells which kept GETNEXT steps a change alters
    (mib.virtual.InfinibandMib); without it, any change drops them all."""

    def invalidation(self, node: int | None, entity: tuple[int, ...], changed: Any,
                     nodes: Any, before: Any, after: Any) -> Alteration: ...

    def version_change(self, before: Any, after: Any) -> Alteration | None: ...


@runtime_checkable
class TimedMib(Protocol):
    """A MIB that answers GETNEXT under objects that read the time directly, and
    places an asked name from its octets (mib.virtual.InfinibandMib)."""

    @property
    def timed_entries(self) -> list[Oid]: ...

    def timed_next(self, target: ContextTarget, oid: Oid) -> tuple[Oid, Cell, Oid] | None: ...

    def timed_next_of_element(self, target: ContextTarget, element: bytes,
                              start: int) -> tuple[Oid, Cell, Oid] | tuple[()] | None: ...

    def element_placer(self, target: ContextTarget) -> ElementPlacer: ...


@runtime_checkable
class StepPlacingMib(Protocol):
    """A MIB that names the row or object whose kept GETNEXT step answers an
    asked name as its own would (mib.virtual.InfinibandMib), so that names
    between rows share one kept step."""

    def step_origin(self, target: ContextTarget, oid: Oid) -> Oid | None: ...


class FastReads:
    """Answers v1/v2c read requests for one engine; see the module documentation."""

    def __init__(self, engine: SnmpEngine, directory: ContextDirectory, mib: VirtualMib,
                 counts: PendingCounts, walk_cache: int = DEFAULT_LIMIT,
                 max_getbulk_varbinds: int = 0, getbulk_fill_ms: float = 0.0) -> None:
        self._engine = engine
        self._directory = directory
        self._mib = mib
        self._cells = mib
        self.counts = counts
        # The agent's own objects (system, snmp group, ...), listed once.
        self.base = BaseObjects(engine.message_dispatcher.mib_instrum_controller, mib.subtrees,
                                counts)
        deepest = max(len(oid) for oid in [*mib.object_oids, *self.base.oids])
        if deepest >= HEAD_ARCS:
            raise ValueError(f"an object of {deepest} arcs: HEAD_ARCS must be larger")
        builder = engine.get_mib_builder()
        (self._max_size,) = builder.import_symbols("__SNMP-FRAMEWORK-MIB",
                                                   "snmpEngineMaxMessageSize")
        self._views: dict[View, ReadView] = {view: ReadView(view) for view in VIEWS}
        self._subtrees = mib.subtrees
        self._encode_oid = OidEncodings()
        # GETNEXT steps inside the subtrees, kept encoded (and across structural
        # changes that cannot alter them, where the MIB can tell which).
        judging = mib if isinstance(mib, ChangeJudgingMib) else None
        self.walks = WalkCache(walk_cache, judge=judging.invalidation if judging else None,
                               version_judge=judging.version_change if judging else None)
        self.max_getbulk_varbinds = max_getbulk_varbinds
        # Repeated requests answered from kept answers by their octets alone.
        self.repeats: Repeats[bytes, Repeat] = Repeats()
        self.getbulk_fill_ms = getbulk_fill_ms  # 0: no limit
        # perf_counter() when the datagram being handled arrived, set by the
        # dispatcher while it handles one (None: now): a GETBULK's fill time
        # counts from there, so reading a costly request leaves less of it.
        self.arrived: float | None = None
        self.failures = 0  # requests a bug made it leave to pysnmp's responders
        # The value octets of the entries timed_next answers under: a name
        # whose octets start with none of them is not asked (one C call).
        timed = mib if isinstance(mib, TimedMib) else None
        self.timed_entries = tuple(oid_octets(entry) for entry in timed.timed_entries) \
            if timed else ()
        # The next instance under an object that reads the time, where the MIB
        # can tell it directly (nothing of it is kept: see `_Request._step_from`).
        self.timed_next: Callable[[ContextTarget, Oid], tuple[Oid, Cell, Oid] | None] | None = \
            timed.timed_next if timed and self.timed_entries else None
        # The same, and where a kept answer lies (step_origin), found from an
        # asked name's octets where the MIB can tell: most names under a
        # table are placed without decoding a single arc.
        self.timed_next_of_element: Callable[
            [ContextTarget, bytes, int], tuple[Oid, Cell, Oid] | tuple[()] | None] | None = \
            timed.timed_next_of_element if timed and self.timed_next else None
        self.element_placer: Callable[[ContextTarget], ElementPlacer] | None = \
            timed.element_placer if timed else None
        placing = mib if isinstance(mib, StepPlacingMib) else None
        self.step_origin: Callable[[ContextTarget, Oid], Oid | None] | None = \
            placing.step_origin if placing else None

    def answer(self, data: bytes, passed: PassedRequest) -> bytes | None:
        """The Response to the request in `data`, as the prefilter passed it
        (read whole, its community and context found: a PassedRequest),
        or None when pysnmp's command responders are to answer it (agent.handover):
        anything but a well-formed v1/v2c read request, a context that vanished, a
        failing read, or a GET or GETNEXT response too big (the responders answer
        tooBig). A request's values are ignored (RFC 3416 4.2), but echoed in an
        SNMPv1 error. An answer the walk cache keeps is kept for repeats of
        `data` too (`repeat`)."""
        message, read, community, context_name = passed
        try:
            request = request_of(data, message.pdu, read, message.version, message.community)
        except HeaderError:
            return None  # not a read request
        target = self._directory.resolve(context_name)
        if target is None:
            return None
        fixed = (request.version, request.community, request.request_id)
        room = message_varbind_room(*fixed, int(self._max_size.syntax))
        answered = self.read_keeping(request, context_name, target,
                                     self.read_view(community.access, community.view), room)
        if answered is None:
            return None
        status, index, varbinds, kept = answered
        reply = encode_response(*fixed, status, index, varbinds)
        element = message.pdu.request_id_element
        if kept is not None and element is not None:
            parts = response_parts(data, element, reply, len(varbinds))
            if parts is not None:
                key, head, middle = parts
                self.repeats.put(key, Repeat(community, kept, head, middle,
                                             IN_REQUEST[message.pdu.tag]),
                                 len(key) + len(head) + len(middle) + kept.octets)
        return reply

    def repeat(self, data: bytes, address: Any) -> bytes | None:
        """The Response to `data` when it repeats a request `answer` answered
        from a kept answer that still holds (agent.repeats), the request and
        its answer counted; None when it repeats none (the whole way answers
        it). The sender's address is checked against the community's
        `source` networks again; anything else of the request was checked
        when it was first answered."""
        if len(data) > MAX_REQUEST or not len(self.repeats):
            return None  # never kept, or nothing kept: no key to build and hash
        found = request_key(data)
        if found is None:
            return None
        key, request_id = found
        entry = self.repeats.get(key)
        if entry is None or not written_as_is(request_id):
            return None
        community = entry.community
        if community.sources and not allowed_from(community, address):
            return None  # refused the whole way, and told
        varbinds = self.answer_again(entry.answer)
        if varbinds is None:
            self.repeats.forget(key)
            return None
        counts = self.counts
        for counter in entry.counters:
            counts.count(counter)
        return b"".join((entry.head, request_id, entry.middle, varbinds))

    def answer_again(self, answer: KeptAnswer) -> bytes | None:
        """The varbind octets of `answer` while the walk cache still gives it
        for its context, view and the MIB's version, its answer counted (the
        request is the caller's to count); None when it no longer holds."""
        try:
            target = self._directory.resolve(answer.context_name)
            steps = None if target is None else self.walks.steps_for(
                target, answer.view, self._cells.version(target), answer.skips_counter64)
        except Exception:
            return None  # the whole way tells what failed
        if steps is None or steps.answers.get(answer.answer_key) is not answer.kept:
            return None
        counts = self.counts
        counts.count(OUT_PKTS)
        counts.count(OUT_GET_RESPONSES)
        counts.count(IN_TOTAL_REQ_VARS, answer.kept[1])
        return answer.kept[0]

    def read_view(self, access: str, view: View | None) -> ReadView:
        """The read view of a principal of `access` and `view` (None: the access's default)."""
        return self._views[view or default_view(access)]

    def read_keeping(self, request: Request, context_name: bytes, target: ContextTarget,
                     read_view: ReadView, room: int
                     ) -> tuple[int, int, bytes, KeptAnswer | None] | None:
        """(error-status, error-index, varbind octets) of a read PDU of `target`
        (the context `context_name` resolves to) through `read_view`, whose
        varbinds may take `room` octets, its answer counted (the request itself
        is counted by the caller), and where the walk cache keeps that answer
        (None: it does not); None: the command responders' to answer.
        SNMPv3 reads come here too (agent.fast_v3), with the room their
        sealed message leaves."""
        counts = self.counts
        try:
            # RFC 3584 4.1.2.1: SNMPv1 GETNEXT steps over Counter64 objects.
            skip_counter64 = request.version == V1 and request.pdu_type == GET_NEXT
            steps = self.walks.steps_for(target, read_view, self._cells.version(target),
                                         skip_counter64)
            key = kept = None
            if steps is not None:  # the kept answer to the same request, if any: no _Request
                key = b"%d %d %d %d %d %d " % (
                    request.version, request.pdu_type, request.non_repeaters,
                    request.max_repetitions, room, self.max_getbulk_varbinds) \
                    + b"".join(request.oid_elements)
                kept = steps.answers.get(key)
            if kept is not None:
                found = (kept[0], 0, 0, kept[1])
            else:
                found = _Request(self, request, target, read_view, room, skip_counter64,
                                 steps).respond(key)
                if steps is not None and key is not None:
                    kept = steps.answers.get(key)  # kept just now, if made of kept steps
        except _Declined:
            return None
        except Exception:
            self.failures += 1
            if self.failures == 1:
                # Remote input: one line with the cause, never a traceback in the log.
                log.error("the fast responder failed (%s); such requests go to pysnmp, further "
                          "failures are logged at debug level", current_exception_summary())
            log.debug("fast responder failure", exc_info=True)
            return None
        varbinds, status, index, retrieved = found
        counts.count(OUT_PKTS)
        counts.count(OUT_GET_RESPONSES)
        if status:
            counts.count(OUT_NO_SUCH_NAMES)
        else:
            counts.count(IN_TOTAL_REQ_VARS, retrieved)
        where = None if kept is None or key is None else KeptAnswer(
            context_name, read_view, skip_counter64, key, kept)
        return status, index, varbinds, where


class _Request:
    """One request being answered: its context, view and the readers it needs."""

    __slots__ = ("_owner", "_request", "_target", "_view", "_room", "_skip_counter64",
                 "_base", "_cells", "_subtrees", "_steps", "_answers", "_long_answers", "_heads",
                 "_origin", "_timed_next", "_timed_of_element", "_origin_of_element", "_fresh")

    def __init__(self, owner: FastReads, request: Request, target: ContextTarget,
                 view: ReadView, room: int, skip_counter64: bool, steps: Steps | None) -> None:
        """`skip_counter64`: an SNMPv1 GETNEXT's; `steps`: the context's kept
        steps (WalkCache.steps_for), None when nothing may be kept."""
        self._owner = owner
        self._room = room  # varbind octets the Response may hold
        self._request = request
        self._target = target
        self._view = view
        self._skip_counter64 = skip_counter64
        self._base = owner.base  # the agent's own objects
        self._cells = owner._cells
        self._subtrees = owner._subtrees
        # Walk steps and GET answers kept for this context (SNMPv1's GETNEXT,
        # which skips Counter64 objects, apart).
        self._steps = steps
        # This request's answers so far, by the asked name's element, and those
        # of GETNEXT names longer than SHORT_NAME by the octets of the arcs of
        # them that matter (`_long_step`): a request naming one OID many
        # times, or many names that differ only in arcs past every instance,
        # looks up one of them.
        self._answers: dict[bytes, Step] = {}
        self._long_answers: dict[bytes, Step] = {}
        # Long names' first arcs, decoded, and the most arcs an instance under
        # them has: by their first octets (`_HEAD_OCTETS`), which hold them.
        self._heads: dict[bytes, tuple[Oid, int, int]] = {}
        # Where a GETNEXT's answer is kept for names that are no walk's (see
        # `_kept_as`); None: the MIB cannot tell, and only short names are kept.
        self._origin: Callable[[ContextTarget, Oid], Oid | None] | None = None
        self._origin_of_element: Callable[[bytes, int], bytes | None] | None = None
        self._timed_next = owner.timed_next
        self._timed_of_element = owner.timed_next_of_element
        # Whether a step of the answer was found anew rather than kept: only an
        # answer of kept steps alone is kept whole (walk_cache.Steps.answers).
        self._fresh = False
        self._origin = owner.step_origin
        if self._origin is not None and owner.element_placer is not None:
            self._origin_of_element = owner.element_placer(target).origin

    def respond(self, key: bytes | None) -> tuple[bytes, int, int, int]:
        """(varbind octets, error-status, error-index, how many values it
        retrieved), kept under the request's `key` when made of kept steps
        alone (FastReads.read looked the key up first)."""
        steps = self._steps
        if steps is None or key is None:
            return self._respond()
        varbinds, status, index, retrieved = found = self._respond()
        if not self._fresh and not status:
            self._owner.walks.keep_answer(steps, key, varbinds, retrieved)
        return found

    def _respond(self) -> tuple[bytes, int, int, int]:
        request = self._request
        if request.pdu_type == GET:
            rows = [self._once(element, self._get) for element in request.oid_elements]
        elif request.pdu_type == GET_NEXT:
            # A long name straight to `_long_step` (which looks its answers up
            # once per request its own way): hashing all its octets for `_once`
            # would add much to its answer's cost.
            step, long_step, steps = self._step, self._long_step, self._steps
            rows = [long_step(element, steps) if len(element) > SHORT_NAME
                    else self._once(element, step) for element in request.oid_elements]
        else:
            return self._bulk()
        status = index = 0
        if request.version == V1:
            status, index = _v1_error(rows)
        if status:
            # RFC 3584 4.4 (as pysnmp): the request's own varbinds come back.
            varbinds = request.echoed()
            retrieved = 0
        else:
            varbinds = b"".join(step[1] for step in rows)
            retrieved = sum(1 for step in rows if step[2] not in EXCEPTIONS)
        if len(varbinds) > self._room:
            raise _Declined  # pysnmp answers tooBig
        return varbinds, status, index, retrieved

    def _bulk(self) -> tuple[bytes, int, int, int]:
        """GETBULK (RFC 3416 4.2.3) filled up to the agent's maximum message
        size; the varbind limit and the fill time bound the repetitions after
        the first (`_Filling.bound`).

        Departures from pysnmp, all allowed by 4.2.3: up to `[limits]
        max_getbulk_varbinds` (net-snmp's maxGetbulkResponses; pysnmp stops at
        64 repeater varbinds), the message filled exactly rather than against an
        upper-bound estimate of its header, and no repetition added once
        `[limits] getbulk_fill_ms` has passed since the datagram arrived (its
        reading counts), so no GETBULK holds the agent up for long (a manager
        asks again from the last name it got). Neither limit
        cuts the first repetition (every non-repeater and one of each repeater):
        only the message's size may, so an answer moves every name on."""
        request = self._request
        step_after = self._step_once
        owner = self._owner
        started = owner.arrived if owner.arrived is not None else time.perf_counter()
        out = _Filling(self._room)
        elements = request.oid_elements
        n = min(request.non_repeaters, len(elements))
        full = not all(out.add(step_after(element)) for element in elements[:n])
        repetitions = request.max_repetitions
        row: list[Step] = [(element, b"", END_OF_MIB_VIEW, None) for element in elements[n:]]
        deadline = started + owner.getbulk_fill_ms / 1000 if owner.getbulk_fill_ms else None
        if len(row) == 1:
            # A walk's request: one chain of steps, until its end or the room's.
            step = row[0]
            while not full and repetitions:
                step = step_after(step[0], step[3])
                if not out.add(step) or step[2] == END_OF_MIB_VIEW:
                    break  # full, or a lone repeater has nothing more
                repetitions -= 1
                out.bound(owner.max_getbulk_varbinds, deadline)
            return b"".join(out.parts), 0, 0, out.retrieved
        live = len(row)
        while not full and repetitions and live:
            for i, step in enumerate(row):
                if step[2] != END_OF_MIB_VIEW or not step[1]:  # past the end: repeated
                    step = row[i] = step_after(step[0], step[3])
                if not out.add(step):
                    full = True  # no step computed that cannot be sent
                    break
            live = sum(1 for step in row if step[2] != END_OF_MIB_VIEW)
            repetitions -= 1
            out.bound(owner.max_getbulk_varbinds, deadline)
        return b"".join(out.parts), 0, 0, out.retrieved

    # -- reading ------------------------------------------------------------------

    def _once(self, element: bytes, answer: Callable[[bytes], Step]) -> Step:
        """`answer(element)`, looked up once per request."""
        step = self._answers.get(element)
        if step is None:
            step = self._answers[element] = answer(element)
        return step

    def _step_once(self, element: bytes, oid: Oid | None = None) -> Step:
        """`_step`, looked up once per request: a GETBULK's repeaters often
        land on one instance, and step on from it alike."""
        if oid is None and len(element) > SHORT_NAME:
            return self._long_step(element, self._steps)  # see `respond`
        step = self._answers.get(element)
        if step is None:
            step = self._answers[element] = self._step(element, oid)
        return step

    def _get(self, element: bytes) -> Step:
        """The varbind answering a GET of the OID whose element is `element`."""
        steps = self._steps
        key = _GET_KEY + element
        if steps is not None:
            known = steps.get(key)
            if known is not None:
                head = 2 if known[1] < 0x80 else 2 + (known[1] & 0x7F)
                return element, known, known[head + len(element)], None
        self._fresh = True
        tag = None
        if not element.startswith(_VIEW_ROOT_ELEMENT_VALUE, _oid_value_start(element)):
            cell: Cell | Missing = NO_SUCH_OBJECT  # outside the view: no need to decode it
            static = True
        else:
            oid, longer = self._name(element, exact=True)
            if not self._view.contains_below_root(oid):
                cell, static = NO_SUCH_OBJECT, True  # not in view (RFC 3416 4.2.1)
            elif longer:
                cell, static = NO_SUCH_INSTANCE, True  # under an object, past its instances
            elif self._subtrees.holds(oid):
                cell, static, tag = self._cells.get_step(self._target, oid)
            else:
                cell, static = self._base.get(self._target, oid), False
        if isinstance(cell, Missing):
            cell = _MISSING[cell]
        encoded = varbind(element, encode_value(cell.tag, cell.value))
        if static and steps is not None and cell.tag not in EXCEPTIONS:
            # Values only: what a poller asks again. Names nobody serves are not
            # kept (anyone can send millions of them).
            self._owner.walks.remember(steps, key, encoded, tag)
        return element, encoded, cell.tag, None

    def _step(self, element: bytes, oid: Oid | None = None) -> Step:
        """The instance after the OID whose element is `element` (`oid`, if
        decoded already): its OID element, its encoded varbind, its value's
        tag, and its OID (None when the step was kept encoded)."""
        steps = self._steps
        if oid is None and len(element) > SHORT_NAME:
            return self._long_step(element, steps)  # an asked name: no walk step
        if steps is not None:
            known = steps.get(element)
            if known is not None:
                return _step_of(known)
        if oid is not None:
            return self._step_from(element, oid, steps)
        if element.isascii():  # arcs of one octet each: decoded at once, bytes to a tuple
            return self._step_from(element, oid_of_element(element), steps, asked=True)
        return self._asked_step(element, steps)

    def _asked_step(self, element: bytes, steps: Steps | None) -> Step:
        """`_step` of a name the request asked, placed by its octets where the
        MIB can tell, else decoded."""
        step, timed = self._placed_step(element, _oid_value_start(element), steps)
        if step is not None:
            return step
        return self._step_from(element, oid_of_element(element), steps, asked=True, timed=timed)

    def _placed_step(self, element: bytes, start: int, steps: Steps | None
                     ) -> tuple[Step | None, bool]:
        """`_step` of an asked name (its value octets from `start` on) read from
        its octets alone, no arc decoded, where the MIB can tell it (None
        otherwise); and whether `timed_next` may answer it: under an entry
        with counters, unless the octets told it has no answer."""
        timed = element.startswith(self._owner.timed_entries, start)
        if timed:
            if self._timed_of_element is not None:
                found = self._timed_of_element(self._target, element, start)
                if found:
                    answer = self._timed_answer(found)
                    if answer is not None:
                        self._fresh = True
                        return answer, True
                timed = found is None  # (): timed_next has no answer, the rest follows
        elif self._origin_of_element is not None and steps is not None:
            origin = self._origin_of_element(element, start)
            if origin is not None:
                known = steps.get(origin)
                if known is not None:
                    return _step_of(known), False
        return None, timed

    def _timed_answer(self, timed: tuple[Oid, Cell, Oid]) -> Step | None:
        """The step to `timed_next`'s answer, None where this request may not
        see it (the view, or SNMPv1's GETNEXT over a Counter64)."""
        if (self._view.shows(timed[2], timed[0])
                and not (self._skip_counter64 and timed[1].tag == COUNTER64)):
            return _encoded(timed[0], timed[1], self._owner._encode_oid)
        return None

    def _long_step(self, element: bytes, steps: Steps | None) -> Step:
        """`_step` of an asked name longer than SHORT_NAME: from its octets where
        the MIB can tell (most names under a table), else looked up once per
        request for names alike in the octets that hold the arcs that matter
        (`_name`: at most five octets an arc)."""
        start = 2 if element[1] < 0x80 else 2 + (element[1] & 0x7F)  # _oid_value_start
        step, timed = self._placed_step(element, start, steps)
        if step is not None:
            return step
        most = self._head(element)[2]
        # The first sub-identifier holds two arcs; one more octet: whether more follow.
        key = element[start:start + 5 * max(most, HEAD_ARCS - 1) + 1]
        step = self._long_answers.get(key)
        if step is None:
            step = self._step_from(element, self._name(element)[0], steps, asked=True,
                                   timed=timed)
            if step[2] != END_OF_MIB_VIEW:  # that one echoes the name
                self._long_answers[key] = step
        return step

    def _step_from(self, element: bytes, oid: Oid, steps: Steps | None,
                   asked: bool = False, timed: bool = True) -> Step:
        """`_step` once the name is decoded (`oid`: the arcs that matter);
        `asked`: the name came in the request (it may be no walk's); `timed`:
        false when `timed_next` is known to have no answer for it (or the
        name lies under no entry it answers in)."""
        encode_oid = self._owner._encode_oid
        if timed and self._timed_next is not None and element.startswith(
                self._owner.timed_entries, _oid_value_start(element)):
            # Among a counter's rows: the next row, read now. Nothing is kept
            # or looked up for it (its value moves; where it lies is a bisection).
            placed = self._timed_next(self._target, oid)
            if placed is not None:
                answer = self._timed_answer(placed)
                if answer is not None:
                    self._fresh = True
                    return answer
        end = self._subtrees.end_of(oid)
        start, key = oid, element if len(element) <= SHORT_NAME else None
        if asked and end is not None and steps is not None and self._origin is not None:
            start, key = self._kept_as(element, oid, end)
            if key is not None and key is not element:
                known = steps.get(key)
                if known is not None:
                    return _step_of(known)
        self._fresh = True
        if key is not None and steps is not None:
            place = steps.get(_PLACE_KEY + key)
            if place is not None:
                at_place = self._at_place(place)
                if at_place is not None:
                    return at_place
        found = self._next_in_subtree(start)
        if end is not None and found is not None and found[0] < end:
            next_oid, cell, static, tag = found
            step = _encoded(next_oid, cell, encode_oid)
            if steps is not None and key is not None:
                if static:
                    self._owner.walks.remember(steps, key, step[1], tag)
                else:
                    self._owner.walks.remember(steps, _PLACE_KEY + key, step[0], tag)
            return step
        # Across or outside the subtrees: the agent's own objects may come first.
        base = self._base.next(self._target, oid)
        if base is not None and (found is None or base[0] < found[0]):
            return _encoded(base[0], base[1], encode_oid)
        if found is not None:
            return _encoded(found[0], found[1], encode_oid)
        return element, varbind(element, _END_OF_MIB_VIEW_VALUE), END_OF_MIB_VIEW, oid

    def _at_place(self, place: bytes) -> Step | None:
        """The step to the kept instance whose OID element is `place`, its
        value read now; None when it has none now (the step is then looked
        for as if nothing were kept)."""
        oid = oid_of_element(place)
        cell = self._cells.get_cell(self._target, oid)
        if isinstance(cell, Missing):
            return None
        return place, varbind(place, encode_value(cell.tag, cell.value)), cell.tag, oid

    def _kept_as(self, element: bytes, oid: Oid, end: Oid) -> tuple[Oid, bytes | None]:
        """Where to look the step after the asked `oid` (in the served subtree
        ending at `end`) up from, and the element its answer is kept under
        (None: not kept). Every name in a gap between instances answers as
        the gap's origin (`step_origin`) does, so it is kept once, under the
        origin, which a walk asks too: names no walk asks never fill the cache."""
        assert self._origin is not None
        origin = self._origin(self._target, oid)
        if origin is oid:
            return oid, element if len(element) <= SHORT_NAME else None
        if origin is None or not origin < end:
            return oid, None  # the answer may be the agent's own: not kept
        return origin, self._owner._encode_oid(origin)

    def _name(self, element: bytes, exact: bool = False) -> tuple[Oid, bool]:
        """As many of the asked name's arcs as can matter, and whether the name
        is longer than every instance of the object it lies under: up to the
        longest such instance, and one more. A GET of a longer name finds no
        instance; a GETNEXT steps from the same place (its arcs past those
        compare with none). So no request makes the agent decode arcs no
        instance has. `exact`: a GET's, which needs
        no arcs of a name found longer."""
        if len(element) <= SHORT_NAME:
            return oid_of_element(element), False  # decoding it all costs less than bounding
        head, rest, most = self._head(element)
        if most < HEAD_ARCS:
            return head, most > 0
        if exact and arc_count(element) > most + 1:  # counted in C: none decoded
            return head, True
        more, rest = more_arcs(element, rest, most + 1 - HEAD_ARCS)
        return head + more, len(head) + len(more) > most

    def _head(self, element: bytes) -> tuple[Oid, int, int]:
        """A long name's first HEAD_ARCS arcs, where the rest starts (0: there
        is none), and the most arcs of an instance under them (0: none, or no
        rest), looked up once per request for names that share them."""
        start = _oid_value_start(element)
        key = element[start:start + _HEAD_OCTETS + 1]  # and whether more follow
        known = self._heads.get(key)
        if known is None:
            head, rest = oid_head_of_element(element, HEAD_ARCS)
            # The agent's own instances are shorter than HEAD_ARCS.
            most = self._cells.instance_arcs(self._target, head) \
                if rest and self._subtrees.holds(head) else 0
            known = self._heads[key] = (head, rest - start if rest else 0, most)
        head, rest, most = known
        return head, rest + start if rest else 0, most

    def _next_in_subtree(self, oid: Oid) -> tuple[Oid, Cell, bool, Any] | None:
        """The next served instance in the view (maybe in a later subtree),
        whether every object consulted is static, and what the answer
        depends on (mib.virtual.StepTag, over every object consulted)."""
        next_step = self._cells.next_step
        # The served subtrees lie under the view's root: only exclusions matter.
        target, contains = self._target, self._view.contains_below_root
        static = True
        first = None
        while True:
            found = next_step(target, oid)
            if found is None:
                return None
            next_oid, cell, step_static, tag = found
            static = static and step_static
            if first is None:
                first = tag
            if not contains(next_oid):
                oid = past_key_subtree(next_oid)  # hidden whole: leave it in one step
            elif self._skip_counter64 and cell.tag == COUNTER64:
                oid = next_oid
            else:
                if tag is not first:  # from where the first step began to the answer
                    tag = (first[0], tag[1], first[2], tag[3])
                return next_oid, cell, static, tag


# A GETBULK's fill time (wall clock on the event loop: what the agent spends
# on one request) is checked every this many varbinds.
_BUDGET_EVERY = 8


class _Filling:
    """A GETBULK response's varbinds, up to the octets the message has room
    for; from `bound` on (after the first repetition) also up to the most
    varbinds one GETBULK answers and the time it may take."""

    __slots__ = ("parts", "retrieved", "_left", "_count_left", "_deadline", "_until_check")

    def __init__(self, room: int) -> None:
        self.parts: list[bytes] = []
        self.retrieved = 0  # values, not exceptions
        self._left = room
        self._count_left = -1  # no limit yet
        self._deadline: float | None = None
        self._until_check = 0  # 0: the clock is not read

    def bound(self, most: int, deadline: float | None) -> None:
        """Stop adding at `most` varbinds in all (0: no such limit) and at
        `deadline` (perf_counter; None: none), read now and then every few
        varbinds. Once: later calls change nothing."""
        if self._count_left >= 0 or self._until_check or (most <= 0 and deadline is None):
            return
        if most > 0:
            self._count_left = max(most - len(self.parts), 0)
        if deadline is not None:
            self._deadline = deadline
            self._until_check = 1

    def add(self, step: Step) -> bool:
        """Append `step`'s varbind if it still fits; False when it does not."""
        encoded = step[1]
        if len(encoded) > self._left or self._count_left == 0:
            return False
        if self._until_check:
            self._until_check -= 1
            if not self._until_check:
                self._until_check = _BUDGET_EVERY
                assert self._deadline is not None
                if time.perf_counter() > self._deadline:
                    self._count_left = 0  # out of time: what is in it is the answer
                    return False
        self._count_left -= 1
        self._left -= len(encoded)
        self.parts.append(encoded)
        self.retrieved += step[2] not in EXCEPTIONS
        return True


def _encoded(oid: Oid, cell: Cell, encode_oid: Callable[[Oid], bytes]) -> Step:
    name = encode_oid(oid)
    # `varbind`'s framing without its call: once per answer.
    return name, ber.element(SEQUENCE, name + encode_value(cell.tag, cell.value)), cell.tag, oid


def _step_of(encoded: bytes) -> Step:
    """The Step of a varbind this module encoded (a kept one)."""
    # Read by hand where the lengths take one octet (all but the longest
    # OIDs and values): this runs once per varbind of a walk.
    size = encoded[1]
    start = 2 if size < 0x80 else 2 + (size & 0x7F)
    oid_size = encoded[start + 1]
    if oid_size >= 0x80:
        _, _, oid_end = read_element(encoded, start, len(encoded))
    else:
        oid_end = start + 2 + oid_size
    return encoded[start:oid_end], encoded, encoded[oid_end], None


def _oid_value_start(element: bytes) -> int:
    return 2 if element[1] < 0x80 else 2 + (element[1] & 0x7F)


def _v1_error(rows: list[Step]) -> tuple[int, int]:
    """SNMPv1's (error-status, error-index) for a v2 result, as pysnmp's v2_to_v1 maps it.

    From the last varbind back, an exception makes noSuchName at its index
    (so the first one wins); a Counter64 makes it and ends the search.
    """
    status = index = 0
    for position in range(len(rows) - 1, -1, -1):
        tag = rows[position][2]
        if tag == COUNTER64:
            return NO_SUCH_NAME, position + 1
        if tag in EXCEPTIONS:
            status, index = NO_SUCH_NAME, position + 1
    return status, index

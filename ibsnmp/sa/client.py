"""A subnet administration client: SA queries over GMPs on QP1 to the SM's LID.

Requests are built from the field tables of `ibsnmp.sa.records`. A GetTable answer longer than one
MAD arrives as RMPP DATA segments (IBA 13.6), reassembled here with an ACK per segment in
order, so the SA's window keeps opening. The agent registers without kernel RMPP, so the same
code runs on a host and under ibsim's preload library, which carries no RMPP at all: it
forwards the first 256 octets of the answer as an RMPP-active segment 0, taken for the whole
records it holds and marked `complete=False` when it may have been cut. Reports (the SA
forwarding a trap to a subscriber) arrive at any time; each gets a ReportResp and `on_report`.
"""

from __future__ import annotations

import errno
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Generic, Protocol, TypeVar

from ibsnmp.mad.attributes import CLASS_SUBN_ADM, CLASS_SUBN_DIRECTED_ROUTE, MAD_SIZE, PORT_INFO
from ibsnmp.mad.layout import AnyRecord, FieldValue, RecordT
from ibsnmp.mad.packets import decode_reply, directed_route_get
from ibsnmp.mad.records_generated import SAMAD, Notice
from ibsnmp.mad.umad import (
    GSI_QKEY,
    GSI_QP,
    Address,
    MadTimeout,
    PortClosing,
    UmadError,
    UmadPort,
    matches,
)
from ibsnmp.sa.records import (
    INFORM_INFO,
    INFORM_INFO_RECORD,
    METHOD_GET,
    METHOD_GET_MULTI,
    METHOD_GET_TABLE,
    METHOD_REPORT,
    METHOD_REPORT_RESP,
    METHOD_SET,
    NODE_RECORD,
    NOTICE,
    RMPP_ABORT,
    RMPP_ACK,
    RMPP_ACTIVE,
    RMPP_DATA,
    RMPP_FIRST,
    RMPP_LAST,
    RMPP_STOP,
    RMPP_VERSION,
    SA_CLASS_VERSION,
    SA_HEADER_END,
    SA_MAD,
    AnySaAttribute,
    SaAttribute,
)

log = logging.getLogger("ibsnmp.sa.client")

RMPP_WINDOW = 32  # segments the SA may send ahead of our ACK
# The SA header counts in each segment's RMPP payload (IBA 13.6.2.3).
_SA_HEADER_OCTETS = SA_HEADER_END - 36
CLOSE_DRAIN_S = 0.2
RESP_TIME_VALUE = 19  # 4.096 us * 2**19, about 2 s: the longest we wait between segments

_R = TypeVar("_R", bound=AnyRecord)

# SA status codes (IBA 15.2.1.1 Table 187: the class-specific bits 8..14).
SA_STATUS = {
    1: "ERR_NO_RESOURCES", 2: "ERR_REQ_INVALID", 3: "ERR_NO_RECORDS",
    4: "ERR_TOO_MANY_RECORDS", 5: "ERR_REQ_INVALID_GID", 6: "ERR_REQ_INSUFFICIENT_COMPONENTS",
    7: "ERR_REQ_DENIED",
}
ERR_NO_RECORDS = 3


class SaError(Exception):
    """The SA answered with an error status."""

    def __init__(self, status: int, attribute: AnySaAttribute) -> None:
        self.status = status
        self.sa_status = (status >> 8) & 0x7F
        general = status & 0x1F
        text = SA_STATUS.get(self.sa_status) or (f"MAD status {general:#x}" if general
                                                  else f"status {status:#06x}")
        super().__init__(f"SA {attribute.name}: {text}")


@dataclass(frozen=True)
class SaAnswer(Generic[RecordT]):
    """The records of an answer; `complete` is False when the transport may have cut it."""

    records: tuple[RecordT, ...]
    complete: bool = True


def sa_request(method: int, attribute: AnySaAttribute,
               values: Mapping[str, FieldValue] | None = None,
               components: Iterable[str] | None = None, *, transaction_id: int = 0,
               attribute_modifier: int = 0, sm_key: int = 0) -> bytes:
    """One SA request MAD. `components` names the fields that constrain it
    (default: the fields in `values`)."""
    values = dict(values or {})
    record = attribute.layout.encode(values)
    # InformInfo and Notice have no components: their mask stays 0.
    mask = attribute.mask(values if components is None else components) \
        if attribute.components else 0
    return bytes(SA_MAD.encode({
        "BaseVersion": 1, "MgmtClass": CLASS_SUBN_ADM, "ClassVersion": SA_CLASS_VERSION,
        "Method": method, "TransactionID": transaction_id,
        "AttributeID": attribute.attribute_id, "AttributeModifier": attribute_modifier,
        "RMPPVersion": RMPP_VERSION, "RRespTime": RESP_TIME_VALUE,
        "SMKey": sm_key, "ComponentMask": mask, "Data": bytes(record),
    }))


def records_of(attribute: SaAttribute[_R], stride: int, data: bytes) -> list[_R]:
    """Every whole record in `data`, `stride` octets apart (AttributeOffset * 8)."""
    stride = stride or attribute.record_size
    if stride < attribute.layout.size:
        raise UmadError(errno.EPROTO, f"{attribute.name}: AttributeOffset {stride} octets is "
                                      f"smaller than a record ({attribute.layout.size})")
    return [attribute.layout.decode(data[i:i + stride])
            for i in range(0, len(data) - attribute.layout.size + 1, stride)]


def _unsegmented(attribute: SaAttribute[_R], stride: int, data: bytes) -> SaAnswer[_R]:
    """The records of one MAD that came without RMPP numbering. The SA zero
    fills the room after its last record, so the answer is known whole only
    when a record's room was left unused; octets short of a record are not
    looked at (under ibsim they are not the SA's)."""
    stride = max(stride, attribute.layout.size)
    whole = [data[i:i + stride] for i in range(0, len(data) - stride + 1, stride)]
    used = len(whole)
    while used and not any(whole[used - 1]):
        used -= 1
    return SaAnswer(tuple(attribute.layout.decode(s) for s in whole[:used]), used < len(whole))


@dataclass
class RmppReceiver:
    """Reassembles the DATA segments of one RMPP transfer (IBA 13.6.4, receiver side).

    `feed` takes each segment and returns the ACK to send (or None); `done`
    is set once the last segment arrived in order."""

    window: int = RMPP_WINDOW
    expected: int = 1
    payload_length: int = 0
    first: SAMAD | None = None  # the header of segment 1
    data: bytearray = field(default_factory=bytearray)
    done: bool = False

    def feed(self, segment: bytes) -> bytes | None:
        """`segment` as received: a short one holds only the octets sent."""
        header = SA_MAD.decode(segment.ljust(MAD_SIZE, b"\0"))
        if header["RMPPType"] != RMPP_DATA:
            return None
        number = header["RMPPData1"]
        flags = header["RMPPFlags"]
        if number == self.expected and not self.done:
            if number == 1:
                if not flags & RMPP_FIRST:
                    raise UmadError(errno.EPROTO, "RMPP segment 1 without the First flag")
                self.first = header
                self.payload_length = header["RMPPData2"]
            self.data += segment[SA_HEADER_END:]
            self.expected += 1
            self.done = bool(flags & RMPP_LAST)
        # In order or a repeat: acknowledge what we hold (a gap is re-asked this way).
        last = self.expected - 1
        return self._ack(segment, last, last if self.done else last + self.window)

    @staticmethod
    def _ack(segment: bytes, number: int, new_window_last: int) -> bytes:
        ack = bytearray(segment[:SA_HEADER_END].ljust(MAD_SIZE, b"\0"))
        SA_MAD.encode({"RMPPType": RMPP_ACK, "RMPPFlags": RMPP_ACTIVE, "RMPPStatus": 0,
                       "RMPPData1": number, "RMPPData2": new_window_last,
                       "RRespTime": RESP_TIME_VALUE}, into=ack)
        return bytes(ack)

    def payload(self) -> bytes:
        """The records' octets: the SA header of each segment is not payload data."""
        segments = self.expected - 1
        length = self.payload_length - _SA_HEADER_OCTETS * segments
        if not 0 <= length <= len(self.data):
            length = len(self.data)  # a sender that counted otherwise: keep every octet
        return bytes(self.data[:length])


ReportHandler = Callable[[Notice, int], None]  # (the Notice, the SA's LID)


class MadPort(Protocol):
    """What the client asks of its port: a `UmadPort`, or one whose MADs another
    thread receives (`ibsnmp.sa.worker`)."""

    def new_transaction_id(self) -> int: ...

    def send(self, mad: bytes, address: Address, transaction_id: int | None = None) -> None: ...

    def receive_sized(self, timeout: float) -> bytes | None: ...

    def close(self) -> None: ...


class SaClient:
    """SA requests to `sm` (the SM's LID, QP1) over `port`, one at a time.

    Blocking: under ibsim receiving waits in umad_recv, so callers from
    asyncio use `SaWorker`. `on_report` gets each Notice a Report carries.
    `sm_key` makes the requests trusted: OpenSM answers P_KeyTableRecord
    queries only to the SM_Key it was configured with.

    `silent` is True while the SA is known not to answer: the last request
    had no answer to any of its tries (an answer of any kind clears it).
    `within` bounds the requests made meanwhile by one deadline."""

    def __init__(self, port: MadPort, sm: Address, *, timeout: float = 1.0, retries: int = 2,
                 on_report: ReportHandler | None = None, sm_key: int = 0) -> None:
        self.port = port
        self.sm_key = sm_key
        self.sm = sm
        self.timeout = timeout
        self.retries = retries
        self.on_report = on_report
        self.reports = 0
        self.silent = False
        self._deadline: float | None = None  # no request waits past it (within)

    @classmethod
    def open(cls, ca: str | None = None, port_number: int = 0, sm: Address | None = None,
             **options: object) -> SaClient:
        """A port of its own with the SA agent; the SA at `sm`, else at the
        master SM the local PortInfo names (read over the port's own SMPs)."""
        port = SaPort(ca, port_number) if sm is None else SaOnlyPort(ca, port_number)
        try:
            return cls(port, sm or master_sm(port),
                       **options)  # type: ignore[arg-type]  # __init__'s keywords
        except Exception:
            port.close()
            raise

    def close(self) -> None:
        # An SA may still send (an RMPP ACK after GetMulti, a Report): take it
        # first, since ibsim's preload crashes on a MAD for a closed port.
        deadline = time.monotonic() + CLOSE_DRAIN_S
        try:
            while (left := deadline - time.monotonic()) > 0:
                self.serve_reports(left)
        finally:
            self.port.close()

    @contextmanager
    def within(self, seconds: float) -> Iterator[None]:
        """Requests made in the block are tried once, and none waits past
        `seconds` from now: one past that raises MadTimeout before it is sent."""
        retries, self.retries = self.retries, 0
        self._deadline = time.monotonic() + seconds
        try:
            yield
        finally:
            self.retries, self._deadline = retries, None

    def _wait_until(self) -> float:
        """When a wait for an answer (or its next segment) begun now ends."""
        end = time.monotonic() + self.timeout
        return end if self._deadline is None else min(end, self._deadline)

    # -- queries -------------------------------------------------------------------

    def get_table(self, attribute: SaAttribute[_R], values: Mapping[str, FieldValue] | None = None,
                  components: Iterable[str] | None = None) -> SaAnswer[_R]:
        """SubnAdmGetTable(): every record matching the masked fields."""
        return self.request(METHOD_GET_TABLE, attribute, values, components, attribute)

    def get(self, attribute: SaAttribute[_R], values: Mapping[str, FieldValue] | None = None,
            components: Iterable[str] | None = None) -> _R | None:
        """SubnAdmGet(): the one matching record, None when there is none."""
        records = self.request(METHOD_GET, attribute, values, components, attribute).records
        return records[0] if records else None

    def set(self, attribute: SaAttribute[_R], values: Mapping[str, FieldValue],
            components: Iterable[str] | None = None) -> _R:
        """SubnAdmSet(): the record as the SA accepted it."""
        records = self.request(METHOD_SET, attribute, values, components, attribute).records
        if not records:
            raise UmadError(errno.EPROTO, f"SA {attribute.name}: an empty answer to Set()")
        return records[0]

    def get_multi(self, attribute: AnySaAttribute, values: Mapping[str, FieldValue],
                  components: Iterable[str] | None = None, *,
                  answer: SaAttribute[_R]) -> SaAnswer[_R]:
        """SubnAdmGetMulti() (MultiPathRecord): the request goes as one RMPP
        segment; the answer's records are of `answer` (PathRecords)."""
        return self.request(METHOD_GET_MULTI, attribute, values, components, answer)

    def request(self, method: int, attribute: AnySaAttribute,
                values: Mapping[str, FieldValue] | None, components: Iterable[str] | None,
                answer: SaAttribute[_R]) -> SaAnswer[_R]:
        """`method` of `attribute`; `answer`: the attribute of the answer's records
        (`attribute`'s but for GetMulti)."""
        mad = bytearray(sa_request(method, attribute, values, components, sm_key=self.sm_key))
        if method == METHOD_GET_MULTI:
            # A request of one segment: the whole record is its payload.
            SA_MAD.encode({"RMPPType": RMPP_DATA,
                           "RMPPFlags": RMPP_ACTIVE | RMPP_FIRST | RMPP_LAST, "RMPPData1": 1,
                           "RMPPData2": _SA_HEADER_OCTETS + attribute.layout.size}, into=mad)
        try:
            return self._exchange(bytes(mad), answer,
                                  method in (METHOD_GET_TABLE, METHOD_GET_MULTI))
        except SaError as exc:
            if exc.sa_status == ERR_NO_RECORDS:
                return SaAnswer(())
            raise

    def _exchange(self, mad: bytes, attribute: SaAttribute[_R], table: bool) -> SaAnswer[_R]:
        tid = self.port.new_transaction_id()
        request = bytearray(mad)
        SA_MAD.encode({"TransactionID": tid}, into=request)
        tries = self.retries + 1
        for attempt in range(1, tries + 1):
            if self._deadline is not None and time.monotonic() >= self._deadline:
                raise MadTimeout(errno.ETIMEDOUT, f"SA {attribute.name}: not asked, its "
                                                  "deadline passed")
            sent = time.monotonic()
            self.port.send(bytes(request), self.sm)
            answer = self._await_answer(tid, attribute, table)
            if answer is not None:
                return answer
            log.debug("SA %s: no answer within %.3g s (try %d of %d)", attribute.name,
                      time.monotonic() - sent, attempt, tries)
        self.silent = True
        if self._deadline is not None:
            raise MadTimeout(errno.ETIMEDOUT, f"SA {attribute.name}: no answer by its deadline")
        raise MadTimeout(errno.ETIMEDOUT, f"SA {attribute.name}: no answer after "
                                          f"{tries} tries of {self.timeout} s")

    def _await_answer(self, tid: int, attribute: SaAttribute[_R], table: bool
                      ) -> SaAnswer[_R] | None:
        receiver: RmppReceiver | None = None
        deadline = self._wait_until()
        while (left := deadline - time.monotonic()) > 0:
            sized = self.port.receive_sized(left)
            if sized is None:
                continue
            # Octets past a short MAD are none of the sender's: read them as zeros.
            mad = sized.ljust(MAD_SIZE, b"\0")
            if self._unsolicited(mad) or not matches(mad, (tid,)):
                continue
            header = SA_MAD.decode(mad)
            if not header["Response"]:
                continue
            self.silent = False
            status = header["Status"]
            if status:
                raise SaError(status, attribute)
            stride = header["AttributeOffset"] * 8
            active = header["RMPPFlags"] & RMPP_ACTIVE
            if not active and not table:  # Get(), Set(): one record
                data = mad[SA_HEADER_END:]
                return SaAnswer((attribute.layout.decode(data),) if any(data) else ())
            if not active:  # a whole table in one MAD
                return replace(_unsegmented(attribute, stride, mad[SA_HEADER_END:]),
                               complete=True)
            if header["RMPPType"] in (RMPP_STOP, RMPP_ABORT):
                raise UmadError(errno.EPROTO, f"SA {attribute.name}: the transfer was "
                                              f"stopped (RMPP status {header['RMPPStatus']})")
            if header["RMPPType"] != RMPP_DATA or header["RMPPData1"] == 0:
                # RMPP flagged but not numbered: no RMPP underneath (ibsim).
                # Shorter than a MAD: the sender's whole answer; else perhaps cut.
                answer = _unsegmented(attribute, stride, mad[SA_HEADER_END:])
                return replace(answer, complete=True) if len(sized) < MAD_SIZE else answer
            receiver = receiver or RmppReceiver()
            ack = receiver.feed(sized)
            if ack is not None:
                self.port.send(ack, self.sm)
            if receiver.done:
                assert receiver.first is not None  # done: segment 1 came first
                stride = receiver.first["AttributeOffset"] * 8
                return SaAnswer(tuple(records_of(attribute, stride, receiver.payload())))
            deadline = self._wait_until()  # the SA is sending: wait on
        return None

    # -- Reports ---------------------------------------------------------------------

    def serve_reports(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for Reports (while no request is under way)."""
        mad = self.port.receive_sized(timeout)
        if mad is not None:
            self._unsolicited(mad.ljust(MAD_SIZE, b"\0"))

    def _unsolicited(self, mad: bytes) -> bool:
        """Answers a Report (True); anything else is left to the caller."""
        if mad[1] != CLASS_SUBN_ADM or mad[3] != METHOD_REPORT:
            return False
        header = SA_MAD.decode(mad)
        response = bytearray(mad)
        SA_MAD.encode({"Method": METHOD_REPORT_RESP & 0x7F, "Response": 1, "Status": 0},
                      into=response)
        self.port.send(bytes(response), self.sm)
        self.reports += 1
        self.silent = False  # a Report is the SA speaking
        if header["AttributeID"] == NOTICE.attribute_id and self.on_report is not None:
            try:
                self.on_report(NOTICE.layout.decode(mad[SA_HEADER_END:]), self.sm.lid)
            except Exception:  # a faulty handler must not stop the client
                log.exception("a Report handler failed")
        return True


class SaPort(UmadPort):
    """A port with an SA agent (Reports included) and directed-route SMPs, to find the SM."""

    CLASSES: tuple[int, ...] = (CLASS_SUBN_DIRECTED_ROUTE,)

    def __init__(self, ca: str | None = None, port: int = 0) -> None:
        super().__init__(ca, port)
        try:
            self.register(CLASS_SUBN_ADM, SA_CLASS_VERSION, unsolicited=(METHOD_REPORT,))
        except UmadError:
            self.close()
            raise


class SaOnlyPort(SaPort):
    """The SA agent alone, for a process that sends its SMPs through another
    port: where two ports of one process register a class (ibsim's preload
    library), the answers to one may reach the other."""

    CLASSES = ()


def sa_address(master_sm_lid: int, master_sm_sl: int) -> Address:
    """Where the SA answers: QP1 of the master SM's port (IBA 15.2.5.1)."""
    if not 0 < master_sm_lid < 0xC000:
        raise UmadError(errno.ENXIO, "no subnet manager: the port's MasterSMLID is "
                                     f"{master_sm_lid} (is the subnet up?)")
    return Address(lid=master_sm_lid, qp=GSI_QP, qkey=GSI_QKEY, sl=master_sm_sl)


def master_sm(port: UmadPort) -> Address:
    """The SA's address: the master SM's LID and SL from the local port's PortInfo."""
    answer = port.query(directed_route_get(PORT_INFO, (), 0), Address(lid=0xFFFF))
    info = decode_reply(answer, PORT_INFO).attribute
    return sa_address(info["MasterSMLID"], info["MasterSMSL"])


def subscription(trap: int, subscribe: bool = True) -> dict[str, FieldValue]:
    """An InformInfo for generic trap `trap` from any LID (IBA 13.4.8.3), to QP1."""
    return {"GID": bytes(16), "LIDRangeBegin": 0xFFFF, "LIDRangeEnd": 0, "IsGeneric": 1,
            "Subscribe": int(subscribe), "Type": 0xFFFF, "TrapNumber": trap,
            "QPN": GSI_QP, "RespTimeValue": RESP_TIME_VALUE, "ProducerType": 0xFFFFFF}


def subscribe(client: SaClient, traps: Iterable[int], subscribe: bool = True
              ) -> dict[int, str | None]:
    """Set(InformInfo) for each trap: None where the SA accepted it, else why
    not. PortClosing (the client is stopping) ends it at once, raised. An
    SA that answered none of a request's tries is not asked the rest: each
    would wait as long (a start or a stop with no SM would take minutes)."""
    outcome: dict[int, str | None] = {}
    for trap in traps:
        if client.silent and outcome:
            outcome[trap] = "not asked: the SA did not answer the one before"
            continue
        try:
            client.set(INFORM_INFO, subscription(trap, subscribe))
            outcome[trap] = None
        except PortClosing:
            raise
        except (SaError, UmadError) as exc:
            outcome[trap] = str(exc)
    return outcome


def unsubscribe_within(client: SaClient, traps: Iterable[int], seconds: float
                       ) -> dict[int, str | None]:
    """`subscribe(client, traps, False)`, each Set tried once and all over
    within `seconds` (what a stop can spare): per trap, None where the SA
    accepted it, else why not."""
    with client.within(seconds):
        return subscribe(client, traps, False)


def subscribed_traps(client: SaClient, subscriber_gid: int) -> set[int]:
    """The generic traps the SA lists subscriptions of `subscriber_gid` to
    (GetTable(InformInfoRecord) by SubscriberGID). A transport that cuts long
    answers (ibsim: 256 octets) shows only the first few."""
    answer = client.get_table(INFORM_INFO_RECORD, {"SubscriberGID": subscriber_gid.to_bytes(16, "big")})
    return {r["TrapNumber"] for r in answer.records if r["IsGeneric"]}


def nodes_listed(client: SaClient, guids: Sequence[int], seconds: float) -> dict[int, bool]:
    """Whether the SA's NodeRecords (GetTable by NodeGUID) list each node of
    `guids`, each request tried once and all within `seconds`. A node whose
    question got no answer, or an answer the transport cut short before its
    first record, is left out; so is every node after a failed request (an SA
    that did not answer one would only make the rest wait as long)."""
    listed: dict[int, bool] = {}
    with client.within(seconds):
        for guid in guids:
            try:
                answer = client.get_table(NODE_RECORD, {"NodeGUID": guid})
            except PortClosing:
                raise
            except (SaError, UmadError) as exc:
                log.debug("SA NodeRecord of %016x: %s", guid, exc)
                break
            if answer.records or answer.complete:
                listed[guid] = bool(answer.records)
    return listed

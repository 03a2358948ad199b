"""The MQTT aggregator: the fabric as the publishers of one fabric id
report it (see ibsnmp.mqtt.topics for the tree, ibsnmp.mqtt.codec for the
payloads).

A node is served while its latest state record is valid, neither its own
status nor its publisher's status is `offline`, and it has sent a state
within `stale_after` seconds (default: three of its publisher's refresh
periods).  A node that stops being served leaves the snapshot (its
context stops answering, it leaves IB-SM-MIB) and the log says why; a new
state brings it back.  Staleness is judged only while connected: during an
outage of our own broker connection every node is kept, and after the
reconnect the retained states refresh them all.

Events become TrapEvents for the notification path, once each: a
publisher numbers its node's events, and a number not above the last one
taken (a redelivery after a reconnect) is dropped.  A message that cannot
be taken (malformed, oversized, wrong version, schema violation, a topic
GUID that is not the payload's) is dropped and logged once per node; it
never touches another node.

Snapshots are rebuilt on the event loop, coalesced: at most one rebuild
per `rebuild_delay` (longer while a rebuild of a large fabric is costly),
and always before an event is emitted, so a manager reading after a trap
sees the state that raised it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import time
from dataclasses import dataclass

import aiomqtt

from ibsnmp.fabric.model import Fabric, SmInfo
from ibsnmp.mqtt import topics
from ibsnmp.mqtt.arguments import DEFAULT_REFRESH_S
from ibsnmp.mqtt.assemble import Assembly
from ibsnmp.mqtt.broker import BrokerSettings, run_session
from ibsnmp.mqtt.codec import (MAX_PAYLOAD_BYTES, CounterOrder, CountersRecord, NodeRecord, PayloadError, counter_order,
                               decode_counters, decode_event, decode_state, with_counters)

from ibsnmp.providers.base import ProviderCore, cancel_and_wait

__all__ = ["DEFAULT_REFRESH_S", "MqttAggregator"]

# A publisher's full refresh period when its records do not say.
STALE_REFRESHES = 3
DEFAULT_REBUILD_DELAY = 0.2
_HOUSEKEEPING_S = 0.5

log = logging.getLogger("ibsnmp.mqtt.aggregator")


@dataclass
class _Heard:
    record: NodeRecord  # as served (its node and SMs are the snapshot's objects)
    seen: float  # monotonic time of the last state or counters
    digest: bytes = b""  # of the payload past its time field (see _refresh_digest)
    state_time: float = -1.0  # the `time` of the state taken (counters messages name it)
    order: CounterOrder = ()  # codec.counter_order of that state


_TIMED = b'{"version":1,"time":'


def _refresh_digest(payload: bytes) -> bytes:
    """A digest of everything a state says besides its time, for payloads
    laid out as our encoder writes them (version, then time, first): a full
    refresh of an unchanged node is then recognised without decoding it."""
    if not payload.startswith(_TIMED):
        return b""
    comma = payload.find(b",", len(_TIMED))
    return hashlib.blake2b(payload[comma:], digest_size=16).digest() if comma > 0 else b""


# An SM's ActCount is rebased to the aggregator's epoch (it counts on from
# there as from the publisher's); rebasing two states of a steady SM can
# differ by a count or two of rounding, which is no change.
_ACT_COUNT_SLACK = 2


def _rebased(sms: tuple[SmInfo, ...], elapsed: float, served: tuple[SmInfo, ...]) -> tuple[SmInfo, ...]:
    """`sms` with ActCounts counting on from `elapsed` seconds into our epoch;
    the served SMs where nothing but the rounding of that differs."""
    rebased = tuple(SmInfo(sm.guid, sm.sm_key,
                           None if sm.act_count is None
                           else (sm.act_count - int(sm.act_rate * elapsed)) & 0xFFFFFFFF,
                           sm.priority, sm.state, sm.node_guid, sm.port_num, sm.act_rate)
                    for sm in sms)
    if len(rebased) == len(served) and all(
            dataclasses.replace(new, act_count=old.act_count) == old and _near(new.act_count, old.act_count)
            for new, old in zip(rebased, served)):
        return served
    return rebased


def _near(a: int | None, b: int | None) -> bool:
    if a is None or b is None:
        return a is b
    return min((a - b) & 0xFFFFFFFF, (b - a) & 0xFFFFFFFF) <= _ACT_COUNT_SLACK


class MqttAggregator(ProviderCore):
    """`MqttAggregator(settings, fabric_id, stale_after=None)`."""

    def __init__(self, settings: BrokerSettings, fabric_id: str, *, stale_after: float | None = None,
                 max_payload: int = MAX_PAYLOAD_BYTES, rebuild_delay: float = DEFAULT_REBUILD_DELAY) -> None:
        super().__init__()
        self.settings = settings
        self.fabric_id = topics.check_fabric_id(fabric_id)
        self.stale_after = stale_after
        self.max_payload = max_payload
        self.rebuild_delay = rebuild_delay
        self._assembly = Assembly(f"mqtt {settings.label} fabric {fabric_id}")
        self._fabric = self._assembly.fabric
        self._heard: dict[int, _Heard] = {}
        self._offline_nodes: set[int] = set()
        self._offline_publishers: set[str] = set()
        self._last_sequence: dict[int, int] = {}
        self._warned: set[int | str] = set()  # nodes and publishers whose bad messages were said
        self._said_mismatch: set[object] = set()
        self._news: list[tuple[int, str]] = []  # joins and leaves, logged after the rebuild
        self._connected = False
        self._ever_connected = False
        self._said_unreachable = False
        self._stale_checked = 0.0
        # Every node's age is looked at this often: staleness is judged to
        # within a tenth of the limit (1 to 10 s), which keeps an idle
        # fabric of 10,000 nodes from costing a pass every second.
        limit = stale_after if stale_after is not None else STALE_REFRESHES * DEFAULT_REFRESH_S
        self._stale_check_period = min(10.0, max(1.0, limit / 10))
        self._build_due = 0.0
        self._build_cost = 0.0
        self._tasks: list[asyncio.Task[None]] = []
        self.refused = 0  # messages dropped as bad input
        self.duplicates = 0  # events dropped as already taken
        self.updates = 0  # state messages taken

    # -- the Provider interface ---------------------------------------------------

    async def start(self) -> None:
        if self._tasks:
            return
        session = run_session(self.settings, (topics.subscription(self.fabric_id),), self._while_connected,
                              self.handle, self._lost)
        self._tasks = [asyncio.create_task(session, name="ibsnmp-mqtt-session"),
                       asyncio.create_task(self._housekeeping(), name="ibsnmp-mqtt-housekeeping")]

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(tasks)

    # -- extras -------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._connected

    def served(self) -> frozenset[int]:
        return frozenset(self._fabric.nodes)

    # -- the connection -----------------------------------------------------------

    async def _while_connected(self, client: aiomqtt.Client) -> None:
        now = time.monotonic()
        # Our own outage said nothing about the nodes: each gets a full
        # stale period again, and the retained states arrive now.
        for heard in self._heard.values():
            heard.seen = now
        if self._ever_connected:
            log.info("mqtt: reconnected to %s; the retained states refresh every node", self.settings.label)
        self._connected = self._ever_connected = True
        await asyncio.Event().wait()

    def _lost(self, reason: str) -> None:
        if self._connected:
            log.warning("mqtt: lost the broker %s (%s): serving the %d nodes as last heard; staleness is "
                        "not judged until the connection is back", self.settings.label, reason,
                        len(self._fabric.nodes))
        elif not self._ever_connected and not self._said_unreachable:
            self._said_unreachable = True
            log.warning("mqtt: cannot reach the broker %s (%s); retrying", self.settings.label, reason)
        self._connected = False

    # -- messages ---------------------------------------------------------------------

    def handle(self, message: aiomqtt.Message) -> None:
        """Take one message (any topic under the subscription)."""
        topic = topics.parse(self.fabric_id, str(message.topic))
        payload = message.payload
        if topic is None or not isinstance(payload, (bytes, bytearray)):
            return
        payload = bytes(payload)
        if topic.guid is None:
            if topic.kind == "counters":
                self._counters(topic.publisher or "", payload)
            else:
                self._publisher_status(topic.publisher or "", payload)
        elif topic.kind == "state":
            self._state(topic.guid, payload)
        elif topic.kind == "status":
            self._node_status(topic.guid, payload)
        else:
            self._event(topic.guid, payload)

    def _refuse(self, guid: int, kind: str, why: str) -> None:
        self.refused += 1
        if guid not in self._warned:
            self._warned.add(guid)
            log.warning("mqtt: node %016x: %s message dropped: %s (further bad messages of this node are "
                        "dropped without a word)", guid, kind, why)

    def _state(self, guid: int, payload: bytes) -> None:
        if not payload:  # a retained state cleared: the node is gone for good
            if self._heard.pop(guid, None) is not None:
                self._update(guid, "its retained state was cleared")
            return
        digest = _refresh_digest(payload)
        heard = self._heard.get(guid)
        if digest and heard is not None and heard.digest == digest and len(payload) <= self.max_payload:
            heard.seen = time.monotonic()  # the same state again: a refresh
            self.updates += 1
            if guid not in self._assembly:
                self._update(guid, "")
            return
        try:
            record = decode_state(payload, guid, self.max_payload)
        except PayloadError as exc:
            self._refuse(guid, "state", str(exc))
            return
        if record.sms:
            served = heard.record.sms if heard is not None else ()
            record = dataclasses.replace(record, sms=_rebased(record.sms, self.elapsed(), served))
        self.updates += 1
        self._heard[guid] = _Heard(record, time.monotonic(), digest, record.time, counter_order(record))
        self._update(guid, "")

    def _counters(self, publisher: str, payload: bytes) -> None:
        """Nodes' counter values since their states: taken without decoding
        the states again; a node's wait for the state they belong to when
        another is held."""
        try:
            records = decode_counters(payload, self.max_payload)
        except PayloadError as exc:
            self.refused += 1
            if publisher not in self._warned:
                self._warned.add(publisher)
                log.warning("mqtt: publisher %s: counters message dropped: %s (further bad messages of this "
                            "publisher are dropped without a word)", publisher, exc)
            return
        for guid, counters in records.items():
            if isinstance(counters, PayloadError):
                self._refuse(guid, "counters", str(counters))
            else:
                self._node_counters(guid, counters)

    def _node_counters(self, guid: int, counters: CountersRecord) -> None:
        heard = self._heard.get(guid)
        if heard is None or counters.state != heard.state_time or counters.time < heard.record.time:
            return  # for another state than the one held, or older than what is served
        record = with_counters(heard.record, counters, heard.order)
        if record is None:
            self._refuse(guid, "counters", "its values do not fit the node's state")
            return
        if record.sms:
            rebased = _rebased(record.sms, self.elapsed(), heard.record.sms)
            if rebased is not heard.record.sms:
                return  # an SM's ActCount jumped (it restarted): its next state says so
            record = dataclasses.replace(record, sms=rebased)
        heard.record, heard.seen = record, time.monotonic()
        self.updates += 1
        if guid in self._assembly and not self._why_not_served(guid, heard.seen):
            self._assembly.put_values(record)
            self._due()
        else:
            self._update(guid, "")

    def _node_status(self, guid: int, payload: bytes) -> None:
        if payload == topics.OFFLINE:
            self._offline_nodes.add(guid)
            self._update(guid, "its status is offline")
        elif payload == topics.ONLINE:
            self._offline_nodes.discard(guid)
            self._update(guid, "")
        elif payload:
            self._refuse(guid, "status", f"expected online or offline, got {payload[:32]!r}")

    def _publisher_status(self, publisher: str, payload: bytes) -> None:
        if payload == topics.OFFLINE:
            if publisher not in self._offline_publishers:
                self._offline_publishers.add(publisher)
                log.info("mqtt: publisher %s is offline", publisher)
        elif payload == topics.ONLINE:
            self._offline_publishers.discard(publisher)
        else:
            return
        for guid, heard in list(self._heard.items()):
            if heard.record.publisher == publisher:
                self._update(guid, f"its publisher {publisher} is offline")

    def _event(self, guid: int, payload: bytes) -> None:
        try:
            record = decode_event(payload, guid, self.max_payload)
        except PayloadError as exc:
            self._refuse(guid, "event", str(exc))
            return
        last = self._last_sequence.get(guid)
        if last is not None and record.sequence <= last:
            self.duplicates += 1
            log.debug("mqtt: node %016x: event %d already taken", guid, record.sequence)
            return
        self._last_sequence[guid] = record.sequence
        log.debug("mqtt: node %016x: event %d, trap %d", guid, record.sequence, record.event.trap)
        if self._assembly.dirty:
            self._rebuild()
        self._emit(record.event)

    # -- what is served -----------------------------------------------------------------

    def _why_not_served(self, guid: int, now: float) -> str:
        heard = self._heard.get(guid)
        if heard is None:
            return "no state"
        if guid in self._offline_nodes:
            return "its status is offline"
        publisher = heard.record.publisher
        if publisher is not None and publisher in self._offline_publishers:
            return f"its publisher {publisher} is offline (last will)"
        limit = self._stale_limit(heard.record)
        if self._connected and now - heard.seen > limit:
            return f"no state for {limit:g} s (stale)"
        return ""

    def _stale_limit(self, record: NodeRecord) -> float:
        if self.stale_after is not None:
            return self.stale_after
        return STALE_REFRESHES * (record.refresh or DEFAULT_REFRESH_S)

    def _update(self, guid: int, reason: str) -> None:
        why = self._why_not_served(guid, time.monotonic()) or ("" if guid in self._heard else reason)
        served = guid in self._assembly
        if not why:
            if not served:
                heard = self._heard[guid]
                self._news.append((logging.INFO, f"mqtt: node {guid:016x} ({heard.record.node.description or 'no description'}) "
                                                 "joins the fabric"))
            self._assembly.put(self._heard[guid].record)
            self._due()
        elif served:
            self._news.append((logging.WARNING, f"mqtt: node {guid:016x} leaves the fabric: {why}"))
            self._assembly.remove(guid)
            self._due()

    def _due(self) -> None:
        if not self._build_due:
            self._build_due = time.monotonic() + max(self.rebuild_delay, 2 * self._build_cost)

    def _rebuild(self) -> None:
        started = time.perf_counter()
        fabric, mismatches, changed, valued = self._assembly.build()
        self._swap_in(fabric, changed, valued)  # one node's update: its listeners look at that node alone
        # Said once the snapshot shows it: a line read means served (or not).
        news, self._news = self._news, []
        for level, text in news:
            log.log(level, "%s", text)
        self._build_due = 0.0
        self._build_cost = time.perf_counter() - started
        for m in mismatches:
            key = (m.end, m.peer)
            if key not in self._said_mismatch:
                self._said_mismatch.add(key)
                says = f"{m.peer_says.guid:016x} port {m.peer_says.port}" if m.peer_says else "no peer"
                log.warning("mqtt: link not served: %016x port %d names %016x port %d as its peer, which "
                            "names %s", m.end.guid, m.end.port, m.peer.guid, m.peer.port, says)

    def check(self, now: float | None = None) -> Fabric:
        """Judge staleness (while connected) and rebuild if due; the snapshot."""
        now = time.monotonic() if now is None else now
        if self._connected and now - self._stale_checked >= self._stale_check_period:
            self._stale_checked = now
            for guid in [g for g in self._assembly_guids() if self._why_not_served(g, now)]:
                self._update(guid, "")
        if self._build_due and now >= self._build_due:
            self._rebuild()
        return self._fabric

    def _assembly_guids(self) -> list[int]:
        return [guid for guid in self._heard if guid in self._assembly]

    async def _housekeeping(self) -> None:
        while True:
            delay = _HOUSEKEEPING_S
            if self._build_due:
                delay = min(delay, max(0.0, self._build_due - time.monotonic()))
            await asyncio.sleep(delay)
            try:
                self.check()
            except Exception:
                log.exception("mqtt: rebuilding the fabric failed; serving the last snapshot")

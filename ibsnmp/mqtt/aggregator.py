"""The MQTT aggregator: the fabric as the publishers of one fabric id report it (topics, codec).

`MqttAggregator` serves a node while its latest state is valid, neither it nor its publisher
is `offline`, and it sent a state within `stale_after` (judged only while connected). Any
publisher may be hostile: a node belongs to the publisher whose state announced it, another's
word on it is refused while that owner is live, and `max_nodes` and `max_nodes_per_publisher`
(per broker user) bound what is served. Events become TrapEvents once each; a bad message is
dropped and logged, never touching another node. Snapshots are rebuilt coalesced, and always
before an event is emitted. Reference: docs/providers.md, 'Aggregator'; docs/mqtt-security.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import aiomqtt

from ibsnmp.fabric.model import Fabric, SmInfo
from ibsnmp.mqtt import topics
from ibsnmp.mqtt.arguments import DEFAULT_MAX_NODES, DEFAULT_REFRESH_S
from ibsnmp.mqtt.assemble import Assembly
from ibsnmp.mqtt.broker import BrokerSettings, run_session
from ibsnmp.mqtt.codec import (MAX_PAYLOAD_BYTES, CounterOrder, CountersRecord, EventRecord, NodeRecord, PayloadError,
                               counter_order, decode_counters, decode_event, decode_state, with_counters)
from ibsnmp.mqtt.notices import Notices
from ibsnmp.mqtt.takeover import TAKEOVER, Takeovers
from ibsnmp.mqtt.topics import Publisher

from ibsnmp.providers.base import ProviderCore, cancel_and_wait

__all__ = ["DEFAULT_REFRESH_S", "MqttAggregator"]

# Events of a node nobody owns yet wait this long for its state, and at most
# this many in all (an aggregator's queued session, delivered before the
# retained states, holds the events of its absence).
HOLD_EVENTS_S = 60.0
MAX_HELD = 10_000
# A publisher's full refresh period when its records do not say.
STALE_REFRESHES = 3
DEFAULT_REBUILD_DELAY = 0.2
_HOUSEKEEPING_S = 0.5

log = logging.getLogger("ibsnmp.mqtt.aggregator")


@dataclass
class _Heard:
    owner: Publisher  # whose topic announced the node
    record: NodeRecord  # as served (its node and SMs are the snapshot's objects)
    seen: float  # monotonic time of the last state or counters
    digest: bytes = b""  # of the payload past its time field (see _refresh_digest)
    state_time: float = -1.0  # the `time` of the state taken (counters messages name it)
    order: CounterOrder = ()  # codec.counter_order of that state


_TIMED = b'{"version":1,"time":'
_K = TypeVar("_K")


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


def _count(table: dict[_K, int], key: _K, delta: int) -> None:
    """Add `delta` to `table[key]`; a count that reaches 0 leaves the table."""
    left = table.get(key, 0) + delta
    if left > 0:
        table[key] = left
    else:
        table.pop(key, None)


def _near(a: int | None, b: int | None) -> bool:
    if a is None or b is None:
        return a is b
    return min((a - b) & 0xFFFFFFFF, (b - a) & 0xFFFFFFFF) <= _ACT_COUNT_SLACK


class MqttAggregator(ProviderCore):
    """`MqttAggregator(settings, fabric_id, stale_after=None)`."""

    def __init__(self, settings: BrokerSettings, fabric_id: str, *, stale_after: float | None = None,
                 max_payload: int = MAX_PAYLOAD_BYTES, rebuild_delay: float = DEFAULT_REBUILD_DELAY,
                 max_nodes: int = DEFAULT_MAX_NODES, max_nodes_per_publisher: int = DEFAULT_MAX_NODES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock=clock)
        self.settings = settings
        self.fabric_id = topics.check_fabric_id(fabric_id)
        self.stale_after = stale_after
        self.max_payload = max_payload
        self.rebuild_delay = rebuild_delay
        self.max_nodes = max_nodes
        self.max_nodes_per_publisher = max_nodes_per_publisher
        self._assembly = Assembly(f"mqtt {settings.label} fabric {fabric_id}")
        self._fabric = self._assembly.fabric
        self._heard: dict[int, _Heard] = {}
        self._owned: dict[Publisher, int] = {}  # how many heard nodes each publisher owns
        self._per_account: dict[Publisher | str, int] = {}  # and each account (_account)
        self._offline_nodes: set[tuple[Publisher, int]] = set()  # said offline by that publisher
        # Events of nodes nobody owns yet, by publisher and node: (event, when it came).
        self._held: dict[tuple[Publisher, int], list[tuple[EventRecord, float]]] = {}
        self._held_count = 0
        self._offline_publishers: set[Publisher] = set()
        self._last_sequence: dict[int, int] = {}
        self._notices = Notices(log, clock=clock)  # what publishers send wrong, one line per kind a minute
        self._takeovers = Takeovers(clock=clock)
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
        self.claims_refused = 0  # messages about a node another live publisher owns
        self.over_limit = 0  # states of new nodes past max_nodes(_per_publisher)
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
        now = self._now()
        # Our own outage said nothing about the nodes: each gets a full
        # stale period again, and the retained states arrive now.
        for heard in self._heard.values():
            heard.seen = now
        if self._ever_connected:
            log.info("mqtt: reconnected to %s; the retained states refresh every node", self.settings.label)
        self._connected = self._ever_connected = True
        self._takeovers.connected()
        await asyncio.Event().wait()

    def _lost(self, reason: str) -> None:
        if self._takeovers.lost():
            log.error(TAKEOVER, self.settings.label, self.settings.client_id)
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
        publisher = topic.publisher
        if not message.retain and publisher in self._offline_publishers and topic.kind in ("state", "counters"):
            # It is sending now: whatever said it was offline (its will of an
            # earlier connection, or without an ACL anyone) is past.
            self._publisher_status(publisher, topics.ONLINE)
        if topic.guid is None:
            if topic.kind == "counters":
                self._counters(publisher, payload)
            else:
                self._publisher_status(publisher, payload)
        elif topic.kind == "state":
            self._state(publisher, topic.guid, payload)
        elif self._foreign(publisher, topic.guid, topic.kind):
            return
        elif topic.kind == "status":
            self._node_status(publisher, topic.guid, payload)
        else:
            self._event(publisher, topic.guid, payload)

    def _refuse(self, publisher: Publisher, guid: int, kind: str, why: str) -> None:
        self.refused += 1
        self._notices.say((self._account(publisher), "bad", kind), logging.WARNING,
                          "mqtt: publisher %s: %s message of node %016x dropped: %s", publisher, kind, guid, why)

    # -- ownership ------------------------------------------------------------------------

    @staticmethod
    def _account(publisher: Publisher) -> Publisher | str:
        """What limits and log lines count `publisher` as: its user (the
        owner the ACL enforces; the client id level is the user's to fill
        at will, so one user's publishers share its limit and its log
        lines), or itself when anonymous."""
        return publisher if publisher.owner == topics.ANONYMOUS else publisher.owner

    def _foreign(self, publisher: Publisher, guid: int, kind: str) -> bool:
        """Whether node `guid` belongs to another publisher than `publisher`:
        its message (status, events, counters) is then refused, and said. A
        node nobody owns yet is nobody's to protect: its owner's retained
        status and queued events may come before its retained state."""
        heard = self._heard.get(guid)
        if heard is None or heard.owner == publisher:
            return False
        self.claims_refused += 1
        self._notices.say((self._account(publisher), "foreign", kind), logging.WARNING,
                          "mqtt: publisher %s: %s message of node %016x refused: the node belongs to "
                          "publisher %s", publisher, kind, guid, heard.owner)
        return True

    def _owner_live(self, heard: _Heard, now: float) -> bool:
        """Whether the node's owner still speaks for it: neither it nor the
        node is offline, and its last state is within the stale period
        (while we are connected: during our own outage nothing is stale)."""
        if heard.owner in self._offline_publishers:
            return False
        if (heard.owner, heard.record.node.guid) in self._offline_nodes:
            return False
        return not self._connected or now - heard.seen <= self._stale_limit(heard.record)

    def _may_claim(self, publisher: Publisher, guid: int, heard: _Heard | None) -> bool:
        """Whether a state from `publisher` for `guid` may be taken: the node
        is its own, or free (no live owner), and a new node is within limits."""
        if heard is not None and heard.owner == publisher:
            return True
        now = self._now()
        if heard is not None and self._owner_live(heard, now):
            self.claims_refused += 1
            limit = self._stale_limit(heard.record)
            self._notices.say((self._account(publisher), "claim"), logging.WARNING,
                              "mqtt: publisher %s claims node %016x, which publisher %s owns: refused until %s "
                              "has been silent for %g s or says the node is offline", publisher, guid,
                              heard.owner, heard.owner, limit)
            return False
        owned = self._per_account.get(self._account(publisher), 0)
        total = len(self._heard) - (heard is not None)
        if owned >= self.max_nodes_per_publisher or total >= self.max_nodes:
            self.over_limit += 1
            which = (f"max_nodes_per_publisher ({self.max_nodes_per_publisher})"
                     if owned >= self.max_nodes_per_publisher else f"max_nodes ({self.max_nodes})")
            self._notices.say((self._account(publisher), "limit"), logging.WARNING,
                              "mqtt: publisher %s: new node %016x refused: %s reached; the nodes served stay",
                              publisher, guid, which)
            return False
        if heard is not None:
            log.info("mqtt: node %016x passes from publisher %s (silent or offline) to publisher %s", guid,
                     heard.owner, publisher)
            self._forget(guid)
        return True

    def _forget(self, guid: int) -> None:
        """Drop what is known of `guid` and its owner's claim on it."""
        heard = self._heard.pop(guid, None)
        if heard is not None:
            _count(self._owned, heard.owner, -1)
            _count(self._per_account, self._account(heard.owner), -1)
            self._offline_nodes.discard((heard.owner, guid))
        self._last_sequence.pop(guid, None)

    def _take(self, publisher: Publisher, guid: int, heard: _Heard) -> None:
        if guid not in self._heard:
            _count(self._owned, publisher, 1)
            _count(self._per_account, self._account(publisher), 1)
        self._heard[guid] = heard
        held = self._held.pop((publisher, guid), None)
        if held is not None:  # its events came first (queued in our session): now, in order
            self._held_count -= len(held)
            self._update(guid, "")
            for record, _ in held:
                self._take_event(guid, record)

    # -- messages of a node ---------------------------------------------------------------

    def _state(self, publisher: Publisher, guid: int, payload: bytes) -> None:
        heard = self._heard.get(guid)
        if not payload:  # a retained state cleared: the node is gone for good
            if heard is not None and heard.owner == publisher:
                self._forget(guid)
                self._update(guid, "its retained state was cleared")
            return
        if not self._may_claim(publisher, guid, heard):
            return
        heard = self._heard.get(guid)  # None if it passed from another owner
        digest = _refresh_digest(payload)
        if digest and heard is not None and heard.digest == digest and len(payload) <= self.max_payload:
            heard.seen = self._now()  # the same state again: a refresh
            self.updates += 1
            if guid not in self._assembly:
                self._update(guid, "")
            return
        try:
            record = decode_state(payload, guid, self.max_payload)
        except PayloadError as exc:
            self._refuse(publisher, guid, "state", str(exc))
            return
        if record.sms:
            served = heard.record.sms if heard is not None else ()
            record = dataclasses.replace(record, sms=_rebased(record.sms, self.elapsed(), served))
        self.updates += 1
        self._take(publisher, guid, _Heard(publisher, record, self._now(), digest, record.time,
                                          counter_order(record)))
        self._update(guid, "")

    def _counters(self, publisher: Publisher, payload: bytes) -> None:
        """Nodes' counter values since their states: taken without decoding
        the states again; a node's wait for the state they belong to when
        another is held. Only the publisher's own nodes are taken."""
        try:
            records = decode_counters(payload, self.max_payload)
        except PayloadError as exc:
            self.refused += 1
            self._notices.say((self._account(publisher), "bad", "counters"), logging.WARNING,
                              "mqtt: publisher %s: counters message dropped: %s", publisher, exc)
            return
        for guid, counters in records.items():
            if guid not in self._heard or self._foreign(publisher, guid, "counters"):
                continue  # without a state of its own, counters say nothing
            if isinstance(counters, PayloadError):
                self._refuse(publisher, guid, "counters", str(counters))
            else:
                self._node_counters(publisher, guid, counters)

    def _node_counters(self, publisher: Publisher, guid: int, counters: CountersRecord) -> None:
        heard = self._heard.get(guid)
        if heard is None or counters.state != heard.state_time or counters.time < heard.record.time:
            return  # for another state than the one held, or older than what is served
        record = with_counters(heard.record, counters, heard.order)
        if record is None:
            self._refuse(publisher, guid, "counters", "its values do not fit the node's state")
            return
        if record.sms:
            rebased = _rebased(record.sms, self.elapsed(), heard.record.sms)
            if rebased is not heard.record.sms:
                return  # an SM's ActCount jumped (it restarted): its next state says so
            record = dataclasses.replace(record, sms=rebased)
        heard.record, heard.seen = record, self._now()
        self.updates += 1
        if guid in self._assembly and not self._why_not_served(guid, heard.seen):
            self._assembly.put_values(record)
            self._due()
        else:
            self._update(guid, "")

    def _node_status(self, publisher: Publisher, guid: int, payload: bytes) -> None:
        """A publisher's word on a node that is its own or nobody's (`handle`
        refused another's). Kept as that publisher's word, so it counts only
        while the node is that publisher's: a retained `offline` may come
        before the retained state it goes with. Nobody's nodes are
        remembered up to `max_nodes`."""
        key = (publisher, guid)
        if payload == topics.OFFLINE:
            if guid in self._heard or len(self._offline_nodes) < self.max_nodes:
                self._offline_nodes.add(key)
            self._update(guid, "its status is offline")
        elif payload == topics.ONLINE:
            self._offline_nodes.discard(key)
            self._update(guid, "")
        elif payload:
            self._refuse(publisher, guid, "status", f"expected online or offline, got {payload[:32]!r}")

    def _publisher_status(self, publisher: Publisher, payload: bytes) -> None:
        # A publisher that owns no node is remembered offline too (its
        # retained states may come after its last will), but at most
        # max_nodes of them, said at debug level and not looked for among
        # the nodes: statuses under made-up client ids cost neither memory,
        # log lines nor a pass over every node.
        owns = publisher in self._owned
        if payload == topics.OFFLINE:
            if publisher not in self._offline_publishers:
                if not owns and len(self._offline_publishers) >= self.max_nodes:
                    return
                self._offline_publishers.add(publisher)
                log.log(logging.INFO if owns else logging.DEBUG, "mqtt: publisher %s is offline", publisher)
        elif payload == topics.ONLINE:
            self._offline_publishers.discard(publisher)
        else:
            return
        if not owns:
            return
        for guid, heard in list(self._heard.items()):
            if heard.owner == publisher:
                self._update(guid, f"its publisher {publisher} is offline")

    def _event(self, publisher: Publisher, guid: int, payload: bytes) -> None:
        try:
            record = decode_event(payload, guid, self.max_payload)
        except PayloadError as exc:
            self._refuse(publisher, guid, "event", str(exc))
            return
        if guid in self._heard:
            self._take_event(guid, record)
            return
        # Nobody's node: an event queued in our session comes before the
        # retained state that announces it. Held until that publisher's state
        # takes the node, for HOLD_EVENTS_S at most, and MAX_HELD in all.
        if self._held_count >= MAX_HELD:
            self._notices.say((self._account(publisher), "held"), logging.WARNING,
                              "mqtt: publisher %s: event of node %016x dropped: %d events already wait "
                              "for the states of their nodes", publisher, guid, MAX_HELD)
            return
        self._held.setdefault((publisher, guid), []).append((record, self._now()))
        self._held_count += 1

    def _drop_old_held(self, now: float) -> None:
        for key, held in list(self._held.items()):
            if now - held[-1][1] > HOLD_EVENTS_S:
                del self._held[key]
                self._held_count -= len(held)
                self._notices.say((self._account(key[0]), "unclaimed"), logging.WARNING,
                                  "mqtt: publisher %s: %d event(s) of node %016x dropped: no state of the node "
                                  "came within %g s", key[0], len(held), key[1], HOLD_EVENTS_S)

    def _take_event(self, guid: int, record: EventRecord) -> None:
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
        if (heard.owner, guid) in self._offline_nodes:
            return "its status is offline"
        if heard.owner in self._offline_publishers:
            return f"its publisher {heard.owner} is offline (last will)"
        limit = self._stale_limit(heard.record)
        if self._connected and now - heard.seen > limit:
            return f"no state for {limit:g} s (stale)"
        return ""

    def _stale_limit(self, record: NodeRecord) -> float:
        if self.stale_after is not None:
            return self.stale_after
        return STALE_REFRESHES * (record.refresh or DEFAULT_REFRESH_S)

    def _update(self, guid: int, reason: str) -> None:
        why = self._why_not_served(guid, self._now()) or ("" if guid in self._heard else reason)
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
            self._build_due = self._now() + max(self.rebuild_delay, 2 * self._build_cost)

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
        now = self._now() if now is None else now
        if self._connected and now - self._stale_checked >= self._stale_check_period:
            self._stale_checked = now
            self._drop_old_held(now)
            for guid in [g for g in self._assembly_guids() if self._why_not_served(g, now)]:
                self._update(guid, "")
            # A node silent for twice its stale period is forgotten: it no longer
            # counts against the limits (a fake node's budget comes back).
            for guid in [g for g, heard in self._heard.items()
                         if now - heard.seen > 2 * self._stale_limit(heard.record)]:
                self._forget(guid)
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
                delay = min(delay, max(0.0, self._build_due - self._now()))
            await asyncio.sleep(delay)
            try:
                self.check()
            except Exception:
                log.exception("mqtt: rebuilding the fabric failed; serving the last snapshot")

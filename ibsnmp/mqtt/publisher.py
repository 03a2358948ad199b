"""The publisher: every node a provider knows, on the topic tree (topics), for an aggregator.

`Publisher` sends a node's state (retained, QoS 1) when its structure changed (checked every
`interval`) and every node again each `refresh`, so an aggregator can tell a quiet node from a
gone one; between states, the values of the nodes whose counters moved (QoS 0, up to
codec.COUNTER_BATCH nodes a message: the next pass supersedes a lost one); events (QoS 1),
numbered per node from its start time in microseconds; `online`/`offline` statuses, its own
with a last will. While the broker is away the latest state is kept and events wait in a
bounded queue, each leaving it once acknowledged. Reference: docs/providers.md, 'Publisher'.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Callable

import aiomqtt

from ibsnmp.events import TrapEvent
from ibsnmp.providers.base import Provider

from . import topics
from .arguments import DEFAULT_INTERVAL_S, DEFAULT_QUEUE, DEFAULT_REFRESH_S
from .broker import PUBLISH_WINDOW, BrokerSettings, run_session
from .takeover import TAKEOVER, Takeovers
from .codec import (COUNTER_BATCH, CountersRecord, EventRecord, NodeRecord, counters_of, encode_counters,
                    encode_event, encode_state, record_of)

__all__ = ["DEFAULT_INTERVAL_S", "DEFAULT_REFRESH_S", "DEFAULT_QUEUE", "Publisher", "publishing"]


log = logging.getLogger("ibsnmp.mqtt.publisher")


def _same_structure(a: NodeRecord, b: NodeRecord) -> bool:
    """Whether two records of a node differ in counter values (ActCounts
    included) alone."""
    return (a.node == b.node and a.sm_config == b.sm_config and len(a.sms) == len(b.sms)
            and all(dataclasses.replace(x, act_count=y.act_count) == y for x, y in zip(a.sms, b.sms)))


def _same_values(a: NodeRecord, b: NodeRecord) -> bool:
    return a.values == b.values and [sm.act_count for sm in a.sms] == [sm.act_count for sm in b.sms]


class Publisher:
    """`Publisher(provider, settings, fabric_id)`; `run()` publishes until cancelled.

    elapsed: seconds since the provider's epoch at which simulated counters
    are read (default: now); a benchmark freezes it to make an idle fabric.
    """

    def __init__(self, provider: Provider, settings: BrokerSettings, fabric_id: str, *,
                 interval: float = DEFAULT_INTERVAL_S, refresh: float = DEFAULT_REFRESH_S,
                 queue_size: int = DEFAULT_QUEUE, elapsed: Callable[[], float] | None = None) -> None:
        if not interval > 0 or not refresh >= interval:
            raise ValueError(f"need 0 < interval <= refresh, got {interval} and {refresh}")
        self.provider = provider
        self.settings = settings
        self.fabric_id = topics.check_fabric_id(fabric_id)
        self.publisher = topics.Publisher(settings.owner, settings.client_id)
        self.topics = topics.PublisherTopics(fabric_id, self.publisher)
        self._takeovers = Takeovers()
        self.interval = interval
        self.refresh = refresh
        self._elapsed = elapsed or (lambda: time.monotonic() - provider.epoch)
        self._sent: dict[int, NodeRecord] = {}  # the last state or counters sent of each node
        self._states: dict[int, NodeRecord] = {}  # the last state sent of each node
        self._latest: dict[int, NodeRecord] = {}
        self._events: collections.deque[tuple[int, EventRecord]] = collections.deque()
        self._queue_size = queue_size
        self._event_ready = asyncio.Event()
        self._next_sequence: dict[int, int] = {}
        self._first_sequence = int(time.time() * 1_000_000)
        self._last_full = 0.0
        self._client: aiomqtt.Client | None = None
        self.dropped = 0  # events dropped because the queue was full
        self._said_dropping = False
        self.states_sent = 0
        self.counters_sent = 0
        self.events_sent = 0
        provider.add_listener(self._on_event)

    @property
    def connected(self) -> bool:
        return self._client is not None

    @property
    def queued(self) -> int:
        return len(self._events)

    # -- events from the provider ---------------------------------------------------

    def _on_event(self, event: TrapEvent) -> None:
        guid = event.node_guid
        sequence = self._next_sequence.get(guid, self._first_sequence)
        self._next_sequence[guid] = sequence + 1
        if len(self._events) >= self._queue_size:
            self._events.popleft()
            self.dropped += 1
            if not self._said_dropping:
                self._said_dropping = True
                log.warning("mqtt: event queue full (%d) while the broker is away: dropping the oldest",
                            self._queue_size)
        self._events.append((guid, EventRecord(sequence, event, time.time())))
        self._event_ready.set()

    # -- the session --------------------------------------------------------------------

    async def run(self) -> None:
        will = aiomqtt.Will(self.topics.status, topics.OFFLINE, qos=1, retain=True)
        await run_session(self.settings, (), self._connected, None, self._lost, will=will)

    def _lost(self, reason: str) -> None:
        if self._client is not None:
            log.warning("mqtt: lost the broker %s (%s): keeping the latest state and up to %d events",
                        self.settings.label, reason, self._queue_size)
        if self._takeovers.lost():
            log.error(TAKEOVER, self.settings.label, self.settings.client_id)
        self._client = None

    async def _connected(self, client: aiomqtt.Client) -> None:
        self._client = client
        self._takeovers.connected()
        if self._said_dropping:
            log.warning("mqtt: %d events were dropped in all while the broker was away", self.dropped)
            self._said_dropping = False
        await client.publish(self.topics.status, topics.ONLINE, qos=1, retain=True)
        self._sent.clear()  # everything is sent again on a new connection
        self._states.clear()
        events = asyncio.create_task(self._send_events(client))
        try:
            while True:
                await self.publish_states(client)
                await asyncio.sleep(self.interval)
        finally:
            events.cancel()

    async def publish_states(self, client: aiomqtt.Client) -> int:
        """Send what changed (or everything, when a refresh is due); the count sent."""
        now = time.monotonic()
        full = now - self._last_full >= self.refresh
        fabric = self.provider.snapshot
        elapsed = self._elapsed()
        wall = time.time()
        sent = 0
        pending: list[tuple[str, bytes, int, bool]] = []  # (topic, payload, QoS, retained)
        counters: dict[int, CountersRecord] = {}  # of the next counters message
        for guid, node in fabric.nodes.items():
            record = record_of(fabric, node, elapsed, wall, publisher=self.settings.client_id,
                               refresh=self.refresh)
            self._latest[guid] = record
            before = self._sent.get(guid)
            if before is None:
                pending.append((self.topics.node(guid, "status"), topics.ONLINE, 1, True))
            state = self._states.get(guid)
            if full or state is None or not _same_structure(state, record):
                pending.append((self.topics.node(guid, "state"), encode_state(record), 1, True))
                self._sent[guid] = self._states[guid] = record
                sent += 1
            elif before is None or not _same_values(before, record):
                counters[guid] = counters_of(record, state.time)
                self._sent[guid] = record
                self.counters_sent += 1
                if len(counters) >= COUNTER_BATCH:
                    pending.append(self._counters_message(counters, wall))
                    counters = {}
            if len(pending) >= PUBLISH_WINDOW:
                # Publish as we go: the broker and the subscribers work on the
                # first states while the next ones are encoded.
                await self._publish_window(client, pending)
                pending = []
        if counters:
            pending.append(self._counters_message(counters, wall))
        await self._publish_window(client, pending)
        for guid in [g for g in self._sent if g not in fabric.nodes]:
            log.info("mqtt: node %016x is gone: offline", guid)
            del self._sent[guid]
            self._states.pop(guid, None)
            self._latest.pop(guid, None)
            await client.publish(self.topics.node(guid, "state"), b"", qos=1, retain=True)
            await client.publish(self.topics.node(guid, "status"), topics.OFFLINE, qos=1,
                                 retain=True)
        if full:
            self._last_full = now
        self.states_sent += sent
        return sent

    @staticmethod
    async def _publish_window(client: aiomqtt.Client, pending: list[tuple[str, bytes, int, bool]]) -> None:
        if pending:
            await asyncio.gather(*(client.publish(topic, payload, qos=qos, retain=retain)
                                   for topic, payload, qos, retain in pending))

    def _counters_message(self, counters: dict[int, CountersRecord], when: float) -> tuple[str, bytes, int, bool]:
        """Counters of nodes, QoS 0 and not retained: the next pass
        supersedes a lost one, and a new aggregator has the states' values
        until then."""
        return (self.topics.counters,
                encode_counters(counters, when), 0, False)

    async def _send_events(self, client: aiomqtt.Client) -> None:
        while True:
            while self._events:
                guid, record = self._events[0]
                await client.publish(self.topics.node(guid, "events"), encode_event(record),
                                     qos=1)
                if self._events and self._events[0][1] is record:
                    self._events.popleft()
                log.debug("mqtt: node %016x: event %d (trap %d) sent", guid, record.sequence, record.event.trap)
                self.events_sent += 1
            self._event_ready.clear()
            await self._event_ready.wait()

    async def say_goodbye(self) -> None:
        """On a clean stop: every node and the publisher offline (the last
        will only fires when a connection is lost)."""
        client = self._client
        if client is None:
            return
        try:
            guids = list(self._sent)
            for start in range(0, len(guids), PUBLISH_WINDOW):
                await asyncio.gather(*(
                    client.publish(self.topics.node(guid, "status"), topics.OFFLINE, qos=1,
                                   retain=True)
                    for guid in guids[start:start + PUBLISH_WINDOW]))
            await client.publish(self.topics.status, topics.OFFLINE, qos=1, retain=True)
        except aiomqtt.MqttError as exc:
            log.warning("mqtt: could not say offline before stopping: %s", exc)


@contextlib.asynccontextmanager
async def publishing(publisher: Publisher | None) -> AsyncIterator[None]:
    """Run `publisher` (if any) for as long as the context lasts; on the way
    out, say offline and stop."""
    if publisher is None:
        yield
        return
    task = asyncio.create_task(publisher.run(), name="ibsnmp-mqtt-publisher")
    try:
        yield
    finally:
        await publisher.say_goodbye()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

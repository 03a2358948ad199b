"""The aggregator ties every node to the publisher whose topic announced it:
another publisher cannot overwrite it, take it offline or speak for it
while the owner is live; limits bound what one publisher and all of them
may announce. Messages are handed to the aggregator as the broker would,
with a fake clock."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any, cast

import aiomqtt
import pytest

from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.model import Fabric
from ibsnmp.mqtt import topics
from ibsnmp.mqtt.aggregator import MqttAggregator
from ibsnmp.mqtt.broker import BrokerSettings
from ibsnmp.mqtt.codec import EventRecord, encode_event, encode_state, record_of

FABRIC = build_fabric("fat-tree:spines=1,leaves=1,hosts=3", 1)
HOSTS = sorted(guid for guid, node in FABRIC.nodes.items() if not node.is_switch)
OWNER = topics.PublisherTopics("fab", topics.Publisher("host-a", "ibsnmp-publisher-fab-host-a"))
INTRUDER = topics.PublisherTopics("fab", topics.Publisher("mallory", "m"))
REFRESH = 10.0  # every record's refresh period: stale after 3 of them


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def message(topic: str, payload: bytes) -> aiomqtt.Message:
    return aiomqtt.Message(topic, payload, 1, False, 1, None)


def state(tree: topics.PublisherTopics, guid: int, fabric: Fabric = FABRIC, at: float = 1.0) -> aiomqtt.Message:
    record = record_of(fabric, fabric.nodes[guid], at, at, publisher="whoever", refresh=REFRESH)
    return message(tree.node(guid, "state"), encode_state(record))


def renamed(guid: int, description: str) -> Fabric:
    import dataclasses

    node = dataclasses.replace(FABRIC.nodes[guid], description=description)
    return dataclasses.replace(FABRIC, nodes={**FABRIC.nodes, guid: node})


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def aggregator(clock: Clock) -> AsyncIterator[MqttAggregator]:
    """An aggregator as if connected to its broker (so staleness is judged)."""
    settings = BrokerSettings("127.0.0.1", 1, False, None, client_id="agg")
    aggregator = MqttAggregator(settings, "fab", clock=clock, max_nodes_per_publisher=3, max_nodes=4)
    connected = asyncio.create_task(aggregator._while_connected(cast(Any, None)))
    await asyncio.sleep(0)
    try:
        yield aggregator
    finally:
        connected.cancel()


def served(aggregator: MqttAggregator, clock: Clock) -> dict[int, str | None]:
    """What the aggregator serves once it has judged and rebuilt (each past its delay)."""
    clock.now += 1
    aggregator.check(clock.now)
    clock.now += 1
    return {guid: node.description for guid, node in aggregator.check(clock.now).nodes.items()}


async def test_another_publishers_state_for_a_node_is_refused_while_its_owner_is_live(
        aggregator: MqttAggregator, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ibsnmp.mqtt")
    host = HOSTS[0]
    aggregator.handle(state(OWNER, host))
    aggregator.handle(state(INTRUDER, host, renamed(host, "EVILHOST")))
    assert served(aggregator, clock)[host] == FABRIC.nodes[host].description
    assert aggregator.claims_refused == 1
    (line,) = [r.getMessage() for r in caplog.records]
    assert f"publisher mallory/m claims node {host:016x}, which publisher host-a/" in line
    # Still refused (and not said again within the minute) up to the owner's stale period.
    clock.now += 3 * REFRESH - 6  # served() moves the clock on too
    aggregator.handle(state(INTRUDER, host, renamed(host, "EVILHOST")))
    assert served(aggregator, clock)[host] == FABRIC.nodes[host].description
    assert len(caplog.records) == 1 and aggregator.claims_refused == 2


async def test_a_silent_owner_loses_its_node_after_its_stale_period(
        aggregator: MqttAggregator, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ibsnmp.mqtt")
    host = HOSTS[0]
    aggregator.handle(state(OWNER, host))
    clock.now += 3 * REFRESH + 1
    aggregator.handle(state(INTRUDER, host, renamed(host, "moved")))
    assert served(aggregator, clock)[host] == "moved"
    assert any(f"node {host:016x} passes from publisher host-a/" in r.getMessage() for r in caplog.records)
    # Now the first owner is the foreign one.
    aggregator.handle(state(OWNER, host))
    assert served(aggregator, clock)[host] == "moved"


async def test_statuses_and_events_of_a_node_count_from_its_owner_only(
        aggregator: MqttAggregator, clock: Clock) -> None:
    host, other = HOSTS[0], HOSTS[1]
    events: list[TrapEvent] = []
    aggregator.add_listener(events.append)
    aggregator.handle(state(OWNER, host))
    aggregator.handle(state(INTRUDER, other))
    aggregator.handle(message(INTRUDER.node(host, "status"), topics.OFFLINE))  # someone else's node
    event = TrapEvent(IbaTrap.CAPABILITY_MASK_CHANGED, host, 0x5A, capability_mask=7)
    aggregator.handle(message(INTRUDER.node(host, "events"), encode_event(EventRecord(1, event, 1.0))))
    assert set(served(aggregator, clock)) == {host, other} and events == []
    # The intruder's own offline takes away its own node only.
    aggregator.handle(message(INTRUDER.status, topics.OFFLINE))
    assert set(served(aggregator, clock)) == {host}
    # The owner's word counts.
    aggregator.handle(message(OWNER.node(host, "events"), encode_event(EventRecord(1, event, 1.0))))
    aggregator.handle(message(OWNER.node(host, "status"), topics.OFFLINE))
    assert set(served(aggregator, clock)) == set() and events == [event]
    # An owner that said its node is offline frees it at once.
    aggregator.handle(state(INTRUDER, host, renamed(host, "taken")))
    aggregator.handle(message(INTRUDER.status, topics.ONLINE))
    assert served(aggregator, clock) == {host: "taken", other: FABRIC.nodes[other].description}


async def test_nodes_beyond_the_limits_are_refused_and_said_once(
        aggregator: MqttAggregator, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ibsnmp.mqtt")
    fake = build_fabric("fat-tree:spines=1,leaves=2,hosts=4", 9)
    fakes = sorted(fake.nodes)
    for guid in fakes:  # 3 per publisher
        aggregator.handle(state(INTRUDER, guid, fake))
    assert len(served(aggregator, clock)) == 3 and aggregator.over_limit == len(fakes) - 3
    limit_lines = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(limit_lines) == 1 and "max_nodes_per_publisher (3) reached" in limit_lines[0]
    aggregator.handle(state(OWNER, HOSTS[0]))  # the fourth node in all
    aggregator.handle(state(OWNER, HOSTS[1]))  # past max_nodes (4)
    assert set(served(aggregator, clock)) == set(fakes[:3]) | {HOSTS[0]}
    assert any("max_nodes (4) reached" in r.getMessage() for r in caplog.records)
    # A node silent for twice its stale period is forgotten: the budget comes back.
    clock.now += 6 * REFRESH + 1
    assert served(aggregator, clock) == {}
    aggregator.handle(state(OWNER, HOSTS[0]))
    aggregator.handle(state(OWNER, HOSTS[1]))
    assert set(served(aggregator, clock)) == {HOSTS[0], HOSTS[1]}


async def test_what_comes_before_the_state_counts_for_its_own_publisher_only(
        aggregator: MqttAggregator, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    """After a restart an aggregator's session hands it the queued events, and
    the retained statuses may come, before the retained states."""
    caplog.set_level(logging.WARNING, logger="ibsnmp.mqtt")
    host, other = HOSTS[0], HOSTS[1]
    events: list[TrapEvent] = []
    aggregator.add_listener(events.append)
    event = TrapEvent(IbaTrap.CAPABILITY_MASK_CHANGED, host, 0x5A, capability_mask=7)
    aggregator.handle(message(OWNER.node(host, "events"), encode_event(EventRecord(1, event, 1.0))))
    aggregator.handle(message(INTRUDER.node(host, "status"), topics.OFFLINE))  # the intruder's word
    aggregator.handle(message(OWNER.node(other, "status"), topics.OFFLINE))  # the owner's word
    assert events == []  # held: nobody serves the node yet
    aggregator.handle(state(OWNER, host))
    aggregator.handle(state(OWNER, other))
    assert events == [event]  # after its state, as it happened
    assert set(served(aggregator, clock)) == {host}  # `other` was said offline by its owner
    # An event whose node's state never comes is dropped in time, with a line.
    aggregator.handle(message(OWNER.node(HOSTS[2], "events"), encode_event(EventRecord(
        1, TrapEvent(IbaTrap.CAPABILITY_MASK_CHANGED, HOSTS[2], 0x5B, capability_mask=7), 1.0))))
    clock.now += 61
    served(aggregator, clock)
    assert any(f"1 event(s) of node {HOSTS[2]:016x} dropped" in r.getMessage() for r in caplog.records)
    aggregator.handle(state(OWNER, HOSTS[2]))
    assert events == [event]


async def test_a_publisher_said_offline_is_back_with_its_next_live_state(
        aggregator: MqttAggregator, clock: Clock) -> None:
    """An `offline` on a publisher's status (its will, or without an ACL
    anyone's) lasts until it sends again, not until it reconnects."""
    host = HOSTS[0]
    aggregator.handle(state(OWNER, host))
    aggregator.handle(message(OWNER.status, topics.OFFLINE))
    assert served(aggregator, clock) == {}
    retained = state(OWNER, host)
    retained.retain = True  # what the broker kept from before says nothing of now
    aggregator.handle(retained)
    assert served(aggregator, clock) == {}
    aggregator.handle(state(OWNER, host))  # a state sent now
    assert set(served(aggregator, clock)) == {host}

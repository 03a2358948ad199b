"""The aggregator in process, against a real mosquitto: bad input of every
kind is dropped and logged once per node, duplicates are recognised, and
the broker connection's pieces (URLs, passwords, backoff, topics)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from tests.support import sysfs_trees as trees
from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric.traffic import interface_counters
from ibsnmp.fabric.interface_history import InterfaceHistory
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.model import Fabric, Node, Port, PortRef
from ibsnmp.mqtt import topics
from ibsnmp.mqtt.assemble import assemble
from ibsnmp.mqtt.broker import Backoff, BrokerError, BrokerSettings, parse_broker_url, settings_from_args
from ibsnmp.mqtt.codec import EventRecord, counters_of, encode_counters, encode_event, encode_state, record_of
from ibsnmp.mqtt.codec import decode_state
from ibsnmp.fabric.swap import Swap
from ibsnmp.mqtt.aggregator import MqttAggregator
from ibsnmp.providers.sysfs import SysfsProvider
from tests.support.mosquitto import Mosquitto

GOOD, OTHER = 0x0C42A1030017C078, 0x0C42A1030017D000
# The topics of the one publisher most tests here play.
FAB = topics.PublisherTopics("fab", topics.Publisher(topics.ANONYMOUS, "p"))


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Mosquitto]:
    broker = Mosquitto(tmp_path).start()
    yield broker
    broker.stop()


def _settings(broker: Mosquitto, client_id: str) -> BrokerSettings:
    return BrokerSettings("127.0.0.1", broker.port, False, None, client_id=client_id)


def _state(tmp_path: Path, guid: int) -> bytes:
    root = tmp_path / f"host-{guid:x}"
    root.mkdir()
    trees.mlx5_two_port(root, guid=guid)
    fabric = SysfsProvider(root).snapshot
    return encode_state(record_of(fabric, fabric.nodes[guid], 0.0, time.time(), publisher="test", refresh=5.0))


async def _until(check: Callable[[], object], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def test_bad_messages_are_dropped_and_logged_once_per_publisher(
        tmp_path: Path, broker: Mosquitto, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ibsnmp")
    aggregator = MqttAggregator(_settings(broker, "agg"), "fab", max_payload=64 * 1024)
    events: list[TrapEvent] = []
    aggregator.add_listener(events.append)
    await aggregator.start()
    assert await _until(lambda: aggregator.connected)  # subscribed: nothing below is retained
    good = _state(tmp_path, GOOD)
    other = json.loads(_state(tmp_path, OTHER))
    bad_for_other = [
        b'{"version": 1, "node": ',  # malformed
        b" " * (64 * 1024 + 1),  # oversized
        json.dumps({**other, "version": 2}).encode(),  # wrong version
        json.dumps({**other, "ports": "none"}).encode(),  # schema violation
    ]
    try:
        async with aiomqtt.Client("127.0.0.1", broker.port) as client:
            await client.publish(FAB.node(GOOD, "state"), good, qos=1)
            for payload in bad_for_other:
                await client.publish(FAB.node(OTHER, "state"), payload, qos=1)
            # GOOD's record under OTHER's topic: refused, and GOOD is untouched.
            await client.publish(FAB.node(OTHER, "state"), good, qos=1)
            event = TrapEvent(IbaTrap.CAPABILITY_MASK_CHANGED, GOOD, 0x5A, capability_mask=7)
            for sequence in (5, 6, 5, 6, 7):  # redelivered copies of 5 and 6
                await client.publish(FAB.node(GOOD, "events"),
                                     encode_event(EventRecord(sequence, event, time.time())), qos=1)
            await client.publish(FAB.node(OTHER, "events"),
                                 encode_event(EventRecord(1, event, time.time())), qos=1)  # GUID mismatch
        assert await _until(lambda: aggregator.refused == 6 and len(events) == 3)
        assert await _until(lambda: GOOD in aggregator.snapshot.nodes)
    finally:
        await aggregator.stop()
    assert set(aggregator.snapshot.nodes) == {GOOD}
    assert aggregator.duplicates == 2 and events == [event] * 3
    # One line per publisher and kind of message a minute: the first bad state, the bad event.
    warnings = [r.getMessage() for r in caplog.records if " dropped: " in r.getMessage()]
    assert len(warnings) == 2 and warnings[0].startswith(
        f"mqtt: publisher anonymous/p: state message of node {OTHER:016x} dropped: malformed JSON")
    assert warnings[1].startswith(f"mqtt: publisher anonymous/p: event message of node {OTHER:016x} dropped")


async def test_offline_status_removes_the_node_and_a_state_brings_it_back(
        tmp_path: Path, broker: Mosquitto, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ibsnmp")
    aggregator = MqttAggregator(_settings(broker, "agg"), "fab")
    history = InterfaceHistory()
    history.follow(aggregator)
    await aggregator.start()
    assert await _until(lambda: aggregator.connected)
    try:
        async with aiomqtt.Client("127.0.0.1", broker.port) as client:
            await client.publish(FAB.node(GOOD, "state"), _state(tmp_path, GOOD), qos=1)
            assert await _until(lambda: GOOD in aggregator.snapshot.nodes)
            # The host's 64-bit counters came through the broker as 64-bit ones.
            fabric = aggregator.snapshot
            port = fabric.nodes[GOOD].ports[0]
            counters = interface_counters(fabric, port, 0.0)
            assert counters is not None and counters.out_octets == trees.ACTIVE_COUNTERS["port_xmit_data"] * 4
            assert history.last_change(port.ref) is not None and len(history) == 2  # its ports joined
            await client.publish(FAB.node(GOOD, "status"), topics.OFFLINE, qos=1)
            assert await _until(lambda: GOOD not in aggregator.snapshot.nodes)
            assert history.last_change(port.ref) is None and len(history) == 0
            await client.publish(FAB.node(GOOD, "status"), topics.ONLINE, qos=1)
            assert await _until(lambda: GOOD in aggregator.snapshot.nodes)
    finally:
        await aggregator.stop()
    assert f"node {GOOD:016x} leaves the fabric: its status is offline" in caplog.text


def test_an_unchanged_state_is_a_refresh_taken_without_decoding(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ibsnmp.mqtt.aggregator as aggregator_module

    decoded: list[int] = []
    real = decode_state  # what aggregator_module.decode_state is

    def counting(*a: Any, **k: Any) -> Any:
        decoded.append(1)
        return real(*a, **k)

    monkeypatch.setattr(aggregator_module, "decode_state", counting)
    aggregator = MqttAggregator(BrokerSettings("127.0.0.1", 1, False, None, client_id="x"), "fab")
    root = tmp_path / "host"
    root.mkdir()
    trees.mlx5_two_port(root)
    fabric = SysfsProvider(root).snapshot
    node = fabric.nodes[GOOD]
    topic = FAB.node(GOOD, "state")

    def send(record_time: float, fabric: Fabric = fabric, node: Node = node) -> None:
        payload = encode_state(record_of(fabric, node, 0.0, record_time, publisher="p", refresh=5.0))
        aggregator.handle(aiomqtt.Message(topic, payload, 1, False, 1, None))

    send(1000.0)
    send(1060.0)  # the refresh: the same state, a later time
    assert decoded == [1] and aggregator.updates == 2
    trees.set_file(root, "mlx5_0/node_desc", "renamed\n")
    fabric = SysfsProvider(root).snapshot
    send(1120.0, fabric, fabric.nodes[GOOD])
    assert decoded == [1, 1]
    assert aggregator.check(time.monotonic() + 1).nodes[GOOD].description == "renamed"


def test_a_rebuild_tells_its_swap_listeners_the_nodes_it_changed() -> None:
    fabric = build_fabric("fat-tree:spines=1,leaves=2,hosts=2", seed=2)
    aggregator = MqttAggregator(BrokerSettings("127.0.0.1", 1, False, None, client_id="x"), "fab")

    def send(guid: int, payload: bytes) -> None:
        aggregator.handle(aiomqtt.Message(FAB.node(guid, "state"), payload, 1, False, 1, None))

    def state(guid: int, record_time: float) -> bytes:
        return encode_state(record_of(fabric, fabric.nodes[guid], record_time, record_time, publisher="p"))

    for guid in fabric.nodes:
        send(guid, state(guid, 1.0))
    now = time.monotonic() + 1
    aggregator.check(now)
    history = InterfaceHistory()
    history.follow(aggregator)
    swaps: list[Swap] = []
    aggregator.add_swap_listener(swaps.append)
    host = next(g for g, n in fabric.nodes.items() if not n.is_switch)
    switch = next(g for g, n in fabric.nodes.items() if n.is_switch)
    send(host, state(host, 2.0))  # counters moved: one node's update
    now += 1
    aggregator.check(now)
    send(switch, b"")  # its retained state cleared: it leaves (the fabric is rebuilt)
    now += 1
    aggregator.check(now)
    assert [swap.changed for swap in swaps] == [set(), {switch}]
    first, second = swaps
    # Counters alone moved: the same structure (every node, the lineage), new values for the host.
    assert first.new.nodes is first.old.nodes and first.new.lineage is first.old.lineage
    assert first.new.counter_values[host] != first.old.counter_values[host]
    assert all(first.new.counter_values[g] is values for g, values in first.old.counter_values.items()
               if g != host)
    assert switch not in second.new.nodes
    assert all(second.new.nodes[g] is node for g, node in second.old.nodes.items() if g != switch)
    # The history followed the named nodes alone and forgot the switch's ports.
    assert len(history) == len(_history_of(second.new)) < len(_history_of(first.new))
    assert history.table_last_change is not None


def _history_of(fabric: Fabric) -> InterfaceHistory:
    history = InterfaceHistory()
    history.observe(fabric, 0.0)
    return history


def test_links_are_checked_from_both_ends() -> None:
    fabric = build_fabric("fat-tree:spines=1,leaves=2,hosts=1", seed=2)
    records = {g: record_of(fabric, n, 0.0, 0.0) for g, n in fabric.nodes.items()}
    built, mismatches = assemble(records, "test")
    assert built.links == fabric.links and mismatches == ()
    # One end now names another peer: the link is not served and is reported.
    link = fabric.links[0]
    node = records[link.a.guid].node
    wrong = link.b._replace(port=link.b.port + 1)
    ports = tuple(p if p.num != link.a.port else _with_remote(p, wrong) for p in node.ports)
    records[link.a.guid] = record_of(fabric, _with_ports(node, ports), 0.0, 0.0)
    built, mismatches = assemble(records, "test")
    assert link not in built.links and len(built.links) == len(fabric.links) - 1
    assert (link.a, wrong) in {(m.end, m.peer) for m in mismatches}


def test_the_aggregated_fabric_routes_nothing_of_its_own() -> None:
    # The publishers' records carry no forwarding tables: none is served, and
    # none is invented by min-hop routing (the simulated source routes).
    from ibsnmp.fabric import routing

    fabric = build_fabric("fat-tree:spines=1,leaves=2,hosts=1", seed=2)
    switch = next(g for g, n in fabric.nodes.items() if n.is_switch)
    assert routing.linear_forwarding_table(fabric, switch)
    records = {g: record_of(fabric, n, 0.0, 0.0) for g, n in fabric.nodes.items()}
    built, _ = assemble(records, "test")
    assert built.computes_routes is False
    assert routing.linear_forwarding_table(built, switch) == b""


def _with_remote(port: Port, remote: PortRef) -> Port:
    import dataclasses

    return dataclasses.replace(port, remote=remote)


def _with_ports(node: Node, ports: tuple[Port, ...]) -> Node:
    import dataclasses

    return dataclasses.replace(node, ports=ports)


@pytest.mark.parametrize("url, expected", [
    ("mqtt://broker", ("broker", 1883, False, None, None)),
    ("mqtts://broker", ("broker", 8883, True, None, None)),
    ("mqtt://ib:p%40ss@10.0.0.1:1884", ("10.0.0.1", 1884, False, "ib", "p@ss")),
    ("mqtt://[::1]:1999", ("::1", 1999, False, None, None)),
])
def test_broker_urls(url: str, expected: tuple[str, int, bool, str | None, str | None]) -> None:
    assert parse_broker_url(url) == expected


@pytest.mark.parametrize("url, reason", [
    ("http://broker", "scheme 'http'"),
    ("mqtt://broker/x", "no path"),
    ("mqtt://broker:99999", "port must be a number"),
    ("mqtt://:1883", "no host"),
])
def test_bad_broker_urls(url: str, reason: str) -> None:
    with pytest.raises(BrokerError, match=reason):
        parse_broker_url(url)


def _args(**kw: object) -> argparse.Namespace:
    values: dict[str, object] = dict(broker="mqtt://ib@broker", fabric_id="f", broker_ca=None,
                                     broker_cert=None, broker_key=None,
                                     broker_password_file=None, client_id=None, keepalive=30)
    values.update(kw)
    return argparse.Namespace(**values)


def test_passwords_come_from_a_file_or_the_environment_and_never_print(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "pw"
    secret.write_text("from-file\nignored\n")
    settings = settings_from_args(_args(broker_password_file=str(secret)), "publisher")
    assert settings.password == "from-file"
    monkeypatch.setenv("IBSNMP_MQTT_PASSWORD", "from-env")
    settings = settings_from_args(_args(), "publisher")
    assert settings.password == "from-env"
    assert "from-env" not in repr(settings) and "from-env" not in settings.label
    assert settings.client_id.startswith("ibsnmp-publisher-f-")
    with pytest.raises(BrokerError, match="--broker-ca: needs an mqtts:// broker"):
        settings_from_args(_args(broker_ca=str(secret)), "publisher")
    with pytest.raises(BrokerError, match="needs a user name"):
        settings_from_args(_args(broker="mqtt://broker"), "publisher")


def test_backoff_grows_to_its_cap_with_jitter() -> None:
    backoff = Backoff(initial=1.0, cap=8.0)
    backoff.reset()
    delays = [backoff.delay() for _ in range(8)]
    assert 0.5 <= delays[0] <= 1.0 and all(4.0 <= d <= 8.0 for d in delays[4:])
    assert len(set(delays)) > 1
    backoff.reset()
    assert backoff.delay() <= 1.0


def test_topics() -> None:
    host_a = topics.Publisher("host-a", "ibsnmp-publisher-f-host-a")
    tree = topics.PublisherTopics("f", host_a)
    assert tree.node(GOOD, "state") == "ibsnmp/v2/f/host-a/ibsnmp-publisher-f-host-a/node/0c42a1030017c078/state"
    assert topics.parse("f", tree.node(GOOD, "events")) == topics.Topic(host_a, "events", GOOD)
    assert topics.parse("f", tree.status) == topics.Topic(host_a, "status", None)
    assert topics.parse("f", tree.counters) == topics.Topic(host_a, "counters", None)
    base = "ibsnmp/v2/f/host-a/p"
    for foreign in ("ibsnmp/v2/g/host-a/p/node/0c42a1030017c078/state", f"{base}/node/0C42A1030017C078/state",
                    f"{base}/node/0c42a1030017c078/other", f"{base}/node/0c42a1030017c078",
                    "ibsnmp/v1/f/node/0c42a1030017c078/state", "ibsnmp/v2/f//p/status", f"{base}/other"):
        assert topics.parse("f", foreign) is None
    with pytest.raises(ValueError, match="without '/'"):
        topics.check_fabric_id("a/b")
    with pytest.raises(ValueError, match="--client-id"):
        topics.PublisherTopics("f", topics.Publisher("host-a", "a+b"))


def test_counters_between_states_are_taken_as_values_alone() -> None:
    fabric = build_fabric("fat-tree:spines=1,leaves=2,hosts=2", seed=2)
    aggregator = MqttAggregator(BrokerSettings("127.0.0.1", 1, False, None, client_id="x"), "fab")
    sm_nodes = {sm.node_guid for sm in fabric.sms}  # a minute later their ActCounts would have jumped here
    host = next(g for g, n in fabric.nodes.items() if not n.is_switch and g not in sm_nodes)

    def send(topic: str, payload: bytes) -> None:
        aggregator.handle(aiomqtt.Message(topic, payload, 1, False, 1, None))

    def counters(payload: bytes) -> None:
        send(FAB.counters, payload)

    for guid in fabric.nodes:
        send(FAB.node(guid, "state"),
             encode_state(record_of(fabric, fabric.nodes[guid], 1.0, 100.0, publisher="p")))
    served = aggregator.check(time.monotonic() + 60)
    later = record_of(fabric, fabric.nodes[host], 61.0, 160.0, publisher="p")
    # Counters of another state than the one held wait for that state: nothing changes.
    counters(encode_counters({host: counters_of(later, 99.0)}, 161.0))
    assert aggregator.check(time.monotonic() + 60) is served
    counters(encode_counters({host: counters_of(later, 100.0)}, 161.0))
    taken = aggregator.check(time.monotonic() + 60)
    assert taken.lineage is served.lineage and taken.nodes is served.nodes  # the structure stays
    assert {num: dict(values) for num, values in taken.counter_values[host].items()} == \
        {num: dict(values) for num, values in later.values.items()}
    assert aggregator.refused == 0
    # Values that do not fit the node's counters are refused, said once, and nothing changes;
    # an unreadable message too.
    counters(b'{"version":1,"time":170,"nodes":{"%016x":{"time":170,"state":100,"ports":{"1":[1,2]}}}}' % host)
    assert aggregator.refused == 1 and aggregator.check(time.monotonic() + 60) is taken
    counters(b'{"version":1,"time":170,"nodes":')
    assert aggregator.refused == 2 and aggregator.check(time.monotonic() + 60) is taken

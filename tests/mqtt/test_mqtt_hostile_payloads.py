"""Messages made to stop an aggregator, retained on a real mosquitto beside a
good publisher: `ibsnmp run --provider mqtt` drops each with one line and
keeps serving the good node past its stale period, and so does an
aggregator started while they are retained (issue 39)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path

import aiomqtt

from ibsnmp.mqtt import topics
from ibsnmp.mqtt.codec import MAX_DEPTH, encode_state, record_of
from ibsnmp.providers.sysfs import SysfsProvider
from tests.support import sysfs_trees as trees
from tests.support.mosquitto import Agent, Mosquitto, Process

GOOD_GUID = 0x0C42A1030017D000
GOOD = f"{GOOD_GUID:016x}"
NODE_DESCRIPTION = ".1.3.6.1.3.117.3.1.1.1.0"  # SMA-MIB::ibSmaNodeString.0
RCV_DATA_PORT1 = ".1.3.6.1.3.117.6.1.1.2.1.3.1"  # PMA-MIB::ibPmaPortRcvData.1
# The good publisher refreshes every second; its node is stale after STALE_S.
PUBLISH_TIMING = ("--interval", "1", "--refresh", "1")
STALE_S = 4.0
FABRIC = "default"
DEEP = 5000  # levels: 10 kB of brackets, past json.loads' stack
REFUSED = f"nested deeper than {MAX_DEPTH} levels"


def _topic(client_id: str, kind: str, guid: int | None = None) -> str:
    """Where a publisher connected as `client_id` (without a broker user)
    writes `kind` of node `guid`, or its own `kind` (status, counters): the
    one place this file knows the topic tree."""
    tree = topics.PublisherTopics(FABRIC, topics.Publisher(topics.ANONYMOUS, client_id))
    return tree.node(guid, kind) if guid is not None else str(getattr(tree, kind))


def _hostile(tmp_path: Path) -> list[tuple[str, str, str, bytes]]:
    """(who, client id, topic, payload) of every message, in order: `who`
    names it in the aggregator's line (a node GUID, or the publisher of a
    counters message). Each comes from its own publisher, so each has its
    own line."""
    arrays = b"[" * DEEP + b"]" * DEEP
    objects = b'{"a":' * DEEP + b"1" + b"}" * DEEP
    # The events publisher owns its node (a valid state), then sends a deep event.
    root = tmp_path / "hostile-host"
    root.mkdir()
    trees.mlx5_two_port(root, guid=0xE3)
    fabric = SysfsProvider(root).snapshot
    owned = encode_state(record_of(fabric, fabric.nodes[0xE3], 0.0, time.time(), publisher="hostile-events"))
    event = b'{"version":1,"sequence":1,"time":5,"event":' + arrays + b"}"
    counters = b'{"version":1,"time":5,"nodes":{"00000000000000e4":{"time":5,"state":1,"ports":{"1":%s}}}}' % arrays
    messages = [
        (f"{0xE1:016x}", "hostile-arrays", "state", 0xE1, arrays),
        (f"{0xE2:016x}", "hostile-objects", "state", 0xE2, objects),
        ("", "hostile-events", "state", 0xE3, owned),
        (f"{0xE3:016x}", "hostile-events", "events", 0xE3, event),
        ("hostile-counters", "hostile-counters", "counters", None, counters),
    ]
    return [(who, client_id, _topic(client_id, kind, guid), payload)
            for who, client_id, kind, guid, payload in messages]


def _publish_retained(broker: Mosquitto, messages: list[tuple[str, str, str, bytes]]) -> None:
    """Each client's messages in order, on a connection of its own, QoS 1."""
    async def send() -> None:
        for client_id in dict.fromkeys(client_id for _, client_id, _, _ in messages):
            async with aiomqtt.Client("127.0.0.1", broker.port, identifier=client_id) as client:
                for _, sender, topic, payload in messages:
                    if sender == client_id:
                        await client.publish(topic, payload, qos=1, retain=True)

    asyncio.run(send())


def _good_publisher(stack: contextlib.ExitStack, tmp_path: Path, broker: Mosquitto) -> Path:
    root = tmp_path / "host-b"
    root.mkdir()
    trees.mlx5_two_port(root, guid=GOOD_GUID)
    publisher = Process(tmp_path / "host-b.log", "publish", "--provider", "sysfs", "--sysfs-root", str(root),
                        "--poll-interval", "0.5", "--broker", broker.url, "--client-id", "host-b", *PUBLISH_TIMING)
    stack.callback(publisher.stop)
    return root


def _aggregator(stack: contextlib.ExitStack, tmp_path: Path, broker: Mosquitto, log: str) -> Agent:
    agent = Agent(tmp_path / log, "--provider", "mqtt", "--broker", broker.url, "--client-id", "aggregator",
                  "--stale-after", f"{STALE_S:g}")
    stack.callback(agent.stop)
    agent.wait_for("ibsnmp: serving")
    agent.warm_up()
    agent.wait_for(f"node {GOOD} (node01 HCA-1) joins the fabric")
    return agent


def _until(check: Callable[[], object], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _lines(agent: Agent, *words: str) -> list[str]:
    return [line for line in agent.text().splitlines() if all(word in line for word in words)]


def _serves_past_the_stale_period(agent: Agent, since: float, host: Path, counter: int) -> None:
    """The good node answers at every look until well past its stale period
    after `since`; then a counter changed on its host now is served: the
    aggregator still takes what the good publisher sends."""
    while time.monotonic() < since + STALE_S + 2:
        assert agent.get(GOOD, NODE_DESCRIPTION, timeout=3) == "node01 HCA-1", agent.text()[-3000:]
        time.sleep(0.2)
    trees.set_file(host, "mlx5_0/ports/1/counters/port_rcv_data", f"{counter}\n")
    assert _until(lambda: agent.get(GOOD, RCV_DATA_PORT1) == str(counter)), agent.text()[-3000:]
    assert not _lines(agent, f"node {GOOD}", "leaves the fabric")


def test_deep_payloads_retained_beside_a_good_node_stop_no_aggregator(tmp_path: Path,
                                                                      stack: contextlib.ExitStack,
                                                                      broker: Mosquitto) -> None:
    host = _good_publisher(stack, tmp_path, broker)
    aggregator = _aggregator(stack, tmp_path, broker, "aggregator.log")
    hostile = _hostile(tmp_path)
    _publish_retained(broker, hostile)
    published = time.monotonic()
    named = [who for who, _, _, _ in hostile if who]
    assert _until(lambda: all(_lines(aggregator, REFUSED, who) for who in named)), aggregator.text()[-3000:]
    _serves_past_the_stale_period(aggregator, published, host, 1234600000)
    # One line for each, said when it came; the session never failed.
    assert [len(_lines(aggregator, REFUSED, who)) for who in named] == [1] * len(named)
    assert len(_lines(aggregator, REFUSED)) == len(named)
    assert "Traceback" not in aggregator.text() and not _lines(aggregator, "failed:")

    # A restart while they are retained: the bad states and counters come
    # first thing (the event, retained too, is refused unread or read
    # depending on whether its node's state came first).
    aggregator.stop()
    restarted = _aggregator(stack, tmp_path, broker, "restarted.log")
    started = time.monotonic()
    states_and_counters = [who for who in named if who != f"{0xE3:016x}"]
    assert _until(lambda: all(_lines(restarted, REFUSED, who) for who in states_and_counters)), \
        restarted.text()[-3000:]
    _serves_past_the_stale_period(restarted, started, host, 1234700000)
    assert [len(_lines(restarted, REFUSED, who)) for who in states_and_counters] == [1] * len(states_and_counters)
    assert len(_lines(restarted, REFUSED)) <= len(named)
    assert "Traceback" not in restarted.text() and not _lines(restarted, "failed:")

#!/usr/bin/env python3
"""ibsnmp benchmark: the MQTT aggregator's CPU per node update, in process,
and what the swap listeners (IF-MIB history, linkDown/linkUp watch) take of it.

    .venv/bin/python bench/mqtt_rebuild.py                 # 2,000 updates a run
    .venv/bin/python bench/mqtt_rebuild.py --updates 500 --per-rebuild 1

The fabric is fat-tree:spines=18,leaves=72,hosts=138 (10,026 nodes), every
node's state encoded as a publisher sends it, taken once; then node updates
(moved counters, spread over the fabric, sent as a publisher sends them: a
counters message of COUNTER_BATCH nodes naming their states) go through MqttAggregator.handle(),
with a rebuild (check() past the rebuild delay) every `--per-rebuild`
updates: 1 is a swap per update (as every event message forces), 200 about
what the 0.2 s coalescing gives at 1,000 updates/s. Per update: the
process CPU time in all, and the CPU time inside the two listeners (the
thread's, around each call); garbage collection off while timed, the least
of three runs.  No broker: decoding, the rebuild and the listeners only.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable

import aiomqtt

from ibsnmp.fabric import build_fabric
from ibsnmp.fabric.interface_history import InterfaceHistory
from ibsnmp.fabric.model import Fabric
from ibsnmp.mqtt import topics
from ibsnmp.mqtt.broker import BrokerSettings
from ibsnmp.mqtt.codec import COUNTER_BATCH, counters_of, encode_counters, encode_state, record_of
from ibsnmp.fabric.swap import Swap
from ibsnmp.mqtt.aggregator import MqttAggregator
from ibsnmp.traps.link_events import PortStatusWatch

SPEC = "fat-tree:spines=18,leaves=72,hosts=138"
FABRIC_ID = "bench"
BENCH_TOPICS = topics.PublisherTopics(FABRIC_ID, topics.Publisher(topics.ANONYMOUS, "bench"))
RUNS = 3


def state_message(fabric: Fabric, guid: int, at: float) -> aiomqtt.Message:
    payload = encode_state(record_of(fabric, fabric.nodes[guid], at, at, publisher="bench"))
    return aiomqtt.Message(BENCH_TOPICS.node(guid, "state"), payload, 1, False, 1, None)


def counters_messages(fabric: Fabric, guids: list[int], at: float, state_time: float) -> list[aiomqtt.Message]:
    """The nodes' counters `at` seconds in, as a publisher sends them after
    states of `state_time`: COUNTER_BATCH nodes a message."""
    topic = BENCH_TOPICS.counters
    out = []
    for start in range(0, len(guids), COUNTER_BATCH):
        batch = {guid: counters_of(record_of(fabric, fabric.nodes[guid], at, at, publisher="bench"), state_time)
                 for guid in guids[start:start + COUNTER_BATCH]}
        out.append(aiomqtt.Message(topic, encode_counters(batch, at), 0, False, 1, None))
    return out


class Timed:
    """CPU seconds spent in the listeners it wraps."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def around(self, listener: Callable[[Swap], object]) -> Callable[[Swap], None]:
        def timed(swap: Swap) -> None:
            started = time.thread_time()
            listener(swap)
            self.seconds += time.thread_time() - started
        return timed


def seconds_per_update(first: list[aiomqtt.Message], updates: list[aiomqtt.Message],
                       per_rebuild: int) -> tuple[float, float]:
    """CPU seconds per node update in all, and of those inside the listeners;
    a snapshot every `per_rebuild` node updates (at the end of a message)."""
    aggregator = MqttAggregator(BrokerSettings("127.0.0.1", 1, False, None, client_id="bench"), FABRIC_ID)
    now = time.monotonic() + 1
    for message in first:
        aggregator.handle(message)
    aggregator.check(now)
    history, watch, timer = InterfaceHistory(), PortStatusWatch(aggregator.snapshot), Timed()
    history.observe(aggregator.snapshot, aggregator.elapsed())
    aggregator.add_swap_listener(timer.around(lambda swap: history.observe_swap(swap, aggregator.elapsed())))
    aggregator.add_swap_listener(timer.around(watch.changes_at))
    gc.collect()
    gc.disable()
    try:
        taken, since = aggregator.updates, 0
        started = time.process_time()
        for message in updates:
            before = aggregator.updates
            aggregator.handle(message)
            since += aggregator.updates - before
            if since >= per_rebuild:
                since = 0
                now += 60  # past any rebuild delay (the first one follows a full build)
                aggregator.check(now)
        count = aggregator.updates - taken
        # An SM node's may wait for its next state: the bench's clock moved on, the publisher's did not.
        if count < 0.99 * sum(len(json.loads(message.payload)["nodes"]) for message in updates):  # type: ignore[arg-type]
            raise RuntimeError(f"only {count} node updates were taken")
        return (time.process_time() - started) / count, timer.seconds / count
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--updates", type=int, default=2000)
    parser.add_argument("--per-rebuild", type=int, nargs="+", default=[1, 200])
    args = parser.parse_args()
    fabric = build_fabric(SPEC, seed=1)
    guids = list(fabric.nodes)
    first = [state_message(fabric, guid, 1.0) for guid in guids]
    spread = guids[::max(1, len(guids) // args.updates)][:args.updates]
    updates = counters_messages(fabric, spread, 2.0, 1.0)
    print(f"{len(guids)} nodes, {len(spread)} updates a run in {len(updates)} counters messages")
    for per_rebuild in args.per_rebuild:
        runs = [seconds_per_update(first, updates, per_rebuild) for _ in range(RUNS)]
        in_all, in_listeners = min(r[0] for r in runs), min(r[1] for r in runs)
        print(f"a rebuild every {per_rebuild:4d} updates: {in_all * 1e3:6.3f} ms of CPU per update, "
              f"{in_listeners * 1e3:6.3f} ms of it in the two listeners")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""ibsnmp benchmark: the MQTT state codec's CPU per port, against the standard library's JSON.

    .venv/bin/python bench/mqtt_codec.py                 # about a minute on 2 cores
    .venv/bin/python bench/mqtt_codec.py --fabric fat-tree3:radix=64,pods=4 --rounds 7

A publisher encodes one state per node and an aggregator decodes it; at tens
of thousands of nodes these two costs decide how soon every node is served
(bench/mqtt_ingest.py measures that end to end, through mosquitto). Here
both run in this process over every node of a simulated fabric, in
alternating rounds with their peer: the standard library's json module on
the same documents (json.dumps of the dict a state is written from,
json.loads of the same payload bytes), a bare parse or serialization that
checks nothing. The ratios are medians of the rounds' paired ratios.

Counters messages (each node's values alone, 64 nodes a message) are read
the same way, against json.loads of the same messages (for information:
no target).

Targets: decoding a state (parsed, every field checked, the node built) at
most 1.5x json.loads of it; encoding (the dict built and written) at most
1.5x json.dumps of the finished dict.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ibsnmp.fabric.generators import build_fabric  # noqa: E402
from ibsnmp.mqtt.codec import (COUNTER_BATCH, counters_of, decode_counters, decode_state,  # noqa: E402
                               encode_counters, encode_state, record_of, state_dict)

DECODE_TARGET, ENCODE_TARGET = 1.5, 1.5


def cpu(work: Callable[[], object]) -> float:
    started = time.process_time()
    work()
    return time.process_time() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fabric", default="fat-tree3:radix=64,pods=2",
                        help="simulated fabric (default %(default)s: 64-port switches)")
    parser.add_argument("--rounds", type=int, default=5, help="paired rounds (default %(default)s)")
    args = parser.parse_args()
    fabric = build_fabric(args.fabric, seed=1)
    nodes = list(fabric.nodes.values())
    ports = sum(len(node.ports) for node in nodes)
    records = [record_of(fabric, node, 10.0, 1_000.0) for node in nodes]
    documents = [state_dict(record) for record in records]
    payloads = [encode_state(record) for record in records]
    guids = [node.guid for node in nodes]
    updates = [(node.guid, counters_of(record, record.time)) for node, record in zip(nodes, records)]
    counters = [encode_counters(dict(updates[at:at + COUNTER_BATCH]), 1_001.0)
                for at in range(0, len(updates), COUNTER_BATCH)]
    print(f"{args.fabric}: {len(nodes):,} nodes, {ports:,} ports, "
          f"{sum(map(len, payloads)) / len(payloads):,.0f} octets a state on average")

    kinds: dict[str, Callable[[], object]] = {
        "record_of (the publisher reads its snapshot)": lambda: [
            record_of(fabric, node, 10.0, 1_000.0) for node in nodes],
        "encode_state": lambda: [encode_state(record) for record in records],
        "json.dumps of the state's dict (peer)": lambda: [
            json.dumps(document, separators=(",", ":")).encode() for document in documents],
        "decode_state": lambda: [decode_state(payload, guid) for payload, guid in zip(payloads, guids)],
        "json.loads of the payload (peer)": lambda: [json.loads(payload) for payload in payloads],
        "decode_counters": lambda: [decode_counters(message) for message in counters],
        "json.loads of the counters message (peer)": lambda: [json.loads(message) for message in counters],
    }
    spent: dict[str, list[float]] = {name: [] for name in kinds}
    for _ in range(args.rounds):
        for name, work in kinds.items():
            spent[name].append(cpu(work))
    print(f"\nCPU per port (median of {args.rounds} rounds):")
    for name, seconds in spent.items():
        print(f"  {name:46} {statistics.median(seconds) / ports * 1e6:7.1f} us")
    print(f"counters messages: {len(counters):,} of up to {COUNTER_BATCH} nodes, "
          f"{sum(map(len, counters)) / len(counters):,.0f} octets on average")
    decode = statistics.median(a / b for a, b in zip(spent["decode_state"],
                                                      spent["json.loads of the payload (peer)"]))
    encode = statistics.median(a / b for a, b in zip(spent["encode_state"],
                                                      spent["json.dumps of the state's dict (peer)"]))
    counters_ratio = statistics.median(a / b for a, b in zip(
        spent["decode_counters"], spent["json.loads of the counters message (peer)"]))
    failed = False
    for label, ratio, target in (("decode_state / json.loads", decode, DECODE_TARGET),
                                 ("encode_state / json.dumps", encode, ENCODE_TARGET)):
        verdict = "PASS" if ratio <= target else "FAIL"
        failed |= verdict == "FAIL"
        print(f"{label}: {ratio:.2f} (target <= {target}x): {verdict}")
    print(f"decode_counters / json.loads: {counters_ratio:.2f} (info)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

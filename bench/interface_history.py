#!/usr/bin/env python3
"""ibsnmp benchmark: what the swap listeners (InterfaceHistory.observe() and
the linkDown/linkUp watch) cost per snapshot swap.

    .venv/bin/python bench/interface_history.py            # 200 swaps a case
    .venv/bin/python bench/interface_history.py --quick    # 40

The fabric is fat-tree:spines=18,leaves=72,hosts=138 (10,026 nodes, 25,418
interfaces), every port holding measured 64-bit counters as an MQTT
aggregator holds them (the simulated PortCountersExtended of each port).
Timed (medians of the swaps):

- one node changed: an aggregator rebuild after one node's state message
  (the node and its ports are new objects, the other 10,025 are shared),
  compared whole (a swap that does not say what changed) and as the
  aggregator's swap says it (the one node's GUID), for both listeners;
- one switch changed: the same for a 157-port leaf;
- every node changed: a live poll, which rebuilds every port;
- the same snapshot again: nothing to compare;
- a scenario link change on the simulated fabric (no measured counters).

Memory: what a history of the whole fabric holds (tracemalloc).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
import tracemalloc
from types import MappingProxyType

from ibsnmp.fabric import build_fabric
from ibsnmp.fabric.changes import with_port_state
from ibsnmp.fabric.traffic import extended_counters
from ibsnmp.fabric.iba import PortState
from ibsnmp.fabric.interface_history import InterfaceHistory
from ibsnmp.fabric.model import Fabric, Node
from ibsnmp.traps.link_events import PortStatusWatch

SPEC = "fat-tree:spines=18,leaves=72,hosts=138"


def measured_node(fabric: Fabric, node: Node, at: float) -> Node:
    ports = tuple(dataclasses.replace(p, counters=extended_counters(fabric, p, at)) for p in node.ports)
    return dataclasses.replace(node, ports=ports)


def with_nodes(fabric: Fabric, nodes: dict[int, Node]) -> Fabric:
    return dataclasses.replace(fabric, nodes=MappingProxyType(dict(nodes)), _cache={})


def timed(history: InterfaceHistory, fabric: Fabric, at: float, changed: set[int] | None = None) -> float:
    started = time.perf_counter()
    history.observe(fabric, at, changed)
    return time.perf_counter() - started


def one_changed(history: InterfaceHistory, watch: PortStatusWatch, simulated: Fabric, nodes: dict[int, Node],
                guids: list[int], swaps: int, named: bool) -> tuple[float, float]:
    """Median seconds per swap of the history and of the link watch."""
    times, watch_times = [], []
    for i in range(swaps):
        guid = guids[i % len(guids)]
        nodes[guid] = measured_node(simulated, simulated.nodes[guid], 200.0 + i)
        fabric, changed = with_nodes(simulated, nodes), {guid} if named else None
        times.append(timed(history, fabric, 200.0 + i, changed))
        started = time.perf_counter()
        watch.changes(fabric, changed)
        watch_times.append(time.perf_counter() - started)
    return statistics.median(times), statistics.median(watch_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--quick", action="store_true")
    swaps = 40 if parser.parse_args().quick else 200
    simulated = build_fabric(SPEC, seed=1)
    nodes = {guid: measured_node(simulated, node, 100.0) for guid, node in simulated.nodes.items()}
    history = InterfaceHistory()
    history.observe(with_nodes(simulated, nodes), 100.0)
    watch = PortStatusWatch(with_nodes(simulated, nodes))
    print(f"{len(nodes)} nodes, {len(history)} interfaces")
    hosts = [guid for guid, node in nodes.items() if not node.is_switch]
    leaves = [guid for guid, node in nodes.items() if node.is_switch and len(node.ports) > 100]
    print(" " * 50 + "   history  link watch")
    for what, guids, count in (("one node changed", hosts[::37], swaps),
                               (f"one switch changed ({len(nodes[leaves[0]].ports)} ports)", leaves, swaps // 4)):
        for named in (False, True):
            took, watch_took = one_changed(history, watch, simulated, nodes, guids, count, named)
            how = "named by the swap" if named else "compared whole"
            print(f"{what}, {how}:".ljust(50) + f"{took * 1e3:8.3f} ms {watch_took * 1e3:8.3f} ms")
    every = [timed(history, with_nodes(simulated, {g: measured_node(simulated, n, 1000.0 + i)
                                                  for g, n in simulated.nodes.items()}), 1000.0 + i)
             for i in range(3)]
    print(f"every node changed:   {statistics.median(every) * 1e3:8.1f} ms")
    same = with_nodes(simulated, nodes)
    history.observe(same, 2000.0)
    print(f"same snapshot again:  {statistics.median(timed(history, same, 2000.0) for _ in range(swaps)) * 1e6:8.2f} us")
    scenario = InterfaceHistory()
    scenario.observe(simulated, 0.0)
    host = simulated.nodes[hosts[0]]
    ref = next(p.ref for p in host.ports if p.remote is not None)
    current, times = simulated, []
    for i in range(swaps // 4):
        current, _ = with_port_state(current, ref, PortState.ACTIVE if i % 2 else PortState.DOWN, at=1.0 + i)
        times.append(timed(scenario, current, 1.0 + i))
    print(f"scenario link change: {statistics.median(times) * 1e3:8.3f} ms (simulated fabric)")
    tracemalloc.start()
    whole = InterfaceHistory()
    whole.observe(with_nodes(simulated, nodes), 0.0)
    print(f"memory of a history of the whole fabric: {tracemalloc.get_traced_memory()[0] / 1e6:.1f} MB")


if __name__ == "__main__":
    main()

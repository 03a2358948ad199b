"""Nothing served is stale: after a change a warm agent walks what a fresh one walks.

One agent answers walks while its provider's snapshot changes (counters
alone, a port's state, a scenario's burst, a node leaving, an MQTT update);
after each change its walk of every served subtree, in the default context
and a node's, must equal the walk of an agent built afresh on the same
snapshot. The warm agent keeps walk steps, row indexes and derived data
across changes where their dependencies allow: these tests are what says
they allowed it rightly. Values that grow with time read one frozen
instant (fast_diff.ELAPSED), so equal means equal octets.
"""

from __future__ import annotations

import dataclasses
import gc
import time
from collections.abc import Callable, Iterator
from types import MappingProxyType

import aiomqtt
import pytest
from tests.support import fast_diff
from tests.support.fast_diff import TwoPaths
from tests.support.held import Held, linked_host_port
from tests.support.wire import community_request

from ibsnmp.fabric import build_fabric
from ibsnmp.fabric.changes import with_counters_cleared, with_error_burst, with_port_info, with_port_state
from ibsnmp.fabric.iba import PortState
from ibsnmp.fabric.model import Fabric, Node
from ibsnmp.fabric.succession import successor, with_values
from ibsnmp.mqtt import topics
from ibsnmp.mqtt.broker import BrokerSettings
from ibsnmp.mqtt.codec import counters_of, encode_counters, encode_state, record_of
from ibsnmp.mqtt.aggregator import MqttAggregator
from ibsnmp.wire.ber import END_OF_MIB_VIEW, read_element

# The topics of the one publisher these tests play.
FAB_TOPICS = topics.PublisherTopics("fab", topics.Publisher(topics.ANONYMOUS, "p"))

# Heavy in process (a minute or so): left out of `make quick`.
pytestmark = pytest.mark.slow

SPEC = "fat-tree:spines=1,leaves=2,hosts=2"
# InfiniBand, IF-MIB
ROOTS: tuple[tuple[int, ...], ...] = ((1, 3, 6, 1, 3, 117), (1, 3, 6, 1, 2, 1, 2),
                                     (1, 3, 6, 1, 2, 1, 31))
LOCAL_ROOT_END = 20_000  # varbinds: more than any walk here


def walk(paths: TwoPaths, context: bytes) -> list[bytes]:
    """Every varbind (OID and value, encoded) of the served subtrees, by GETBULK."""
    community = "public" + ("@" + context.decode() if context else "")
    out: list[bytes] = []
    for root in ROOTS:
        oid = root
        while len(out) < LOCAL_ROOT_END:
            reply = paths.fast(community_request("bulk", [oid], community=community, max_repetitions=50))
            assert reply is not None
            varbinds = list(_varbinds(reply))
            inside = [(name, whole) for name, whole, tag in varbinds
                      if tag != END_OF_MIB_VIEW and name[:len(root)] == root]
            out.extend(whole for _, whole in inside)
            if len(inside) < len(varbinds) or not inside:
                break
            oid = inside[-1][0]
    return out


def _varbinds(reply: bytes) -> Iterator[tuple[tuple[int, ...], bytes, int]]:
    from ibsnmp.wire.ber import read_oid

    _, start, end = read_element(reply, 0, len(reply))
    pos = start
    for _ in range(2):
        _, _, pos = read_element(reply, pos, end)
    _, pdu_start, pdu_end = read_element(reply, pos, end)
    pos = pdu_start
    for _ in range(3):
        _, _, pos = read_element(reply, pos, pdu_end)
    _, pos, list_end = read_element(reply, pos, pdu_end)
    while pos < list_end:
        vb_tag, vb_start, vb_end = read_element(reply, pos, list_end)
        _, oid_start, oid_end = read_element(reply, vb_start, vb_end)
        tag, _, _ = read_element(reply, oid_end, vb_end)
        yield read_oid(reply, oid_start, oid_end), reply[pos:vb_end], tag
        pos = vb_end


def touch(paths: TwoPaths) -> None:
    """One request: the agent meets the new snapshot (and judges its change)."""
    assert paths.fast(community_request("get", [(1, 3, 6, 1, 3, 117, 7, 1, 1, 1, 1)])) is not None


def contexts_of(fabric: Fabric) -> list[bytes]:
    host = next(g for g, n in sorted(fabric.nodes.items()) if n.is_ca)
    switch = next(g for g, n in sorted(fabric.nodes.items()) if n.is_switch)
    return [b"", b"%016x" % host, b"%016x" % switch]


def assert_fresh(warm: TwoPaths, held: Held, contexts: list[bytes]) -> int:
    """The warm agent walks what an agent built on the same snapshot walks; the varbinds compared."""
    fresh = TwoPaths(Held(held.snapshot))
    compared = 0
    for context in contexts:
        if context and int(context, 16) not in held.snapshot.nodes:
            continue
        expected = walk(fresh, context)
        assert walk(warm, context) == expected, f"context {context!r}"
        compared += len(expected)
    return compared


@pytest.fixture()
def simulated() -> tuple[TwoPaths, Held]:
    held = Held(build_fabric(SPEC, seed=4))
    paths = TwoPaths(held)
    for context in contexts_of(held.snapshot):
        walk(paths, context)  # warm: steps, indexes, derived data
    return paths, held


def test_scenario_changes_are_served_at_once(simulated: tuple[TwoPaths, Held]) -> None:
    paths, held = simulated
    contexts = contexts_of(held.snapshot)
    ref = linked_host_port(held.snapshot)
    steps: list[Callable[[Fabric], Fabric]] = [
        lambda f: with_port_state(f, ref, PortState.DOWN, at=100.0)[0],
        lambda f: with_error_burst(f, ref, {"symbol": 7}, at=200.0),
        lambda f: with_counters_cleared(f, ref, ("symbol_error_counter",), at=300.0),
        lambda f: with_port_state(f, ref, PortState.ACTIVE, at=400.0)[0],
        lambda f: with_port_info(f, ref, capability_mask=0x0251086A),
    ]
    walks = paths.dispatcher.parts.fast_reads.walks
    for change in steps:
        kept, carried = walks.size, walks.carried
        held.snapshot = change(held.snapshot)
        touch(paths)
        # The change was judged, not flushed: the walks of what it did not touch
        # stay (here two of the three contexts are of the nodes it changed).
        assert walks.carried == carried + 1 and walks.size > kept * 0.4
        assert assert_fresh(paths, held, contexts) > 1000


def _measured(fabric: Fabric, scale: int) -> Fabric:
    """`fabric` with every port's counters measured (as a live poll reads them), times `scale`."""
    from ibsnmp.fabric.model import MeasuredCounters
    from tests.support.measured import with_measured

    readings = {port.ref: MeasuredCounters(MappingProxyType({"port_xmit_data": 1000 * scale + port.num,
                                                             "port_rcv_data": 7 * scale,
                                                             "symbol_error_counter": scale}),
                                           frozenset({"port_xmit_data", "port_rcv_data"}))
                for node in fabric.nodes.values() for port in node.data_ports}
    return with_measured(fabric, readings)


def test_new_counter_values_are_served_with_everything_else_kept() -> None:
    held = Held(_measured(build_fabric(SPEC, seed=4), 1))
    paths = TwoPaths(held)
    contexts = contexts_of(held.snapshot)
    for context in contexts:
        walk(paths, context)
    before = held.snapshot
    again = _measured(build_fabric(SPEC, seed=4), 2)
    held.snapshot = with_values(before, again.counter_values)
    assert held.snapshot.lineage is before.lineage  # the structure and what it derived stay
    assert assert_fresh(paths, held, contexts) > 1000
    # A poll that read a node differently: that node changes, the rest stays.
    ref = linked_host_port(before)
    down, _ = with_port_state(again, ref, PortState.DOWN, at=5.0)
    held.snapshot = successor(held.snapshot, down)
    assert held.snapshot.lineage is not before.lineage
    assert held.snapshot.port_at(ref).remote is None
    assert assert_fresh(paths, held, contexts) > 1000


def test_walks_read_counters_at_the_time_asked(simulated: tuple[TwoPaths, Held],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a walk's step lands on a counter, the warm agent keeps the
    instance, not the value: an hour later it walks what a fresh agent does."""
    paths, held = simulated
    contexts = contexts_of(held.snapshot)
    before = {context: walk(paths, context) for context in contexts}
    monkeypatch.setattr(fast_diff, "ELAPSED", fast_diff.ELAPSED + 3600.0)
    assert assert_fresh(paths, held, contexts) > 1000
    moved = [context for context in contexts if walk(paths, context) != before[context]]
    # The switch's walk ends (LOCAL_ROOT_END) in its forwarding tables, before any counter.
    assert moved == contexts[:2]


def test_a_node_that_leaves_is_gone_from_every_walk(simulated: tuple[TwoPaths, Held]) -> None:
    paths, held = simulated
    contexts = contexts_of(held.snapshot)
    host = int(contexts[1], 16)
    nodes = {g: n for g, n in held.snapshot.nodes.items() if g != host}
    gone = dataclasses.replace(held.snapshot, nodes=MappingProxyType(nodes), links=tuple(
        link for link in held.snapshot.links if host not in (link.a.guid, link.b.guid)),
        lid_map=MappingProxyType({lid: ref for lid, ref in held.snapshot.lid_map.items() if ref.guid != host}))
    held.snapshot = successor(held.snapshot, gone)
    assert host not in held.snapshot.nodes
    assert assert_fresh(paths, held, contexts) > 1000


def test_a_changed_node_is_freed_once_its_snapshot_is_gone(simulated: tuple[TwoPaths, Held]) -> None:
    """A flapping link makes a new object of the nodes at its ends each time.
    Walks in its context build row indexes for each; the new ones must
    replace the old, so no old node (with all its rows) stays alive."""
    paths, held = simulated
    ref = linked_host_port(held.snapshot)
    context = b"%016x" % ref.guid
    flaps = 6
    for flap in range(flaps):
        for state in (PortState.DOWN, PortState.ACTIVE):
            held.snapshot = with_port_state(held.snapshot, ref, state, at=100.0 * flap + state)[0]
            walk(paths, context)
    gc.collect()
    alive = [obj for obj in gc.get_objects() if isinstance(obj, Node) and obj.guid == ref.guid]
    # The served snapshot's node, and at most a few kept by the last request's
    # transient state: never one per flap.
    assert 1 <= len(alive) <= 3, f"{len(alive)} objects of the flapping node after {2 * flaps} changes"


def _message(fabric: Fabric, guid: int, at: float) -> aiomqtt.Message:
    payload = encode_state(record_of(fabric, fabric.nodes[guid], at, at, publisher="p"))
    return aiomqtt.Message(FAB_TOPICS.node(guid, "state"), payload, 1, False, 1, None)


def test_mqtt_updates_are_served_at_once() -> None:
    fabric = build_fabric(SPEC, seed=4)
    aggregator = MqttAggregator(BrokerSettings("127.0.0.1", 1, False, None, client_id="x"), "fab")
    for guid in fabric.nodes:
        aggregator.handle(_message(fabric, guid, 10.0))
    held = Held(aggregator.check(time.monotonic() + 60))
    paths = TwoPaths(held)
    contexts = contexts_of(held.snapshot)
    for context in contexts:
        walk(paths, context)
    host = int(contexts[1], 16)
    ref = linked_host_port(fabric)
    down, _ = with_port_state(fabric, ref, PortState.DOWN, at=15.0)
    updates = [  # (the publisher's fabric, its time, a counters message, a structure change)
        (fabric, 20.0, False, False),  # counters moved: a state of the same structure
        (fabric, 30.0, True, False),  # counters alone, as a publisher sends them between states
        (down, 40.0, False, True),  # the host's port went down: its node changes
    ]
    state_time = 10.0
    for source, at, counters, structural in updates:
        before = held.snapshot
        if counters:
            record = record_of(source, source.nodes[host], at, at, publisher="p")
            payload = encode_counters({host: counters_of(record, state_time)}, at)
            aggregator.handle(aiomqtt.Message(FAB_TOPICS.counters, payload, 0, False,
                                              1, None))
        else:
            aggregator.handle(_message(source, host, at))
            state_time = at
        held.snapshot = aggregator.check(time.monotonic() + 60)  # past the rebuild delay
        assert (held.snapshot.lineage is not before.lineage) is structural
        assert held.snapshot.counter_values[host] != before.counter_values[host]  # taken
        assert assert_fresh(paths, held, contexts) > 1000
    aggregator.handle(aiomqtt.Message(FAB_TOPICS.node(host, "state"), b"", 1, False, 1, None))
    held.snapshot = aggregator.check(time.monotonic() + 60)
    assert host not in held.snapshot.nodes
    assert assert_fresh(paths, held, contexts) > 1000

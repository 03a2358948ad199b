"""The fast responder's counter additions reach pysnmp's counters before anyone reads them."""

from __future__ import annotations

import pytest
from tests.support.fast_diff import TwoPaths
from pysnmp.proto import rfc1902
from tests.support.wire import community_request, decode_response

from ibsnmp.agent.pending_counts import PendingCounts
from ibsnmp.providers.simulated import SimulatedProvider

SNMP_IN_PKTS = (1, 3, 6, 1, 2, 1, 11, 1, 0)
SNMP_OUT_GET_RESPONSES = (1, 3, 6, 1, 2, 1, 11, 28, 0)
SMA_MIB = (1, 3, 6, 1, 3, 117, 3)


class _Instance:
    def __init__(self, value: int) -> None:
        self.syntax = rfc1902.Counter32(value)


class _Builder:
    """pysnmp's MibBuilder as PendingCounts uses it: instances by (module, name)."""

    def __init__(self, **instances: _Instance) -> None:
        self.instances = instances

    def import_symbols(self, module: str, name: str) -> tuple[_Instance]:
        return (self.instances[name],)


IN_PKTS = ("__SNMPv2-MIB", "snmpInPkts")
SILENT_DROP = ("__SNMPv2-MIB", "snmpSilentDrops")


def test_additions_wait_for_a_flush_and_wrap_as_counter32() -> None:
    packets = _Instance(2**32 - 2)
    counts = PendingCounts(_Builder(snmpInPkts=packets))
    counts.begin_message(IN_PKTS)
    counts.count(IN_PKTS, 2)
    counts.end_message()
    assert int(packets.syntax) == 2**32 - 2  # nothing written yet
    assert counts.value(IN_PKTS) == 1  # what a reader will see
    counts.flush()
    assert int(packets.syntax) == 1
    counts.flush()  # nothing pending: nothing changes
    assert int(packets.syntax) == 1
    assert counts.pending(packets) == 0
    counts.begin_message()
    counts.count(IN_PKTS, 5)
    counts.end_message()
    assert counts.pending(packets) == 5  # what a reader adds to what it reads
    with pytest.raises(KeyError):  # a counter nobody has
        counts.count(("__SNMPv2-MIB", "snmpOutTraps"), 1)


def test_a_datagrams_counts_are_seen_while_handled_then_applied_once_or_dropped() -> None:
    packets, drops = _Instance(10), _Instance(0)
    counts = PendingCounts(_Builder(snmpInPkts=packets, snmpSilentDrops=drops))
    counts.begin_message(IN_PKTS)
    assert counts.value(IN_PKTS) == 11  # a read during the datagram sees it
    assert counts.pending(packets) == 1
    counts.drop_message()  # handed to pysnmp: it counts the datagram itself
    assert counts.value(IN_PKTS) == 10
    counts.flush()
    assert int(packets.syntax) == 10
    counts.begin_message(IN_PKTS)
    counts.end_message((SILENT_DROP,))  # a verdict's counters come with the datagram's
    counts.begin_message(IN_PKTS)  # the next datagram starts afresh
    counts.drop_message()
    counts.flush()
    assert (int(packets.syntax), int(drops.syntax)) == (11, 1)
    counts.add_now({SILENT_DROP: 1})  # pysnmp's handling: written at once
    assert int(drops.syntax) == 2


def _read(paths: TwoPaths, oid: tuple[int, ...], fast: bool) -> int:
    reply = paths.send(community_request("get", [oid]), fast=fast)
    assert reply is not None
    return int(decode_response(reply)[3][0][1])


@pytest.mark.parametrize("fast", [True, False], ids=["fast path", "pysnmp"])
def test_a_read_of_the_counters_sees_every_request_answered_before(fast: bool) -> None:
    paths = TwoPaths(SimulatedProvider("single", 1, watch_interval=0))
    before = _read(paths, SNMP_OUT_GET_RESPONSES, fast)
    for _ in range(5):
        assert paths.fast(community_request("next", [SMA_MIB])) is not None
    # Five answers and the first read's own; a read counts itself in snmpInPkts.
    assert _read(paths, SNMP_OUT_GET_RESPONSES, fast) == before + 6
    in_pkts = _read(paths, SNMP_IN_PKTS, fast)
    assert paths.fast(community_request("next", [SMA_MIB])) is not None
    assert _read(paths, SNMP_IN_PKTS, fast) == in_pkts + 2

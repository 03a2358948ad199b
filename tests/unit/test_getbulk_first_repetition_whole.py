"""GETBULK answers as RFC 3416 4.2.3 allows and no further: never tooBig,
and never fewer varbinds than one complete repetition (every non-repeater
and one of each repeater) but where the message's size cuts it. The fill
time ([limits] getbulk_fill_ms) and the varbind count ([limits]
max_getbulk_varbinds) bound only the repetitions after the first; a
request over [limits] max_varbinds gets the first max_varbinds varbinds
of its complete answer. Each packet goes through the engine's dispatcher
as a datagram from the network does."""

from __future__ import annotations

import dataclasses

import pytest
from pysnmp.carrier.asyncio.dgram import udp
from tests.support.fast_diff import response_varbinds
from tests.support.wire import community_request, decode_response

from ibsnmp.agent.config import AgentSettings, Community, Limits, SystemInfo
from ibsnmp.agent.engine import AgentEngine, build_engine
from ibsnmp.mib.registry import build_mib
from ibsnmp.mib.targets import FabricContexts
from ibsnmp.providers.simulated import SimulatedProvider

DOMAIN = udp.DOMAIN_NAME + (1,)
ADDRESS = ("127.0.0.1", 50000)
SNMP_GROUP = (1, 3, 6, 1, 2, 1, 11)
SYSTEM = (1, 3, 6, 1, 2, 1, 1)
INFINIBAND = (1, 3, 6, 1, 3, 117)
TOO_BIG = 1
# The whole answer: no fill time, no count but the message's size, no varbind limit to speak of.
WHOLE = Limits(max_varbinds=65_535, max_getbulk_varbinds=0, getbulk_fill_ms=0, cpu_budget=0,
               requests_per_second=0)


@pytest.fixture(scope="module")
def provider() -> SimulatedProvider:
    return SimulatedProvider("fat-tree:spines=1,leaves=1,hosts=2", 1, watch_interval=0)


def engine(provider: SimulatedProvider, **limits: float) -> AgentEngine:
    settings = AgentSettings(system=SystemInfo(sys_name="bulk", sys_contact="", sys_location=""),
                             communities=(Community(name="public"),),
                             limits=dataclasses.replace(
                                 WHOLE, **limits))  # type: ignore[arg-type]  # fields by name
    return build_engine(settings, FabricContexts(provider), build_mib(None), fabric_summary="unit")


def answer(built: AgentEngine, data: bytes) -> tuple[int, int, list[tuple[tuple[int, ...], int]]]:
    """(error-status, error-index, [(OID, value tag)]) of the Response to `data`."""
    reply = built.engine.message_dispatcher.handle(built.engine, DOMAIN, ADDRESS, data)
    assert reply is not None
    _, status, index, _ = decode_response(reply)
    return status, index, response_varbinds(reply)


def too_bigs(built: AgentEngine) -> int:
    reads = built.engine.message_dispatcher.parts.fast_reads
    reads.counts.flush()
    (symbol,) = built.engine.get_mib_builder().import_symbols("__SNMPv2-MIB", "snmpOutTooBigs")
    return int(symbol.syntax)


@pytest.mark.parametrize("names,count", [([SNMP_GROUP], 40), ([SYSTEM], 64),
                                         ([INFINIBAND, SYSTEM, SNMP_GROUP], 21)])
def test_the_fill_time_never_cuts_the_first_repetition(provider: SimulatedProvider,
                                                       names: list[tuple[int, ...]],
                                                       count: int) -> None:
    """The finding: 40 x 1.3.6.1.2.1.11 at max-repetitions 1 got 31, then 7
    varbinds (the 0.5 ms fill time ran out inside the first repetition)."""
    built = engine(provider, getbulk_fill_ms=1e-9)  # over at the first look at the clock
    asked = names * (count // len(names))
    for repetitions in (1, 5):
        data = community_request("bulk", asked, non_repeaters=0, max_repetitions=repetitions)
        status, index, varbinds = answer(built, data)
        assert (status, index) == (0, 0)
        assert len(varbinds) == len(asked)  # the first repetition, then the time is out
    whole = answer(engine(provider), community_request("bulk", asked, max_repetitions=1))[2]
    assert varbinds == whole


def test_the_varbind_count_never_cuts_the_first_repetition(provider: SimulatedProvider) -> None:
    built = engine(provider, max_getbulk_varbinds=10)
    asked = [SYSTEM] * 3 + [INFINIBAND] * 17
    data = community_request("bulk", asked, non_repeaters=3, max_repetitions=4)
    status, _, varbinds = answer(built, data)
    assert status == 0 and len(varbinds) == 20
    full = answer(engine(provider), data)[2]
    assert varbinds == full[:20]


@pytest.mark.parametrize("non_repeaters,repetitions", [(0, 1), (0, 10), (2, 5), (70, 3), (3, 0)])
def test_over_the_varbind_limit_the_answer_is_the_start_of_the_whole_one(
        provider: SimulatedProvider, non_repeaters: int, repetitions: int) -> None:
    """The finding: 65 varbinds (one over max_varbinds, 64) got tooBig with
    no varbinds. A GetBulk answer is never tooBig: the first 64 varbinds of
    the answer to the whole request."""
    built = engine(provider, max_varbinds=64)
    asked = [SYSTEM, INFINIBAND, SNMP_GROUP, (1, 3, 6, 1, 2, 1, 2)] * 16 + [SYSTEM]
    data = community_request("bulk", asked, non_repeaters=non_repeaters,
                             max_repetitions=repetitions)
    before = too_bigs(built)
    status, index, varbinds = answer(built, data)
    whole = answer(engine(provider), data)[2]
    assert (status, index) == (0, 0) and too_bigs(built) == before
    expected = min(non_repeaters, 65) + (65 - min(non_repeaters, 65)) * repetitions
    assert len(whole) == expected
    assert varbinds == whole[:64]


def test_a_long_list_of_null_varbinds_over_the_limit(provider: SimulatedProvider) -> None:
    """More than twice the limit, all { OID, NULL } (checked in C, not read in
    Python): still the first max_varbinds varbinds of its answer."""
    built = engine(provider, max_varbinds=64)
    asked = [SYSTEM + (n,) for n in range(1, 8)] * 60
    data = community_request("bulk", asked, max_repetitions=3)
    status, _, varbinds = answer(built, data)
    assert status == 0 and len(varbinds) == 64
    assert varbinds == answer(engine(provider), data)[2][:64]


def test_a_get_over_the_limit_is_still_too_big(provider: SimulatedProvider) -> None:
    built = engine(provider, max_varbinds=64)
    status, _, varbinds = answer(built, community_request("get", [SYSTEM + (1, 0)] * 65))
    assert status == TOO_BIG and varbinds == []

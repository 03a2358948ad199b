"""Both read paths of one engine side by side, without sockets.

`TwoPaths` builds the engine `ibsnmp run` builds over a fabric provider and
hands it datagrams as its transport would: `pysnmp(data)` with the fast
responder off, `fast(data)` with it on. A captured transport dispatcher
collects what the engine sends. Values that grow with time read one frozen
instant, so both paths see the same snapshot values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from pysnmp.carrier.asyncio.dgram import udp

from ibsnmp.agent.config import AgentSettings, Community, Limits, SystemInfo
from ibsnmp.agent.engine import AgentEngine, build_engine
from ibsnmp.agent.prefilter import PassedRequest
from ibsnmp.mib.targets import FabricContexts
from ibsnmp.mib.api import ContextTarget
from ibsnmp.mib.registry import build_mib

DOMAIN = udp.DOMAIN_NAME + (1,)
ADDRESS = ("127.0.0.1", 50000)
COMMUNITY, KEYS_COMMUNITY, WRITE_COMMUNITY = "public", "keys", "private"
ELAPSED = 1234.5  # seconds since the provider's epoch: one instant for every read
STATISTICS = (1, 3, 6, 1, 2, 1, 11)  # SNMPv2-MIB snmp group: counts the requests themselves
SYS_UP_TIME = (1, 3, 6, 1, 2, 1, 1, 3, 0)
SNMP_ENGINE_TIME = (1, 3, 6, 1, 6, 3, 10, 2, 1, 3, 0)
VOLATILE = (STATISTICS, SYS_UP_TIME, SNMP_ENGINE_TIME)


class _Capture:
    """A transport dispatcher that keeps what the engine sends."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def send_message(self, message: bytes, domain: Any, address: Any) -> None:
        self.sent.append(bytes(message))


class TwoPaths:
    """`state` (an AgentState over `provider`): the MIB takes SETs through
    it, under the community WRITE_COMMUNITY."""

    def __init__(self, provider: Any, state: Any = None) -> None:
        contexts = FabricContexts(provider)

        def frozen(name: bytes) -> ContextTarget | None:
            target = contexts(name)
            return None if target is None else dataclasses.replace(target, elapsed=ELAPSED)

        self.provider = provider
        settings = AgentSettings(
            system=SystemInfo(sys_name="ibsnmp-test", sys_contact="", sys_location=""),
            communities=(Community(name=COMMUNITY), Community(name=KEYS_COMMUNITY,
                                                              view="with-keys"),
                         *([Community(name=WRITE_COMMUNITY, access="write")]
                           if state is not None else [])),
            # Whole GETBULKs: compared; no rate limit and no CPU budget: tests
            # send thousands at once, from one source, as fast as they can.
            limits=Limits(max_varbinds=65_535, getbulk_fill_ms=0, requests_per_second=0,
                          cpu_budget=0))
        self.agent: AgentEngine = build_engine(settings, frozen, build_mib(state),
                                               fabric_summary="diff")
        self.engine = self.agent.engine
        self.capture = _Capture()
        self.engine.transport_dispatcher = self.capture
        self.dispatcher = self.engine.message_dispatcher
        self.fast_answered = False
        answer = self.dispatcher.parts.fast_reads.answer

        def recording(data: bytes, passed: PassedRequest) -> bytes | None:
            reply: bytes | None = answer(data, passed)
            self.fast_answered = reply is not None
            return reply

        self.dispatcher.parts.fast_reads.answer = recording
        repeat = self.dispatcher.parts.fast_reads.repeat
        self.repeated = 0  # requests answered as repeats (agent.repeats)

        def recording_repeat(data: bytes, address: Any) -> bytes | None:
            reply: bytes | None = repeat(data, address)
            if reply is not None:
                self.fast_answered = True
                self.repeated += 1
            return reply

        self.dispatcher.parts.fast_reads.repeat = recording_repeat

    def contexts(self) -> Iterator[bytes]:
        """Every context name of the fabric: the default one and each node's."""
        yield b""
        for guid in sorted(self.provider.snapshot.nodes):
            yield b"%016x" % guid

    def send(self, data: bytes, fast: bool) -> bytes | None:
        self.dispatcher.parts.decision.use_fast_reads = fast
        self.capture.sent.clear()
        self.dispatcher.receive_message(self.engine, DOMAIN, ADDRESS, data)
        assert len(self.capture.sent) <= 1
        return self.capture.sent[0] if self.capture.sent else None

    def passed(self, data: bytes) -> PassedRequest | None:
        """What the prefilter hands the fast path for `data`: None when it
        drops the datagram or passes it to pysnmp without a request read."""
        checked = self.dispatcher.parts.decision.prefilter.check(DOMAIN, ADDRESS, data)
        return checked if isinstance(checked, PassedRequest) else None

    def pysnmp(self, data: bytes) -> bytes | None:
        return self.send(data, fast=False)

    def fast(self, data: bytes) -> bytes | None:
        """The fast path's answer (None if it left the request to pysnmp)."""
        self.fast_answered = False
        reply = self.send(data, fast=True)
        return reply if self.fast_answered else None

    def counters(self) -> dict[str, int]:
        self.dispatcher.parts.fast_reads.counts.flush()  # as before any read of them
        builder = self.engine.get_mib_builder()
        names = [name for name, symbol in builder.mibSymbols["__SNMPv2-MIB"].items()
                 if tuple(getattr(symbol, "name", ()))[:7] == STATISTICS]
        return {name: int(symbol.syntax) for name, symbol in
                zip(names, builder.import_symbols("__SNMPv2-MIB", *names))}


def response_varbinds(reply: bytes) -> list[tuple[tuple[int, ...], int]]:
    """(OID, value tag) of each varbind of a Response message, read structurally."""
    return [(oid, tag) for oid, tag, _ in response_varbind_octets(reply)]


def response_varbind_octets(reply: bytes) -> list[tuple[tuple[int, ...], int, bytes]]:
    """(OID, value tag, value content octets) of each varbind of a v1/v2c
    Response message, read structurally (pyasn1 would take 20 times longer)."""
    from ibsnmp.wire.ber import read_element, read_oid

    _, start, end = read_element(reply, 0, len(reply))
    pos = start
    for _ in range(2):  # version, community
        _, _, pos = read_element(reply, pos, end)
    _, pdu_start, pdu_end = read_element(reply, pos, end)
    pos = pdu_start
    for _ in range(3):  # request-id, error-status, error-index
        _, _, pos = read_element(reply, pos, pdu_end)
    _, pos, list_end = read_element(reply, pos, pdu_end)
    out = []
    while pos < list_end:
        _, vb_start, vb_end = read_element(reply, pos, list_end)
        _, oid_start, oid_end = read_element(reply, vb_start, vb_end)
        tag, value_start, value_end = read_element(reply, oid_end, vb_end)
        out.append((read_oid(reply, oid_start, oid_end), tag, reply[value_start:value_end]))
        pos = vb_end
    return out


def is_volatile(oid: tuple[int, ...]) -> bool:
    return any(oid[:len(prefix)] == prefix for prefix in VOLATILE)


PYSNMP_BULK_CAP = 64  # repeater varbinds pysnmp returns at most; the fast path has no cap


def _capped_by_pysnmp(request: bytes, answered: int) -> bool:
    """Whether pysnmp's GETBULK answer of `answered` varbinds stopped at its cap."""
    from ibsnmp.wire.header import GET_BULK
    from ibsnmp.wire.request import decode_request

    decoded = decode_request(request)
    non_repeaters = min(decoded.non_repeaters, len(decoded.oids))
    return decoded.pdu_type == GET_BULK and answered - non_repeaters == PYSNMP_BULK_CAP


def assert_same_response(request: bytes, slow: bytes | None, fast: bytes | None) -> None:
    """Equal octets, but for the values of the objects that count or tick between them."""
    from tests.support.wire import decode_response

    assert slow is not None, f"pysnmp did not answer {request.hex()}"
    assert fast is not None, f"the fast path did not answer {request.hex()}"
    if slow == fast:
        return
    slow_rsp, fast_rsp = decode_response(slow), decode_response(fast)
    assert slow_rsp[:3] == fast_rsp[:3], request.hex()
    if len(fast_rsp[3]) > len(slow_rsp[3]) and _capped_by_pysnmp(request, len(slow_rsp[3])):
        del fast_rsp[3][len(slow_rsp[3]):]
    assert [oid for oid, _ in slow_rsp[3]] == [oid for oid, _ in fast_rsp[3]], request.hex()
    for (oid, a), (_, b) in zip(slow_rsp[3], fast_rsp[3]):
        assert a.tagSet == b.tagSet, (request.hex(), oid)
        dotted = tuple(int(arc) for arc in oid.split("."))
        assert is_volatile(dotted) or a == b, (request.hex(), oid, a, b)

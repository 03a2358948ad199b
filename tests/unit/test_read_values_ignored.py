"""A read request's values mean nothing (RFC 3416 4.2): the fast responder
answers a GET, GETNEXT or GETBULK that carries values as it answers one of
NULLs, at the cost of one of NULLs (a 65 KB value is not decoded), and an
SNMPv1 error echoes the request's varbinds, values as sent (RFC 1157
4.1.2, 4.1.3): the same answer as pysnmp's, octet for octet."""

from __future__ import annotations

import time

import pytest
from pysnmp.proto.api import v1 as api_v1
from pysnmp.proto.api import v2c as api_v2c
from tests.support.fast_diff import TwoPaths, assert_same_response
from tests.support.wire import V1, V2C, community_request, decode_response

from ibsnmp.providers.simulated import SimulatedProvider
from ibsnmp.wire.ber import element, oid_octets
from ibsnmp.wire.request import decode_request

SYS_DESCR = (1, 3, 6, 1, 2, 1, 1, 1, 0)
MISSING = (1, 3, 6, 1, 2, 1, 1, 99, 0)
NO_SUCH_NAME = 2


@pytest.fixture(scope="module")
def paths() -> TwoPaths:
    return TwoPaths(SimulatedProvider("single", 1, watch_interval=0))


def get_carrying(value: bytes, oid: tuple[int, ...] = SYS_DESCR) -> bytes:
    """A v2c GET of `oid` whose value is an OCTET STRING of `value`."""
    varbind = element(0x30, element(0x06, oid_octets(oid)) + element(0x04, value))
    pdu = element(0xA0, b"\x02\x01\x07\x02\x01\x00\x02\x01\x00" + element(0x30, varbind))
    return element(0x30, b"\x02\x01\x01" + element(0x04, b"public") + pdu)


REQUESTS = {
    "v2c get, integer value": community_request("get", [SYS_DESCR], values=[api_v2c.Integer(1)]),
    "v2c next, string value": community_request("next", [SYS_DESCR],
                                                values=[api_v2c.OctetString(b"x" * 300)]),
    "v2c bulk, values": community_request("bulk", [SYS_DESCR, MISSING], non_repeaters=1,
                                          values=[api_v2c.Counter64(5), api_v2c.Gauge32(7)]),
    "v1 get": community_request("get", [SYS_DESCR], version=V1, values=[api_v1.Integer(1)]),
    "v1 get missing": community_request("get", [SYS_DESCR, MISSING], version=V1,
                                        values=[api_v1.Integer(-3), api_v1.OctetString(b"v")]),
    "v1 next at the end": community_request("next", [SYS_DESCR, (2, 1)], version=V1,
                                            values=[api_v1.Null(""), api_v1.IpAddress("1.2.3.4")]),
}


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_answered_here_as_pysnmp_answers(paths: TwoPaths, name: str) -> None:
    data = REQUESTS[name]
    slow, fast = paths.pysnmp(data), paths.fast(data)
    assert_same_response(data, slow, fast)
    assert fast == slow or name.startswith("v2c")  # errors echo octet for octet


def test_an_snmpv1_error_echoes_the_values_as_sent(paths: TwoPaths) -> None:
    data = REQUESTS["v1 get missing"]
    reply = paths.fast(data)
    assert reply is not None
    _, status, index, varbinds = decode_response(reply)
    assert (status, index) == (NO_SUCH_NAME, 2)
    assert [(oid, value.prettyPrint()) for oid, value in varbinds] == [
        (".".join(map(str, SYS_DESCR)), "-3"), (".".join(map(str, MISSING)), "v")]
    request_list = data[data.index(b"\x30", data.index(b"\xa0") + 11):]
    assert reply.endswith(request_list)  # the request's own varbind octets


def test_a_65_kb_value_costs_what_a_null_does(paths: TwoPaths) -> None:
    """The finding: a GET carrying one 65 KB value cost 56 x a refused GET,
    pysnmp decoding the value the answer ignores."""
    big, small = get_carrying(b"v" * 65_000), get_carrying(b"")
    assert decode_request(big).values is not None
    assert_same_response(big, paths.pysnmp(big), paths.fast(big))

    def cpu(data: bytes) -> float:
        started = time.process_time()
        for _ in range(200):
            assert paths.fast(data) is not None
        return time.process_time() - started

    assert min(cpu(big) for _ in range(3)) < 3 * min(cpu(small) for _ in range(3))


def test_a_request_of_nulls_keeps_no_values() -> None:
    request = decode_request(community_request("get", [SYS_DESCR, MISSING], version=V2C))
    assert request.values is None
    assert request.echoed() == b"".join(element(0x30, name + b"\x05\x00")
                                        for name in request.oid_elements)

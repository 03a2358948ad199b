"""SET errors as RFC 3416 4.2.5 orders them and net-snmp's snmpd 5.9
answers them, proved with the request datagrams themselves: access first
(noAccess; noSuchName in SNMPv1), then the instance (noCreation), then the
value (wrongType, wrongLength, wrongValue); a refused SET changes nothing
and every answer echoes the request's varbinds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pyasn1.type import univ
from tests.support.e2e import RunningAgent, ibsnmp_agent
from pysnmp.proto import rfc1902
from tests.support.wire import V1, V2C, community_request, decode_response, exchange

from ibsnmp.mib.loader import definitions

NO_ERROR, NO_SUCH_NAME, NO_ACCESS, WRONG_TYPE, WRONG_LENGTH, WRONG_VALUE, NO_CREATION = (
    0, 2, 6, 7, 8, 10, 11)
SYSTEM = {"sysContact": "1.3.6.1.2.1.1.4.0", "sysName": "1.3.6.1.2.1.1.5.0",
          "sysLocation": "1.3.6.1.2.1.1.6.0"}
NOT_NVT = b"\xff\x00\x01"
PREFIX = (254, 128, 0, 0, 0, 0, 0, 0)  # the simulated subnet prefix fe80::/64


def text(value: bytes | str) -> rfc1902.OctetString:
    return rfc1902.OctetString(value)


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningAgent]:
    state = tmp_path_factory.mktemp("state")
    with ibsnmp_agent("--community", "public", "--write-community", "private",
                      "--state-dir", str(state)) as running:
        yield running


def send(agent: RunningAgent, kind: str, oids: list[str], values: list[Any] | None = None,
         community: str = "private", version: int = V2C) -> tuple[int, int, list[tuple[str, Any]]]:
    answer = exchange(agent.address, community_request(kind, oids, community=community,
                                                       version=version, values=values),
                      timeout=5.0)
    assert answer is not None, "no answer"
    _, status, index, varbinds = decode_response(answer)
    return status, index, varbinds


def read(agent: RunningAgent, oid: str) -> bytes:
    status, _, ((_, value),) = send(agent, "get", [oid], community="public")
    assert status == NO_ERROR
    return bytes(value)


def plain(value: Any) -> bytes | int:
    return bytes(value) if isinstance(value, univ.OctetString) else int(value)


def assert_echoed(varbinds: list[tuple[str, Any]], oids: list[str], values: list[Any]) -> None:
    assert [name for name, _ in varbinds] == oids
    assert [plain(v) for _, v in varbinds] == [plain(v) for v in values]


@pytest.mark.parametrize("version,status", [(V2C, NO_ACCESS), (V1, NO_SUCH_NAME)])
@pytest.mark.parametrize("oid", [SYSTEM["sysContact"],
                                 "1.3.6.1.3.117.7.1.5.2.2.0"])  # ibSmPartitionConfigKey.0
def test_a_read_only_community_gets_no_access(agent: RunningAgent, version: int, status: int,
                                              oid: str) -> None:
    before = read(agent, oid)
    value = text(b"\x80\x05") if oid.startswith("1.3.6.1.3.117") else text("intruder")
    answer = send(agent, "set", [oid], [value], community="public", version=version)
    assert answer[:2] == (status, 1)
    assert_echoed(answer[2], [oid], [value])
    assert read(agent, oid) == before


@pytest.mark.parametrize("name", list(SYSTEM))
def test_too_long_is_wrong_length(agent: RunningAgent, name: str) -> None:
    before = read(agent, SYSTEM[name])
    value = text(b"x" * 256)  # DisplayString (SIZE (0..255))
    status, index, varbinds = send(agent, "set", [SYSTEM[name]], [value])
    assert (status, index) == (WRONG_LENGTH, 1)
    assert_echoed(varbinds, [SYSTEM[name]], [value])
    assert read(agent, SYSTEM[name]) == before


@pytest.mark.parametrize("name", list(SYSTEM))
def test_not_nvt_ascii_is_wrong_value_and_not_stored(agent: RunningAgent, name: str) -> None:
    before = read(agent, SYSTEM[name])
    status, index, varbinds = send(agent, "set", [SYSTEM["sysContact"], SYSTEM[name]],
                                   [text("ok"), text(NOT_NVT)])
    assert (status, index) == (WRONG_VALUE, 2)
    assert_echoed(varbinds, [SYSTEM["sysContact"], SYSTEM[name]], [text("ok"), text(NOT_NVT)])
    assert read(agent, SYSTEM[name]) == before


@pytest.mark.parametrize("value", [b"a\rb", b"end\r", b"a\x00b"], ids=["cr-alone", "cr-last", "nul-alone"])
def test_a_cr_not_before_lf_or_nul_is_wrong_value(agent: RunningAgent, value: bytes) -> None:
    """RFC 2579 DisplayString is NVT ASCII: a CR only before LF or NUL (RFC 854)."""
    before = read(agent, SYSTEM["sysLocation"])
    status, index, _ = send(agent, "set", [SYSTEM["sysLocation"]], [text(value)])
    assert (status, index) == (WRONG_VALUE, 1)
    assert read(agent, SYSTEM["sysLocation"]) == before


def test_crlf_and_cr_nul_are_display_string_text(agent: RunningAgent) -> None:
    before = read(agent, SYSTEM["sysLocation"])
    for value in (b"rack 7\r\nrow 2", b"rack 7\r\x00", before):
        status, index, _ = send(agent, "set", [SYSTEM["sysLocation"]], [text(value)])
        assert (status, index) == (0, 0)
        assert read(agent, SYSTEM["sysLocation"]) == value


def test_an_ib_sm_mib_display_string_with_control_octets_is_wrong_value(
        agent: RunningAgent) -> None:
    column = ".".join(map(str, definitions().objects["ibSmServiceAssocName"].oid))
    index = ".".join(map(str, (*PREFIX, *[1] * 16, 3, 115, 118, 99)))  # key 01..01, name "svc"
    oid = f"{column}.{index}"
    status, at, varbinds = send(agent, "set", [oid], [text(NOT_NVT)])
    assert (status, at) == (WRONG_VALUE, 1)
    assert_echoed(varbinds, [oid], [text(NOT_NVT)])


def test_a_scalar_instance_other_than_0_is_no_creation(agent: RunningAgent) -> None:
    oid = "1.3.6.1.2.1.1.4.1"
    for value in (text("x"), rfc1902.Integer32(5)):  # before the value is looked at
        status, index, varbinds = send(agent, "set", [oid], [value])
        assert (status, index) == (NO_CREATION, 1)
        assert_echoed(varbinds, [oid], [value])


@pytest.mark.parametrize("oid", ["1.3.6.1.2.1.1.6", "1.3.6.1.6.3.1.1.6.1"])
def test_an_object_types_own_name_is_no_creation(agent: RunningAgent, oid: str) -> None:
    """sysLocation, snmpSetSerialNo without .0: no variable, never one (snmpd
    answers noCreation too)."""
    status, index, varbinds = send(agent, "set", [oid], [text("x")])
    assert (status, index) == (NO_CREATION, 1)
    assert_echoed(varbinds, [oid], [text("x")])


SET_SERIAL_NO = "1.3.6.1.6.3.1.1.6.1.0"
INCONSISTENT_VALUE = 12


def _serial(agent: RunningAgent) -> int:
    status, _, ((_, value),) = send(agent, "get", [SET_SERIAL_NO], community="public")
    assert status == NO_ERROR
    return int(value)


def test_snmp_set_serial_no_is_a_test_and_incr_lock(agent: RunningAgent) -> None:
    """RFC 3418's advisory lock (SNMPv2-TC TestAndIncr): a writer that sends the
    value held takes it (the value moves on by one), one that sends another
    value gets inconsistentValue and changes nothing; a reader gets noAccess."""
    held = _serial(agent)
    value = rfc1902.Integer32(held)
    status, index, varbinds = send(agent, "set", [SET_SERIAL_NO], [value])
    assert (status, index) == (NO_ERROR, 0)
    assert_echoed(varbinds, [SET_SERIAL_NO], [value])
    assert _serial(agent) == (held + 1) % 2**31
    status, index, varbinds = send(agent, "set", [SET_SERIAL_NO], [value])  # stale now
    assert (status, index) == (INCONSISTENT_VALUE, 1)
    assert_echoed(varbinds, [SET_SERIAL_NO], [value])
    assert _serial(agent) == (held + 1) % 2**31
    status, index, _ = send(agent, "set", [SET_SERIAL_NO], [rfc1902.Integer32(_serial(agent))],
                            community="public")
    assert (status, index) == (NO_ACCESS, 1)


def test_one_object_twice_echoes_the_request_and_keeps_the_last(agent: RunningAgent) -> None:
    oids = [SYSTEM["sysContact"], SYSTEM["sysName"], SYSTEM["sysContact"]]
    values = [text("first"), text("node-a"), text("second")]
    status, index, varbinds = send(agent, "set", oids, values)
    assert (status, index) == (NO_ERROR, 0)
    assert_echoed(varbinds, oids, values)
    assert read(agent, SYSTEM["sysContact"]) == b"second"
    assert read(agent, SYSTEM["sysName"]) == b"node-a"


def test_one_object_twice_with_a_bad_second_value_changes_nothing(agent: RunningAgent) -> None:
    before = read(agent, SYSTEM["sysContact"])
    oids = [SYSTEM["sysContact"], SYSTEM["sysContact"]]
    values = [text("changed"), rfc1902.Integer32(5)]
    status, index, varbinds = send(agent, "set", oids, values)
    assert (status, index) == (WRONG_TYPE, 2)
    assert_echoed(varbinds, oids, values)
    assert read(agent, SYSTEM["sysContact"]) == before

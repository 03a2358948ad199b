"""Response sizes and GETBULK edge cases, proved with the packets themselves.

- A GETBULK with nothing to return gets an empty response (it used to get
  none, and to leave its state behind: about 3.6 KB per packet).
- A response larger than the request's msgMaxSize or the engine's maximum
  is tooBig with no varbinds (GET, GETNEXT, SET) or fewer varbinds
  (GETBULK), never silence.
- GETBULK with negative non-repeaters or max-repetitions uses zero.
"""

from __future__ import annotations

import dataclasses

import socket
import warnings
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():  # pysnmp's MIB compiler glue uses deprecated pysmi names
    warnings.simplefilter("ignore", DeprecationWarning)
    from pysnmp.hlapi.v3arch.asyncio import (
        ContextData,
        ObjectIdentity,
        ObjectType,
        SnmpEngine,
        UdpTransportTarget,
        UsmUserData,
        bulk_cmd,
        get_cmd,
    )
from pysnmp.hlapi.v3arch.asyncio import USM_AUTH_HMAC384_SHA512, USM_PRIV_CFB256_AES_BLUMENTHAL
from tests.support.agent_support import (  # noqa: F401  (fixtures)
    READ_COMMUNITY,
    WRITE_COMMUNITY,
    AgentThread,
    Backend,
    agent,
    agent_backend,
    agent_settings,
    agent_stderr,
    spawn_agent,
)

from ibsnmp.agent.config import Limits
from tests.support.wire import V1, V2C, community_request, decode_response, exchange, exchange_many

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pysnmp.smi.compiler")

SYSTEM = "1.3.6.1.2.1.1"
SYS_DESCR_0 = "1.3.6.1.2.1.1.1.0"
SYS_CONTACT_0 = "1.3.6.1.2.1.1.4.0"
TOO_BIG, NO_ERROR = 1, 0
ENGINE_MAX_MESSAGE_SIZE = 65507  # pysnmp's snmpEngineMaxMessageSize
ADMIN = UsmUserData("admin", "admin-auth-key", "admin-priv-key",
                    authProtocol=USM_AUTH_HMAC384_SHA512,
                    privProtocol=USM_PRIV_CFB256_AES_BLUMENTHAL)

# GETBULK, v2c, community public, request-id 4242, non-repeaters -1 and
# max-repetitions 2, one varbind (system). pysnmp cannot encode negative
# counts, hence the hex.
BULK_NEGATIVE_NON_REPEATERS = bytes.fromhex(
    "302502010104067075626c6963a518020210920201ff020102300c300a06062b06010201010500")
# The same with non-repeaters 1 and max-repetitions -5: the one varbind is
# a non-repeater, nothing repeats.
BULK_NEGATIVE_MAX_REPETITIONS = bytes.fromhex(
    "302502010104067075626c6963a518020210920201010201fb300c300a06062b06010201010500")


def address(agent: AgentThread) -> str:
    endpoint = agent.endpoint()
    return f"{endpoint.host}:{endpoint.port}"


def answer(agent: AgentThread, payload: bytes) -> tuple[int, int, int, list[tuple[str, Any]]]:
    data = exchange(address(agent), payload, timeout=3.0)
    assert data is not None, "the agent did not answer"
    return decode_response(data)


def counter(agent: AgentThread, module: str, name: str) -> int:
    assert agent.agent is not None
    builder = agent.agent.engine.engine.get_mib_builder()
    (instance,) = builder.import_symbols(module, name)
    return int(instance.syntax)


# -- GETBULK with an empty answer ------------------------------------------------------

@pytest.mark.parametrize("non_repeaters,max_repetitions,count", [
    (0, 0, 1), (0, 5, 0), (1, 0, 0)], ids=["no-repetitions", "no-varbinds", "nothing-repeats"])
def test_empty_getbulk_gets_an_empty_response(agent: AgentThread, non_repeaters: int,
                                              max_repetitions: int, count: int) -> None:
    payload = community_request("bulk", [SYSTEM] * count, non_repeaters=non_repeaters,
                                max_repetitions=max_repetitions)
    request_id, status, index, varbinds = answer(agent, payload)
    assert (request_id, status, index, varbinds) == (4242, NO_ERROR, 0, [])


def test_getbulk_with_more_repeaters_than_pysnmps_limit_answers_whole_repetitions(
        agent_backend: Backend) -> None:
    # 65 repeaters used to give zero repetitions (pysnmp's 64 // 65) and no answer,
    # then 64 varbinds; the fast responder's only cap is [limits]
    # max_getbulk_varbinds (100 by default, net-snmp's maxGetbulkResponses).
    # A request of 65 varbinds needs max_varbinds raised from its 64.
    wide = wide_agent(agent_backend)
    try:
        _, status, _, varbinds = answer(wide, community_request("bulk", [SYSTEM] * 65,
                                                                max_repetitions=3))
    finally:
        wide.close()
    assert status == NO_ERROR
    names = [name for name, _ in varbinds]
    assert len(names) == 100 and names[:65] == [SYS_DESCR_0] * 65


def test_empty_getbulk_floods_keep_memory_flat() -> None:
    """5,000 empty GETBULKs: the agent answers all and its RSS stays put."""
    proc, endpoints = spawn_agent("--listen", "127.0.0.1:0", "--community", READ_COMMUNITY)
    try:
        target = (endpoints[0].host, endpoints[0].port)
        payload = community_request("bulk", [SYSTEM], max_repetitions=0)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(5.0)
            assert exchange_many(sock, target, [payload], 1000) == 1000  # warm-up
            before = rss_kib(proc.pid)
            assert exchange_many(sock, target, [payload], 5000) == 5000
            after = rss_kib(proc.pid)
        # 3.6 KB kept per packet would be about 18 MB here.
        assert after - before < 4 * 1024, f"RSS grew by {after - before} KiB"
    finally:
        proc.terminate()
        proc.wait(10)
        agent_stderr(proc)  # removes its log file


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


# -- negative GETBULK counts --------------------------------------------------------

def test_negative_non_repeaters_count_as_zero(agent: AgentThread) -> None:
    request_id, status, _, varbinds = answer(agent, BULK_NEGATIVE_NON_REPEATERS)
    assert (request_id, status) == (4242, NO_ERROR)
    # Both repetitions of the one repeater: sysDescr.0, then sysObjectID.0.
    assert [name for name, _ in varbinds] == [SYS_DESCR_0, "1.3.6.1.2.1.1.2.0"]


def test_negative_max_repetitions_count_as_zero(agent: AgentThread) -> None:
    request_id, status, _, varbinds = answer(agent, BULK_NEGATIVE_MAX_REPETITIONS)
    assert (request_id, status) == (4242, NO_ERROR)
    assert [name for name, _ in varbinds] == [SYS_DESCR_0]  # the non-repeater only


# -- tooBig ---------------------------------------------------------------------------

def sys_descr_count_over(limit: int) -> int:
    """How many sysDescr.0 varbinds make a response larger than `limit` octets."""
    return limit // 40 + 1  # sysDescr.0 is over 40 octets with its name


@pytest.mark.parametrize("kind", ["get", "next"])
@pytest.mark.parametrize("version", [V1, V2C], ids=["v1", "v2c"])
def test_response_over_the_engine_maximum_is_too_big(agent: AgentThread, kind: str,
                                                      version: int) -> None:
    oid = SYS_DESCR_0 if kind == "get" else "1.3.6.1.2.1.1.1"
    count = sys_descr_count_over(ENGINE_MAX_MESSAGE_SIZE)
    drops = counter(agent, "__SNMPv2-MIB", "snmpSilentDrops")
    request_id, status, index, varbinds = answer(
        agent, community_request(kind, [oid] * count, version=version))
    assert (request_id, status, index) == (4242, TOO_BIG, 0)
    if version == V1:  # RFC 1157 4.1.2: the request's own varbinds come back
        assert len(varbinds) == count
    else:  # RFC 3416 4.2.1: no varbinds
        assert varbinds == []
    assert counter(agent, "__SNMPv2-MIB", "snmpSilentDrops") == drops


def v3_manager(max_message_size: int) -> SnmpEngine:
    engine = SnmpEngine()
    set_max_message_size(engine, max_message_size)
    return engine


def set_max_message_size(engine: SnmpEngine, octets: int) -> None:
    """The msgMaxSize of the manager's next requests."""
    (max_size,) = engine.get_mib_builder().import_symbols("__SNMP-FRAMEWORK-MIB",
                                                          "snmpEngineMaxMessageSize")
    max_size.syntax = max_size.syntax.clone(octets)


async def v3_target(agent: AgentThread) -> UdpTransportTarget:
    endpoint = agent.endpoint()
    return await UdpTransportTarget.create((endpoint.host, endpoint.port), timeout=2, retries=0)


async def v3_get(agent: AgentThread, count: int, max_message_size: int,
                 manager: SnmpEngine | None = None) -> Any:
    if manager is None:
        manager = v3_manager(max_message_size)
    else:
        set_max_message_size(manager, max_message_size)
    return await get_cmd(manager, ADMIN, await v3_target(agent), ContextData(),
                         *[ObjectType(ObjectIdentity(SYS_DESCR_0)) for _ in range(count)])


async def test_v3_getbulk_returns_the_varbinds_that_fit(agent: AgentThread) -> None:
    drops = counter(agent, "__SNMPv2-MIB", "snmpSilentDrops")
    error, status, _, varbinds = await bulk_cmd(
        v3_manager(484), ADMIN, await v3_target(agent), ContextData(), 0, 1,
        *[ObjectType(ObjectIdentity("1.3.6.1.2.1.1.1")) for _ in range(10)])
    assert error is None and int(status) == NO_ERROR
    assert 0 < len(varbinds) < 10
    assert {str(name) for name, _ in varbinds} == {SYS_DESCR_0}
    assert counter(agent, "__SNMPv2-MIB", "snmpSilentDrops") == drops



async def test_v3_response_over_the_request_max_size_is_too_big(agent: AgentThread) -> None:
    drops = counter(agent, "__SNMPv2-MIB", "snmpSilentDrops")
    error, status, index, varbinds = await v3_get(agent, 10, 484)
    assert error is None
    assert (int(status), int(index), list(varbinds)) == (TOO_BIG, 0, [])
    assert counter(agent, "__SNMPv2-MIB", "snmpSilentDrops") == drops


async def test_v3_every_max_size_gets_an_answer(agent: AgentThread) -> None:
    """Around the limit the answer flips from tooBig to the values, never to silence."""
    drops = counter(agent, "__SNMPv2-MIB", "snmpSilentDrops")
    statuses = set()
    manager = SnmpEngine()
    for max_size in range(600, 1100, 7):
        error, status, _, varbinds = await v3_get(agent, 10, max_size, manager)
        assert error is None, f"no answer with msgMaxSize {max_size}"
        statuses.add(int(status))
        assert int(status) == TOO_BIG or len(varbinds) == 10
    assert statuses == {TOO_BIG, NO_ERROR}
    assert counter(agent, "__SNMPv2-MIB", "snmpSilentDrops") == drops


def test_set_whose_response_would_be_too_big_is_refused_before_writing(
        agent_backend: Backend) -> None:
    # A SET's response carries its varbinds: a request that fills the
    # engine's maximum message leaves no room for the response's own header.
    # Its 303 varbinds need max_varbinds raised from its 64.
    wide = wide_agent(agent_backend)
    try:
        payload = set_request_of_size(SET_REQUEST_SIZE)
        _, status, index, varbinds = answer(wide, payload)
        assert (status, index, varbinds) == (TOO_BIG, 0, [])
        _, _, _, varbinds = answer(wide, community_request("get", [SYS_CONTACT_0]))
        assert not str(varbinds[0][1]).startswith("x")
    finally:
        wide.close()


def wide_agent(backend: Backend) -> AgentThread:
    """An agent that takes requests of up to 512 varbinds."""
    settings = dataclasses.replace(agent_settings(("127.0.0.1:0",)),
                                   limits=Limits(max_varbinds=512, getbulk_fill_ms=0))
    return AgentThread(settings, backend).start()


SET_REQUEST_SIZE = ENGINE_MAX_MESSAGE_SIZE - 30


def set_request_of_size(size: int) -> bytes:
    """A v2c SET of sysContact.0 (repeated) whose message is exactly `size` octets."""
    from pysnmp.proto.api import v2c

    def build(count: int, last: int) -> bytes:
        values = [v2c.OctetString(b"x" * 200)] * (count - 1) + [v2c.OctetString(b"x" * last)]
        return community_request("set", [SYS_CONTACT_0] * count, community=WRITE_COMMUNITY,
                                 values=values)

    count = size // 216
    shortest = len(build(count, 0))
    for last in range(size - shortest - 2, size - shortest + 1):  # the length may take 2 octets
        payload = build(count, last)
        if len(payload) == size:
            return payload
    raise AssertionError("no request of that size")


@pytest.mark.parametrize("value", [0, 127, 128, -1, -128, -129, -32768, -32769, 2**31 - 1, -2**31])
def test_a_response_is_sized_as_pyasn1_writes_its_integers(value: int) -> None:
    """The responders size responses before pysnmp encodes them: an INTEGER
    of -128 takes two content octets in pyasn1 (ff 80), not one."""
    from pyasn1.codec.ber import encoder
    from pyasn1.type import univ

    from ibsnmp.agent.response_size import value_size

    assert value_size(univ.Integer(value)) == len(encoder.encode(univ.Integer(value)))

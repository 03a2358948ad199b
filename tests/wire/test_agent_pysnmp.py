"""End to end with a pysnmp (hlapi asyncio) manager: SNMPv3 SHA-512/AES-256."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

with warnings.catch_warnings():  # pysnmp's MIB compiler glue uses deprecated pysmi names
    warnings.simplefilter("ignore", DeprecationWarning)
    from pysnmp.hlapi.v3arch.asyncio import (
        USM_AUTH_HMAC384_SHA512,
        USM_PRIV_CFB256_AES_BLUMENTHAL,
        CommunityData,
        ContextData,
        ObjectIdentity,
        ObjectType,
        OctetString,
        SnmpEngine,
        Udp6TransportTarget,
        UdpTransportTarget,
        UsmUserData,
        bulk_cmd,
        get_cmd,
        next_cmd,
        set_cmd,
    )
from pysnmp.proto import rfc1905
from tests.support.agent_support import (  # noqa: F401  (fixtures)
    NODE_DESC,
    NODE_GUIDS,
    NODE_NUMBER,
    PORT_STATE,
    PORT_XMIT,
    READ_COMMUNITY,
    UNKNOWN_GUID,
    AgentThread,
    agent,
    agent_backend,
)

from ibsnmp.mib.api import INFINIBAND_MIB

# The hlapi manager wires pysmi's MIB compiler through its deprecated camelCase API.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pysnmp.smi.compiler")

# "AES256" in the agent's config is the Blumenthal key extension net-snmp uses.
ADMIN = UsmUserData("admin", "admin-auth-key", "admin-priv-key",
                    authProtocol=USM_AUTH_HMAC384_SHA512,
                    privProtocol=USM_PRIV_CFB256_AES_BLUMENTHAL)
SYS_NAME = (1, 3, 6, 1, 2, 1, 1, 5, 0)


async def transport(agent: AgentThread, ipv6: bool = False) -> Any:
    endpoint = agent.endpoint(ipv6)
    kind = Udp6TransportTarget if ipv6 else UdpTransportTarget
    return await kind.create((endpoint.host, endpoint.port), timeout=2, retries=1)


def oid(name: tuple[int, ...]) -> ObjectType:
    return ObjectType(ObjectIdentity(name))


@pytest.mark.parametrize("ipv6", [False, True], ids=["ipv4", "ipv6"])
async def test_v3_sha512_aes256_get(agent: AgentThread, ipv6: bool) -> None:
    error, status, _, varbinds = await get_cmd(
        SnmpEngine(), ADMIN, await transport(agent, ipv6), ContextData(),
        oid(SYS_NAME), oid(NODE_DESC), oid(PORT_XMIT + (2,)))
    assert error is None and int(status) == 0
    values = [value for _, value in varbinds]
    assert str(values[0]) == "ibsnmp-test"
    assert str(values[1]) == "node-1"
    assert int(values[2]) == 2**40 + 12


@pytest.mark.parametrize("number,guid", list(enumerate(NODE_GUIDS, start=1)))
async def test_v3_context_name(agent: AgentThread, number: int, guid: str) -> None:
    error, status, _, varbinds = await get_cmd(
        SnmpEngine(), ADMIN, await transport(agent), ContextData(contextName=OctetString(guid)),
        oid(NODE_DESC), oid(NODE_NUMBER))
    assert error is None and int(status) == 0
    assert [str(value) for _, value in varbinds] == [f"node-{number}", str(number)]


async def test_v3_unknown_context_is_reported(agent: AgentThread) -> None:
    error, _, _, _ = await get_cmd(
        SnmpEngine(), ADMIN, await transport(agent),
        ContextData(contextName=OctetString(UNKNOWN_GUID)), oid(NODE_DESC))
    assert error is not None
    assert "1.3.6.1.6.3.12.1.5.0" in str(error)  # snmpUnknownContexts REPORT


async def test_v3_getnext_and_getbulk(agent: AgentThread) -> None:
    engine = SnmpEngine()
    target = await transport(agent)
    context = ContextData(contextName=OctetString(NODE_GUIDS[1]))
    error, status, _, varbinds = await next_cmd(engine, ADMIN, target, context,
                                                oid((1, 3, 6, 1, 2, 2)))
    assert error is None and int(status) == 0
    assert tuple(varbinds[0][0]) == NODE_DESC and str(varbinds[0][1]) == "node-2"

    error, status, _, varbinds = await bulk_cmd(engine, ADMIN, target, context, 0, 10,
                                                oid(INFINIBAND_MIB))
    assert error is None and int(status) == 0
    names = [tuple(name) for name, _ in varbinds]
    assert names[:6] == [NODE_DESC, NODE_NUMBER, PORT_XMIT + (1,), PORT_XMIT + (2,),
                         PORT_STATE + (1,), PORT_STATE + (2,)]
    assert names[6][: len(INFINIBAND_MIB)] != INFINIBAND_MIB  # walked out of the subtree


async def test_getbulk_to_the_end_of_the_mib(agent: AgentThread) -> None:
    error, status, _, varbinds = await bulk_cmd(
        SnmpEngine(), CommunityData(READ_COMMUNITY), await transport(agent), ContextData(),
        0, 25, oid((1, 3, 6, 1, 9)))
    assert error is None and int(status) == 0
    assert len(varbinds) == 1 and isinstance(varbinds[0][1], rfc1905.EndOfMibView)


async def test_v3_set_is_refused_and_agent_keeps_serving(agent: AgentThread) -> None:
    engine = SnmpEngine()
    target = await transport(agent)
    error, status, index, _ = await set_cmd(
        engine, ADMIN, target, ContextData(), ObjectType(ObjectIdentity(NODE_DESC),
                                                         OctetString("renamed")))
    assert error is None
    assert status.prettyPrint() == "notWritable" and int(index) == 1
    error, status, _, varbinds = await get_cmd(engine, ADMIN, target, ContextData(),
                                               oid(NODE_DESC))
    assert error is None and str(varbinds[0][1]) == "node-1"


async def test_v2c_community_at_guid(agent: AgentThread) -> None:
    error, status, _, varbinds = await get_cmd(
        SnmpEngine(), CommunityData(f"{READ_COMMUNITY}@{NODE_GUIDS[2]}"),
        await transport(agent, ipv6=True), ContextData(), oid(NODE_DESC))
    assert error is None and int(status) == 0
    assert str(varbinds[0][1]) == "node-3"

"""A request its principal cannot be granted is refused from its header:
a read-only community's SET gets noAccess (noSuchName in SNMPv1) at its
first varbind, the varbinds echoed octet for octet, with pysnmp's command
responders never asked, and counted as net-snmp counts it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from pysnmp.carrier.asyncio.dgram import udp
from pysnmp.proto import rfc1902
from tests.support.agent_support import agent_settings
from tests.support.set_support import Agent
from tests.support.wire import V1, V2C, community_request

from ibsnmp.agent.config import Community
from ibsnmp.agent.engine import AgentEngine, build_engine
from ibsnmp.agent.pending_counts import (BAD_COMMUNITY_USES, IN_SET_REQUESTS, OUT_GET_RESPONSES,
                                         OUT_NO_SUCH_NAMES)
from ibsnmp.wire.header import RESPONSE, CommunityMessage, read_header

DOMAIN = udp.DOMAIN_NAME + (1,)
ADDRESS = ("127.0.0.1", 50000)
SYS_CONTACT = "1.3.6.1.2.1.1.4.0"
NO_SUCH_NAME, NO_ACCESS = 2, 6


@pytest.fixture
def built(tmp_path: Path) -> AgentEngine:
    agent = Agent("fat-tree:spines=1,leaves=1,hosts=1", path=tmp_path / "state.json")
    settings = dataclasses.replace(
        agent_settings(), communities=(Community("reader"), Community("writer", access="write")))
    engine = build_engine(settings, agent.contexts, agent.mib, fabric_summary="unit")

    def never(*_: Any) -> Any:
        raise AssertionError("handed to pysnmp's command responders")

    engine.engine.message_dispatcher.parts.handover.answer_community = never
    return engine


def counted(built: AgentEngine) -> dict[tuple[str, str], int]:
    counts = built.engine.message_dispatcher.parts.counts
    return {counter: counts.value(counter)
            for counter in (BAD_COMMUNITY_USES, IN_SET_REQUESTS, OUT_GET_RESPONSES, OUT_NO_SUCH_NAMES)}


@pytest.mark.parametrize("version,status", [(V2C, NO_ACCESS), (V1, NO_SUCH_NAME)])
def test_a_readers_set_is_refused_without_pysnmp(built: AgentEngine, version: int,
                                                 status: int) -> None:
    data = community_request("set", [SYS_CONTACT] * 64, community="reader", version=version,
                             values=[rfc1902.OctetString(b"x" * 500)] * 64)
    before = counted(built)
    reply = built.engine.message_dispatcher.handle(built.engine, DOMAIN, ADDRESS, data)
    assert reply is not None
    message = read_header(reply)
    request = read_header(data)
    assert isinstance(message, CommunityMessage) and isinstance(request, CommunityMessage)
    assert message.pdu.tag == RESPONSE and message.pdu.fields == (status, 1)
    assert message.pdu.request_id == request.pdu.request_id
    assert (message.version, message.community) == (version, b"reader")
    assert reply[slice(*message.pdu.varbinds)] == data[slice(*request.pdu.varbinds)]
    after = counted(built)
    assert {k: after[k] - before[k] for k in after} == {
        BAD_COMMUNITY_USES: 1, IN_SET_REQUESTS: 1, OUT_GET_RESPONSES: 1,
        OUT_NO_SUCH_NAMES: 1 if version == V1 else 0}


def test_an_empty_set_refuses_nothing(built: AgentEngine) -> None:
    data = community_request("set", [], community="reader")
    reply = built.engine.message_dispatcher.handle(built.engine, DOMAIN, ADDRESS, data)
    assert reply is not None
    message = read_header(reply)
    assert isinstance(message, CommunityMessage) and message.pdu.fields == (0, 0)

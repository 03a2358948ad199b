"""The snmp group counters, the statistics that exist from start-up, sysORTable.

Each test starts its own agent, so "fresh" means fresh, and sends the
packets itself: the counters' deltas are compared with what was sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pysnmp.proto import rfc1905
from pysnmp.proto.api import v2c
from tests.support.agent_support import (
    READ_COMMUNITY,
    WRITE_COMMUNITY,
    AgentThread,
    agent_settings,
    make_backend,
    needs_net_snmp,
)
from tests.support.e2e import net_snmp
from tests.support.agent_support import Backend
from tests.support.wire import V1, community_request, decode_response, exchange

from ibsnmp.agent.statistics import SnmpStatistics
from ibsnmp.agent.sysor import SNMP_MODULES

SNMP_GROUP = "1.3.6.1.2.1.11"
COUNTERS = {  # SNMPv2-MIB snmp group: name -> sub-identifier
    "snmpInPkts": 1, "snmpOutPkts": 2, "snmpInBadCommunityNames": 4,
    "snmpInBadCommunityUses": 5, "snmpInTotalReqVars": 13,
    "snmpInTotalSetVars": 14, "snmpInGetRequests": 15, "snmpInGetNexts": 16,
    "snmpInSetRequests": 17, "snmpOutTooBigs": 20, "snmpOutNoSuchNames": 21,
    "snmpOutGetResponses": 28, "snmpOutTraps": 29,
}
SYS_DESCR = "1.3.6.1.2.1.1.1"
SYS_DESCR_0, SYS_NAME_0, SYS_LOCATION_0 = SYS_DESCR + ".0", "1.3.6.1.2.1.1.5.0", "1.3.6.1.2.1.1.6.0"
# Statistics pysnmp created on their first event only.
STARTUP_ZEROS = {
    "usmStatsUnsupportedSecLevels": "1.3.6.1.6.3.15.1.1.1.0",
    "usmStatsNotInTimeWindows": "1.3.6.1.6.3.15.1.1.2.0",
    "usmStatsUnknownUserNames": "1.3.6.1.6.3.15.1.1.3.0",
    "usmStatsUnknownEngineIDs": "1.3.6.1.6.3.15.1.1.4.0",
    "usmStatsWrongDigests": "1.3.6.1.6.3.15.1.1.5.0",
    "usmStatsDecryptionErrors": "1.3.6.1.6.3.15.1.1.6.0",
    "snmpUnknownSecurityModels": "1.3.6.1.6.3.11.2.1.1.0",
    "snmpInvalidMsgs": "1.3.6.1.6.3.11.2.1.2.0",
    "snmpUnknownPDUHandlers": "1.3.6.1.6.3.11.2.1.3.0",
    "snmpUnknownContexts": "1.3.6.1.6.3.12.1.5.0",
}


@pytest.fixture
def fresh_agent() -> Iterator[AgentThread]:
    resolver, mib = make_backend()
    thread = AgentThread(agent_settings(("127.0.0.1:0",)), Backend(resolver, mib)).start()
    try:
        yield thread
    finally:
        thread.close()


def address(agent: AgentThread) -> str:
    endpoint = agent.endpoint()
    return f"{endpoint.host}:{endpoint.port}"


def ask(agent: AgentThread, payload: bytes) -> tuple[int, int, int, list[tuple[str, Any]]] | None:
    data = exchange(address(agent), payload, timeout=3.0)
    return None if data is None else decode_response(data)


def read_counters(agent: AgentThread) -> dict[str, int]:
    oids = [f"{SNMP_GROUP}.{sub}.0" for sub in COUNTERS.values()]
    answer = ask(agent, community_request("get", oids))
    assert answer is not None and answer[1] == 0
    return {name: int(value) for name, (_, value) in zip(COUNTERS, answer[3])}


def test_statistics_read_zero_on_a_fresh_agent(fresh_agent: AgentThread) -> None:
    answer = ask(fresh_agent, community_request("get", list(STARTUP_ZEROS.values())))
    assert answer is not None and answer[1] == 0
    for name, (oid, value) in zip(STARTUP_ZEROS, answer[3]):
        assert isinstance(value, v2c.Counter32) and int(value) == 0, (name, value)
    # ... and a walk finds them: GETNEXT from each one's group lands on it.
    for oid in STARTUP_ZEROS.values():
        before = oid.rsplit(".", 2)[0]
        answer = ask(fresh_agent, community_request("next", [before]))
        assert answer is not None and answer[3][0][0].startswith(before + ".")


def test_snmp_group_counts_what_was_sent(fresh_agent: AgentThread) -> None:
    first = read_counters(fresh_agent)
    assert first["snmpInPkts"] == 1 and first["snmpOutPkts"] == 0  # only the read itself
    sent = [
        community_request("get", [SYS_DESCR_0, SYS_NAME_0]),
        community_request("get", [SYS_DESCR_0, SYS_NAME_0]),
        community_request("next", [SYS_DESCR]),
        community_request("bulk", ["1.3.6.1.2.1.1"], max_repetitions=3),
        community_request("set", [SYS_LOCATION_0], community=WRITE_COMMUNITY,
                          values=[v2c.OctetString("row 9")]),
        community_request("set", [SYS_LOCATION_0], community=READ_COMMUNITY,  # refused
                          values=[v2c.OctetString("row 10")]),
        community_request("get", [SYS_DESCR_0] * 1700),  # tooBig
        community_request("get", ["1.3.6.1.2.1.1.99.0"], version=V1),  # noSuchName
        community_request("get", [SYS_DESCR_0], community="not-a-community"),  # no answer
    ]
    answers = [ask(fresh_agent, payload) for payload in sent]
    assert [a is None for a in answers] == [False] * 8 + [True]
    second = read_counters(fresh_agent)
    delta = {name: second[name] - first[name] for name in COUNTERS}
    assert delta == {
        "snmpInPkts": len(sent) + 1,            # + the second read
        "snmpOutPkts": 8 + 1,                   # + the first read's response
        "snmpInBadCommunityNames": 1,
        "snmpInBadCommunityUses": 1,
        # values returned without error: 2 + 2 + 1 + 3, and the first read's
        "snmpInTotalReqVars": 8 + len(COUNTERS),
        "snmpInTotalSetVars": 1,
        "snmpInGetRequests": 4 + 1,             # the tooBig and v1 ones count too
        "snmpInGetNexts": 1,
        "snmpInSetRequests": 2,
        "snmpOutTooBigs": 1,
        "snmpOutNoSuchNames": 1,
        "snmpOutGetResponses": 8 + 1,
        "snmpOutTraps": 0,
    }


def test_notifications_and_inform_responses_are_counted(fresh_agent: AgentThread) -> None:
    assert fresh_agent.agent is not None
    engine = fresh_agent.agent.engine.engine
    builder = engine.get_mib_builder()
    out_pkts, out_traps, in_responses = builder.import_symbols(
        "__SNMPv2-MIB", "snmpOutPkts", "snmpOutTraps", "snmpInGetResponses")
    before = int(out_pkts.syntax), int(out_traps.syntax), int(in_responses.syntax)
    # What pysnmp's dispatcher announces when it sends a trap, an inform and
    # receives the inform's response (the originator's path, without a receiver).
    for point, pdu in (("rfc3412.sendPdu", v2c.TrapPDU()),
                       ("rfc3412.sendPdu", v2c.InformRequestPDU()),
                       ("rfc3412.receiveMessage:response", v2c.ResponsePDU())):
        engine.observer.store_execution_context(engine, point, {"pdu": pdu})
        engine.observer.clear_execution_context(engine, point)
    after = int(out_pkts.syntax), int(out_traps.syntax), int(in_responses.syntax)
    assert (after[0] - before[0], after[1] - before[1], after[2] - before[2]) == (2, 1, 1)


def test_counters_wrap_like_counter32() -> None:
    from pysnmp.entity.engine import SnmpEngine

    engine = SnmpEngine()
    statistics = SnmpStatistics(engine)
    (out_pkts,) = engine.get_mib_builder().import_symbols("__SNMPv2-MIB", "snmpOutPkts")
    out_pkts.syntax = out_pkts.syntax.clone(2**32 - 1)
    statistics.add("snmpOutPkts")
    assert int(out_pkts.syntax) == 0


@pytest.mark.parametrize("oid,exception", [
    (SYS_DESCR, rfc1905.NoSuchInstance),             # a scalar without .0
    ("1.3.6.1.2.1.1.9.1.3", rfc1905.NoSuchInstance),  # a column without an index
    ("1.3.6.1.2.1.1.9", rfc1905.NoSuchObject),       # a table
    ("1.3.6.1.2.1.1.99", rfc1905.NoSuchObject),      # nothing there
])
def test_get_of_an_object_type_is_no_such_instance(fresh_agent: AgentThread, oid: str,
                                                   exception: type) -> None:
    answer = ask(fresh_agent, community_request("get", [oid]))
    assert answer is not None and answer[1] == 0
    assert isinstance(answer[3][0][1], exception)


@needs_net_snmp
def test_sys_or_table_lists_the_served_modules(fresh_agent: AgentThread) -> None:
    done = net_snmp("snmptable", "-v2c", "-c", READ_COMMUNITY, "-Cf", "|", "-CH",
                    address(fresh_agent), "SNMPv2-MIB::sysORTable")
    assert done.returncode == 0, done.stderr
    rows = [line.split("|") for line in done.stdout.splitlines() if line.count("|") == 2]
    assert [descr for _, descr, _ in rows[:5]] == [text for _, text in SNMP_MODULES]
    # The served modules' rows name each MODULE-IDENTITY, as net-snmp resolves it.
    assert [oid for oid, _, _ in rows[5:]] == [
        "SMA-MIB::ibSmaMIB", "IB-SM-MIB::ibSmMIB", "IB-CA-MIB::ibCaMIB", "PMA-MIB::ibPmaMIB",
        "IBCONNECTION-MIB::ibConnMIB", "IF-MIB::ifMIB"]
    assert all(descr and up_time == "0:0:00:00.00" for _, descr, up_time in rows)
    last_change = net_snmp("snmpget", "-v2c", "-c", READ_COMMUNITY, "-Oqv",
                           address(fresh_agent), "SNMPv2-MIB::sysORLastChange.0")
    assert last_change.stdout.strip() in ("0:0:00:00.00", "0")

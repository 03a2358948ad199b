"""snmpEnableAuthenTraps on an engine built as `ibsnmp run` builds it, SETs
sent as datagrams through its dispatcher: disabled by default, a writer's
SET saved in the state file and read back after a restart, read-only while
the configuration sets it (and writable again when a reload drops it); the
state file's `snmp` table."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from pysnmp.carrier.asyncio.dgram import udp
from pysnmp.proto import rfc1902
from tests.support.agent_support import agent_settings
from tests.support.set_support import Agent
from tests.support.wire import community_request, decode_response

from ibsnmp.agent.config import Community, TrapSettings
from ibsnmp.agent.engine import AgentEngine, build_engine
from ibsnmp.agent.refusals import LOGGER_NAME
from ibsnmp.agent.system_defaults import DISABLED, ENABLED
from ibsnmp.mib.write import state_value_problem
from ibsnmp.state.overrides import ConfigState, StateFormatError, from_json, to_json

AUTHEN_TRAPS = "1.3.6.1.2.1.11.30.0"
DOMAIN = udp.DOMAIN_NAME + (1,)
ADDRESS = ("127.0.0.1", 50000)
NO_ERROR, NO_ACCESS, WRONG_TYPE, WRONG_VALUE, NOT_WRITABLE = 0, 6, 7, 10, 17
SPEC = "fat-tree:spines=1,leaves=1,hosts=1"


def engine_over(agent: Agent, configured: bool | None = None) -> AgentEngine:
    settings = dataclasses.replace(
        agent_settings(), communities=(Community("reader"), Community("writer", access="write")),
        traps=TrapSettings(authentication_failure=configured))
    built = build_engine(settings, agent.contexts, agent.mib, fabric_summary="unit")
    built.authen_traps.restore(agent.state.config.snmp.get("snmpEnableAuthenTraps"))
    return built


def ask(built: AgentEngine, kind: str, community: str = "writer",
        value: Any = None) -> tuple[int, Any]:
    """(error-status, the value answered) of a GET or SET of snmpEnableAuthenTraps.0."""
    values = None if value is None else [value]
    data = community_request(kind, [AUTHEN_TRAPS], community=community, values=values)
    reply = built.engine.message_dispatcher.handle(built.engine, DOMAIN, ADDRESS, data)
    assert reply is not None
    _, status, _, varbinds = decode_response(reply)
    return status, varbinds[0][1]


def read(built: AgentEngine) -> int:
    status, value = ask(built, "get", "reader")
    assert status == NO_ERROR
    return int(value)


def test_disabled_by_default_and_a_writers_set_survives_a_restart(tmp_path: Path) -> None:
    agent = Agent(SPEC, path=tmp_path / "state.json")
    built = engine_over(agent)
    assert read(built) == DISABLED and not built.authen_traps.enabled
    assert ask(built, "set", value=rfc1902.Integer32(ENABLED))[0] == NO_ERROR
    assert read(built) == ENABLED and built.authen_traps.enabled
    saved = json.loads((tmp_path / "state.json").read_text())
    assert saved["snmp"] == {"snmpEnableAuthenTraps": ENABLED}
    # Checked against the MIB: enabled(1) or disabled(2), an INTEGER.
    assert ask(built, "set", value=rfc1902.Integer32(3))[0] == WRONG_VALUE
    assert ask(built, "set", value=rfc1902.OctetString(b"1"))[0] == WRONG_TYPE
    restarted = engine_over(agent.restarted())
    assert read(restarted) == ENABLED and restarted.authen_traps.enabled


def test_read_only_while_the_configuration_sets_it(tmp_path: Path) -> None:
    agent = Agent(SPEC, path=tmp_path / "state.json")
    built = engine_over(agent)
    assert ask(built, "set", value=rfc1902.Integer32(ENABLED))[0] == NO_ERROR
    built.authen_traps.configure(False)  # a reload with [traps] authentication_failure = false
    assert read(built) == DISABLED and not built.authen_traps.enabled
    assert ask(built, "set", value=rfc1902.Integer32(ENABLED))[0] == NOT_WRITABLE
    assert read(built) == DISABLED
    assert agent.state.config.snmp == {"snmpEnableAuthenTraps": ENABLED}  # as saved
    built.authen_traps.configure(None)  # a reload without the key: the saved value again
    assert read(built) == ENABLED
    assert ask(built, "set", value=rfc1902.Integer32(DISABLED))[0] == NO_ERROR
    # Set by the file from the start, whatever the state file says.
    configured = engine_over(agent.restarted(), configured=True)
    assert read(configured) == ENABLED
    assert ask(configured, "set", value=rfc1902.Integer32(DISABLED))[0] == NOT_WRITABLE
    configured.authen_traps.configure(None)
    assert read(configured) == DISABLED


def test_a_read_only_communitys_set_is_refused_and_told(tmp_path: Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    built = engine_over(Agent(SPEC, path=tmp_path / "state.json"))
    with caplog.at_level(logging.WARNING, LOGGER_NAME):
        status, _ = ask(built, "set", "reader", rfc1902.Integer32(ENABLED))
    assert status == NO_ACCESS and read(built) == DISABLED
    assert [r.getMessage() for r in caplog.records if r.name == LOGGER_NAME] == [
        "refused a request from 127.0.0.1: SET without write access"]


def test_a_node_context_does_not_write_the_agents_setting(tmp_path: Path) -> None:
    agent = Agent(SPEC, path=tmp_path / "state.json")
    built = engine_over(agent)
    node = next(guid for guid in agent.fabric.nodes if guid != agent.fabric.local_node_guid)
    status, _ = ask(built, "set", f"writer@{node:016x}", rfc1902.Integer32(ENABLED))
    assert status == NOT_WRITABLE and read(built) == DISABLED


def test_the_state_files_snmp_table() -> None:
    state = ConfigState(snmp={"snmpEnableAuthenTraps": ENABLED})
    document = to_json(state)
    assert document["snmp"] == {"snmpEnableAuthenTraps": 1}
    assert from_json(document, state_value_problem) == state
    old = {key: value for key, value in to_json(ConfigState()).items() if key != "snmp"}
    assert from_json(old, state_value_problem) == ConfigState()  # written before it was kept
    for bad, why in ((3, "not a value of snmpEnableAuthenTraps"), ("1", "expected an integer"),
                     (True, "expected an integer")):
        with pytest.raises(StateFormatError, match=f"snmp.snmpEnableAuthenTraps.*{why}"):
            from_json({**old, "snmp": {"snmpEnableAuthenTraps": bad}}, state_value_problem)
    with pytest.raises(StateFormatError, match="snmp"):
        from_json({**old, "snmp": {"snmpInPkts": 1}}, state_value_problem)

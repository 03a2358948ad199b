"""sysContact, sysName and sysLocation SETs are kept in the state file and
served again after a restart; an object the config file sets is read-only
(notWritable, as snmpd answers) and keeps the file's value."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.e2e import RunningAgent, ibsnmp_agent
from pysnmp.proto import rfc1902
from tests.support.wire import community_request, decode_response, exchange

from ibsnmp.state.store import STATE_FILE_NAME

OIDS = {"sysContact": "1.3.6.1.2.1.1.4.0", "sysName": "1.3.6.1.2.1.1.5.0",
        "sysLocation": "1.3.6.1.2.1.1.6.0"}
NOT_WRITABLE = 17


def set_values(agent: RunningAgent, values: dict[str, str]) -> tuple[int, int]:
    oids = [OIDS[name] for name in values]
    answer = exchange(agent.address, community_request(
        "set", oids, community="private", values=[rfc1902.OctetString(v) for v in values.values()]),
        timeout=5.0)
    assert answer is not None
    _, status, index, _ = decode_response(answer)
    return status, index


def read_all(agent: RunningAgent) -> dict[str, str]:
    answer = exchange(agent.address, community_request("get", list(OIDS.values())), timeout=5.0)
    assert answer is not None
    _, status, _, varbinds = decode_response(answer)
    assert status == 0
    return {name: bytes(value).decode() for name, (_, value) in zip(OIDS, varbinds)}


def test_system_objects_survive_a_restart(tmp_path: Path) -> None:
    written = {"sysContact": "noc@example.org", "sysName": "sm-host-1",
               "sysLocation": "hall 2, row 4"}
    options = ("--write-community", "private", "--state-dir", str(tmp_path))
    with ibsnmp_agent(*options) as agent:
        assert set_values(agent, written) == (0, 0)
    saved = json.loads((tmp_path / STATE_FILE_NAME).read_text())
    assert saved["system"] == written
    with ibsnmp_agent(*options) as agent:
        assert read_all(agent) == written


def test_an_object_the_config_file_sets_is_read_only(tmp_path: Path) -> None:
    config = tmp_path / "agent.toml"
    config.write_text('[system]\nsysLocation = "rack 7"\n')
    state = tmp_path / "state"
    state.mkdir()
    # A value saved earlier does not override the file's.
    (state / STATE_FILE_NAME).write_text(json.dumps(
        {"format": "ibsnmp-state", "version": 1, "system": {"sysLocation": "old",
                                                            "sysContact": "saved"}}))
    with ibsnmp_agent("--config", str(config), "--write-community", "private",
                      "--state-dir", str(state)) as agent:
        assert set_values(agent, {"sysContact": "ops", "sysLocation": "elsewhere"}) == (
            NOT_WRITABLE, 2)
        values = read_all(agent)
        assert values["sysLocation"] == "rack 7" and values["sysContact"] == "saved"
        assert set_values(agent, {"sysContact": "ops"}) == (0, 0)
        assert read_all(agent)["sysContact"] == "ops"

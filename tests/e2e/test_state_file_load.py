"""`ibsnmp run` refuses a state file it could not serve: each bad value,
size or shape is one line naming the file and the key, and exit code 2;
a good file loads and is served."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support.e2e import PROJECT_ROOT, free_udp_port, ibsnmp_agent
from tests.support.wire import community_request, decode_response, exchange

from ibsnmp.state.overrides import ConfigState, to_json
from ibsnmp.mib.write import state_value_problem
from ibsnmp.state.store import MAX_NESTING, STATE_FILE_NAME, StateFileError, load_state_file

EXIT_START_FAILED = 2
SYS_CONTACT = "1.3.6.1.2.1.1.4.0"
DEFAULT_LMC = "1.3.6.1.3.117.7.1.1.1.1.14"  # the ibSmConfigDefaultLMC column


def document(**changes: Any) -> dict[str, Any]:
    doc = to_json(ConfigState())
    doc.update(changes)
    return doc


def start_with(state_dir: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ibsnmp", "run", "--listen",
               f"127.0.0.1:{free_udp_port()}", "--fabric", "single", "--state-dir",
               str(state_dir)]
    return subprocess.run(command, capture_output=True, text=True, cwd=PROJECT_ROOT,
                          timeout=120, check=False)


BAD_FILES = {
    "lmc-out-of-range": (json.dumps(document(sm_config={"lmc": 99})), "sm_config.lmc"),
    "huge-integer": (json.dumps(document(sm_config={"lmc": 10**400})), "sm_config.lmc"),
    "deep-nesting": ('{"sm": ' + "[" * 100_000 + "]" * 100_000 + "}", "sm[0]"),
    "wrong-type": (json.dumps(document(sl2vl=[{"guid": "0x1", "port": "1", "map": [0] * 16}])),
                   "sl2vl[0].port"),
    "unknown-key": (json.dumps(document(partition_config={"membertype": 1})),
                    "partition_config.membertype"),
    "system-not-nvt": (json.dumps(document(system={"sysContact": "\u00ff"})),
                       "system.sysContact"),
}


@pytest.mark.parametrize("name", list(BAD_FILES))
def test_a_bad_state_file_stops_the_agent_naming_the_key(tmp_path: Path, name: str) -> None:
    text, key = BAD_FILES[name]
    path = tmp_path / STATE_FILE_NAME
    path.write_text(text)
    result = start_with(tmp_path)
    assert result.returncode == EXIT_START_FAILED, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert str(path) in lines[0] and f" {key}" in lines[0], lines[0]
    assert "Traceback" not in result.stdout + result.stderr


def test_nesting_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / STATE_FILE_NAME
    deep = '{"a": ' * MAX_NESTING + "0" + "}" * MAX_NESTING
    path.write_text('{"partitions": [{"members": [' + deep + "]}]}")
    with pytest.raises(StateFileError, match=r": partitions\[0\]\.members\[0\]\.a\.a"):
        load_state_file(path, state_value_problem)


def test_a_good_state_file_loads_and_is_served(tmp_path: Path) -> None:
    good = document(sm_config={"lmc": 2}, system={"sysContact": "noc@example.org"})
    (tmp_path / STATE_FILE_NAME).write_text(json.dumps(good))
    with ibsnmp_agent("--state-dir", str(tmp_path)) as agent:
        values = []
        for kind, oid in (("get", SYS_CONTACT), ("next", DEFAULT_LMC)):
            answer = exchange(agent.address, community_request(kind, [oid]))
            assert answer is not None
            _, status, _, ((name, value),) = decode_response(answer)
            assert status == 0 and name.startswith(oid)
            values.append(value.prettyPrint())
        assert values == ["noc@example.org", "2"]


def test_an_integer_beyond_any_value_is_refused_by_its_key(tmp_path: Path) -> None:
    # 5,000 digits: past Python's int() limit, so json.loads alone would fail
    # without naming the key.
    path = tmp_path / STATE_FILE_NAME
    path.write_text(json.dumps(document(sl2vl=[{"guid": "0x1", "port": 1, "map": [0] * 16}]))
                    .replace('"port": 1', '"port": ' + "9" * 5000))
    with pytest.raises(StateFileError, match=r": sl2vl\[0\]\.port: expected an integer"):
        load_state_file(path, state_value_problem)


def test_a_file_larger_than_the_bound_is_refused(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / STATE_FILE_NAME
    path.write_text(json.dumps(document()))
    monkeypatch.setattr("ibsnmp.state.store.MAX_STATE_FILE_BYTES", 64)
    with pytest.raises(StateFileError, match="larger than 64 octets"):
        load_state_file(path, state_value_problem)


@pytest.mark.parametrize("section,key,value,descriptor", [
    ("partition_config", "member_type", 3, "ibSmPartitionConfigMemberType"),
    ("partition_config", "last_action", 7, "ibSmPartitionConfigAction"),
    ("partition_config", "key", "001122", "ibSmPartitionConfigKey"),
])
def test_values_are_checked_against_the_compiled_mib(tmp_path: Path, section: str, key: str,
                                                     value: Any, descriptor: str) -> None:
    doc = document()
    doc[section][key] = value
    path = tmp_path / STATE_FILE_NAME
    path.write_text(json.dumps(doc))
    with pytest.raises(StateFileError, match=f": {section}.{key}: not a value of {descriptor}"):
        load_state_file(path, state_value_problem)

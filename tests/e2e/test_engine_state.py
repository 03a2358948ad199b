"""SNMPv3 engine ID and snmpEngineBoots kept in the state directory, across restarts."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from tests.support.e2e import PROJECT_ROOT, RunningAgent, assert_ok, free_udp_port, ibsnmp_agent
from tests.support.narrow import present
from tests.support.wire import exchange
from tests.support.wire_v3 import Auth, decode_v3, discover, v3_message

from ibsnmp.agent.engine_state import (
    ENGINE_FILE_NAME,
    MAX_BOOTS,
    EngineState,
    EngineStateError,
    load_engine_state,
    next_engine_state,
    start_engine,
)
from ibsnmp.state.store import STATE_FILE_NAME
from ibsnmp.statedir import StateDirError, default_state_dir, prepare_state_dir

SNMP_ENGINE_BOOTS = ".1.3.6.1.6.3.10.2.1.2.0"
SNMP_ENGINE_ID = ".1.3.6.1.6.3.10.2.1.1.0"
CONFIGURED_ID = bytes.fromhex("8000000001aabbccdd")
SYS_NAME = (1, 3, 6, 1, 2, 1, 1, 5, 0)
USM_STATS_NOT_IN_TIME_WINDOWS = (1, 3, 6, 1, 6, 3, 15, 1, 1, 2, 0)
USER_CONFIG = """
[[community]]
name = "public"

[[user]]
name = "monitor"
auth = "SHA"
auth_key = "monitor-key"
"""


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# -- the state directory ----------------------------------------------------------------


def test_default_state_dir_follows_systemd_root_and_xdg(tmp_path: Path) -> None:
    systemd = {"STATE_DIRECTORY": "/var/lib/ibsnmp-unit:/var/lib/other"}
    assert default_state_dir(systemd, euid=1000) == Path("/var/lib/ibsnmp-unit")
    assert default_state_dir({}, euid=0) == Path("/var/lib/ibsnmp")
    assert default_state_dir({"XDG_STATE_HOME": str(tmp_path)}, euid=1000) == \
        tmp_path / "ibsnmp"
    home = Path.home() / ".local" / "state" / "ibsnmp"
    assert default_state_dir({}, euid=1000) == home
    assert default_state_dir({"XDG_STATE_HOME": "relative/dir"}, euid=1000) == home


def test_state_dir_is_created_private_and_must_be_usable(tmp_path: Path) -> None:
    created = prepare_state_dir(tmp_path / "a" / "state")
    assert created.is_dir() and mode(created) == 0o700
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StateDirError, match=f"{blocker}/state: cannot create"):
        prepare_state_dir(blocker / "state")
    with pytest.raises(StateDirError, match="not a directory"):
        prepare_state_dir(blocker)


def test_a_start_removes_the_temporaries_a_killed_agent_left(tmp_path: Path) -> None:
    """`kill -9` between writing `.NAME.XXXXXXXX.tmp` and renaming it over NAME
    leaves it behind; the next start removes those, and nothing else."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    stale = []
    for name in (STATE_FILE_NAME, ENGINE_FILE_NAME):
        fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=state)
        os.close(fd)
        stale.append(Path(temporary).name)
    lookalikes = [f".{STATE_FILE_NAME}.tmp", f"{STATE_FILE_NAME}.abcd_123.tmp",
                  f".{STATE_FILE_NAME}.abcd_1234.tmp", ".other.json.abcd_123.tmp",
                  f".{STATE_FILE_NAME}.ABCD_123.tmp"]
    an_hour_ago = time.time() - 3600
    for name in stale + lookalikes:
        (state / name).touch()
        os.utime(state / name, (an_hour_ago, an_hour_ago))
    # Named as ours but newer than the agent: another process may be writing it.
    writing = state / f".{STATE_FILE_NAME}.wxyz_789.tmp"
    writing.touch()
    os.utime(writing, (time.time() + 3600, time.time() + 3600))
    with ibsnmp_agent("--state-dir", str(state), fabric="single") as agent:
        assert "removed 2 temporary file(s) an interrupted write left" in agent.banner
    left = {path.name for path in state.iterdir()}
    assert not left & set(stale)
    assert left >= {*lookalikes, writing.name, ENGINE_FILE_NAME}


# -- the engine file ----------------------------------------------------------------------


def test_first_start_makes_an_engine_id_and_a_private_file(tmp_path: Path) -> None:
    first = start_engine(tmp_path, None, clock=lambda: 1795000000.25)
    path = tmp_path / ENGINE_FILE_NAME
    assert first.boots == 1 and first.engine_id[:5] == bytes.fromhex("80004fb805")
    assert mode(path) == 0o600
    assert json.loads(path.read_text()) == {"engine_id": first.engine_id.hex(), "boots": 1,
                                            "booted_at": 1795000000.25}
    second = start_engine(tmp_path, None, clock=lambda: 1795000100.5)
    assert second == EngineState(first.engine_id, 2)
    assert second.booted_at == 1795000100.5 == present(load_engine_state(path)).booted_at
    assert [p.name for p in tmp_path.iterdir()] == [ENGINE_FILE_NAME]  # no temporary left
    other = tmp_path / "other"
    other.mkdir()
    assert start_engine(other, None).engine_id != first.engine_id


def test_boots_latch_at_the_rfc_maximum() -> None:
    stored = EngineState(CONFIGURED_ID, MAX_BOOTS - 1)
    latched = next_engine_state(stored, None)
    assert latched.boots == MAX_BOOTS
    assert next_engine_state(latched, None).boots == MAX_BOOTS


def test_a_configured_engine_id_wins_and_restarts_boots(tmp_path: Path) -> None:
    stored = start_engine(tmp_path, None)
    start_engine(tmp_path, None)
    configured = start_engine(tmp_path, CONFIGURED_ID)
    assert configured == EngineState(CONFIGURED_ID, 1)
    assert start_engine(tmp_path, CONFIGURED_ID) == EngineState(CONFIGURED_ID, 2)
    # Without engine_id in the config, the last engine ID in use stays.
    assert start_engine(tmp_path, None) == EngineState(CONFIGURED_ID, 3)
    assert stored.engine_id != CONFIGURED_ID


@pytest.mark.parametrize(("content", "problem"), [
    ("{not json", "not a valid JSON document"),
    ("[" * 100_000, "not a valid JSON document"),
    ('{"engine_id": "80004fb8", "boots": 1}', "engine_id: must be 5 to 32 octets, got 4"),
    ('{"engine_id": "zz", "boots": 1}', "engine_id: expected hexadecimal digits"),
    ('{"engine_id": "0000000000", "boots": 1}', "engine_id: must not be all zeros"),
    ('{"engine_id": "8000000001aabbccdd", "boots": 0}', "boots: expected an integer from 1"),
    ('{"engine_id": "8000000001aabbccdd", "boots": true}', "boots: expected an integer"),
    ('{"engine_id": "8000000001aabbccdd", "boots": 2147483648}', "boots: expected an integer"),
    ('{"engine_id": "8000000001aabbccdd"}', "boots: expected an integer"),
    ('{"boots": 3}', "engine_id: missing"),
    ('{"engine_id": "8000000001aabbccdd", "boots": 3, "x": 1}', "x: unknown key"),
    ("7", "expected a JSON object"),
])
def test_a_corrupt_engine_file_is_refused(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / ENGINE_FILE_NAME
    path.write_text(content)
    with pytest.raises(EngineStateError) as err:
        load_engine_state(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and problem in message and "\n" not in message
    with pytest.raises(EngineStateError):
        start_engine(tmp_path, None)
    assert path.read_text() == content  # left for the operator to look at


# -- over SNMP ------------------------------------------------------------------------------


def snmp_engine(agent: RunningAgent) -> tuple[str, int]:
    out = assert_ok(agent.snmp("snmpget", "-v2c", "-c", "public", "-On", "-Oqv",
                               SNMP_ENGINE_ID, SNMP_ENGINE_BOOTS)).split("\n")
    return out[0].strip(), int(out[1])


def test_boots_grow_and_engine_id_stays_across_restarts(tmp_path: Path) -> None:
    state = ("--state-dir", str(tmp_path / "state"))
    runs = []
    for _ in range(2):
        with ibsnmp_agent(*state, fabric="single") as agent:
            runs.append((snmp_engine(agent), discover(agent.address)))
    (first_id, first_boots), first_v3 = runs[0]
    (second_id, second_boots), second_v3 = runs[1]
    assert (first_boots, second_boots) == (1, 2)
    assert first_id == second_id
    # The USM header carries the same values the MIB shows.
    assert first_v3.engine_id == second_v3.engine_id
    assert first_id.replace(" ", "").strip('"').lower() == first_v3.engine_id.hex()
    assert (first_v3.boots, second_v3.boots) == (1, 2)
    assert mode(tmp_path / "state") == 0o700
    assert mode(tmp_path / "state" / ENGINE_FILE_NAME) == 0o600


def test_latched_boots_are_served_and_kept(tmp_path: Path) -> None:
    path = tmp_path / ENGINE_FILE_NAME
    path.write_text(json.dumps({"engine_id": CONFIGURED_ID.hex(), "boots": MAX_BOOTS}))
    config = tmp_path / "agent.toml"
    config.write_text(USER_CONFIG)
    with ibsnmp_agent("--state-dir", str(tmp_path), "--config", str(config),
                      fabric="single") as agent:
        assert snmp_engine(agent)[1] == MAX_BOOTS
        engine = discover(agent.address)
        assert engine.boots == MAX_BOOTS
        # RFC 3414 3.2 step 7a: at the latched value nothing authenticated is timely.
        request = v3_message("get", [SYS_NAME], user=b"monitor", engine_id=engine.engine_id,
                             boots=engine.boots, engine_time=engine.engine_time,
                             auth=Auth("SHA", "monitor-key"))
        answer = exchange(agent.address, request, timeout=5.0)
        assert answer is not None
        report = decode_v3(answer)
        assert report.pdu_type == "report"
        assert [oid for oid, _ in report.varbinds] == [USM_STATS_NOT_IN_TIME_WINDOWS]
    assert json.loads(path.read_text())["boots"] == MAX_BOOTS


def test_pysnmps_temporary_boots_file_is_not_used(tmp_path: Path) -> None:
    engine_id = os.urandom(6).hex()
    config = tmp_path / "agent.toml"
    config.write_text(f'engine_id = "0x80{engine_id}"\n')
    pysnmp_dir = Path(tempfile.gettempdir()) / "__pysnmp" / f"0x80{engine_id}"
    with ibsnmp_agent("--config", str(config), "--state-dir", str(tmp_path / "s"),
                      fabric="single") as agent:
        assert discover(agent.address).engine_id.hex() == f"80{engine_id}"
    assert not pysnmp_dir.exists()


def run_failing(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ibsnmp", "run", "--listen",
                           f"127.0.0.1:{free_udp_port()}", "--fabric", "single", *args],
                          capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=60)


def test_a_corrupt_engine_file_stops_the_start_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / ENGINE_FILE_NAME
    path.write_text('{"engine_id": "80", "boots": 5}')
    result = run_failing("--state-dir", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"ibsnmp: engine state file: {path}: engine_id: must be 5 to 32 octets, got 1"]


def test_an_unusable_state_dir_stops_the_start(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run_failing("--state-dir", str(blocker / "state"))
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"ibsnmp: state directory: {blocker}/state: cannot create")

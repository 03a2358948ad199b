"""The write store: state file format, atomic durable saves, transactions,
and the configuration applied to provider snapshots."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn, TypeVar

import pytest

from ibsnmp.fabric import routing
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.iba import SmState
from ibsnmp.mib.write import state_value_problem
from ibsnmp.state.overrides import (
    FULL,
    HIGH,
    LIMITED,
    LOW,
    REMOVED,
    ConfigState,
    PartitionBuffer,
    PartitionEdit,
    SmOverride,
    apply_config,
    from_json,
    to_json,
)
from ibsnmp.sa.sessions import PATH, Session
from ibsnmp.state.store import (
    AgentState,
    ConfiguredProvider,
    StateFileError,
    load_state_file,
    save_state_file,
    state_file_for,
)

SPEC = "fat-tree:spines=2,leaves=2,hosts=2,faults=0"

T = TypeVar("T")


def present(value: T | None) -> T:
    """`value`, which the test expects to be there."""
    assert value is not None
    return value


FULL_STATE = ConfigState(
    sm={0x1122: SmOverride(priority=3, sm_key=0xCAFE, disabled=True)},
    sm_config={"sweep_interval_s": 30, "min_unicast_lid": 5},
    partitions={0x33: PartitionEdit(name="x", fresh=True, members={(0xAB, 1): FULL}),
                0x7FFF: PartitionEdit(members={(0xCD, 2): REMOVED, (0xEF, 1): LIMITED}),
                0x2: PartitionEdit(deleted=True)},
    service_assoc={(b"k" * 16, b"svc"): 1, (bytes(16), b""): 2},
    sl2vl={(0xAB, 1): tuple(range(16))},
    vl_arb={(0xAB, 1, LOW): 7, (0xAB, 1, HIGH): 0},
    partition_buffer=PartitionBuffer(prefix=b"\xfe\x80" + bytes(6), key=b"\x00\x33", port=1,
                                     last_action=4),
)


def test_state_document_round_trip() -> None:
    doc = to_json(FULL_STATE)
    assert from_json(json.loads(json.dumps(doc)), state_value_problem) == FULL_STATE
    assert doc["sm"] == [{"guid": "0x0000000000001122", "priority": 3,
                          "sm_key": "0x000000000000cafe", "admin": "disable"}]
    assert from_json(to_json(ConfigState()), state_value_problem) == ConfigState()


@pytest.mark.parametrize("change,key", [
    (lambda d: d.update(format="x"), "format"),
    (lambda d: d.update(version=2), "version"),
    (lambda d: d["sm"][0].update(priority=16), "sm[0].priority"),
    (lambda d: d["sm_config"].update(bogus=1), "sm_config.bogus"),
    (lambda d: d["sl2vl"][0]["map"].pop(), "sl2vl[0].map"),
    (lambda d: d["partitions"][1]["members"][0].update(membership="x"),
     "partitions[1].members[0].membership"),
])
def test_bad_documents_name_the_key(change: Callable[[dict[str, Any]], object], key: str) -> None:
    doc = json.loads(json.dumps(to_json(FULL_STATE)))
    change(doc)
    with pytest.raises(ValueError, match=key.replace("[", r"\[").replace("]", r"\]")):
        from_json(doc, state_value_problem)


def test_saves_are_atomic_and_durable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state.json"
    synced: list[int] = []
    real_fsync = os.fsync
    def recording_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    save_state_file(path, FULL_STATE)
    assert len(synced) == 2  # the file, then its directory
    assert load_state_file(path, state_value_problem) == FULL_STATE
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]  # no temporary left

    def failing_replace(src: object, dst: object) -> NoReturn:
        raise OSError(5, "I/O error")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        save_state_file(path, ConfigState())
    assert load_state_file(path, state_value_problem) == FULL_STATE  # the old file, whole
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_state_file_locations_and_errors(tmp_path: Path) -> None:
    assert state_file_for(tmp_path / "d") == tmp_path / "d" / "ibsnmp-state.json"
    assert AgentState.open(tmp_path / "new" / "s.json", state_value_problem).config == ConfigState()
    assert (tmp_path / "new").is_dir()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(StateFileError, match="bad.json"):
        AgentState.open(bad, state_value_problem)
    bad.write_text(json.dumps({"format": "ibsnmp-state", "version": 1, "sm": 3}))
    with pytest.raises(StateFileError, match="sm: expected an array, got an integer"):
        AgentState.open(bad, state_value_problem)


def test_transactions_and_expiry(tmp_path: Path) -> None:
    now = [100.0]
    state = AgentState(path=tmp_path / "s.json", lifetime=10, clock=lambda: now[0])
    txn = state.begin()
    txn.put_session(Session(PATH, (b"p", 1), 1, txn.now))
    version = state.version
    state.commit(txn)
    assert state.version > version and not (tmp_path / "s.json").exists()
    txn = state.begin()
    txn.config = ConfigState(sm_config={"lmc": 1})
    state.commit(txn)
    assert load_state_file(tmp_path / "s.json", state_value_problem).sm_config == {"lmc": 1}
    stamp = state.stamp()
    now[0] += 10
    assert state.stamp() != stamp and list(state.sessions_of(PATH)) == []
    # A transaction begun before another commit may not overwrite it.
    first, second = state.begin(), state.begin()
    first.config = ConfigState()
    state.commit(first)
    with pytest.raises(RuntimeError):
        state.commit(second)


def test_apply_config_changes_the_snapshot_and_shares_routing() -> None:
    fabric = build_fabric(SPEC, seed=1)
    switch = next(n for n in fabric.nodes.values() if n.is_switch)
    lft = routing.linear_forwarding_table(fabric, switch.guid)
    host = next(p for n in fabric.nodes.values() if n.is_ca for p in n.ports)
    master = fabric.master_sm
    assert master is not None
    state = ConfigState(
        sm={master.guid: SmOverride(disabled=True, priority=1)},
        sl2vl={(host.node_guid, host.num): (1,) * 16},
        partitions={0x7FFF: PartitionEdit(members={(host.node_guid, host.num): LIMITED})},
    )
    new = apply_config(fabric, state)
    assert new is not fabric and apply_config(fabric, ConfigState()) is fabric
    assert present(new.port(host.node_guid, host.num)).sl2vl == (1,) * 16
    assert present(fabric.port(host.node_guid, host.num)).sl2vl != (1,) * 16  # untouched
    assert 0x7FFF in present(new.port(host.node_guid, host.num)).pkeys
    assert 0xFFFF not in present(new.port(host.node_guid, host.num)).pkeys
    members = {(m.guid, m.port): m.full for m in present(new.partition(0x7FFF)).members}
    assert members[(host.node_guid, host.num)] is False
    states = {sm.guid: sm.state for sm in new.sms}
    assert states[master.guid] is SmState.NOT_ACTIVE
    assert SmState.MASTER in states.values() or len(new.sms) == 1
    # Routing computed on the provider's snapshot is reused, not recomputed.
    assert routing.linear_forwarding_table(new, switch.guid) is lft


def test_a_written_switch_table_replaces_each_input_ports_table_read() -> None:
    fabric = build_fabric(SPEC, seed=1)
    switch = next(n for n in fabric.nodes.values() if n.is_switch)
    read = ((0, tuple(range(16))), (2, (3,) * 16))  # as a live sweep reads them
    out = dataclasses.replace(present(switch.port(1)), sl2vl=read[0][1], sl2vl_inputs=read)
    ports = tuple(out if p.num == 1 else p for p in switch.ports)
    fabric = dataclasses.replace(fabric, nodes=MappingProxyType(
        {**fabric.nodes, switch.guid: dataclasses.replace(switch, ports=ports)}))
    new = apply_config(fabric, ConfigState(sl2vl={(switch.guid, 1): (5,) * 16}))
    written = present(new.port(switch.guid, 1))
    assert written.sl2vl == (5,) * 16
    assert written.sl2vl_inputs == ((0, (5,) * 16), (2, (5,) * 16))  # the same pairs, no more


def test_configured_provider_follows_provider_swaps() -> None:
    class Provider:
        def __init__(self) -> None:
            self.snapshot = build_fabric(SPEC, seed=1)
            self.epoch = 0.0

    inner = Provider()
    state = AgentState()
    provider = ConfiguredProvider(inner, state)  # type: ignore[arg-type]  # snapshot and epoch only
    assert provider.snapshot is inner.snapshot  # nothing configured
    assert state.designated_sm == present(inner.snapshot.master_sm).guid
    host = next(p for n in inner.snapshot.nodes.values() if n.is_ca for p in n.ports)
    txn = state.begin()
    txn.config = ConfigState(sl2vl={(host.node_guid, host.num): (2,) * 16})
    state.commit(txn)
    first = provider.snapshot
    assert present(first.port(host.node_guid, host.num)).sl2vl == (2,) * 16
    assert provider.snapshot is first  # cached
    inner.snapshot = build_fabric(SPEC, seed=1)  # the provider swaps
    assert provider.snapshot is not first
    assert present(provider.snapshot.port(host.node_guid, host.num)).sl2vl == (2,) * 16

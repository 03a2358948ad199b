"""Agents of one state directory: the first boots the engine, those that
share its port join that boot, anyone else is refused; each member has a
state file slot of its own, and one member at a time leads notifications.
flock(2) locks belong to an open file, so members are played here by
separate opens in one process, as separate processes would hold them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ibsnmp.agent.engine_group import MAX_SLOTS, GroupError, join_group
from ibsnmp.agent.engine_state import ENGINE_FILE_NAME, EngineStateError, load_engine_state

ID = bytes.fromhex("80004fb80501020304")


def clock(at: float) -> Callable[[], float]:
    return lambda: at


def test_the_first_boots_and_those_sharing_the_port_join_its_boot(tmp_path: Path) -> None:
    first = join_group(tmp_path, ID, shared=True, clock=clock(1000.5))
    second = join_group(tmp_path, ID, shared=True, clock=clock(2000.0))
    assert (first.booted, second.booted) == (True, False)
    assert (second.state.engine_id, second.state.boots, second.state.booted_at) == (ID, 1, 1000.5)
    assert (first.slot, second.slot) == (1, 2)
    # A member that restarts while the other runs joins again, in the slot it left.
    second.close()
    again = join_group(tmp_path, None, shared=True, clock=clock(3000.0))
    assert (again.booted, again.slot, again.state.boots, again.state.booted_at) == (False, 2, 1, 1000.5)
    # Once none runs, the next start is a new boot.
    first.close()
    again.close()
    rebooted = join_group(tmp_path, None, shared=True, clock=clock(4000.0))
    assert (rebooted.booted, rebooted.slot, rebooted.state.boots) == (True, 1, 2)
    state = load_engine_state(tmp_path / ENGINE_FILE_NAME)
    assert state is not None and state.booted_at == 4000.0
    rebooted.close()


def test_agents_alone_and_groups_do_not_mix(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    alone = join_group(tmp_path, None, shared=False)
    with pytest.raises(GroupError, match="without reuse_port"):
        join_group(tmp_path, None, shared=True)
    # A second agent alone boots as before, warned, its SETs in a slot of its own.
    second = join_group(tmp_path, None, shared=False)
    assert (second.booted, second.state.boots, second.slot) == (True, 2, 2)
    assert "in use by another running ibsnmp" in caplog.text
    assert alone.leads_notifications() and second.leads_notifications()  # each sends its own
    alone.close()
    second.close()
    group = join_group(tmp_path, None, shared=True)
    with pytest.raises(GroupError, match="share a port"):
        join_group(tmp_path, None, shared=False)
    group.close()
    assert join_group(tmp_path, None, shared=False).state.boots == 4  # four boots, no join


def test_a_member_configured_for_another_engine_is_refused(tmp_path: Path) -> None:
    first = join_group(tmp_path, ID, shared=True)
    with pytest.raises(GroupError, match="differs from the 80004fb80501020304"):
        join_group(tmp_path, bytes.fromhex("80004fb805ffffffff"), shared=True)
    assert join_group(tmp_path, None, shared=True).state.engine_id == ID
    first.close()


def test_joining_needs_the_boot_the_running_members_saved(tmp_path: Path) -> None:
    first = join_group(tmp_path, ID, shared=True)
    (tmp_path / ENGINE_FILE_NAME).write_text('{"engine_id": "80004fb80501020304", "boots": 1}')
    with pytest.raises(EngineStateError, match="saved no boot"):
        join_group(tmp_path, None, shared=True)
    first.close()


def test_slots_run_out_at_the_limit(tmp_path: Path) -> None:
    members = [join_group(tmp_path, None, shared=True) for _ in range(MAX_SLOTS)]
    assert [m.slot for m in members] == list(range(1, MAX_SLOTS + 1))
    with pytest.raises(GroupError, match=f"{MAX_SLOTS} agents run on it already"):
        join_group(tmp_path, None, shared=True)
    for member in members:
        member.close()


def test_one_member_leads_notifications_and_another_takes_over(tmp_path: Path) -> None:
    leader = join_group(tmp_path, None, shared=True)
    other = join_group(tmp_path, None, shared=True)
    assert leader.leads_notifications()
    assert not other.leads_notifications()
    assert leader.leads_notifications()  # and keeps leading
    leader.close()
    assert other.leads_notifications() and other.leads_notifications()
    other.close()

"""Agents that share a state directory and a UDP port act as one engine.

An `ibsnmp run` holds its state directory's group lock while it runs: alone, or shared with
the agents that bind the same port (`reuse_port`). The first of a group to start boots the
engine; one that starts while others of its group run joins that boot (`join_group`), so
any member answers with the same snmpEngineID, snmpEngineBoots, snmpEngineTime and
sysUpTime. Each member keeps its SETs in a state file of its own (`EngineGroup.slot`), and
one at a time sends the fabric's notifications. The locks are flock(2) locks on files
beside the state: the kernel drops them with the process, so a killed member leaves none.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from .engine_state import ENGINE_FILE_NAME, EngineState, EngineStateError, load_engine_state, start_engine

__all__ = ["EngineGroup", "GroupError", "join_group", "MAX_SLOTS"]

log = logging.getLogger("ibsnmp.agent")

GROUP_LOCK = "ibsnmp-engine.lock"  # shared by the running members, exclusive for one alone
START_LOCK = "ibsnmp-engine-start.lock"  # held while a member decides: boot or join
NOTIFY_LOCK = "ibsnmp-notify.lock"
MAX_SLOTS = 64


class GroupError(Exception):
    """The state directory is in use in a way this agent cannot join (one line)."""


def _lock_file(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise GroupError(f"{path}: cannot open: {exc.strerror or exc}") from None


def _try_lock(fd: int, operation: int) -> bool:
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class EngineGroup:
    """This agent's place in its state directory's group, held until `close`.

    `state`: the engine's identity and boot this agent serves; `booted`:
    whether it booted the engine (snmpEngineBoots + 1, its start recorded as
    `booted_at`; else it joined a running boot); `slot`: which state file
    holds its SETs (slot 1: ibsnmp-state.json, slot n: ibsnmp-state-n.json)."""

    def __init__(self, state_dir: Path, state: EngineState, booted: bool, slot: int,
                 held: list[int], notify_fd: int) -> None:
        self.state_dir = state_dir
        self.state = state
        self.booted = booted
        self.slot = slot
        self._held = held
        # The notification lock's file (not locked yet); -1: an agent alone,
        # which sends its notifications itself.
        self._notify_fd = notify_fd
        self._leading = notify_fd < 0

    def leads_notifications(self) -> bool:
        """Whether this agent sends the fabric's notifications now: it is
        alone, or holds its group's notification lock, or takes it now from a
        member that stopped (one flock(2) call while another leads): another
        member takes the lock over at its first notification after the holder
        stopped."""
        if not self._leading and _try_lock(self._notify_fd, fcntl.LOCK_EX):
            self._leading = True
            log.info("this agent sends the fabric's notifications for its group (slot %d)",
                     self.slot)
        return self._leading

    def close(self) -> None:
        """Give up every lock (the process's end does as much)."""
        for fd in [*self._held, self._notify_fd]:
            if fd >= 0:
                os.close(fd)
        self._held, self._notify_fd, self._leading = [], -1, False


def join_group(state_dir: Path, configured_id: bytes | None, *, shared: bool,
               clock: Callable[[], float] = time.time) -> EngineGroup:
    """Boot the engine of `state_dir` (at `clock()`), or join the boot its
    running members serve (`shared`: this agent shares its port with them).
    GroupError when agents that share a port run there and this one does
    not, or the other way round; EngineStateError for the engine file.

    An agent alone (not `shared`) that finds another one alone there boots
    an engine of its own as before, with a warning, and keeps its SETs in
    a slot of its own: they would otherwise overwrite each other's."""
    start_fd = _lock_file(state_dir / START_LOCK)
    held: list[int] = []
    try:
        fcntl.flock(start_fd, fcntl.LOCK_EX)  # held only while a member decides
        group_fd = _lock_file(state_dir / GROUP_LOCK)
        held.append(group_fd)
        if _try_lock(group_fd, fcntl.LOCK_EX):
            state, booted = start_engine(state_dir, configured_id, clock), True
            if shared:
                fcntl.flock(group_fd, fcntl.LOCK_SH)  # others may join; none decides meanwhile
        elif _try_lock(group_fd, fcntl.LOCK_SH):  # the running agents share a port
            if not shared:
                raise GroupError(f"{state_dir}: agents that share a port (reuse_port) run on it; "
                                 "give this one a state directory of its own")
            state, booted = _running_boot(state_dir, configured_id), False
        elif shared:
            raise GroupError(f"{state_dir}: in use by a running ibsnmp without reuse_port; "
                             "agents that share a port and directory all need it")
        else:
            log.warning("state directory %s is in use by another running ibsnmp: this one "
                        "counts a boot of the same engine ID and keeps its SETs apart; give "
                        "each agent a state directory of its own", state_dir)
            held.remove(group_fd)
            os.close(group_fd)
            state, booted = start_engine(state_dir, configured_id, clock), True
        slot = _claim_slot(state_dir, held)
        notify_fd = _lock_file(state_dir / NOTIFY_LOCK) if shared else -1
    except BaseException:
        for fd in held:
            os.close(fd)
        raise
    finally:
        os.close(start_fd)  # the decision is made: the next may start
    if not booted:
        log.info("joined the running agents of %s: snmpEngineBoots %d, state slot %d",
                 state_dir, state.boots, slot)
    return EngineGroup(state_dir, state, booted, slot, held, notify_fd)


def _running_boot(state_dir: Path, configured_id: bytes | None) -> EngineState:
    """The boot the running members serve, as they saved it."""
    path = state_dir / ENGINE_FILE_NAME
    state = load_engine_state(path)
    if state is None or not state.booted_at:
        raise EngineStateError(f"{path}: the running agents of this directory saved no boot")
    if configured_id is not None and configured_id != state.engine_id:
        raise GroupError(f"engine_id {configured_id.hex()} differs from the {state.engine_id.hex()} "
                         f"the running agents of {state_dir} serve; a group is one engine")
    return state


def _claim_slot(state_dir: Path, held: list[int]) -> int:
    """The lowest state-file slot no running member holds (its lock added to `held`)."""
    for slot in range(1, MAX_SLOTS + 1):
        fd = _lock_file(state_dir / f"ibsnmp-slot-{slot}.lock")
        if _try_lock(fd, fcntl.LOCK_EX):
            held.append(fd)
            return slot
        os.close(fd)
    raise GroupError(f"{state_dir}: {MAX_SLOTS} agents run on it already")

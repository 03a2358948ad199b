"""The agent's writable state, its transactions and its state file.

`AgentState` keeps the configuration managers wrote (ConfigState) and the open SA request
sessions. A SET works on a `Transaction` (copies of both); `commit` saves the configuration
first, when it changed, and only then swaps it in, so a SET is acknowledged only once what it
configured is on disk (`save_state_file`: atomic and durable). Sessions are not saved
(requests, not configuration). `ConfiguredProvider` wraps the fabric provider so that every
snapshot it hands out has the configuration applied, also after it swaps in a new one.
Reference: docs/sets.md, 'Requests, configuration, errors and persistence'.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ibsnmp.atomicfile import write_atomically
from ibsnmp.events import TrapEvent
from ibsnmp.fabric.iba import SmState
from ibsnmp.fabric.model import Fabric
from ibsnmp.fabric.succession import with_values
from ibsnmp.providers.base import Provider

from .overrides import (ConfigState, StateFormatError, ValueProblem, apply_config, from_json, referenced_nodes,
                        to_json)
from ibsnmp.sa.sessions import (DEFAULT_LIFETIME_S, DEFAULT_MAX_RESULT_ROWS, DEFAULT_MAX_RESULT_ROWS_PER_REQUEST,
                                DEFAULT_MAX_SESSIONS, Session, SessionKey)

log = logging.getLogger("ibsnmp.state")

STATE_FILE_NAME = "ibsnmp-state.json"
_NOT_IN_SERVICE = 2  # RowStatus


class StateFileError(Exception):
    """The state file cannot be read or is not valid; names the file."""


def state_file_for(state_dir: str | Path, slot: int = 1) -> Path:
    """Where an agent's state lives in the state directory: `DIR/ibsnmp-state.json`,
    or for the agent of slot n > 1 of a group (agent.engine_group) `ibsnmp-state-n.json`."""
    return Path(state_dir) / (STATE_FILE_NAME if slot == 1 else f"ibsnmp-state-{slot}.json")


def load_state_file(path: Path, mib_problem: ValueProblem) -> ConfigState:
    """The configuration saved in `path` (empty if there is no such file).

    StateFileError names the file and, where there is one, the key: the
    file is bounded in size (MAX_STATE_FILE_BYTES), nesting (MAX_NESTING)
    and integer digits before it is parsed, and every value is checked
    against the MIB object that serves it (`mib_problem`, see
    overrides.from_json)."""
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_STATE_FILE_BYTES + 1)
    except FileNotFoundError:
        return ConfigState()
    except OSError as exc:
        raise StateFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_STATE_FILE_BYTES:
        raise StateFileError(f"{path}: larger than {MAX_STATE_FILE_BYTES} octets")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StateFileError(f"{path}: not UTF-8 text: {exc}") from None
    deep = nesting_beyond(text, MAX_NESTING)
    if deep is not None:
        raise StateFileError(f"{path}: {deep}: nested deeper than {MAX_NESTING} levels")
    try:
        doc = json.loads(text, parse_int=_bounded_int)
    except (ValueError, RecursionError) as exc:
        raise StateFileError(f"{path}: not a JSON document: {exc}") from None
    try:
        return from_json(doc, mib_problem)
    except StateFormatError as exc:
        raise StateFileError(f"{path}: {exc}") from None


# A state file holds a few thousand entries at most (service associations
# are capped at 10,000); its documents nest 5 levels deep.
MAX_STATE_FILE_BYTES = 16 * 1024 * 1024
MAX_NESTING = 16
MAX_INTEGER_DIGITS = 20  # any value of the state fits in 64 bits


class HugeInteger:
    """A JSON integer too long to be any value of the state: kept as text
    so that the check of its key refuses it (by name) without converting."""

    __slots__ = ("digits",)

    def __init__(self, digits: str) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"<integer of {len(self.digits)} digits>"


def _bounded_int(digits: str) -> int | HugeInteger:
    return int(digits) if len(digits) <= MAX_INTEGER_DIGITS else HugeInteger(digits)


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},:]')


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def nesting_beyond(text: str, limit: int) -> str | None:
    """The key (`a[0].b` form) at which JSON `text` nests deeper than
    `limit` arrays and objects, or None. A scan of the text, so a hostile
    file cannot exhaust the parser's recursion."""
    depth = 0
    for bracket in _NOT_BRACKET.sub("", _JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        if depth > limit:
            return _key_at_depth(text, limit)
    return None


def _key_at_depth(text: str, limit: int) -> str:
    frames: list[list[Any]] = []  # [is an object, key or index]
    last_string = ""
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first == '"':
            last_string = token
        elif first == ":":
            if frames and frames[-1][0]:
                frames[-1][1] = _key_text(last_string)
        elif first == ",":
            if frames and not frames[-1][0]:
                frames[-1][1] += 1
        elif first in "[{":
            if len(frames) >= limit:
                return _key_path(frames)
            frames.append([first == "{", None if first == "{" else 0])
        elif frames:
            frames.pop()
    return _key_path(frames)


def _key_text(token: str) -> str:
    try:
        return str(json.loads(token))
    except ValueError:
        return token


def _key_path(frames: list[list[Any]]) -> str:
    path = ""
    for is_object, key in frames:
        if is_object:
            path += f".{key}" if path else str(key)
        else:
            path += f"[{key}]"
    return path or "document"


def save_state_file(path: Path, state: ConfigState) -> None:
    """Replace `path` atomically and durably with `state` (OSError on failure,
    the old file left as it was)."""
    write_atomically(path, (json.dumps(to_json(state), indent=2) + "\n").encode("utf-8"))


@dataclass(slots=True)
class Transaction:
    """What one SET changes, on copies: nothing is visible before commit.
    `now` is the store clock when the SET began."""

    config: ConfigState
    sessions: dict[SessionKey, Session]
    now: float
    base_config: ConfigState
    sessions_changed: bool = False
    notes: list[str] = field(default_factory=list)
    # Requests for the SA, started once this transaction is committed:
    # (the session, the fabric snapshot of the SET, the traced path's request).
    sa_pending: list[tuple[Session, Any, Any]] = field(default_factory=list)

    def session(self, key: SessionKey) -> Session | None:
        return self.sessions.get(key)

    def put_session(self, session: Session) -> None:
        self.sessions[session.key] = session
        self.sessions_changed = True

    def drop_session(self, key: SessionKey) -> None:
        if self.sessions.pop(key, None) is not None:
            self.sessions_changed = True


class AgentState:
    """Configuration (durable) and SA request sessions (in memory).

    path: the state file (None: nothing is saved). lifetime: seconds a
    session lives; max_sessions: how many may be open at once;
    max_result_rows_per_request and max_result_rows: how many result rows
    one session and all of them may hold (0: none). `version`
    changes whenever anything a read may show changes (a commit, a session
    expiring); `config_version` when the configuration does.
    """

    def __init__(self, config: ConfigState | None = None, *, path: Path | None = None,
                 lifetime: float = DEFAULT_LIFETIME_S, max_sessions: int = DEFAULT_MAX_SESSIONS,
                 max_result_rows_per_request: int = DEFAULT_MAX_RESULT_ROWS_PER_REQUEST,
                 max_result_rows: int = DEFAULT_MAX_RESULT_ROWS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if lifetime <= 0:
            raise ValueError(f"session lifetime must be > 0, got {lifetime}")
        if max_sessions < 0:
            raise ValueError(f"max sessions must be >= 0, got {max_sessions}")
        self.config = config if config is not None else ConfigState()
        self.path = path
        self.lifetime = float(lifetime)
        self.max_sessions = max_sessions
        self.max_result_rows_per_request = max_result_rows_per_request
        self.max_result_rows = max_result_rows
        self.clock = clock
        self.epoch = clock()
        self.sessions: dict[SessionKey, Session] = {}
        self.version = 0
        self.config_version = 0
        self.designated_sm: int | None = None  # the SM the default context speaks for
        self.saves = 0
        # With a live SM: who asks the SA for request rows (None: the fabric
        # model answers them), and whether the SM's configuration is ours to SET.
        self.sa_runner: Callable[[Session, Any, Any], None] | None = None
        self.sm_config_writable = True

    @classmethod
    def open(cls, path: Path | None, mib_problem: ValueProblem, *, check_writable: bool = True,
             **options: Any) -> AgentState:
        """A store over the state file at `path` (loaded if it exists, its
        values checked by `mib_problem`; its directory is created if needed). StateFileError if it cannot be
        read, or (with `check_writable`) if its directory cannot be written;
        without the check, SETs that change configuration answer
        commitFailed while the file cannot be saved."""
        config = ConfigState()
        if path is not None:
            if check_writable:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise StateFileError(
                        f"{path.parent}: cannot create: {exc.strerror or exc}") from None
                if not os.access(path.parent, os.W_OK):
                    raise StateFileError(f"{path.parent}: not writable")
            elif not os.access(path.parent, os.W_OK):
                log.warning("%s is not writable: SETs that change configuration will fail "
                            "(commitFailed); use --state-dir", path.parent)
            config = load_state_file(path, mib_problem)
        return cls(config, path=path, **options)

    # -- time and expiry ------------------------------------------------------------

    def ticks(self, at: float) -> int:
        """TimeTicks (1/100 s) since the store started, for CreationTime."""
        return max(0, int((at - self.epoch) * 100)) & 0xFFFFFFFF

    def purge(self) -> None:
        """Drop the sessions whose lifetime has run out."""
        if not self.sessions:
            return
        now = self.clock()
        expired = [key for key, s in self.sessions.items() if s.expired(now, self.lifetime)]
        if expired:
            for key in expired:
                del self.sessions[key]
            self.version += 1

    def stamp(self, target: Any = None) -> int:
        """What a read's row cache is valid for (expiring sessions first)."""
        self.purge()
        return self.version

    def sessions_of(self, table: str) -> Iterator[Session]:
        self.purge()
        return (s for s in self.sessions.values() if s.table == table)

    # -- transactions -----------------------------------------------------------------

    def begin(self) -> Transaction:
        self.purge()
        return Transaction(config=self.config, sessions=dict(self.sessions), now=self.clock(),
                           base_config=self.config)

    def commit(self, txn: Transaction) -> None:
        """Make `txn` the state: save the configuration first when it
        changed (OSError: nothing changes), then swap."""
        if txn.base_config is not self.config:
            raise RuntimeError("a transaction was committed over a newer state")
        if txn.config is not self.config and txn.config != self.config:
            if self.path is not None:
                save_state_file(self.path, txn.config)
                self.saves += 1
            self.config = txn.config
            self.config_version += 1
            self.version += 1
        if txn.sessions_changed:
            self.sessions = txn.sessions
            self.version += 1
        if self.sa_runner is not None:
            for pending in txn.sa_pending:
                self.sa_runner(*pending)

    def result_room(self, sessions: dict[SessionKey, Session], key: SessionKey) -> int:
        """How many result rows the session `key` may hold beside the others in `sessions`."""
        held = sum(len(s.results) for k, s in sessions.items() if k != key)
        return max(0, min(self.max_result_rows_per_request, self.max_result_rows - held))

    def settle(self, session: Session, results: tuple[Any, ...] | None) -> bool:
        """The SA's answer to an active request lands in its row (None: no
        answer, or more rows than the result limits leave room for: the row
        goes notInService, without results). Ignored (False) when the row was
        destroyed, recreated or changed while the SA was asked."""
        current = self.sessions.get(session.key)
        if current != session:
            return False
        if results is not None and len(results) > self.result_room(self.sessions, session.key):
            log.warning("an SA answer of %d rows exceeds [limits] max_result_rows_per_request "
                        "or max_result_rows: the request goes notInService", len(results))
            results = None
        self.sessions = dict(self.sessions)
        self.sessions[session.key] = (replace(session, results=results) if results is not None
                                      else replace(session, status=_NOT_IN_SERVICE))
        self.version += 1
        return True


def designated_sm(fabric: Fabric) -> int | None:
    """The SM the agent speaks for in its default context: the one on the
    local node, else the master, else the best by priority."""
    if not fabric.sms:
        return None
    local = [sm for sm in fabric.sms if sm.node_guid == fabric.local_node_guid]
    pool = local or list(fabric.sms)
    best = min(pool, key=lambda sm: (sm.state is not SmState.MASTER, -sm.priority, sm.guid))
    return best.guid


class ConfiguredProvider:
    """A Provider whose snapshots carry the written configuration.

    The overlaid snapshot is rebuilt only when the provider swaps in a new
    structure or the configuration changes; it keeps the provider
    snapshot's derived data (routing, indexes) that the configuration does
    not touch, and a provider snapshot with new counter values only gets
    the overlaid one with those values.
    """

    def __init__(self, inner: Provider, state: AgentState) -> None:
        self._inner = inner
        self._state = state
        self._raw: Fabric | None = None
        self._version = -1
        self._fabric: Fabric | None = None
        first = inner.snapshot
        if state.designated_sm is None:
            state.designated_sm = designated_sm(first)
        missing = {guid for guid in referenced_nodes(state.config) if guid not in first.nodes}
        if missing:
            log.warning("the state file names %d node(s) this fabric does not have; their "
                        "settings are kept but not applied", len(missing))

    @property
    def inner(self) -> Any:  # the provider as made: what it offers beyond Provider
        return self._inner

    @property
    def snapshot(self) -> Fabric:
        raw = self._inner.snapshot
        state = self._state
        if raw is not self._raw or state.config_version != self._version or self._fabric is None:
            last = self._raw
            if (self._fabric is not None and last is not None and raw.lineage is last.lineage
                    and state.config_version == self._version):
                self._fabric = with_values(self._fabric, raw.counter_values)
            else:
                self._fabric = apply_config(raw, state.config)
            self._raw = raw
            self._version = state.config_version
        return self._fabric

    @property
    def epoch(self) -> float:
        return self._inner.epoch

    def add_listener(self, listener: Callable[[TrapEvent], None]) -> None:
        self._inner.add_listener(listener)

    async def start(self) -> None:
        await self._inner.start()

    async def stop(self) -> None:
        await self._inner.stop()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

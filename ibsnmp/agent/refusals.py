"""What the agent refuses, told to the operator: one WARNING line per source and reason a minute.

A wrong community, an unknown SNMPv3 user or context time out at the manager and, without
this, leave only a counter behind. `RefusalLog.refused` is called where the agent decides
(agent.prefilter, agent.fast_v3) and writes on the `ibsnmp.refusals` logger; no count is
lost, and memory stays bounded under a flood from spoofed sources. A line names the source
address, the reason and a configured user's name, never a community, an unknown user's name,
a context name or a key. Listeners (`add_listener`) hear every line's reason (the
authenticationFailure notification, traps.standard). No I/O but logging; the clock injected.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager

LOGGER_NAME = "ibsnmp.refusals"
WINDOW_S = 60.0
MAX_SOURCES = 4096
FLUSH_INTERVAL_S = 5.0
OTHER_SOURCES = "other sources"  # the key of the sources beyond the bound


class Reason:
    """Why a request was refused: the text its line gives; `authentication`:
    whether it is an authentication failure (RFC 3418 authenticationFailure);
    `names_user`: whether the user the request names is a configured one, which
    the line may then name.

    Compared and hashed by identity (a plain object: cheap as a dictionary key)."""

    __slots__ = ("text", "authentication", "names_user")

    def __init__(self, text: str, *, authentication: bool, names_user: bool = False) -> None:
        self.text = text
        self.authentication = authentication
        self.names_user = names_user

    def __repr__(self) -> str:
        return f"Reason({self.text!r})"


UNKNOWN_COMMUNITY = Reason("unknown community", authentication=True)
COMMUNITY_SOURCE = Reason("community not accepted from this address", authentication=True)
# `community@<guid>` naming no known node (v1/v2c: the community string authenticates).
UNKNOWN_COMMUNITY_CONTEXT = Reason("unknown context", authentication=True)
# An authenticated SNMPv3 request's contextName (snmpUnknownContexts): not an
# authentication failure.
UNKNOWN_CONTEXT = Reason("unknown context", authentication=False)
UNKNOWN_USER = Reason("unknown user", authentication=True)
WRONG_DIGEST = Reason("wrong digest", authentication=True, names_user=True)
NOT_IN_TIME_WINDOW = Reason("not in time window", authentication=True, names_user=True)
DECRYPTION_ERROR = Reason("decryption error", authentication=False, names_user=True)
UNSUPPORTED_LEVEL = Reason("unsupported security level", authentication=False, names_user=True)
# Authorization, not authentication: a read-only community or user's SET.
NO_WRITE_ACCESS = Reason("SET without write access", authentication=False, names_user=True)

Listener = Callable[[Reason], None]
# A key of the log: (source, reason, configured user name or None); its entry:
# [when its window opened, the refusals since its line].
_Key = tuple[Hashable, Reason, "bytes | None"]


class RefusalLog:
    """The rate-limited refusal lines (see the module doc).

    At most one line per (source address, reason, user) per `window` seconds:

        refused a request from 192.0.2.7: unknown community
        refused 37 more requests from 192.0.2.7 in the last 60 s: unknown community

    The second kind counts what the window left without a line of its own; it
    is written by the next refusal of that key once the window is over, or by
    `flush` (which the running agent calls every few seconds, `flushing`); a
    flush at shutdown writes every count left. A refusal that writes no line
    costs a clock read, a dictionary lookup and an addition: this sits on the
    path of every wrong-community datagram. Beyond `max_sources` tracked keys,
    new sources are counted together as "other sources", with a line of
    their own per window."""

    def __init__(self, logger: logging.Logger | None = None, *, window: float = WINDOW_S,
                 max_sources: int = MAX_SOURCES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._log = logger if logger is not None else logging.getLogger(LOGGER_NAME)
        self._window = window
        self._max_sources = max_sources
        self._clock = clock
        # In the order their windows opened (a reopened one moves to the end),
        # so the expired ones are at the front.
        self._open: dict[_Key, list[float]] = {}
        self._listeners: list[Listener] = []

    def add_listener(self, listener: Listener) -> None:
        """Call `listener` with the reason of every line written from now on
        (but the last flush's, `flush(everything=True)`)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        self._listeners.remove(listener)

    def refused(self, source: Hashable, reason: Reason, user: bytes | None = None) -> None:
        """A request from `source` (the sender's host as the transport gives it)
        was refused for `reason`; `user`: the configured user it names, when
        `reason.names_user` (else None: never an unknown user's name)."""
        key = (source, reason, user)
        entry = self._open.get(key)
        now = self._clock()
        if entry is not None and now - entry[0] < self._window:
            entry[1] += 1
            return
        self._refused_slowly(key, entry, now)

    def _refused_slowly(self, key: _Key, entry: list[float] | None, now: float) -> None:
        """A refusal that may write a line: the first of its key, the first after its
        window, or one from a source beyond the bound."""
        if entry is None and len(self._open) >= self._max_sources:
            self.flush()
            if len(self._open) >= self._max_sources:
                key = (OTHER_SOURCES, key[1], key[2])
                entry = self._open.get(key)
                if entry is not None and now - entry[0] < self._window:
                    entry[1] += 1
                    return
        if entry is not None:
            del self._open[key]  # reopened below: to the end
        self._open[key] = [now, 0]
        if entry is None or not entry[1]:
            self._write(key, 1, None)
        else:  # this one and those its window left without a line
            self._write(key, int(entry[1]) + 1, now - entry[0])

    def flush(self, *, everything: bool = False) -> None:
        """Write the counts of the windows that are over (`everything`: of every
        window, at shutdown, without telling the listeners) and forget the keys
        whose window passed without a refusal."""
        now = self._clock()
        due = []
        for key, entry in self._open.items():
            if not everything and now - entry[0] < self._window:
                break  # the rest opened later
            due.append((key, entry))
        for key, (opened, count) in due:
            del self._open[key]
            if count:
                if not everything:  # its count's line opens a window of its own
                    self._open[key] = [now, 0]
                self._write(key, int(count), now - opened, tell=not everything)

    @property
    def tracked(self) -> int:
        """How many (source, reason, user) keys are held now."""
        return len(self._open)

    def _write(self, key: _Key, count: int, elapsed: float | None, *, tell: bool = True) -> None:
        source, reason, user = key
        shown = source if source is OTHER_SOURCES else str(source).partition("%")[0] or "?"
        why = reason.text
        if user is not None:
            why += " for user " + user.decode("utf-8", "replace")
        if elapsed is None:
            self._log.warning("refused a request from %s: %s", shown, why)
        else:
            self._log.warning("refused %d more request%s from %s in the last %d s: %s", count,
                              "" if count == 1 else "s", shown, round(elapsed), why)
        if tell:
            for listener in tuple(self._listeners):
                listener(reason)


@asynccontextmanager
async def flushing(refusals: RefusalLog, every: float = FLUSH_INTERVAL_S
                   ) -> AsyncIterator[None]:
    """Flush `refusals` every `every` seconds while the context lasts, and
    everything once when it ends (the agent stops)."""

    async def loop() -> None:
        while True:
            await asyncio.sleep(every)
            refusals.flush()

    task = asyncio.create_task(loop(), name="ibsnmp-refusal-flush")
    try:
        yield
    finally:
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        refusals.flush(everything=True)

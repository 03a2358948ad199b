"""One INFO line per notification the agent sends, rate-limited.

When a receiver says it saw nothing, an operator looks in the agent's log
for the notification: which one, from which node and port, to how many
receivers. A flapping link can raise hundreds a second, so at most
`burst` lines are written per `window` seconds; the rest are counted and
said in one line when the next window opens (or the originator stops).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from .mapping import Notification

__all__ = ["SentLog"]


class SentLog:
    def __init__(self, logger: logging.Logger, *, burst: int = 20, window: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._log = logger
        self._burst = burst
        self._window = window
        self._clock = clock
        self._opened = -window  # when the current window opened
        self._written = 0  # lines written in it
        self._unwritten = 0  # notifications sent in it without a line

    def sent(self, notification: Notification, receivers: int, where: str = "") -> None:
        """`notification` (from `where`: its node's LID and port, as known)
        was handed to `receivers` receivers."""
        if not self._admit():
            return
        spec = notification.spec
        kind = f"{spec.name} (IBA trap {int(spec.trap)})" if spec.trap is not None else spec.name
        place = f", {where}" if where else ""
        self._log.info("notification %s from node %016x%s sent to %d receiver%s", kind,
                       notification.node_guid, place, receivers, "" if receivers == 1 else "s")

    def sent_own(self, notification: Notification, receivers: int) -> None:
        """The agent's own `notification` (coldStart ...) was handed to `receivers` receivers."""
        if self._admit():
            self._log.info("notification %s of the agent sent to %d receiver%s",
                           notification.spec.name, receivers, "" if receivers == 1 else "s")

    def _admit(self) -> bool:
        """Whether the window in force has room for one more line (else it is counted)."""
        now = self._clock()
        if now - self._opened >= self._window:
            self.flush()
            self._opened, self._written = now, 0
        if self._written >= self._burst:
            self._unwritten += 1
            return False
        self._written += 1
        return True

    def flush(self) -> None:
        """Say how many notifications went without a line of their own."""
        if self._unwritten:
            self._log.info("%d more notification%s sent in %g s without a line each", self._unwritten,
                           "" if self._unwritten == 1 else "s", self._window)
            self._unwritten = 0

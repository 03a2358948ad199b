"""IB-SM-MIB request rows answered by a live SM's SA, without blocking a read: the MIB side of
the SA backend in ibsnmp.sa (`SaBackend`), here for the state store and the rows' layouts.

A SET that makes an ibSmPathReqTable, ibSmMultiPathReqTable or ibSmTraceReqTable row active is
answered at once (active, as RowStatus createAndGo requires); the SA is asked after the SET
commits, and its answer lands in the row's result table when it arrives. An SA that does not
answer or refuses turns the row notInService with no results ("no answer", unlike "no paths":
active, empty); setting it active asks again. A late answer to a row changed since is dropped.
Reference: docs/sets.md, 'With a live subnet manager: the SA answers'.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from ibsnmp.fabric import routing
from ibsnmp.sa.backend import SaBackend, SaUnavailable
from ibsnmp.sa.sessions import Session
from ibsnmp.state.store import AgentState

from .sm_write import sa_results

log = logging.getLogger("ibsnmp.sa")


class SaRequestRunner:
    """Asks `backend` for every request row that becomes active in `state`."""

    def __init__(self, state: AgentState, backend: SaBackend) -> None:
        self.state = state
        self.backend = backend
        self._tasks: set[asyncio.Task[None]] = set()

    def attach(self) -> None:
        """From now on request rows are answered by the SA, and the SM's
        configuration columns answer notWritable."""
        self.state.sa_runner = self.start
        self.state.sm_config_writable = False

    def start(self, session: Session, fabric: Any, path_request: Mapping[str, Any] | None
              ) -> None:
        task = asyncio.get_running_loop().create_task(
            self._answer(session, fabric, path_request))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, session: Session, fabric: Any,
                      path_request: Mapping[str, Any] | None) -> None:
        try:
            rows = await sa_results(self.backend, session, fabric, path_request)
        except (SaUnavailable, routing.NoRoute, KeyError, ValueError) as exc:
            log.warning("%s request %s: no answer from the SA: %s", session.table,
                        session.index[1], exc)
            self.state.settle(session, None)
            return
        self.state.settle(session, rows)

    async def wait(self) -> None:
        """Until every question asked so far has its answer (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await self.wait()


def attach_provider_sa(provider: Any, state: AgentState) -> SaRequestRunner | None:
    """Request rows answered by the provider's SA, when it offers one as
    `sa_backend` (an SaBackend; a live provider with a live SM does)."""
    backend = getattr(provider, "sa_backend", None)
    if backend is None:
        return None
    runner = SaRequestRunner(state, backend)
    runner.attach()
    log.info("IB-SM-MIB requests are answered by the subnet's SA; the SM's configuration "
             "is read-only")
    return runner

"""SA request sessions: the rows managers create in ibSmPathReqTable,
ibSmMultiPathReqTable and ibSmTraceReqTable, with their results.

A session lives from its creation until the manager destroys it or its
lifetime runs out (the draft: "It is suggested that the MIB agent remove the
row after a timeout period, to avoid resource leak"); at most `max_sessions`
exist at once, over the three tables. Sessions are kept in memory only:
they are requests, not configuration, and are gone after a restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_LIFETIME_S = 300.0
DEFAULT_MAX_SESSIONS = 100
# Result rows of SA requests (ibSmPath/MultiPath/TraceResultTable) one request
# and all open requests may hold: they bound the time one SET computes and
# the memory all results hold (docs/performance.md#sa-queries); every path
# from one LID (without LMC) of a 1,000-port fabric fits in one request.
DEFAULT_MAX_RESULT_ROWS_PER_REQUEST = 1_024
DEFAULT_MAX_RESULT_ROWS = 16_384

PATH, MULTIPATH, TRACE = "path", "multipath", "trace"
TABLES = (PATH, MULTIPATH, TRACE)

SessionKey = tuple[str, tuple[Any, ...]]  # (table, index values)


@dataclass(frozen=True, slots=True)
class Session:
    """One request row. `status` is its RowStatus (active(1),
    notInService(2), notReady(3)); `created` the store clock's time of
    creation; `request` the request columns set so far (short column name
    -> value, e.g. "SrcLID"); `results` the result rows (short column name
    -> value), computed when the row became active."""

    table: str
    index: tuple[Any, ...]
    status: int
    created: float
    request: Mapping[str, Any] = field(default_factory=dict)
    results: tuple[Mapping[str, Any], ...] = ()

    @property
    def key(self) -> SessionKey:
        return (self.table, self.index)

    def expired(self, now: float, lifetime: float) -> bool:
        return now - self.created >= lifetime

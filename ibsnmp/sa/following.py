"""The SA backend a live provider hands to the agent, which follows the SM.

The agent takes the provider's `sa_backend` once, at start; the SA itself
answers at the master SM's LID, which changes when another SM takes over.
This backend forwards each question to the SA client open now, so the
provider can reopen the client at the new LID without the agent noticing;
between the two (or when no client could be opened) questions get
SaUnavailable, as from an SA that does not answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from ibsnmp.fabric.model import MulticastGroup, Partition, ServiceRecord
from ibsnmp.sa.backend import SaBackend, SaUnavailable
from ibsnmp.sa.query import PathQuery, PathRecord

__all__ = ["FollowingBackend"]


class FollowingBackend:
    """An SaBackend that asks `current` (None: no SA client open now)."""

    def __init__(self, current: SaBackend | None) -> None:
        self.current = current

    def _backend(self) -> SaBackend:
        if self.current is None:
            raise SaUnavailable("the SA client is being reopened at the master SM's new LID")
        return self.current

    async def path_records(self, query: PathQuery) -> list[PathRecord]:
        return await self._backend().path_records(query)

    async def multipath_records(self, query: PathQuery, sgids: Sequence[int],
                                dgids: Sequence[int], *, independent: bool = False
                                ) -> list[PathRecord]:
        return await self._backend().multipath_records(query, sgids, dgids,
                                                       independent=independent)

    async def partitions(self) -> tuple[Partition, ...]:
        return await self._backend().partitions()

    async def multicast_groups(self) -> tuple[MulticastGroup, ...]:
        return await self._backend().multicast_groups()

    async def services(self) -> tuple[ServiceRecord, ...]:
        return await self._backend().services()

"""Where SA answers come from when a live SM runs the subnet.

The simulated and topology providers answer path requests from the fabric
model (`ibsnmp.sa.query`); with a live SM the agent asks the SA instead,
through an `SaBackend`. Every method is a coroutine: an SA query goes over
the fabric, and SNMP reads never wait for one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ibsnmp.fabric.model import MulticastGroup, Partition, ServiceRecord

from .query import PathQuery, PathRecord


class SaUnavailable(Exception):
    """The SA did not answer, refused the query, or its answer was cut short."""


class SaBackend(Protocol):
    """The SA of the subnet, as the agent asks it."""

    async def path_records(self, query: PathQuery) -> list[PathRecord]:
        """GetTable(PathRecord): the SA's paths for the query (route None)."""
        ...

    async def multipath_records(self, query: PathQuery, sgids: Sequence[int],
                                dgids: Sequence[int], *, independent: bool = False
                                ) -> list[PathRecord]:
        """GetMulti(MultiPathRecord) between the source and destination GIDs."""
        ...

    async def partitions(self) -> tuple[Partition, ...]:
        """The partitions the SA's P_KeyTableRecords show, with their members."""
        ...

    async def multicast_groups(self) -> tuple[MulticastGroup, ...]:
        """The groups the SA's MCMemberRecords show, with their members."""
        ...

    async def services(self) -> tuple[ServiceRecord, ...]:
        """The ServiceRecords registered with the SA."""
        ...

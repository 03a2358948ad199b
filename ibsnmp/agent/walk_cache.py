"""GETNEXT steps inside the served subtrees (IF-MIB's, InfiniBand's),
remembered encoded, per context.

A walk asks, request after request, for the instance after the last one it
got. Within one fabric snapshot and one `InfinibandMib.version` (no SET
committed, no request session changed since) that answer never changes,
except for the objects that read the time (counters: `next_step` says when
one was consulted). So each step's answer is kept as the varbind octets it
encodes to, keyed by the encoded OID element asked for: the next walk of
the same context is a chain of dictionary lookups instead of a lookup, a
getter and an encoding per varbind. Octets rather than OID tuples and
result objects keep a step at about 200 octets (12.1 MB for 61,138).

Steps are kept per context, view and snapshot; a new snapshot or version
drops the old ones. At most `limit` steps are kept in all; the least
recently used contexts go first, and a context that alone fills the cache
keeps what it has. A limit of 0 keeps nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ibsnmp.mib.api import ContextTarget

# An OID element (tag, length, value octets) -> the varbind of the instance after it.
Steps = dict[bytes, bytes]
DEFAULT_LIMIT = 262_144


class WalkCache:
    """See the module documentation."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 0:
            raise ValueError(f"a walk cache holds at least 0 steps, not {limit}")
        self.limit = limit
        self._contexts: OrderedDict[tuple[Any, ...], Steps] = OrderedDict()
        self._size = 0
        # The snapshot and version every kept step is for (the snapshot held,
        # so a recycled id() in a context's key can never match).
        self._current: tuple[Any, Any] | None = None

    @property
    def size(self) -> int:
        """How many steps are kept."""
        return self._size

    def resize(self, limit: int) -> None:
        """Keep at most `limit` steps from now on (a reload)."""
        if limit < 0:
            raise ValueError(f"a walk cache holds at least 0 steps, not {limit}")
        self.limit = limit
        self._evict(keep=None)

    def steps_for(self, target: ContextTarget, view: Any, version: Any) -> Steps | None:
        """The steps known for `target` read through `view` at `version`
        (a dictionary the caller reads and fills through `remember`), or
        None when nothing may be kept."""
        if self.limit == 0:
            return None
        fabric = target.fabric
        node = getattr(target.node, "guid", None)
        key = (id(fabric), node, target.entity_guids, target.serves_sm, id(view))
        if self._current is None or self._current[0] is not fabric \
                or self._current[1] != version:
            # A new snapshot or version: what was kept for older ones is never read again.
            self._contexts.clear()
            self._size = 0
            self._current = (fabric, version)
        found = self._contexts.get(key)
        if found is None:
            found = self._contexts[key] = {}
        else:
            self._contexts.move_to_end(key)
        return found

    def remember(self, steps: Steps, oid: bytes, step: bytes) -> None:
        """Keep the varbind `step` as the answer after the OID element `oid`
        in `steps` (from `steps_for`)."""
        if self._size >= self.limit:
            self._evict(keep=steps)
            if self._size >= self.limit:
                return  # this context alone fills the cache: it keeps what it has
        if oid not in steps:
            self._size += 1
        steps[oid] = step

    def _evict(self, keep: Steps | None) -> None:
        """Drop least recently used contexts (never `keep`) until under the limit."""
        for key in list(self._contexts):
            if self._size < self.limit:
                return
            if self._contexts[key] is not keep:
                self._size -= len(self._contexts.pop(key))

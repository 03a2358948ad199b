"""GetNext answers kept as AgentX octets: a walk through the master asked again.

A master asks for one varbind per PDU, so a repeated walk asks the same SearchRanges again.
`KeptAnswers` keeps each answer as its varbind's octets, under the range's octets, per context
and byte order. Only answers that read no counter are kept (`VirtualMib.next_step`'s static
flag). A context's answers hold while its snapshot's structure (`Fabric.lineage`) and the MIB's
`version` stay; a change drops them all (the UDP walk cache keeps what it cannot alter). At most
`limit` in all; one more drops every one. Reference: docs/agentx.md.
"""

from __future__ import annotations

from typing import Any

from ibsnmp.mib.api import ContextTarget

DEFAULT_LIMIT = 262_144


class _ContextAnswers:
    __slots__ = ("lineage", "version", "answers")

    def __init__(self, lineage: Any, version: Any) -> None:
        self.lineage = lineage
        self.version = version
        self.answers: dict[bytes, bytes] = {}


class KeptAnswers:
    """See the module documentation; `limit` 0 keeps nothing."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 0:
            raise ValueError(f"at most {limit} kept answers: the limit is at least 0")
        self.limit = limit
        self._contexts: dict[tuple[bytes | None, bool], _ContextAnswers] = {}
        self._size = 0

    @property
    def size(self) -> int:
        """How many answers are kept, in all contexts."""
        return self._size

    def answers_for(self, context: bytes | None, big_endian: bool, target: ContextTarget,
                    version: Any) -> dict[bytes, bytes] | None:
        """The answers kept for `context` in this byte order that hold for
        `target`'s snapshot at the MIB's `version` (read them; add through
        `keep`); None when nothing may be kept."""
        if not self.limit:
            return None
        key = (context, big_endian)
        lineage = target.fabric.lineage
        kept = self._contexts.get(key)
        if kept is None or kept.lineage is not lineage or kept.version != version:
            if kept is not None:
                self._size -= len(kept.answers)
            kept = self._contexts[key] = _ContextAnswers(lineage, version)
        return kept.answers

    def keep(self, answers: dict[bytes, bytes], search: bytes, varbind: bytes) -> None:
        """Keep `varbind` (its octets) as the answer to the SearchRange octets
        `search` in `answers` (from `answers_for`)."""
        if search in answers:
            return
        if self._size >= self.limit:
            self._contexts.clear()  # `answers` too: kept again from the next request on
            self._size = 0
            return
        answers[search] = varbind
        self._size += 1

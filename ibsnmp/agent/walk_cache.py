"""GETNEXT steps inside the served subtrees (IF-MIB's, InfiniBand's), kept encoded, per context.

`WalkCache` keeps each step's answer as the varbind octets it encodes to, keyed by the OID
element asked for, so a repeated walk is a chain of dictionary lookups; where the answer
reads the time it keeps the instance landed on instead (agent.fast_reads). A step holds
while its fabric structure and `InfinibandMib.version` do: a change drops what it can alter,
or everything when it cannot tell. At most `limit` steps (0: none), least recently used
contexts first, and whole answers of kept steps alone. The rules: docs/architecture.md,
"The walk cache".
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from ibsnmp.fabric.lineage import Aspect
from ibsnmp.mib.api import ContextTarget

DEFAULT_LIMIT = 262_144
# What kept answers may take in all, per step of the limit (16 MiB at the default).
ANSWER_OCTETS_PER_STEP = 64


class Steps(dict[bytes, bytes]):
    """A context's steps: an OID element (tag, length, value octets) -> the
    varbind of the instance after it; `tags` says what each depends on.

    The steps of one row, or of one node's rows, mostly depend on the same
    objects: equal tags are kept as one (`shared`), rather than a tag object
    per step.

    A whole answer made of kept steps alone is kept too (`answers`, by the
    request's kind, names and room: agent.fast_reads), so a repeated request
    is one lookup. It holds exactly as long as its steps do: any step
    dropped from a context drops that context's answers."""

    __slots__ = ("tags", "shared", "answers", "answer_octets")

    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[bytes, Any] = {}
        self.shared: dict[Any, Any] = {}  # each distinct tag, as kept in `tags`
        # Whole answers of kept steps alone: request key -> (varbind octets,
        # values retrieved); and the octets they take.
        self.answers: dict[bytes, tuple[bytes, int]] = {}
        self.answer_octets = 0

    def tag(self, oid: bytes, tag: Any) -> None:
        """Keep `tag` for the step after `oid`, as the equal one already kept if any."""
        self.tags[oid] = self.shared.setdefault(tag, tag)
        self._trim_shared()

    def forget(self, oids: list[bytes]) -> int:
        """Drop these steps and their tags, and (if any) every kept answer:
        the octets of answers dropped."""
        tags = self.tags
        for oid in oids:
            del self[oid]
            tags.pop(oid, None)
        self._trim_shared()
        return self.drop_answers() if oids else 0

    def drop_answers(self) -> int:
        """Drop every kept answer; the octets they took."""
        octets, self.answer_octets = self.answer_octets, 0
        self.answers.clear()
        return octets

    def _trim_shared(self) -> None:
        # Tags no step uses any more go once they outnumber the ones in use.
        if len(self.shared) > 2 * len(self.tags) + 64:
            self.shared = {tag: tag for tag in self.tags.values()}


class Alteration(Protocol):
    """What one structural change alters in one context (mib.virtual.Invalidation)."""

    @property
    def nothing(self) -> bool: ...

    @property
    def touched(self) -> bytearray:
        """Per object (handler) of a tag: whether anything of it may be altered."""
        ...

    def alters(self, tag: Any) -> bool: ...


# (node GUID, entity GUIDs, aspects changed, nodes changed or None, the snapshot
# before, the one after) -> what the change alters in that context.
Judge = Callable[[int | None, tuple[int, ...], Any, Any, Any, Any], Alteration]
# (the version kept, the new one) -> what the move alters in every context,
# or None: anything (mib.virtual.InfinibandMib.version_change).
VersionJudge = Callable[[Any, Any], Alteration | None]


class WalkCache:
    """The kept steps of every context (see the module documentation).

    A step holds within one fabric structure (a snapshot's lineage: snapshots
    that differ in counter values alone share it) and one
    `InfinibandMib.version` (no SET committed, no request session changed
    since), except where it read the time or measured values (`next_step`
    says so). Every step carries a tag (mib.virtual.StepTag: the objects it
    consulted, and in a node-owned table the nodes its answer lies between).
    A snapshot whose lineage follows the kept one
    (fabric.lineage.Lineage.changes_since) drops only the steps its change
    alters (`judge`, InfinibandMib.invalidation): a port that went down
    loses the answers about its node's rows, not the walk of the fabric. A
    new version the `version_judge` can tell (InfinibandMib.version_change:
    request sessions alter their own tables) drops the steps that consulted
    what it alters. A version it cannot tell (a SET of configuration), or a
    lineage that does not reach the kept one, drops everything.

    At most `limit` steps are kept in all; the least recently used contexts
    go first, and a context that alone fills the cache keeps what it has. A
    limit of 0 keeps nothing. Kept answers take at most
    ANSWER_OCTETS_PER_STEP octets a step of the limit in all."""

    def __init__(self, limit: int = DEFAULT_LIMIT, judge: Judge | None = None,
                 version_judge: VersionJudge | None = None) -> None:
        if limit < 0:
            raise ValueError(f"a walk cache holds at least 0 steps, not {limit}")
        self.limit = limit
        self._judge = judge
        self._version_judge = version_judge
        self._contexts: OrderedDict[tuple[Any, ...], Steps] = OrderedDict()
        self._size = 0
        self._answer_octets = 0  # of every context's kept answers
        # The snapshot and version every kept step is for (the snapshot held:
        # its lineage's serial stays its own, and a change is judged against it).
        self._current: tuple[Any, Any] | None = None
        self.carried = 0  # structural changes whose unaltered steps were kept
        self.carried_versions = 0  # the same for new versions

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
        if self._answer_octets > limit * ANSWER_OCTETS_PER_STEP:
            for steps in self._contexts.values():
                steps.drop_answers()
            self._answer_octets = 0

    def steps_for(self, target: ContextTarget, view: Any, version: Any,
                  skips_counter64: bool = False) -> Steps | None:
        """The steps known for `target` read through `view` at `version`
        (a dictionary the caller reads and fills through `remember`), or
        None when nothing may be kept. `skips_counter64`: the steps of
        SNMPv1's GETNEXT, which steps over Counter64 objects (RFC 3584
        4.1.2.1), kept apart from the others."""
        if self.limit == 0:
            return None
        fabric = target.fabric
        current = self._current
        if current is None or current[0].lineage is not fabric.lineage or current[1] != version:
            self._follow(fabric, version)
        node = getattr(target.node, "guid", None)
        key = (node, target.entity_guids, target.serves_sm, id(view), skips_counter64)
        found = self._contexts.get(key)
        if found is None:
            found = self._contexts[key] = Steps()
        else:
            self._contexts.move_to_end(key)
        return found

    def _follow(self, fabric: Any, version: Any) -> None:
        """Move on to `fabric`'s structure at `version`, keeping the steps its
        change from the kept snapshot and version cannot alter."""
        current = self._current
        self._current = (fabric, version)
        if current is None:
            return self._clear()
        before, kept_version = current
        versioned = None
        if kept_version != version:
            versioned = (self._version_judge(kept_version, version)
                         if self._version_judge is not None else None)
            if versioned is None:
                return self._clear()
        changed, nodes = Aspect(0), None
        if before.lineage is not fabric.lineage:
            changes = (fabric.lineage.changes_since(before.lineage.serial)
                       if self._judge is not None else None)
            if changes is None:  # a structure of no known relation: nothing kept holds
                return self._clear()
            changed, nodes = changes
        if changed:
            self.carried += 1
        if versioned is not None:
            self.carried_versions += 1
        for (node, entity, *_), steps in self._contexts.items():
            if versioned is not None:
                self._forget_altered(steps, versioned)
            if changed:
                assert self._judge is not None  # changes needs it
                altered = self._judge(node, entity, changed, nodes, before, fabric)
                self._forget_altered(steps, altered)

    def _forget_altered(self, steps: Steps, alteration: Alteration) -> None:
        if alteration.nothing:
            return
        touched, alters = alteration.touched, alteration.alters
        # Each distinct tag judged once (steps share them): most contexts
        # have none the change alters, and their steps are not looked at.
        hit = {id(tag) for tag in steps.shared.values()
               if (touched[tag[0]] if tag[0] == tag[1] else any(touched[tag[0]:tag[1] + 1]))
               and alters(tag)}
        altered = [key for key, tag in steps.tags.items() if id(tag) in hit] if hit else []
        if len(steps.tags) != len(steps):  # steps kept without a tag: any change may alter them
            altered.extend(key for key in steps if key not in steps.tags)
        self._answer_octets -= steps.forget(altered)
        self._size -= len(altered)

    def _clear(self) -> None:
        self._contexts.clear()
        self._size = self._answer_octets = 0

    @property
    def answer_octets(self) -> int:
        """What kept answers take, in all."""
        return self._answer_octets

    def keep_answer(self, steps: Steps, key: bytes, varbinds: bytes, retrieved: int) -> None:
        """Keep the answer `varbinds` (made of steps kept in `steps` alone) to
        the request `key`, unless kept answers would take more than the
        cache allows (ANSWER_OCTETS_PER_STEP a step of the limit)."""
        octets = len(key) + len(varbinds)
        if self._answer_octets + octets > self.limit * ANSWER_OCTETS_PER_STEP or key in steps.answers:
            return
        steps.answers[key] = (varbinds, retrieved)
        steps.answer_octets += octets
        self._answer_octets += octets

    def remember(self, steps: Steps, oid: bytes, step: bytes, tag: Any = None) -> None:
        """Keep the varbind `step` as the answer after the OID element `oid`
        in `steps` (from `steps_for`); `tag`: what it depends on (None: it is
        dropped by any structural change)."""
        if self._size >= self.limit:
            self._evict(keep=steps)
            if self._size >= self.limit:
                return  # this context alone fills the cache: it keeps what it has
        kept = steps.get(oid)
        if kept is None:
            self._size += 1
        elif kept != step and steps.answers:
            self._answer_octets -= steps.drop_answers()  # an answer may hold the old one
        steps[oid] = step
        if tag is not None:
            steps.tag(oid, tag)

    def _evict(self, keep: Steps | None) -> None:
        """Drop least recently used contexts (never `keep`) until under the limit."""
        for key in list(self._contexts):
            if self._size < self.limit:
                return
            if self._contexts[key] is not keep:
                dropped = self._contexts.pop(key)
                self._size -= len(dropped)
                self._answer_octets -= dropped.answer_octets

"""The agent's counters as plain integers, applied to pysnmp's instances when someone looks.

pysnmp keeps each counter as an immutable pyasn1 value: one increment builds a new object,
and a request counts several. `PendingCounts` adds what the agent counts itself (every
datagram's verdict, the fast responders' requests, the SNMPv3 refusals) to plain integers
and writes them into the counters before pysnmp can read them (`flush`). A datagram's
counts are kept apart while it is handled, seen by its own reads, then applied once or
forgotten; nothing counted is taken back. Readers of the agent's own objects
(agent.base_objects) add what is pending (`pending`), so a read writes nothing.
"""

from __future__ import annotations

from typing import Any

from .statistics import add_to_counter

Counter = tuple[str, str]  # (MIB instance module, symbol), as pysnmp imports them

IN_PKTS: Counter = ("__SNMPv2-MIB", "snmpInPkts")
OUT_PKTS: Counter = ("__SNMPv2-MIB", "snmpOutPkts")
PARSE_ERROR: Counter = ("__SNMPv2-MIB", "snmpInASNParseErrs")
BAD_VERSION: Counter = ("__SNMPv2-MIB", "snmpInBadVersions")
BAD_COMMUNITY: Counter = ("__SNMPv2-MIB", "snmpInBadCommunityNames")
BAD_COMMUNITY_USES: Counter = ("__SNMPv2-MIB", "snmpInBadCommunityUses")
SILENT_DROP: Counter = ("__SNMPv2-MIB", "snmpSilentDrops")
OUT_TOO_BIG: Counter = ("__SNMPv2-MIB", "snmpOutTooBigs")
OUT_GET_RESPONSES: Counter = ("__SNMPv2-MIB", "snmpOutGetResponses")
OUT_NO_SUCH_NAMES: Counter = ("__SNMPv2-MIB", "snmpOutNoSuchNames")
IN_GET_REQUESTS: Counter = ("__SNMPv2-MIB", "snmpInGetRequests")
IN_GET_NEXTS: Counter = ("__SNMPv2-MIB", "snmpInGetNexts")
IN_SET_REQUESTS: Counter = ("__SNMPv2-MIB", "snmpInSetRequests")
IN_TOTAL_REQ_VARS: Counter = ("__SNMPv2-MIB", "snmpInTotalReqVars")
NO_HANDLER: Counter = ("__SNMP-MPD-MIB", "snmpUnknownPDUHandlers")
UNKNOWN_CONTEXTS: Counter = ("__SNMP-TARGET-MIB", "snmpUnknownContexts")
UNKNOWN_USER: Counter = ("__SNMP-USER-BASED-SM-MIB", "usmStatsUnknownUserNames")


class PendingCounts:
    """Additions to counter instances (MibScalarInstance objects), by (module, name).

    A datagram's counts are kept apart while it is handled (`begin_message`):
    a read it makes of the agent's own objects sees them (a GET of snmpInPkts
    or snmpInGetRequests counts itself, as in snmpd), and the dispatcher
    (agent.engine) then applies them once (`end_message`), or forgets them
    when it hands the datagram to pysnmp, which counts it itself
    (`drop_message`). Counter32 wraps at 2^32 (statistics.add_to_counter, the
    one addition every writer uses)."""

    __slots__ = ("_builder", "_instances", "_counters", "_pending", "_message")

    def __init__(self, builder: Any) -> None:
        self._builder = builder  # pysnmp's MibBuilder, where the instances live
        self._instances: dict[Counter, Any] = {}
        self._counters: dict[int, Counter] = {}  # id(instance) -> its counter
        self._pending: dict[Counter, int] = {}
        self._message: dict[Counter, int] = {}  # the counts of the datagram being handled

    def _instance(self, counter: Counter) -> Any:
        instance = self._instances.get(counter)
        if instance is None:
            (instance,) = self._builder.import_symbols(*counter)
            self._instances[counter] = instance
            self._counters[id(instance)] = counter
        return instance

    def pending(self, instance: Any) -> int:
        """What is still to be added to `instance` (a reader adds it to what it reads)."""
        counter = self._counters.get(id(instance))
        if counter is None:
            return 0
        return self._pending.get(counter, 0) + self._message.get(counter, 0)

    def value(self, counter: Counter) -> int:
        """The counter as a reader will see it, pending additions written."""
        return (int(self._instance(counter).syntax) + self._pending.get(counter, 0)
                + self._message.get(counter, 0)) & 0xFFFFFFFF

    def begin_message(self, *counters: Counter) -> None:
        """A datagram is being handled: its counts start with `counters`."""
        self._message = {}
        for counter in counters:
            self.count(counter)

    def count(self, counter: Counter, amount: int = 1) -> None:
        """Count for the datagram being handled (applied by `end_message`)."""
        if counter not in self._instances:
            self._instance(counter)  # known, so that readers see what is counted
        message = self._message
        message[counter] = message.get(counter, 0) + amount

    def end_message(self, counters: tuple[Counter, ...] = ()) -> None:
        """The datagram was answered or dropped here: apply its counts and `counters`."""
        for counter in counters:
            self.count(counter)
        message, self._message = self._message, {}
        pending = self._pending
        for counter, amount in message.items():
            pending[counter] = pending.get(counter, 0) + amount

    def drop_message(self) -> None:
        """The datagram goes to pysnmp, which counts it itself: forget its counts."""
        self._message = {}

    def add_now(self, additions: dict[Counter, int]) -> None:
        """Count outside a datagram's handling and write at once (pysnmp is reading)."""
        pending = self._pending
        for counter, amount in additions.items():
            self._instance(counter)
            pending[counter] = pending.get(counter, 0) + amount
        self.flush()

    def flush(self) -> None:
        """Write every pending addition into its counter (wrapping as Counter32 does)."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        for counter, amount in pending.items():
            if amount:
                add_to_counter(self._instance(counter), amount)

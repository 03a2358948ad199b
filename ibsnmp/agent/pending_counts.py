"""The agent's counters as plain integers, applied to pysnmp's instances when someone looks.

pysnmp keeps each counter as an immutable pyasn1 value: one increment
builds a new object (about 15 us), and a request counts four or five.
What the agent counts itself (every datagram's verdict, the fast
responders' requests, the SNMPv3 refusals) is added to plain integers
here and written into the counters before anything can read them: before
a read of the agent's own objects, and before a message goes to pysnmp
(agent.engine). Other writers only add too, so the order of the additions
does not matter. Counter32 wraps at 2^32. A reader of the agent's own
objects (agent.base_objects) adds what is pending to what it reads, so a
read writes nothing.
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
SILENT_DROP: Counter = ("__SNMPv2-MIB", "snmpSilentDrops")
OUT_TOO_BIG: Counter = ("__SNMPv2-MIB", "snmpOutTooBigs")
OUT_GET_RESPONSES: Counter = ("__SNMPv2-MIB", "snmpOutGetResponses")
OUT_NO_SUCH_NAMES: Counter = ("__SNMPv2-MIB", "snmpOutNoSuchNames")
IN_GET_REQUESTS: Counter = ("__SNMPv2-MIB", "snmpInGetRequests")
IN_GET_NEXTS: Counter = ("__SNMPv2-MIB", "snmpInGetNexts")
IN_SET_REQUESTS: Counter = ("__SNMPv2-MIB", "snmpInSetRequests")
IN_TOTAL_REQ_VARS: Counter = ("__SNMPv2-MIB", "snmpInTotalReqVars")
NO_HANDLER: Counter = ("__SNMP-MPD-MIB", "snmpUnknownPDUHandlers")
UNKNOWN_USER: Counter = ("__SNMP-USER-BASED-SM-MIB", "usmStatsUnknownUserNames")


class PendingCounts:
    """Additions to counter instances (MibScalarInstance objects), by (module, name)."""

    __slots__ = ("_builder", "_instances", "_counters", "_pending")

    def __init__(self, builder: Any) -> None:
        self._builder = builder  # pysnmp's MibBuilder, where the instances live
        self._instances: dict[Counter, Any] = {}
        self._counters: dict[int, Counter] = {}  # id(instance) -> its counter
        self._pending: dict[Counter, int] = {}

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
        return 0 if counter is None else self._pending.get(counter, 0)

    def value(self, counter: Counter) -> int:
        """The counter as a reader will see it, pending additions written."""
        return (int(self._instance(counter).syntax) + self._pending.get(counter, 0)) & 0xFFFFFFFF

    def add(self, counter: Counter, amount: int = 1) -> None:
        if counter not in self._instances:
            self._instance(counter)  # known, so that readers see what is pending
        pending = self._pending
        pending[counter] = pending.get(counter, 0) + amount

    def add_all(self, counters: tuple[Counter, ...]) -> None:
        for counter in counters:
            self.add(counter)

    def flush(self) -> None:
        """Write every pending addition into its counter (wrapping as Counter32 does)."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        for counter, amount in pending.items():
            if amount:
                add_to_counter(self._instance(counter), amount)

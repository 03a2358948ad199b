"""The agent's own standard notifications (SNMPv2-MIB snmpTraps, RFC 3418).

coldStart when the agent starts, warmStart when it joins the running agents of its group
(agent.engine_group), authenticationFailure when it refuses who asks. None carries OBJECTS:
sysUpTime.0 and snmpTrapOID.0 alone, or in SNMPv1 (pysnmp's RFC 3584 3.2 conversion)
generic-trap 0, 1 or 4, specific-trap 0, enterprise snmpTraps. They speak for the agent (the
default context) and go to the trap targets alone, never through an AgentX master (`send_own`):
a subagent that starts is no agent's cold start, and a master tells its own failures.
Reference: docs/notifications.md, 'coldStart' and 'authenticationFailure'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ibsnmp.agent.refusals import Reason, RefusalLog
from ibsnmp.mib.api import Oid

from .mapping import NotificationSpec
from .service import NotificationService

SNMP_TRAPS: Oid = (1, 3, 6, 1, 6, 3, 1, 1, 5)
COLD_START = NotificationSpec(None, "coldStart", SNMP_TRAPS + (1,), ())
WARM_START = NotificationSpec(None, "warmStart", SNMP_TRAPS + (2,), ())
AUTHENTICATION_FAILURE = NotificationSpec(None, "authenticationFailure", SNMP_TRAPS + (5,), ())


def send_cold_start(service: NotificationService, joined: bool = False) -> None:
    """coldStart to every target in force, or warmStart when it `joined` an
    engine its group runs (the engine goes on, its configuration unaltered).
    Call once, when the agent starts, before any other notification:
    `_services` of ibsnmp.commands.run sends it as soon as the targets are
    in force, before the provider starts."""
    service.send_own(WARM_START if joined else COLD_START)


@contextmanager
def authentication_failures(service: NotificationService, refusals: RefusalLog,
                            enabled: Callable[[], bool]) -> Iterator[None]:
    """While the context lasts, authenticationFailure to every target for each
    line `refusals` writes about an authentication failure, when `enabled()`
    (snmpEnableAuthenTraps) says so at that moment: the refusal log's own
    decision, so at most one per source and reason a minute."""

    def refused(reason: Reason) -> None:
        if reason.authentication and enabled():
            service.send_own(AUTHENTICATION_FAILURE)

    refusals.add_listener(refused)
    try:
        yield
    finally:
        refusals.remove_listener(refused)

"""SMA notifications: IBA trap events -> SNMP traps and informs.

`map_event` turns a TrapEvent into its SMA-MIB notification (mapping.py); `TrapOriginator`
sends notifications to the configured [[trap_target]]s from the agent's event loop without
ever blocking it (originator.py); `notifications(engine, targets, provider)` wires a provider
to it for `ibsnmp run` (service.py); standard.py makes the agent's own coldStart and
authenticationFailure; `default_event` fills an event from a simulated node for `ibsnmp trap`
(defaults.py). Every notification from a node ends with the varbinds that name it
(node_names.py), the only names of it SNMPv1/v2c carry.
"""

from .mapping import (
    NOTIFICATION_OF,
    MappingError,
    Notification,
    NotificationSpec,
    map_event,
    resolve_trap,
    spec_of,
    specs,
)
from .originator import TargetStats, TrapOriginator, node_context_name
from .queue import DropQueue, RateLimiter
from .service import notifications

__all__ = [
    "NOTIFICATION_OF",
    "DropQueue",
    "MappingError",
    "Notification",
    "NotificationSpec",
    "RateLimiter",
    "TargetStats",
    "TrapOriginator",
    "map_event",
    "node_context_name",
    "notifications",
    "resolve_trap",
    "spec_of",
    "specs",
]

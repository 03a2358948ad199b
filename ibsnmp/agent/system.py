"""Which value each writable system object starts with.

The configuration file's [system] value, when it sets one (the object is
then read-only, as with net-snmp's snmpd); else the value a SET saved in
the state file; else the default (the host name for sysName, empty text
for the others).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from .config import SystemInfo

# SNMPv2-MIB descriptor -> SystemInfo field
FIELDS = {"sysContact": "sys_contact", "sysName": "sys_name", "sysLocation": "sys_location"}


def configured_objects(system: SystemInfo) -> frozenset[str]:
    """The system objects the configuration sets (read-only over SNMP)."""
    return frozenset(name for name, attr in FIELDS.items() if getattr(system, attr) is not None)


def with_saved_values(system: SystemInfo, saved: Mapping[str, bytes]) -> SystemInfo:
    """`system` with the saved value of each object it does not set."""
    changes = {attr: saved[name].decode("ascii") for name, attr in FIELDS.items()
               if getattr(system, attr) is None and name in saved}
    return dataclasses.replace(system, **changes) if changes else system

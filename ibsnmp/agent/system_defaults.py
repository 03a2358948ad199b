"""Which value each writable system object starts with.

The configuration file's [system] value, when it sets one (the object is then read-only, as
with net-snmp's snmpd); else the value a SET saved in the state file; else the default (the
host name for sysName, empty text for the others). SNMPv2-MIB's snmpEnableAuthenTraps
follows the same rule (`AuthenTraps`), with `[traps] authentication_failure` as the file's
value and disabled(2) as the default (net-snmp's); unlike [system], a reload applies a
change of the file's value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from pysnmp.entity.engine import SnmpEngine

from .config import SystemInfo

# SNMPv2-MIB descriptor -> SystemInfo field
FIELDS = {"sysContact": "sys_contact", "sysName": "sys_name", "sysLocation": "sys_location"}
AUTHEN_TRAPS = "snmpEnableAuthenTraps"
ENABLED, DISABLED = 1, 2  # its values


def configured_objects(system: SystemInfo) -> frozenset[str]:
    """The system objects the configuration sets (read-only over SNMP)."""
    return frozenset(name for name, attr in FIELDS.items() if getattr(system, attr) is not None)


def with_saved_values(system: SystemInfo, saved: Mapping[str, bytes]) -> SystemInfo:
    """`system` with the saved value of each object it does not set."""
    changes = {attr: saved[name].decode("ascii") for name, attr in FIELDS.items()
               if getattr(system, attr) is None and name in saved}
    return dataclasses.replace(system, **changes) if changes else system


class AuthenTraps:
    """snmpEnableAuthenTraps.0 in an engine's MIB: whether authenticationFailure is sent.

    It reads the configuration file's value (`configured`, [traps]
    authentication_failure) when the file sets one, and is then read-only:
    its object is marked so in the engine's MIB, and a SET answers
    notWritable (agent.instrum). Else it reads the value a SET saved
    (`restore`, from the state file) and is written by SETs through the
    write store (mib.system_write), which show in the instance pysnmp keeps;
    else disabled(2). `enabled` reads that instance: what a GET answers is
    what decides.
    """

    def __init__(self, engine: SnmpEngine, configured: bool | None) -> None:
        builder = engine.get_mib_builder()
        (self._object,) = builder.import_symbols("SNMPv2-MIB", AUTHEN_TRAPS)
        (self._instance,) = builder.import_symbols("__SNMPv2-MIB", AUTHEN_TRAPS)
        self._configured = configured
        self._saved = DISABLED  # the value while the file sets none
        self._show()

    @property
    def enabled(self) -> bool:
        return int(self._instance.syntax) == ENABLED

    def configure(self, configured: bool | None) -> None:
        """The file's value from now on (a reload); None: the file sets none."""
        if self._configured is None:
            self._saved = int(self._instance.syntax)  # as SETs left it
        self._configured = configured
        self._show()

    def restore(self, saved: int | None) -> None:
        """The value the state file holds (None: none saved), once it is read."""
        if saved is not None:
            self._saved = saved
        self._show()

    def _show(self) -> None:
        configured = self._configured
        value = self._saved if configured is None else ENABLED if configured else DISABLED
        self._object.setMaxAccess("read-write" if configured is None else "read-only")
        if int(self._instance.syntax) != value:
            self._instance.syntax = self._instance.syntax.clone(value)

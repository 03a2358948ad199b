"""SETs of the writable SNMPv2-MIB system objects: sysContact, sysName,
sysLocation.

They take the same path as IB-SM-MIB's writable objects: checked against
the MIB's syntax (a DisplayString of at most 255 NVT ASCII octets: longer is
wrongLength, other octets wrongValue), planned into the write store's
transaction and saved with the rest of the state before the SET is
answered, so they survive a restart. As with net-snmp's snmpd, an object
the configuration file sets is read-only (notWritable): the file stays the
one place that value comes from. In a node's own context the system group
describes that node (its name is its NodeDescription): nothing there is
writable.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from ibsnmp.state.overrides import SYSTEM_OBJECTS

from .api import ContextTarget, SetError
from .binding import WriterBinding
from .loader import ObjectDef, definitions
from .write import WriteRequest


def _plan(target: ContextTarget, requests: Sequence[WriteRequest], txn: Any) -> None:
    if not target.default_context:
        raise SetError("notWritable", requests[0].index,
                       f"{requests[0].name} describes the node in its own context")
    values = dict(txn.config.system)
    for request in requests:  # in PDU order: a repeated object takes its last value
        values[request.name] = request.value
    txn.config = dataclasses.replace(txn.config, system=values)


def system_objects(read_only: Iterable[str] = ()) -> tuple[tuple[ObjectDef, WriterBinding | None],
                                                            ...]:
    """Each writable system object with its writer (None: read-only, set by
    the configuration file)."""
    fixed = frozenset(read_only)
    # No bound object reads the system group: its commits alter no kept answer.
    writer = WriterBinding("system group", frozenset(SYSTEM_OBJECTS) - fixed, _plan,
                           alters_only_stamped=True)
    mib = definitions()
    return tuple((mib.base_scalar("SNMPv2-MIB", name), None if name in fixed else writer)
                 for name in SYSTEM_OBJECTS)

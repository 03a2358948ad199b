"""SETs of the writable SNMPv2-MIB objects outside the served subtrees.

sysContact, sysName, sysLocation and snmpEnableAuthenTraps take the same path as IB-SM-MIB's
writable objects: checked against the MIB's syntax, planned into the write store's transaction
and saved with the rest of the state before the SET is answered. As with net-snmp's snmpd, an
object the configuration file sets is read-only (notWritable): for the system group decided
here, at start; snmpEnableAuthenTraps follows every reload, so the engine decides it
(agent.system_defaults.AuthenTraps, agent.instrum). In a node's own context nothing here is
writable. Reference: docs/mibs.md, 'Contexts, the system group and interfaces'.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from ibsnmp.state.overrides import SNMP_OBJECTS, SYSTEM_OBJECTS

from .api import ContextTarget, SetError
from .binding import WriterBinding
from .loader import ObjectDef, definitions
from .write import WriteRequest


def _in_default_context(target: ContextTarget, requests: Sequence[WriteRequest]) -> None:
    if not target.default_context:
        raise SetError("notWritable", requests[0].index,
                       f"{requests[0].name} describes the node in its own context")


def _plan(target: ContextTarget, requests: Sequence[WriteRequest], txn: Any) -> None:
    _in_default_context(target, requests)
    values = dict(txn.config.system)
    for request in requests:  # in PDU order: a repeated object takes its last value
        values[request.name] = request.value
    txn.config = dataclasses.replace(txn.config, system=values)


def _plan_snmp(target: ContextTarget, requests: Sequence[WriteRequest], txn: Any) -> None:
    _in_default_context(target, requests)
    values = dict(txn.config.snmp)
    for request in requests:
        values[request.name] = request.value
    txn.config = dataclasses.replace(txn.config, snmp=values)


def system_objects(read_only: Iterable[str] = ()) -> tuple[tuple[ObjectDef, WriterBinding | None],
                                                            ...]:
    """Each writable SNMPv2-MIB object outside the subtrees with its writer
    (None: read-only, a system object set by the configuration file)."""
    fixed = frozenset(read_only)
    # No bound object reads these: their commits alter no kept answer.
    writer = WriterBinding("system group", frozenset(SYSTEM_OBJECTS) - fixed, _plan,
                           alters_only_stamped=True)
    snmp_writer = WriterBinding("snmp group", frozenset(SNMP_OBJECTS), _plan_snmp,
                                alters_only_stamped=True)
    mib = definitions()
    return tuple((mib.base_scalar("SNMPv2-MIB", name), None if name in fixed else writer)
                 for name in SYSTEM_OBJECTS) + tuple(
        (mib.base_scalar("SNMPv2-MIB", name), snmp_writer) for name in SNMP_OBJECTS)

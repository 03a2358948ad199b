"""TrapEvent -> SMA-MIB notification: OID, the OBJECTS it lists, then the node.

Each of the ten NOTIFICATION-TYPEs is read from `compiled_mibs/` (OID and OBJECTS clause), and
every varbind is `<object>.0` typed with the object's compiled syntax, so the MIB checks ranges
and sizes. An event that lacks a field the notification needs, or whose value does not fit the
object, raises MappingError: nothing is made up. The varbinds that name the node that raised
the trap (node_names) follow the OBJECTS. SNMPv2c/v3 PDUs start with sysUpTime.0 and
snmpTrapOID.0 (RFC 3416 4.2.6); an SNMPv1 Trap-PDU is built as RFC 3584 3.2 says.
Reference: docs/mibs.md, 'Notifications' (what an SNMPv1 receiver sees).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from pyasn1.error import PyAsn1Error
from pyasn1.type import constraint, univ
from pysnmp.proto import rfc1902

from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric.model import Node
from ibsnmp.mib.api import Oid
from ibsnmp.mib.loader import NotificationDef, ObjectDef, definitions, size_range

from .node_names import VarBind, node_varbinds

SYS_UP_TIME_0: Oid = (1, 3, 6, 1, 2, 1, 1, 3, 0)
SNMP_TRAP_OID_0: Oid = (1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0)
# RFC 3584 3.1/3.2: carries the SNMPv1 agent-addr through an SNMPv2 PDU.
SNMP_TRAP_ADDRESS_0: Oid = (1, 3, 6, 1, 6, 3, 18, 1, 3, 0)
GENERIC_ENTERPRISE_SPECIFIC = 6

# The notification that carries each IBA trap (SMA-MIB DESCRIPTIONs).
NOTIFICATION_OF: dict[IbaTrap, str] = {
    IbaTrap.LINK_STATE_CHANGE: "ibSmaPortLinkStateChange",
    IbaTrap.LOCAL_LINK_INTEGRITY: "ibSmaLinkIntegrityThresReached",
    IbaTrap.EXCESSIVE_BUFFER_OVERRUN: "ibSmaExcessBuffOverrunThres",
    IbaTrap.FLOW_CONTROL_WATCHDOG: "ibSmaFlowCntrlUpdateTimerExpire",
    IbaTrap.CAPABILITY_MASK_CHANGED: "ibSmaCapabilityMaskModified",
    IbaTrap.SYSTEM_IMAGE_GUID_CHANGED: "ibSmaSysImageGuidModified",
    IbaTrap.BAD_M_KEY: "ibSmaBadManagementKey",
    IbaTrap.BAD_P_KEY: "ibSmaBadPartitionKey",
    IbaTrap.BAD_Q_KEY: "ibSmaBadQueueKey",
    IbaTrap.BAD_P_KEY_AT_SWITCH_PORT: "ibSmaBadPKeyAtSwitchPort",
}
TRAP_OF: dict[str, IbaTrap] = {name: trap for trap, name in NOTIFICATION_OF.items()}

# The TrapEvent field each notification object is filled from. ibSmaNodeLid
# is the LID of the node that raised the trap (IBA's <LIDADDR>, and
# <LIDADDR1> of traps 257-259, whose other end is ibSmaNodeLid2).
FIELD_OF: dict[str, str] = {
    "ibSmaNodeLid": "lid",
    "ibSmaNodePortNum": "port",
    "ibSmaNodeCapMask": "capability_mask",
    "ibSmaSystemImageGuid": "system_image_guid",
    "ibSmaNodeKey": "key",
    "ibSmaNodeMethod": "method",
    "ibSmaNodeAttributeId": "attribute_id",
    "ibSmaNodeAttributeModifier": "attribute_modifier",
    "ibSmaNodeLid2": "lid2",
    "ibSmaNodeGid1": "gid1",
    "ibSmaNodeGid2": "gid2",
    "ibSmaNodeQueuePair1": "qp1",
    "ibSmaNodeQueuePair2": "qp2",
    "ibSmaNodeServiceLevel": "sl",
    "ibSmaNodeSwitchLid": "switch_lid",
    "ibSmaNodeDataValid": "data_valid",
}


class MappingError(ValueError):
    """An event cannot become its notification; the message says which field and why."""


@dataclass(frozen=True, slots=True)
class NotificationSpec:
    """One NOTIFICATION-TYPE as compiled, with its objects resolved; `trap`
    is the IBA trap it carries (None: a standard one, IF-MIB's linkDown)."""

    trap: IbaTrap | None
    name: str
    oid: Oid
    objects: tuple[ObjectDef, ...]

    @property
    def fields(self) -> tuple[str, ...]:
        """The TrapEvent fields this notification needs, in OBJECTS order."""
        return tuple(FIELD_OF[o.name] for o in self.objects)

    @property
    def v1_enterprise(self) -> Oid:
        # RFC 3584 3.2 (1): drop the last sub-id, and a `0` before it if any.
        return self.oid[:-2] if self.oid[-2] == 0 else self.oid[:-1]

    @property
    def v1_specific(self) -> int:
        return self.oid[-1]

    @property
    def v1_translated_oid(self) -> Oid:
        """snmpTrapOID.0 as a receiver rebuilds it from an SNMPv1 trap (RFC 3584 3.1)."""
        return self.v1_enterprise + (0, self.v1_specific)


@dataclass(frozen=True, slots=True)
class Notification:
    """A mapped event: the notification and its typed varbinds (its
    OBJECTS, then what names its node)."""

    spec: NotificationSpec
    node_guid: int
    varbinds: tuple[VarBind, ...]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def oid(self) -> Oid:
        return self.spec.oid

    def v2_varbinds(self, uptime: int | rfc1902.TimeTicks) -> list[VarBind]:
        """sysUpTime.0, snmpTrapOID.0, then the varbinds (RFC 3416 4.2.6)."""
        ticks = uptime if isinstance(uptime, rfc1902.TimeTicks) else rfc1902.TimeTicks(uptime)
        return [(SYS_UP_TIME_0, ticks),
                (SNMP_TRAP_OID_0, rfc1902.ObjectIdentifier(self.spec.oid)),
                *self.varbinds]


@cache
def specs() -> dict[IbaTrap, NotificationSpec]:
    """The ten notifications, from compiled_mibs/SMA-MIB."""
    defs = definitions()
    result: dict[IbaTrap, NotificationSpec] = {}
    for trap, name in NOTIFICATION_OF.items():
        notification: NotificationDef = defs.notifications[name]
        objects = tuple(defs.objects[obj] for obj in notification.objects)
        result[trap] = NotificationSpec(trap, name, notification.oid, objects)
    return result


def spec_of(trap: IbaTrap | int) -> NotificationSpec:
    try:
        return specs()[IbaTrap(trap)]
    except ValueError:
        raise MappingError(f"IBA trap {trap} has no SMA-MIB notification "
                           f"(known: {', '.join(str(int(t)) for t in IbaTrap)})") from None


_NAME = re.compile(r"(?:SMA-MIB::)?(?P<name>\w+)")


def resolve_trap(text: str) -> IbaTrap:
    """A notification descriptor (`ibSmaBadPartitionKey`, case-insensitive, with or
    without `SMA-MIB::`), an IBA trap number (`257`) or its sub-id in
    ibSmaNotifications (`ibSmaNotifications.8`) -> the IBA trap."""
    text = text.strip()
    if text.isdigit():
        number = int(text)
        if number in IbaTrap._value2member_map_:
            return IbaTrap(number)
        raise MappingError(f"{text}: not an IBA trap with an SMA-MIB notification "
                           f"(one of {', '.join(str(int(t)) for t in IbaTrap)})")
    if text.startswith("ibSmaNotifications.") and text.rpartition(".")[2].isdigit():
        sub_id = int(text.rpartition(".")[2])
        for spec in specs().values():
            if spec.oid[-1] == sub_id and spec.trap is not None:
                return spec.trap
    match = _NAME.fullmatch(text)
    if match:
        wanted = match["name"].lower()
        for name, trap in TRAP_OF.items():
            if name.lower() == wanted:
                return trap
    raise MappingError(f"{text!r}: unknown notification (one of "
                       f"{', '.join(NOTIFICATION_OF.values())}, or an IBA trap number)")


def map_event(event: TrapEvent, node: Node | None = None) -> Notification:
    """The notification for `event`: its OBJECTS, then the varbinds naming
    the node that raised it (`node`, that node as the agent serves it;
    None: only its GUID is known). Raise MappingError if a needed field is
    missing or out of the object's range."""
    spec = spec_of(event.trap)
    objects = tuple(
        (obj.oid + (0,), typed_value(obj, getattr(event, FIELD_OF[obj.name]), spec.name))
        for obj in spec.objects
    )
    return Notification(spec, event.node_guid, objects + node_varbinds(event.node_guid, node))


def typed_value(obj: ObjectDef, value: int | None, notification: str = "") -> Any:
    """`value` as `obj`'s compiled syntax. IBA fields are unsigned integers:
    a fixed-size OCTET STRING object (keys, GIDs, masks) gets them big-endian."""
    field = f"TrapEvent.{FIELD_OF.get(obj.name, obj.name)} ({obj.name})"
    if value is None:
        raise MappingError(f"{notification or obj.name} needs {field}; the event has none")
    where = f"{notification}: {field}" if notification else field
    if isinstance(value, bool) or not isinstance(value, int):
        raise MappingError(f"{where}: expected an integer, got {type(value).__name__}")
    syntax = obj.syntax
    if isinstance(syntax, univ.OctetString):
        bounds = size_range(syntax)
        if bounds is None or bounds[0] != bounds[1]:
            raise MappingError(f"{obj.name}: not a fixed-size OCTET STRING, cannot hold an "
                               f"integer field")
        size = bounds[1]
        if not 0 <= value < 1 << (8 * size):
            raise MappingError(f"{where} = {value:#x} does not fit in {size} octets")
        value_bytes = value.to_bytes(size, "big")
        return syntax.clone(value_bytes)
    try:
        return syntax.clone(value)
    except PyAsn1Error:
        raise MappingError(f"{where} = {value} is outside the range the MIB allows "
                           f"({_range_text(syntax)})") from None


def _range_text(syntax: Any) -> str:
    spec = getattr(syntax, "subtypeSpec", None)
    lows, highs = [], []
    for low, high in _value_ranges(spec):
        lows.append(low)
        highs.append(high)
    return f"{max(lows)}..{min(highs)}" if lows else "see the MIB"


def _value_ranges(spec: Any) -> Iterable[tuple[int, int]]:
    if isinstance(spec, constraint.ValueRangeConstraint):
        yield spec.start, spec.stop
    elif isinstance(spec, constraint.AbstractConstraintSet):
        for item in spec:
            yield from _value_ranges(item)

"""Fabric events that become SMA notifications (IBA traps, Vol 1 14.2.5.1).

An event says which node raised the trap and carries the IBA trap details.
Providers (the simulated fabric's scenarios and threshold watch, sysfs
polling) produce events; the trap layer maps each to the SMA-MIB
NOTIFICATION-TYPE with the OBJECTS it lists. Fields a trap does not use stay
None.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class IbaTrap(enum.IntEnum):
    """The IBA trap numbers SMA-MIB turns into notifications."""

    LINK_STATE_CHANGE = 128  # a switch port changed state (switch only)
    LOCAL_LINK_INTEGRITY = 129  # LocalLinkIntegrityErrors passed LocalPhyErrors
    EXCESSIVE_BUFFER_OVERRUN = 130  # ExcessiveBufferOverrunErrors passed OverrunErrors
    FLOW_CONTROL_WATCHDOG = 131  # flow control update watchdog timer expired
    CAPABILITY_MASK_CHANGED = 144
    SYSTEM_IMAGE_GUID_CHANGED = 145
    BAD_M_KEY = 256
    BAD_P_KEY = 257
    BAD_Q_KEY = 258
    BAD_P_KEY_AT_SWITCH_PORT = 259


@dataclass(frozen=True, slots=True)
class TrapEvent:
    """One trap raised by the node `node_guid` (its LID is `lid`).

    port: the port concerned (129, 130, 131; 259's external port).
    capability_mask: the new CapabilityMask (144).
    system_image_guid: the new SystemImageGUID (145).
    key: the offending M_Key (256, 8 octets) or P_Key / Q_Key (257-259).
    method, attribute_id, attribute_modifier: the SMP that had a bad M_Key (256).
    lid2, gid1, gid2, qp1, qp2, sl: the two ends of the bad packet (257-259):
      1 is the requester, 2 the responder.
    switch_lid, data_valid: 259's switch and which fields are valid.
    """

    trap: IbaTrap
    node_guid: int
    lid: int
    port: int | None = None
    capability_mask: int | None = None
    system_image_guid: int | None = None
    key: int | None = None
    method: int | None = None
    attribute_id: int | None = None
    attribute_modifier: int | None = None
    lid2: int | None = None
    gid1: int | None = None
    gid2: int | None = None
    qp1: int | None = None
    qp2: int | None = None
    sl: int | None = None
    switch_lid: int | None = None
    data_valid: int | None = None

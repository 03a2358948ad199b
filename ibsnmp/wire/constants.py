"""The SNMP numbers the agent speaks in, one definition each (RFC 3411, 3412).

Three numberings look alike and are not the same: the version field of a
message (SNMPv1 is 0; also pysnmp's message processing model number), the
security model (SNMPv1 is 1: VACM groups and pysnmp's configuration), and
the security level.
"""

from __future__ import annotations

from enum import IntEnum


class Version(IntEnum):
    """msgVersion, the first field of every message (RFC 3412 6; RFC 1901 for
    v2c), and SnmpMessageProcessingModel (RFC 3411 5), which counts the same."""

    V1 = 0
    V2C = 1
    V3 = 3


class SecurityModel(IntEnum):
    """SnmpSecurityModel (RFC 3411 5): msgSecurityModel, vacmGroupName keys."""

    V1 = 1
    V2C = 2
    USM = 3


class SecurityLevel(IntEnum):
    """SnmpSecurityLevel (RFC 3411 5), as the msgFlags' auth and priv bits say."""

    NO_AUTH_NO_PRIV = 1
    AUTH_NO_PRIV = 2
    AUTH_PRIV = 3

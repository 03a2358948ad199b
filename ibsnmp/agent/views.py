"""Which MIB views a community or user reads: with or without the IBA keys.

M_Key and SM_Key are the InfiniBand management secrets: whoever knows a port's M_Key can
reconfigure it over SMPs, and an SM_Key lets a rogue SM take over the subnet. The MIBs
publish them as columns, so the read view of read-only principals leaves them out (no
instance: noSuchObject to a GET, skipped by walks), as net-snmp's default `systemonly` view
leaves out what a plain monitor should not see. Principals with write access read them; any
principal can be given them with `view = "with-keys"`.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from functools import cache
from typing import Any, Literal, cast

View = Literal["no-keys", "with-keys"]
VIEWS: tuple[View, ...] = ("no-keys", "with-keys")

# The key objects of the five served modules (OIDs come from compiled_mibs/).
# Lease periods, protection bits and violation counters are not keys: they say
# how a key is used, not what it is, and monitoring needs them.
KEY_OBJECTS = (
    "ibSmaPortMKey",      # SMA-MIB: the management port's M_Key
    "ibSmaSmSmKey",       # SMA-MIB: SMInfo SM_Key
    "ibSmConfigSMKey",    # IB-SM-MIB: the SM's configured SM_Key
    "ibSmPortInfoMKey",   # IB-SM-MIB: every port's M_Key
    "ibSmSMInfoSMKey",    # IB-SM-MIB: every SM's SM_Key
)


def default_view(access: str) -> View:
    """Writers read the keys (they may set them anyway); readers do not."""
    return "with-keys" if access == "write" else "no-keys"


def parse_view(entry: Mapping[str, Any], access: str, key: str,
               fail: Callable[[str, str], Exception]) -> View:
    """The `view` of a [[community]] or [[user]] entry, or its access's default."""
    if "view" not in entry:
        return default_view(access)
    view = entry["view"]
    if view not in VIEWS:
        expected = " or ".join(f'"{name}"' for name in VIEWS)
        raise fail(key, f"expected {expected}")
    return cast(View, view)  # one of VIEWS


@cache
def key_subtrees() -> tuple[tuple[int, ...], ...]:
    """The OID subtrees of the M_Key and SM_Key objects, from the compiled MIBs."""
    from ibsnmp.mib.loader import definitions

    objects = definitions().objects
    return tuple(sorted(objects[name].oid for name in KEY_OBJECTS))


def past_key_subtree(oid: tuple[int, ...]) -> tuple[int, ...]:
    """For an OID inside a key subtree, the OID that ends that subtree; else `oid`.

    A view either hides a key subtree whole or shows it whole, so a walk
    refused inside one may continue after it.
    """
    for subtree in key_subtrees():
        if oid[: len(subtree)] == subtree:
            return subtree[:-1] + (subtree[-1] + 1,)
    return oid

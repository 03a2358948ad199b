"""Whole MADs: requests built from the layouts, responses checked and unpacked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ibsnmp.mad.attributes import (
    CLASS_PERF_MGT,
    CLASS_SUBN_DIRECTED_ROUTE,
    CLASS_SUBN_LID_ROUTED,
    DATA_OFFSET,
    DIRECTED_ROUTE_SMP,
    GS_MAD,
    LID_ROUTED_SMP,
    MAD_HEADER,
    MAD_SIZE,
    METHOD_GET,
    Attribute,
)
from ibsnmp.mad.layout import FieldValue

# The permissive LID: a directed-route SMP's DR SLID/DLID when the whole
# route, at both ends, is directed (IBA 14.2.2).
PERMISSIVE_LID = 0xFFFF
MAX_HOPS = 63


class MadError(Exception):
    """A MAD that cannot be built, or an answer that is not one."""


@dataclass(frozen=True)
class MadReply:
    """A response's header fields and its attribute decoded."""

    header: dict[str, FieldValue]
    status: int
    attribute: dict[str, FieldValue]


def directed_route_get(attribute: Attribute, path: Sequence[int], transaction_id: int,
                       modifier: int = 0) -> bytes:
    """A SubnGet() for `attribute` sent out of the ports in `path` (empty: the local node)."""
    if len(path) > MAX_HOPS:
        raise MadError(f"a directed route has at most {MAX_HOPS} hops")
    if any(not 1 <= port <= 254 for port in path):
        raise MadError(f"port numbers of a route lie in 1..254: {list(path)}")
    return bytes(DIRECTED_ROUTE_SMP.encode({
        "BaseVersion": 1, "MgmtClass": CLASS_SUBN_DIRECTED_ROUTE, "ClassVersion": 1,
        "Method": METHOD_GET, "HopCount": len(path), "TransactionID": transaction_id,
        "AttributeID": attribute.attribute_id, "AttributeModifier": modifier,
        "DrSLID": PERMISSIVE_LID, "DrDLID": PERMISSIVE_LID,
        "InitialPath": (0, *path, *([0] * (MAX_HOPS - len(path)))),
    }))


def lid_routed_get(attribute: Attribute, transaction_id: int, modifier: int = 0) -> bytes:
    """A SubnGet() for `attribute` to the LID the send address names."""
    return bytes(LID_ROUTED_SMP.encode({
        "BaseVersion": 1, "MgmtClass": CLASS_SUBN_LID_ROUTED, "ClassVersion": 1,
        "Method": METHOD_GET, "TransactionID": transaction_id,
        "AttributeID": attribute.attribute_id, "AttributeModifier": modifier,
    }))


def perf_get(attribute: Attribute, transaction_id: int, port_select: int,
             modifier: int = 0) -> bytes:
    """A PerfMgt Get() of a counters attribute for one port (0xFF: all ports)."""
    data = attribute.layout.encode(
        {"PortSelect": port_select} if "PortSelect" in attribute.layout.by_name else {})
    return bytes(GS_MAD.encode({
        "BaseVersion": 1, "MgmtClass": CLASS_PERF_MGT, "ClassVersion": 1,
        "Method": METHOD_GET, "TransactionID": transaction_id,
        "AttributeID": attribute.attribute_id, "AttributeModifier": modifier,
        "Data": bytes(data),
    }))


def decode_reply(mad: bytes, attribute: Attribute) -> MadReply:
    """The header and attribute of a GetResp(); raises when it is no answer to `attribute`."""
    if len(mad) < MAD_SIZE:
        raise MadError(f"a MAD is {MAD_SIZE} octets, got {len(mad)}")
    directed = mad[1] == CLASS_SUBN_DIRECTED_ROUTE
    header = (DIRECTED_ROUTE_SMP if directed else MAD_HEADER).decode(mad)
    header.pop("Data", None)
    if not header["Response"]:
        raise MadError("not a response")
    if header["AttributeID"] != attribute.attribute_id:
        raise MadError(f"answer for attribute {header['AttributeID']:#06x}, "
                       f"asked {attribute.attribute_id:#06x}")
    status = int(header["Status"])  # type: ignore[arg-type]
    return MadReply(header, status, attribute.layout.decode(mad[DATA_OFFSET:]))

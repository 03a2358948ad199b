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


_DIRECTED_ROUTE_GET = DIRECTED_ROUTE_SMP.packer((
    "BaseVersion", "MgmtClass", "ClassVersion", "Method", "HopCount", "TransactionID",
    "AttributeID", "AttributeModifier", "DrSLID", "DrDLID", "InitialPath"))
_NO_HOPS = (0,) * (MAX_HOPS + 1)


def directed_route_get(attribute: Attribute, path: Sequence[int], transaction_id: int,
                       modifier: int = 0) -> bytes:
    """A SubnGet() for `attribute` sent out of the ports in `path` (empty: the local node)."""
    if len(path) > MAX_HOPS:
        raise MadError(f"a directed route has at most {MAX_HOPS} hops")
    if path and (min(path) < 1 or max(path) > 254):
        raise MadError(f"port numbers of a route lie in 1..254: {list(path)}")
    return bytes(_DIRECTED_ROUTE_GET(
        1, CLASS_SUBN_DIRECTED_ROUTE, 1, METHOD_GET, len(path), transaction_id,
        attribute.attribute_id, modifier, PERMISSIVE_LID, PERMISSIVE_LID,
        (0, *path, *_NO_HOPS[len(path) + 1:])))


_GET_FIELDS = ("BaseVersion", "MgmtClass", "ClassVersion", "Method", "TransactionID",
               "AttributeID", "AttributeModifier")
_LID_ROUTED_GET = LID_ROUTED_SMP.packer(_GET_FIELDS)
_PERF_GET = GS_MAD.packer((*_GET_FIELDS, "Data"))


def lid_routed_get(attribute: Attribute, transaction_id: int, modifier: int = 0) -> bytes:
    """A SubnGet() for `attribute` to the LID the send address names."""
    return bytes(_LID_ROUTED_GET(1, CLASS_SUBN_LID_ROUTED, 1, METHOD_GET, transaction_id,
                                 attribute.attribute_id, modifier))


def perf_get(attribute: Attribute, transaction_id: int, port_select: int,
             modifier: int = 0) -> bytes:
    """A PerfMgt Get() of a counters attribute for one port (0xFF: all ports)."""
    layout = attribute.layout
    data = (layout.packer(("PortSelect",))(port_select) if "PortSelect" in layout.by_name
            else bytes(layout.size))
    return bytes(_PERF_GET(1, CLASS_PERF_MGT, 1, METHOD_GET, transaction_id,
                           attribute.attribute_id, modifier, bytes(data)))


# Everything of a reply but its data, which the attribute's own layout reads.
_DIRECTED_ROUTE_HEADER = DIRECTED_ROUTE_SMP.decoder(
    f.name for f in DIRECTED_ROUTE_SMP.fields if f.name != "Data")
_HEADER = MAD_HEADER.decoder()


def decode_reply(mad: bytes, attribute: Attribute) -> MadReply:
    """The header and attribute of a GetResp(); raises when it is no answer to `attribute`."""
    if len(mad) < MAD_SIZE:
        raise MadError(f"a MAD is {MAD_SIZE} octets, got {len(mad)}")
    directed = mad[1] == CLASS_SUBN_DIRECTED_ROUTE
    header = (_DIRECTED_ROUTE_HEADER if directed else _HEADER)(mad)
    if not header["Response"]:
        raise MadError("not a response")
    if header["AttributeID"] != attribute.attribute_id:
        raise MadError(f"answer for attribute {header['AttributeID']:#06x}, "
                       f"asked {attribute.attribute_id:#06x}")
    status = int(header["Status"])  # type: ignore[arg-type]
    return MadReply(header, status, attribute.layout.decode(mad[DATA_OFFSET:]))

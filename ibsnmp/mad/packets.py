"""Whole MADs: requests built from the layouts, responses checked and unpacked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

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
    AnyAttribute,
    Attribute,
)
from ibsnmp.mad.layout import AnyRecord, FieldValue, RecordT, field_int

_R = TypeVar("_R", bound=AnyRecord)

# The permissive LID: a directed-route SMP's DR SLID/DLID when the whole
# route, at both ends, is directed (IBA 14.2.2).
PERMISSIVE_LID = 0xFFFF
MAX_HOPS = 63


class MadError(Exception):
    """A MAD that cannot be built, or an answer that is not one."""


class MadReply(Generic[RecordT]):
    """A response's header fields and its attribute decoded (the attribute's record).

    The header is decoded when first asked for: a sweep checks only the
    response bit, the attribute and the status, and a directed-route
    header (with both 64-hop paths) cost as much as the attribute.
    """

    __slots__ = ("_header", "_mad", "status", "attribute")

    def __init__(self, header: dict[str, FieldValue] | None, status: int,
                 attribute: RecordT, mad: bytes = b"") -> None:
        if header is None and len(mad) < MAD_SIZE:
            raise MadError("a reply needs its header or the MAD to read it from")
        self._header = header
        self._mad = mad
        self.status = status
        self.attribute = attribute

    @property
    def header(self) -> dict[str, FieldValue]:
        if self._header is None:
            directed = self._mad[1] == CLASS_SUBN_DIRECTED_ROUTE
            self._header = (_DIRECTED_ROUTE_HEADER if directed else _HEADER)(self._mad)
        return self._header

    def __repr__(self) -> str:
        return f"MadReply(status={self.status:#x}, attribute={self.attribute!r})"


_GET = {"BaseVersion": 1, "ClassVersion": 1, "Method": METHOD_GET}
_DIRECTED_ROUTE_GET = DIRECTED_ROUTE_SMP.packer(
    ("HopCount", "TransactionID", "AttributeID", "AttributeModifier", "InitialPath"),
    fixed={**_GET, "MgmtClass": CLASS_SUBN_DIRECTED_ROUTE,
           "DrSLID": PERMISSIVE_LID, "DrDLID": PERMISSIVE_LID})
_NO_HOPS = (0,) * (MAX_HOPS + 1)
# A sweep sends thousands of SubnGet()s that differ only in their route: each
# (attribute, modifier, hop count) is packed once, up to the first hop of the
# initial path (entry 0 is unused), and a request is that head, the hops and zeros.
_PATH_START = DIRECTED_ROUTE_SMP.by_name["InitialPath"].offset // 8 + 1
_TAILS = tuple(bytes(MAD_SIZE - _PATH_START - hops) for hops in range(MAX_HOPS + 1))
_HEADS: dict[tuple[int, int, int], bytes] = {}
_MAX_HEADS = 4096  # forwarding table blocks make many modifiers: bound the memory


def _directed_route_head(attribute_id: int, modifier: int, hops: int) -> bytes:
    head = bytes(_DIRECTED_ROUTE_GET(hops, 0, attribute_id, modifier, _NO_HOPS))[:_PATH_START]
    if len(_HEADS) >= _MAX_HEADS:
        _HEADS.clear()
    _HEADS[(attribute_id, modifier, hops)] = head
    return head


def directed_route_get(attribute: AnyAttribute, path: Sequence[int], transaction_id: int,
                       modifier: int = 0) -> bytes:
    """A SubnGet() for `attribute` sent out of the ports in `path` (empty: the local node)."""
    try:
        hops = bytes(path)  # refuses what is no octet
    except (TypeError, ValueError):
        hops = b"\0"
    if 0 in hops or 255 in hops:
        raise MadError(f"port numbers of a route lie in 1..254: {list(path)}")
    if len(hops) > MAX_HOPS:
        raise MadError(f"a directed route has at most {MAX_HOPS} hops")
    if transaction_id:
        return bytes(_DIRECTED_ROUTE_GET(len(hops), transaction_id, attribute.attribute_id,
                                         modifier, (0, *hops, *_NO_HOPS[len(hops) + 1:])))
    key = (attribute.attribute_id, modifier, len(hops))
    head = _HEADS.get(key) or _directed_route_head(*key)
    return head + hops + _TAILS[key[2]]


_GET_FIELDS = ("TransactionID", "AttributeID", "AttributeModifier")
_LID_ROUTED_GET = LID_ROUTED_SMP.packer(_GET_FIELDS,
                                        fixed={**_GET, "MgmtClass": CLASS_SUBN_LID_ROUTED})
_PERF_GET = GS_MAD.packer((*_GET_FIELDS, "Data"), fixed={**_GET, "MgmtClass": CLASS_PERF_MGT})


def lid_routed_get(attribute: AnyAttribute, transaction_id: int, modifier: int = 0) -> bytes:
    """A SubnGet() for `attribute` to the LID the send address names."""
    return bytes(_LID_ROUTED_GET(transaction_id, attribute.attribute_id, modifier))


def perf_get(attribute: AnyAttribute, transaction_id: int, port_select: int,
             modifier: int = 0) -> bytes:
    """A PerfMgt Get() of a counters attribute for one port (0xFF: all ports)."""
    layout = attribute.layout
    data = (layout.packer(("PortSelect",))(port_select) if "PortSelect" in layout.by_name
            else bytes(layout.size))
    return bytes(_PERF_GET(transaction_id, attribute.attribute_id, modifier, bytes(data)))


# Everything of a reply but its data, which the attribute's own layout reads,
# and the three fields every reply is checked on.
_DIRECTED_ROUTE_HEADER = DIRECTED_ROUTE_SMP.decoder(
    f.name for f in DIRECTED_ROUTE_SMP.fields if f.name != "Data")
_HEADER = MAD_HEADER.decoder()
_CHECKED = ("Response", "AttributeID", "Status")
_DIRECTED_ROUTE_CHECKED = DIRECTED_ROUTE_SMP.reader(_CHECKED)
_HEADER_CHECKED = MAD_HEADER.reader(_CHECKED)


def _checked_status(mad: bytes, attribute: AnyAttribute) -> int:
    """The status of a GetResp() to `attribute`; raises when it is no such answer."""
    if len(mad) < MAD_SIZE:
        raise MadError(f"a MAD is {MAD_SIZE} octets, got {len(mad)}")
    directed = mad[1] == CLASS_SUBN_DIRECTED_ROUTE
    response, attribute_id, status = (
        _DIRECTED_ROUTE_CHECKED if directed else _HEADER_CHECKED)(mad)
    if not response:
        raise MadError("not a response")
    if attribute_id != attribute.attribute_id:
        raise MadError(f"answer for attribute {field_int(attribute_id):#06x}, "
                       f"asked {attribute.attribute_id:#06x}")
    return field_int(status)


def reply_octets(mad: bytes, attribute: AnyAttribute) -> tuple[int, bytes]:
    """The status of a GetResp() to `attribute` and its attribute's octets,
    undecoded (a poll compares them with the last ones read before it
    decodes anything); raises when it is no such answer."""
    status = _checked_status(mad, attribute)
    return status, bytes(mad[DATA_OFFSET:DATA_OFFSET + attribute.layout.size])


def decode_reply(mad: bytes, attribute: Attribute[_R]) -> MadReply[_R]:
    """The header and attribute of a GetResp(); raises when it is no answer to `attribute`."""
    status = _checked_status(mad, attribute)
    return MadReply(None, status, attribute.layout.decode(mad[DATA_OFFSET:]), bytes(mad))


def reply_attribute(mad: bytes, attribute: Attribute[_R]) -> _R:
    """The attribute of a successful GetResp(): `decode_reply` for callers that
    want only that (a sweep), raising MadError for a status too."""
    status = _checked_status(mad, attribute)
    if status:
        raise MadError(f"status {status:#x}")
    return attribute.layout.decode(mad[DATA_OFFSET:])

"""Notices an SA forwards in Reports, turned into the agent's trap events.

The DataDetails of each generic trap (IBA 14.2.5.1, Table 118 onwards) are
field tables like any attribute; the issuing node comes from the caller's
LID map when it knows the LID, else from the IssuerGID's interface ID (the
port GUID, which is the node GUID of a switch's port 0 and of most CAs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.mad import records_generated as records
from ibsnmp.mad.layout import AnyRecord, Field, FieldValue, Layout
from ibsnmp.sa.records import NOTICE_DATA_DETAILS

_SIZE = NOTICE_DATA_DETAILS
_LID = Field("LIDADDR", 16, 16)

# Read loosely (`decoder()`): the fields differ from trap to trap, and an event
# takes each one some trap has.
DETAILS: dict[int, Layout[AnyRecord]] = {
    128: Layout("Trap128", _SIZE, (Field("LIDADDR", 0, 16),)),
    **{trap: Layout(f"Trap{trap}", _SIZE, (_LID, Field("PORTNO", 32, 8)))
       for trap in (129, 130, 131)},
    144: Layout("Trap144", _SIZE, (_LID, Field("CapabilityMask", 48, 32))),
    145: Layout("Trap145", _SIZE, (_LID, Field("SystemImageGUID", 48, 64))),
    256: Layout("Trap256", _SIZE, (_LID, Field("Method", 48, 8), Field("AttributeID", 64, 16),
                                   Field("AttributeModifier", 96, 32), Field("MKey", 128, 64))),
    **{trap: Layout(f"Trap{trap}", _SIZE, (
        Field("LID1", 16, 16), Field("LID2", 32, 16), Field("Key", 48, 32), Field("SL", 80, 4),
        Field("QP1", 88, 24), Field("QP2", 120, 24), Field("GID1", 144, 128),
        Field("GID2", 272, 128))) for trap in (257, 258)},
    259: Layout("Trap259", _SIZE, (
        Field("DataValid", 0, 16), Field("LID1", 16, 16), Field("LID2", 32, 16),
        Field("Key", 48, 16), Field("SL", 64, 4), Field("QP1", 72, 24), Field("QP2", 104, 24),
        Field("GID1", 128, 128), Field("GID2", 256, 128), Field("SwLID", 384, 16),
        Field("PortNo", 400, 8))),
}


def _int(value: FieldValue | None) -> int | None:
    return value if isinstance(value, int) else None


def notice_event(notice: records.Notice,
                 node_of_lid: Callable[[int], int | None] | None = None) -> TrapEvent | None:
    """The TrapEvent of a generic Notice the agent forwards; None for others."""
    if not notice["IsGeneric"]:
        return None
    try:
        trap = IbaTrap(notice["TrapNumber"])
    except ValueError:
        return None
    issuer = notice["IssuerLID"]
    details: Mapping[str, FieldValue] = DETAILS[trap].decoder()(notice["DataDetails"])
    # The LID SMA-MIB's ibSmaNodeLid carries: LIDADDR, or LIDADDR1 of 257-259.
    subject = _int(details.get("LIDADDR", details.get("LID1"))) or issuer
    guid = node_of_lid(issuer) if node_of_lid is not None else None
    if guid is None:
        guid = int.from_bytes(notice["IssuerGID"][8:], "big")
    get = details.get
    return TrapEvent(
        trap=trap, node_guid=guid, lid=subject,
        port=_int(get("PORTNO", get("PortNo"))),
        capability_mask=_int(get("CapabilityMask")),
        system_image_guid=_int(get("SystemImageGUID")),
        key=_int(get("MKey", get("Key"))),
        method=_int(get("Method")), attribute_id=_int(get("AttributeID")),
        attribute_modifier=_int(get("AttributeModifier")),
        lid2=_int(get("LID2")), gid1=_int(get("GID1")), gid2=_int(get("GID2")),
        qp1=_int(get("QP1")), qp2=_int(get("QP2")), sl=_int(get("SL")),
        switch_lid=_int(get("SwLID")), data_valid=_int(get("DataValid")),
    )

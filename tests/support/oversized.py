"""Requests built octet by octet, the flood packet first: one UDP datagram
of about 64 KB holding 9,142 varbinds (pyasn1 takes a second to encode it).

Each varbind is the 7-octet `{ 1.3, NULL }`, so a full datagram is mostly
varbinds, which is what makes a full decode expensive.
"""

from __future__ import annotations

from ibsnmp.wire.ber import element as tlv

FLOOD_VARBINDS = 9142
_VARBIND = bytes.fromhex("3005 06012b 0500")  # SEQUENCE { OID 1.3, NULL }


def v3_plaintext_get(user: bytes, varbinds: int = 1, *, flags: int = 0x04,
                     varbind: bytes = _VARBIND) -> bytes:
    """An SNMPv3 noAuthNoPriv GET of `varbinds` x `varbind` (1.3) by `user` (reportable
    by default)."""
    usm = tlv(0x30, tlv(0x04, b"") + tlv(0x02, b"\x00") + tlv(0x02, b"\x00") + tlv(0x04, user)
              + tlv(0x04, b"") + tlv(0x04, b""))
    header = tlv(0x30, tlv(0x02, b"\x01") + tlv(0x02, b"\x00\xff\xe3") + tlv(0x04, bytes((flags,)))
                 + tlv(0x02, b"\x03"))
    pdu = (tlv(0x02, b"\x07") + tlv(0x02, b"\x00") + tlv(0x02, b"\x00")
           + tlv(0x30, varbind * varbinds))
    scoped = tlv(0x30, tlv(0x04, b"") + tlv(0x04, b"") + tlv(0xA0, pdu))
    return tlv(0x30, tlv(0x02, b"\x03") + header + tlv(0x04, usm) + scoped)


def oversized_get(community: bytes, varbinds: int = FLOOD_VARBINDS, *, version: int = 1,
                  request_id: int = 77) -> bytes:
    """An SNMPv1 (version 0) or v2c (version 1) GET of `varbinds` x 1.3."""
    pdu = (tlv(0x02, request_id.to_bytes(4, "big", signed=True)) + tlv(0x02, b"\x00")
           + tlv(0x02, b"\x00") + tlv(0x30, _VARBIND * varbinds))
    return tlv(0x30, tlv(0x02, bytes((version,))) + tlv(0x04, community) + tlv(0xA0, pdu))

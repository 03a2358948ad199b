"""Raw SNMPv3 (USM) datagrams for regression tests: build, discover, decode.

Messages are built from pysnmp's own ASN.1 classes (SNMPv3Message, USM
security parameters, ScopedPDU) so a test can set every header field by
hand: msgFlags, the authoritative engine ID, boots and time, the user, the
PDU type. Authentication is HMAC over the whole message with a localized
key (RFC 3414 6, RFC 7860); privacy is not needed by the tests here: their
reports are answered in plaintext.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyasn1.codec.ber import decoder, encoder
from pysnmp.proto import rfc1902, rfc1905
from pysnmp.proto.api import v2c
from pysnmp.proto.mpmod.rfc3412 import HeaderData, ScopedPDU, SNMPv3Message
from pysnmp.proto.secmod.rfc3414.localkey import password_to_key
from pysnmp.proto.secmod.rfc3414.service import UsmSecurityParameters

from tests.support.wire import exchange

# msgFlags bits (RFC 3412 6.4)
AUTH_FLAG, PRIV_FLAG, REPORTABLE_FLAG = 0x01, 0x02, 0x04
USM = 3
# (hash, truncated MAC length) per USM authentication protocol
AUTH_PROTOCOLS = {"MD5": (hashlib.md5, 12), "SHA": (hashlib.sha1, 12),
                  "SHA256": (hashlib.sha256, 24)}

USM_STATS = (1, 3, 6, 1, 6, 3, 15, 1, 1)
USM_STATS_UNSUPPORTED_SEC_LEVELS = USM_STATS + (1, 0)
USM_STATS_UNKNOWN_USER_NAMES = USM_STATS + (3, 0)
USM_STATS_UNKNOWN_ENGINE_IDS = USM_STATS + (4, 0)
USM_STATS_WRONG_DIGESTS = USM_STATS + (5, 0)

PDU_CLASSES = {
    "get": rfc1905.GetRequestPDU,
    "next": rfc1905.GetNextRequestPDU,
    "response": rfc1905.ResponsePDU,
    "report": rfc1905.ReportPDU,
}


@dataclass(frozen=True)
class Auth:
    """A USM user's authentication: protocol name and pass phrase."""

    protocol: str
    passphrase: str

    def localized_key(self, engine_id: bytes) -> bytes:
        hash_func, _ = AUTH_PROTOCOLS[self.protocol]
        return bytes(password_to_key(self.passphrase.encode(), rfc1902.OctetString(engine_id),
                                     hash_func))

    @property
    def mac_length(self) -> int:
        return AUTH_PROTOCOLS[self.protocol][1]


def v3_message(pdu_kind: str, oids: Sequence[tuple[int, ...]], *, user: bytes = b"",
               engine_id: bytes = b"", boots: int = 0, engine_time: int = 0,
               auth: Auth | None = None, flags: int | None = None, msg_id: int = 7001,
               request_id: int = 4242, context_name: bytes = b"",
               ciphertext: bytes | None = None, priv_params: bytes | None = None) -> bytes:
    """One SNMPv3 USM message, noAuthNoPriv or (with `auth`) authNoPriv.

    flags default to the security level plus reportable for a GET; the MAC
    is computed with `auth`'s key localized to `engine_id`, as a manager
    that believes that engine ID would. `ciphertext` replaces the plaintext
    scoped PDU (msgData encryptedPDU) for checks that come before decryption;
    `priv_params` replaces its salt.
    """
    pdu = PDU_CLASSES[pdu_kind]()
    v2c.apiPDU.set_defaults(pdu)
    v2c.apiPDU.set_request_id(pdu, request_id)
    v2c.apiPDU.set_varbinds(pdu, [(v2c.ObjectIdentifier(oid), v2c.Null("")) for oid in oids])
    scoped = ScopedPDU()
    scoped.setComponentByPosition(0, engine_id)
    scoped.setComponentByPosition(1, context_name)
    scoped.setComponentByPosition(2)
    scoped.getComponentByPosition(2).setComponentByType(pdu.tagSet, pdu)

    if flags is None:
        flags = (AUTH_FLAG if auth else 0) | (REPORTABLE_FLAG if pdu_kind == "get" else 0)
    header = HeaderData()
    header.setComponentByPosition(0, msg_id)
    header.setComponentByPosition(1, 65507)
    header.setComponentByPosition(2, bytes([flags]))
    header.setComponentByPosition(3, USM)

    placeholder = b"\x00" * auth.mac_length if auth else b""
    if ciphertext is not None:
        # As an authPriv request looks before its checks: a MAC's room, a salt.
        placeholder, salt = placeholder or b"\x00" * 12, b"\x00" * 8
    else:
        salt = b""
    if priv_params is not None:
        salt = priv_params
    params = UsmSecurityParameters()
    for position, value in enumerate((engine_id, boots, engine_time, user, placeholder, salt)):
        params.setComponentByPosition(position, value)

    message = SNMPv3Message()
    message.setComponentByPosition(0, 3)
    message.setComponentByPosition(1, header)
    message.setComponentByPosition(2, encoder.encode(params))
    message.setComponentByPosition(3)
    if ciphertext is None:
        message.getComponentByPosition(3).setComponentByPosition(0, scoped)
    else:
        message.getComponentByPosition(3).setComponentByPosition(1, ciphertext)
    whole: bytes = encoder.encode(message)
    if auth is None:
        return whole
    hash_func, length = AUTH_PROTOCOLS[auth.protocol]
    mac = hmac.new(auth.localized_key(engine_id), whole, hash_func).digest()[:length]
    at = whole.index(placeholder)
    return whole[:at] + mac + whole[at + length:]


@dataclass(frozen=True)
class V3Answer:
    """What a test checks in an SNMPv3 answer sent in plaintext."""

    msg_id: int
    flags: int
    engine_id: bytes
    boots: int
    engine_time: int
    user: bytes
    pdu_type: str
    request_id: int
    error_status: int
    varbinds: list[tuple[tuple[int, ...], Any]]

    @property
    def reportable(self) -> bool:
        return bool(self.flags & REPORTABLE_FLAG)


def decode_v3(data: bytes) -> V3Answer:
    """Decode a plaintext SNMPv3 answer (a report, or a noAuth/authNoPriv response)."""
    message, rest = decoder.decode(data, asn1Spec=SNMPv3Message())
    assert not rest, "trailing octets after the message"
    header = message.getComponentByPosition(1)
    params, _ = decoder.decode(bytes(message.getComponentByPosition(2)),
                               asn1Spec=UsmSecurityParameters())
    scoped = message.getComponentByPosition(3).getComponentByPosition(0)
    pdu = scoped.getComponentByPosition(2).getComponent()
    kind = {rfc1905.ReportPDU.tagSet: "report",
            rfc1905.ResponsePDU.tagSet: "response"}.get(pdu.tagSet, str(pdu.tagSet))
    return V3Answer(
        msg_id=int(header.getComponentByPosition(0)),
        flags=header.getComponentByPosition(2).asNumbers()[0],
        engine_id=bytes(params.getComponentByPosition(0)),
        boots=int(params.getComponentByPosition(1)),
        engine_time=int(params.getComponentByPosition(2)),
        user=bytes(params.getComponentByPosition(3)),
        pdu_type=kind,
        request_id=int(v2c.apiPDU.get_request_id(pdu)),
        error_status=int(v2c.apiPDU.get_error_status(pdu)),
        varbinds=[(tuple(oid), value) for oid, value in v2c.apiPDU.get_varbinds(pdu)],
    )


def discover(address: str) -> V3Answer:
    """The agent's engine ID, boots and time: RFC 3414 4 discovery (empty user)."""
    answer = exchange(address, v3_message("get", [], msg_id=1, request_id=1), timeout=5.0)
    assert answer is not None, "no answer to engine ID discovery"
    return decode_v3(answer)


def counter(value: Any) -> int:
    """A Counter32 varbind value as int."""
    return int(rfc1902.Counter32(value))

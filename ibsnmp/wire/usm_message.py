"""SNMPv3 messages with USM security parameters, read and written as octets.

RFC 3412 6 (msgGlobalData), RFC 3414 2.4 (UsmSecurityParameters). Reading
keeps where msgAuthenticationParameters lies, because the digest is
computed over the whole message with that field zeroed. Malformed input
raises HeaderError, as the header reader does.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ber import element as encode_element
from .ber import COUNTER32, OBJECT_IDENTIFIER, integer_octets, length_octets, oid_octets
from .header import (INTEGER, OCTET_STRING, REPORT, SEQUENCE, USM, V3, HeaderError, Tlv,
                     read_tlv)

FLAG_AUTH, FLAG_PRIV, FLAG_REPORTABLE = 0x01, 0x02, 0x04
MAX_MESSAGE_ID = 2147483647  # RFC 3412: msgID and msgMaxSize are INTEGER (0..2147483647)
MIN_MAX_SIZE = 484
_INTEGER_OCTETS = 5


def _element(data: bytes, pos: int, limit: int, tag: int) -> Tlv:
    tlv = read_tlv(data, pos, limit)
    if tlv.tag != tag:
        raise HeaderError(f"expected tag 0x{tag:02x}, got 0x{tlv.tag:02x}")
    return tlv


def _unsigned(data: bytes, tlv: Tlv, maximum: int = MAX_MESSAGE_ID) -> int:
    if not 1 <= tlv.end - tlv.start <= _INTEGER_OCTETS:
        raise HeaderError("bad INTEGER length")
    value = int.from_bytes(data[tlv.start:tlv.end], "big", signed=True)
    if not 0 <= value <= maximum:
        raise HeaderError("INTEGER out of range")
    return value


def _octets(data: bytes, tlv: Tlv) -> bytes:
    return data[tlv.start:tlv.end]


@dataclass(frozen=True, slots=True)
class V3Request:
    """An SNMPv3 USM message, its security parameters decoded, its data not."""

    message_id: int
    max_size: int
    flags: int
    engine_id: bytes
    boots: int
    engine_time: int
    user: bytes
    auth_params: Tlv  # where the MAC lies in the datagram
    priv_params: bytes
    data: bytes  # the ScopedPDU element, or the ciphertext when FLAG_PRIV is set

    @property
    def level(self) -> int:
        """1 noAuthNoPriv, 2 authNoPriv, 3 authPriv; ValueError for priv without auth."""
        if self.flags & FLAG_PRIV and not self.flags & FLAG_AUTH:
            raise ValueError("privacy without authentication")
        return 1 + (self.flags & FLAG_AUTH) + (self.flags & FLAG_PRIV) // FLAG_PRIV

    def without_mac(self, whole: bytes) -> bytes:
        """The datagram with msgAuthenticationParameters zeroed, as it was signed."""
        params = self.auth_params
        return whole[:params.start] + bytes(params.end - params.start) + whole[params.end:]

    def mac(self, whole: bytes) -> bytes:
        return whole[self.auth_params.start:self.auth_params.end]


def parse_v3(data: bytes) -> V3Request:
    """An SNMPv3 USM message; HeaderError if it is not a well-formed one."""
    message = _element(data, 0, len(data), SEQUENCE)
    if message.end != len(data):
        raise HeaderError("octets after the message")
    version = _element(data, message.start, message.end, INTEGER)
    if _unsigned(data, version) != V3:
        raise HeaderError("not SNMPv3")
    header = _element(data, version.end, message.end, SEQUENCE)
    msg_id = _element(data, header.start, header.end, INTEGER)
    max_size = _element(data, msg_id.end, header.end, INTEGER)
    flags = _element(data, max_size.end, header.end, OCTET_STRING)
    if flags.end - flags.start != 1:
        raise HeaderError("msgFlags is not one octet")
    model = _element(data, flags.end, header.end, INTEGER)
    if model.end != header.end:
        raise HeaderError("octets after msgSecurityModel")
    if _unsigned(data, model) != USM:
        raise HeaderError("not USM")
    max_size_value = _unsigned(data, max_size)
    if max_size_value < MIN_MAX_SIZE:
        raise HeaderError("msgMaxSize below 484")
    params = _element(data, header.end, message.end, OCTET_STRING)
    flag_octet = data[flags.start]
    data_tlv = _element(data, params.end, message.end,
                        OCTET_STRING if flag_octet & FLAG_PRIV else SEQUENCE)
    if data_tlv.end != message.end:
        raise HeaderError("octets after msgData")
    usm = _element(data, params.start, params.end, SEQUENCE)
    if usm.end != params.end:
        raise HeaderError("octets after the security parameters")
    engine_id = _element(data, usm.start, usm.end, OCTET_STRING)
    boots = _element(data, engine_id.end, usm.end, INTEGER)
    engine_time = _element(data, boots.end, usm.end, INTEGER)
    user = _element(data, engine_time.end, usm.end, OCTET_STRING)
    auth = _element(data, user.end, usm.end, OCTET_STRING)
    priv = _element(data, auth.end, usm.end, OCTET_STRING)
    if priv.end != usm.end:
        raise HeaderError("octets after msgPrivacyParameters")
    body = (_octets(data, data_tlv) if flag_octet & FLAG_PRIV
            else data[data_tlv.head:data_tlv.end])
    return V3Request(
        message_id=_unsigned(data, msg_id), max_size=max_size_value, flags=flag_octet,
        engine_id=_octets(data, engine_id), boots=_unsigned(data, boots),
        engine_time=_unsigned(data, engine_time), user=_octets(data, user), auth_params=auth,
        priv_params=_octets(data, priv), data=body)


@dataclass(frozen=True, slots=True)
class ScopedPdu:
    context_engine_id: bytes
    context_name: bytes
    pdu: bytes  # the PDU element, tag to end


def parse_scoped_pdu(plaintext: bytes) -> ScopedPdu:
    """A ScopedPDU; octets after it are ignored (a cipher's padding may follow it)."""
    scoped = _element(plaintext, 0, len(plaintext), SEQUENCE)
    engine = _element(plaintext, scoped.start, scoped.end, OCTET_STRING)
    name = _element(plaintext, engine.end, scoped.end, OCTET_STRING)
    pdu = read_tlv(plaintext, name.end, scoped.end)
    if pdu.end != scoped.end:
        raise HeaderError("octets after the PDU")
    return ScopedPdu(_octets(plaintext, engine), _octets(plaintext, name),
                     plaintext[pdu.head:pdu.end])


def encode_unsigned(value: int) -> bytes:
    """A non-negative INTEGER element, shortest form."""
    return encode_element(INTEGER, integer_octets(value))


def encode_report_pdu(request_id: int, counter: tuple[int, ...], count: int) -> bytes:
    """A Report-PDU naming one Counter32 and its value (RFC 3412 7.1.3c), as pysnmp writes it."""
    element = encode_element
    varbind = element(SEQUENCE, element(OBJECT_IDENTIFIER, oid_octets(counter))
                      + element(COUNTER32, integer_octets(count)))
    return element(REPORT, element(INTEGER, integer_octets(request_id))
                   + encode_unsigned(0) + encode_unsigned(0) + element(SEQUENCE, varbind))


def encode_scoped_pdu(context_engine_id: bytes, context_name: bytes, pdu: bytes) -> bytes:
    return encode_element(SEQUENCE, encode_element(OCTET_STRING, context_engine_id)
                          + encode_element(OCTET_STRING, context_name) + pdu)


@dataclass(frozen=True, slots=True)
class Outgoing:
    """What a response message carries besides its (possibly encrypted) data."""

    message_id: int
    max_size: int
    flags: int
    engine_id: bytes
    boots: int
    engine_time: int
    user: bytes
    mac_length: int  # 0 when not authenticated
    priv_params: bytes


def _before_data(out: Outgoing) -> tuple[bytes, int]:
    """msgVersion, msgGlobalData and the security parameters; where the MAC's value ends."""
    element = encode_element
    global_data = element(SEQUENCE, encode_unsigned(out.message_id)
                          + encode_unsigned(out.max_size)
                          + element(OCTET_STRING, bytes((out.flags,)))
                          + encode_unsigned(USM))
    before_mac = (element(OCTET_STRING, out.engine_id) + encode_unsigned(out.boots)
                  + encode_unsigned(out.engine_time) + element(OCTET_STRING, out.user))
    mac = element(OCTET_STRING, bytes(out.mac_length))
    priv = element(OCTET_STRING, out.priv_params)
    params = element(OCTET_STRING, element(SEQUENCE, before_mac + mac + priv))
    prefix = encode_unsigned(V3) + global_data + params
    return prefix, len(prefix) - len(priv)


def encode_v3(out: Outgoing, data: bytes) -> tuple[bytes, int]:
    """The message with a zeroed MAC, and the offset of that MAC.

    `data` is the ScopedPDU element, or the ciphertext when the privacy flag
    is set (it is then wrapped as an OCTET STRING here).
    """
    prefix, mac_end = _before_data(out)
    body = encode_element(OCTET_STRING, data) if out.flags & FLAG_PRIV else data
    message = encode_element(SEQUENCE, prefix + body)
    mac_at = len(message) - len(body) - len(prefix) + mac_end - out.mac_length
    return message, mac_at


def overhead(out: Outgoing, data_length: int) -> int:
    """Octets a message adds around `data_length` octets of scoped PDU."""
    prefix, _ = _before_data(out)
    body = data_length
    if out.flags & FLAG_PRIV:
        body += 1 + length_octets(data_length)
    inner = len(prefix) + body
    return 1 + length_octets(inner) + inner - data_length

"""SNMPv3 messages with USM security parameters, read and written as octets.

RFC 3412 6 (msgGlobalData), RFC 3414 2.4 (UsmSecurityParameters). Reading
keeps where msgAuthenticationParameters lies, because the digest is
computed over the whole message with that field zeroed. Malformed input
raises HeaderError, as the header reader does.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ber import element as encode_element
from .ber import COUNTER32, integer_octets, length_octets, read_element
from .header import INTEGER, OCTET_STRING, REPORT, SEQUENCE, USM, V3, HeaderError, Tlv

FLAG_AUTH, FLAG_PRIV, FLAG_REPORTABLE = 0x01, 0x02, 0x04
MAX_MESSAGE_ID = 2147483647  # RFC 3412: msgID and msgMaxSize are INTEGER (0..2147483647)
MIN_MAX_SIZE = 484
_INTEGER_OCTETS = 5


def _span(data: bytes, pos: int, limit: int, tag: int) -> tuple[int, int]:
    """(first value octet, end) of the element at `pos`, which must have `tag`.

    Spans, not Tlv objects: this reader runs for every SNMPv3 datagram,
    refused ones included, and an object per element was most of its cost.
    """
    if pos + 2 <= limit and data[pos] == tag and data[pos + 1] < 0x80:
        # The short length form, nearly every element of a request: no call.
        end = pos + 2 + data[pos + 1]
        if end <= limit:
            return pos + 2, end
    found, start, end = read_element(data, pos, limit)
    if found != tag:
        raise HeaderError(f"expected tag 0x{tag:02x}, got 0x{found:02x}")
    return start, end


def _unsigned(data: bytes, start: int, end: int, maximum: int = MAX_MESSAGE_ID) -> int:
    if not 1 <= end - start <= _INTEGER_OCTETS:
        raise HeaderError("bad INTEGER length")
    value = int.from_bytes(data[start:end], "big", signed=True)
    if not 0 <= value <= maximum:
        raise HeaderError("INTEGER out of range")
    return value


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
    span = _span
    start, message_end = span(data, 0, len(data), SEQUENCE)
    if message_end != len(data):
        raise HeaderError("octets after the message")
    version = span(data, start, message_end, INTEGER)
    if _unsigned(data, *version) != V3:
        raise HeaderError("not SNMPv3")
    header_start, header_end = span(data, version[1], message_end, SEQUENCE)
    msg_id = span(data, header_start, header_end, INTEGER)
    max_size = span(data, msg_id[1], header_end, INTEGER)
    flags_start, flags_end = span(data, max_size[1], header_end, OCTET_STRING)
    if flags_end - flags_start != 1:
        raise HeaderError("msgFlags is not one octet")
    model = span(data, flags_end, header_end, INTEGER)
    if model[1] != header_end:
        raise HeaderError("octets after msgSecurityModel")
    if _unsigned(data, *model) != USM:
        raise HeaderError("not USM")
    max_size_value = _unsigned(data, *max_size)
    if max_size_value < MIN_MAX_SIZE:
        raise HeaderError("msgMaxSize below 484")
    params_start, params_end = span(data, header_end, message_end, OCTET_STRING)
    flag_octet = data[flags_start]
    encrypted = flag_octet & FLAG_PRIV
    data_start, data_end = span(data, params_end, message_end,
                                OCTET_STRING if encrypted else SEQUENCE)
    if data_end != message_end:
        raise HeaderError("octets after msgData")
    usm_start, usm_end = span(data, params_start, params_end, SEQUENCE)
    if usm_end != params_end:
        raise HeaderError("octets after the security parameters")
    engine_id = span(data, usm_start, usm_end, OCTET_STRING)
    boots = span(data, engine_id[1], usm_end, INTEGER)
    engine_time = span(data, boots[1], usm_end, INTEGER)
    user = span(data, engine_time[1], usm_end, OCTET_STRING)
    auth_start, auth_end = span(data, user[1], usm_end, OCTET_STRING)
    priv = span(data, auth_end, usm_end, OCTET_STRING)
    if priv[1] != usm_end:
        raise HeaderError("octets after msgPrivacyParameters")
    # The message as sent from msgData's tag on: the ScopedPDU element, or
    # the ciphertext (an OCTET STRING's value) when encrypted.
    body = data[data_start:data_end] if encrypted else data[params_end:data_end]
    return V3Request(
        message_id=_unsigned(data, *msg_id), max_size=max_size_value, flags=flag_octet,
        engine_id=data[engine_id[0]:engine_id[1]], boots=_unsigned(data, *boots),
        engine_time=_unsigned(data, *engine_time), user=data[user[0]:user[1]],
        auth_params=Tlv(OCTET_STRING, user[1], auth_start, auth_end),
        priv_params=data[priv[0]:priv[1]], data=body)


@dataclass(frozen=True, slots=True)
class ScopedPdu:
    context_engine_id: bytes
    context_name: bytes
    pdu: bytes  # the PDU element, tag to end


def parse_scoped_pdu(plaintext: bytes) -> ScopedPdu:
    """A ScopedPDU; octets after it are ignored (a cipher's padding may follow it)."""
    start, end = _span(plaintext, 0, len(plaintext), SEQUENCE)
    engine_start, engine_end = _span(plaintext, start, end, OCTET_STRING)
    name_start, name_end = _span(plaintext, engine_end, end, OCTET_STRING)
    _, _, pdu_end = read_element(plaintext, name_end, end)
    if pdu_end != end:
        raise HeaderError("octets after the PDU")
    return ScopedPdu(plaintext[engine_start:engine_end], plaintext[name_start:name_end],
                     plaintext[name_end:end])


def encode_unsigned(value: int) -> bytes:
    """A non-negative INTEGER element, shortest form."""
    return encode_element(INTEGER, integer_octets(value))


_VERSION = encode_unsigned(V3)


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
    prefix = _VERSION + global_data + params
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


_EMPTY_AUTH_AND_PRIV = encode_element(OCTET_STRING, b"") * 2
_NO_ERROR = encode_unsigned(0) * 2  # error-status, error-index


class ReportWriter:
    """Unauthenticated Reports (msgFlags 0) of one engine, octet for octet as pysnmp writes them.

    A Report answers datagrams anyone can send, so what it costs is what
    the agent offers a credential-less sender: the parts every Report of
    the engine shares are encoded once here.
    """

    def __init__(self, engine_id: bytes, max_size: int) -> None:
        self._header_tail = (encode_unsigned(max_size) + encode_element(OCTET_STRING, b"\x00")
                             + encode_unsigned(USM))
        self._engine_id = encode_element(OCTET_STRING, engine_id)
        self._default_context = self._engine_id + encode_element(OCTET_STRING, b"")

    def write(self, request: V3Request, boots: int, engine_time: int,
              context: tuple[bytes, bytes] | None, request_id: int, counter: bytes,
              count: int) -> bytes:
        """The Report to `request` carrying `counter` (an OBJECT IDENTIFIER element) = `count`.

        `context`: the contextEngineID and contextName to name, None for
        this engine's ID and the default context.
        """
        element = encode_element
        global_data = element(SEQUENCE, encode_unsigned(request.message_id) + self._header_tail)
        params = element(OCTET_STRING, element(
            SEQUENCE, self._engine_id + encode_unsigned(boots) + encode_unsigned(engine_time)
            + element(OCTET_STRING, request.user) + _EMPTY_AUTH_AND_PRIV))
        varbinds = element(SEQUENCE, element(SEQUENCE, counter + element(
            COUNTER32, integer_octets(count))))
        pdu = element(REPORT, element(INTEGER, integer_octets(request_id)) + _NO_ERROR + varbinds)
        names = self._default_context if context is None else (
            element(OCTET_STRING, context[0]) + element(OCTET_STRING, context[1]))
        return element(SEQUENCE, _VERSION + global_data + params
                       + element(SEQUENCE, names + pdu))

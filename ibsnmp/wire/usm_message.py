"""SNMPv3 messages with USM security parameters, written as octets.

RFC 3412 6 (msgGlobalData), RFC 3414 2.4 (UsmSecurityParameters). Reading
is the one strict reader's (ibsnmp.wire.header.read_header, which keeps
where msgAuthenticationParameters lies: the digest is computed over the
whole message with that field zeroed); this module writes responses and
Reports.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from .ber import element as encode_element
from .ber import COUNTER32, integer_element, length_octets
from .header import (FLAG_AUTH, FLAG_PRIV, FLAG_REPORTABLE, INTEGER, OCTET_STRING, REPORT,
                     SEQUENCE, USM, V3, V3Message)

__all__ = ["FLAG_AUTH", "FLAG_PRIV", "FLAG_REPORTABLE", "Outgoing", "ReportWriter", "Signer",
           "encode_scoped_pdu", "encode_unsigned", "encode_v3", "overhead"]


def encode_unsigned(value: int) -> bytes:
    """A non-negative INTEGER element, shortest form."""
    return integer_element(INTEGER, value)


_VERSION = encode_unsigned(V3)


def encode_scoped_pdu(context_engine_id: bytes, context_name: bytes, pdu: bytes) -> bytes:
    return encode_element(SEQUENCE, encode_element(OCTET_STRING, context_engine_id)
                          + encode_element(OCTET_STRING, context_name) + pdu)


class Outgoing(NamedTuple):
    """What a response message carries besides its (possibly encrypted) data.

    A named tuple: one is built for every answer, Reports to anyone included.
    """

    message_id: int
    max_size: int
    flags: int
    engine_id: bytes
    boots: int
    engine_time: int
    user: bytes
    mac_length: int  # 0 when not authenticated
    priv_params: bytes


_FLAGS = [encode_element(OCTET_STRING, bytes((flags,))) for flags in range(8)]
_MODEL = encode_unsigned(USM)


def _before_data(out: Outgoing) -> tuple[bytes, int]:
    """msgVersion, msgGlobalData and the security parameters; where the MAC's value ends."""
    element = encode_element
    global_data = element(SEQUENCE, encode_unsigned(out.message_id)
                          + encode_unsigned(out.max_size) + _FLAGS[out.flags] + _MODEL)
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


_EMPTY_OCTETS = encode_element(OCTET_STRING, b"")
_KEPT_USER_NAMES = 64
_NO_ERROR = encode_unsigned(0) * 2  # error-status, error-index
_REPORT_FLAGS = (encode_element(OCTET_STRING, b"\x00"),  # noAuthNoPriv, not reportable
                 encode_element(OCTET_STRING, bytes((FLAG_AUTH,))))  # authNoPriv


class Signer(Protocol):
    """A user's prepared HMAC key (ibsnmp.wire.usm_crypto.MacKey)."""

    mac_length: int

    def digest(self, message: bytes) -> bytes: ...


class ReportWriter:
    """The Reports of one engine, octet for octet as pysnmp writes them.

    A Report answers datagrams anyone can send, so what it costs is what
    the agent offers a credential-less sender: the parts every Report of
    the engine shares are encoded once here.
    """

    def __init__(self, engine_id: bytes, max_size: int) -> None:
        max_size_element = encode_unsigned(max_size)
        model = encode_unsigned(USM)
        self._header_tails = tuple(max_size_element + flags + model for flags in _REPORT_FLAGS)
        self._engine_id = encode_element(OCTET_STRING, engine_id)
        self._default_context = self._engine_id + encode_element(OCTET_STRING, b"")
        # The USM parameters after msgAuthoritativeEngineTime, by user name and
        # MAC length: the user, the (zeroed) authentication and the empty
        # privacy parameters.
        self._after_time: dict[tuple[bytes, int], bytes] = {}

    def write(self, request: V3Message, boots: int, engine_time: int,
              context: tuple[bytes, bytes] | None, request_id: int, counter: bytes,
              count: int, signer: Signer | None = None) -> bytes:
        """The Report to `request` carrying `counter` (an OBJECT IDENTIFIER element) = `count`.

        `context`: the contextEngineID and contextName to name, None for
        this engine's ID and the default context. `signer`: the request's
        user's key for an authNoPriv Report (RFC 3414 3.2 step 7b), None
        for an unauthenticated one.
        """
        user = request.user_name or b""
        mac_length = signer.mac_length if signer is not None else 0
        after_time = self._after_time.get((user, mac_length))
        if after_time is None:
            if len(self._after_time) >= _KEPT_USER_NAMES:
                self._after_time.clear()  # names anyone may send: kept few
            after_time = self._after_time[user, mac_length] = (
                bytes((OCTET_STRING, len(user))) + user
                + bytes((OCTET_STRING, mac_length)) + bytes(mac_length) + _EMPTY_OCTETS)
        # Every part but the whole is under 128 octets (engine IDs and user
        # names are at most 32, MACs 48): lengths are one octet, written inline.
        usm = b"".join((self._engine_id, integer_element(INTEGER, boots),
                        integer_element(INTEGER, engine_time), after_time))
        header = (integer_element(INTEGER, request.message_id)
                  + self._header_tails[signer is not None])
        names = self._default_context if context is None else (
            encode_element(OCTET_STRING, context[0]) + encode_element(OCTET_STRING, context[1]))
        scoped = encode_element(SEQUENCE, names + self.pdu(request_id, counter, count))
        message = encode_element(SEQUENCE, b"".join((
            _VERSION, bytes((SEQUENCE, len(header))), header,
            bytes((OCTET_STRING, len(usm) + 2, SEQUENCE, len(usm))), usm, scoped)))
        if signer is None:
            return message
        # The MAC lies before the empty privacy parameters and the scoped PDU.
        mac_at = len(message) - len(scoped) - len(_EMPTY_OCTETS) - mac_length
        return message[:mac_at] + signer.digest(message) + message[mac_at + mac_length:]

    @staticmethod
    def pdu(request_id: int, counter: bytes, count: int) -> bytes:
        """The Report-PDU element carrying `counter` (an OBJECT IDENTIFIER element) = `count`."""
        varbind = counter + integer_element(COUNTER32, count)
        body = b"".join((integer_element(INTEGER, request_id), _NO_ERROR,
                         bytes((SEQUENCE, len(varbind) + 2, SEQUENCE, len(varbind))), varbind))
        return encode_element(REPORT, body)

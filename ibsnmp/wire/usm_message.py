"""SNMPv3 messages with USM security parameters, written as octets.

RFC 3412 6 (msgGlobalData), RFC 3414 2.4 (UsmSecurityParameters). Reading
is the one strict reader's (ibsnmp.wire.header.read_header, which keeps
where msgAuthenticationParameters lies: the digest is computed over the
whole message with that field zeroed); this module writes responses and
Reports.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Protocol

from .ber import element as encode_element
from .ber import LENGTHS as _LENGTH
from .ber import COUNTER32, integer_element
from .request import response_after
from .header import (FLAG_AUTH, FLAG_PRIV, FLAG_REPORTABLE, INTEGER, OCTET_STRING, REPORT,
                     SEQUENCE, USM, V3, V3Message)

__all__ = ["FLAG_AUTH", "FLAG_PRIV", "FLAG_REPORTABLE", "MessageTemplate", "Outgoing",
           "ReportWriter", "Signer", "encode_scoped_pdu", "encode_scoped_response",
           "encode_unsigned", "encode_v3", "frame", "message_template", "overhead"]


def encode_unsigned(value: int) -> bytes:
    """A non-negative INTEGER element, shortest form (OverflowError for a negative one)."""
    octets = value.bit_length() // 8 + 1
    return bytes((INTEGER, octets)) + value.to_bytes(octets, "big")


_VERSION = encode_unsigned(V3)
_VERSION_OCTETS = len(_VERSION)


def encode_scoped_pdu(context_engine_id: bytes, context_name: bytes, pdu: bytes) -> bytes:
    return encode_element(SEQUENCE, encode_element(OCTET_STRING, context_engine_id)
                          + encode_element(OCTET_STRING, context_name) + pdu)


_SEQUENCE, _OCTET_STRING = bytes((SEQUENCE,)), bytes((OCTET_STRING,))


@functools.lru_cache(maxsize=64)
def _context(context_engine_id: bytes, context_name: bytes) -> bytes:
    """A ScopedPDU's contextEngineID and contextName elements (a few contexts
    answer every request)."""
    return (encode_element(OCTET_STRING, context_engine_id)
            + encode_element(OCTET_STRING, context_name))


def encode_scoped_response(context_engine_id: bytes, context_name: bytes, request_id: int,
                           error_status: int, error_index: int, varbinds: bytes) -> bytes:
    """The ScopedPDU of a Response PDU around `varbinds` (the concatenated varbind
    elements): `encode_scoped_pdu` of `ibsnmp.wire.request.encode_response_pdu`,
    with the varbinds copied once."""
    return response_after(_context(context_engine_id, context_name), request_id,
                          error_status, error_index, varbinds)


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


class MessageTemplate:
    """What the messages of one engine to one user at one level share, encoded
    once: `parts` writes the rest of a message around its MAC and data.

    The message is head + MAC + tail + data, the MAC computed over it with
    zeros (`zeros`) in its place (RFC 3414 6.3.1, 7.3.1), so a sealer hashes
    and joins the parts and copies the data once. The data is the ScopedPDU
    element, or the ciphertext when the privacy flag is set (the tail then
    ends with its OCTET STRING's header).
    """

    __slots__ = ("flags", "mac_length", "zeros", "_global_tail", "_before_time", "_to_mac",
                 "_usm_fixed", "_private", "_usm_headers")

    def __init__(self, max_size: int, flags: int, engine_id: bytes, boots: int, user: bytes,
                 mac_length: int) -> None:
        self.flags = flags
        self.mac_length = mac_length
        self.zeros = bytes(mac_length)
        # msgGlobalData after msgID; the USM parameters before msgAuthoritativeEngineTime,
        # and from msgUserName to the MAC's value.
        self._global_tail = encode_unsigned(max_size) + _FLAGS[flags] + _MODEL
        self._before_time = encode_element(OCTET_STRING, engine_id) + encode_unsigned(boots)
        self._to_mac = (encode_element(OCTET_STRING, user) + _OCTET_STRING
                        + _LENGTH[mac_length])
        self._usm_fixed = len(self._before_time) + len(self._to_mac) + mac_length
        self._private = bool(flags & FLAG_PRIV)
        # By the octets of msgAuthoritativeEngineTime and of the salt (what the
        # lengths around the USM parameters depend on): those lengths' octets,
        # the parameters' whole element's size, the salt's identifier and length.
        self._usm_headers: dict[int, tuple[bytes, int, bytes]] = {}

    def _usm_header(self, time_octets: int, salt_octets: int) -> tuple[bytes, int, bytes]:
        salt_header = _OCTET_STRING + _LENGTH[salt_octets]
        usm = self._usm_fixed + 2 + time_octets + len(salt_header) + salt_octets
        usm_header = _SEQUENCE + _LENGTH[usm]
        params = len(usm_header) + usm
        params_header = _OCTET_STRING + _LENGTH[params]
        return params_header + usm_header, len(params_header) + params, salt_header

    def parts(self, message_id: int, engine_time: int, salt: bytes,
              data_length: int) -> tuple[bytes, bytes]:
        """(head, tail) of the message with these values and `data_length` octets of data.

        `message_id` and `engine_time` are not negative (the reader's and the
        clock's); they are written as encode_unsigned writes them, inline.
        """
        id_octets = message_id.bit_length() // 8 + 1
        time_octets = engine_time.bit_length() // 8 + 1
        sizes = time_octets << 16 | len(salt)
        usm = self._usm_headers.get(sizes)
        if usm is None:
            usm = self._usm_headers[sizes] = self._usm_header(time_octets, len(salt))
        usm_headers, params, salt_header = usm
        global_data = 2 + id_octets + len(self._global_tail)  # under 128 octets
        if self._private:
            data_header = _OCTET_STRING + _LENGTH[data_length]
            tail = b"".join((salt_header, salt, data_header))
            data_length += len(data_header)
        else:
            tail = salt_header + salt
        head = b"".join((
            _SEQUENCE, _LENGTH[_VERSION_OCTETS + 2 + global_data + params + data_length],
            _VERSION, bytes((SEQUENCE, global_data, INTEGER, id_octets)),
            message_id.to_bytes(id_octets, "big"), self._global_tail, usm_headers,
            self._before_time, bytes((INTEGER, time_octets)),
            engine_time.to_bytes(time_octets, "big"), self._to_mac))
        return head, tail


@functools.lru_cache(maxsize=256)
def message_template(max_size: int, flags: int, engine_id: bytes, boots: int, user: bytes,
                     mac_length: int) -> MessageTemplate:
    """The MessageTemplate of these values, made once (users who passed
    authentication, and the test's and manager's few: the cache stays small)."""
    return MessageTemplate(max_size, flags, engine_id, boots, user, mac_length)


def frame(out: Outgoing, data_length: int) -> tuple[bytes, bytes]:
    """The message `out` around its MAC's value and its data: (head, tail), see
    MessageTemplate."""
    template = message_template(out.max_size, out.flags, out.engine_id, out.boots, out.user,
                                out.mac_length)
    return template.parts(out.message_id, out.engine_time, out.priv_params, data_length)


def encode_v3(out: Outgoing, data: bytes) -> tuple[bytes, int]:
    """The message with a zeroed MAC, and the offset of that MAC.

    `data` is the ScopedPDU element, or the ciphertext when the privacy flag
    is set (it is then wrapped as an OCTET STRING here).
    """
    head, tail = frame(out, len(data))
    return b"".join((head, bytes(out.mac_length), tail, data)), len(head)


def overhead(out: Outgoing, data_length: int) -> int:
    """Octets a message adds around `data_length` octets of scoped PDU."""
    head, tail = frame(out, data_length)
    return len(head) + out.mac_length + len(tail)


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
        # The last Report's msgSecurityParameters element and what it was
        # written from: a flood of refused requests shares it for a second.
        self._usm_key: tuple[bytes, int, int, int] | None = None
        self._usm = b""

    def _security_parameters(self, user: bytes, mac_length: int, boots: int,
                             engine_time: int) -> bytes:
        """msgSecurityParameters: the OCTET STRING around the USM's SEQUENCE."""
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
        return bytes((OCTET_STRING, len(usm) + 2, SEQUENCE, len(usm))) + usm

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
        key = (user, mac_length, boots, engine_time)
        if key != self._usm_key:
            self._usm_key, self._usm = key, self._security_parameters(*key)
        usm = self._usm
        # The message in one join, its lengths summed here: a Report's integers
        # as pyasn1 writes them (msgID and the count are never negative), every
        # length but the scoped PDU's and the message's under 128 octets (the
        # counters' OIDs are short; a discovery Report echoes the request's
        # context names, of any length).
        message_id = request.message_id
        id_octets = message_id.to_bytes(message_id.bit_length() // 8 + 1, "big")
        header_tail = self._header_tails[signer is not None]
        names = self._default_context if context is None else (
            encode_element(OCTET_STRING, context[0]) + encode_element(OCTET_STRING, context[1]))
        request_id_octets = request_id.to_bytes(request_id.bit_length() // 8 + 1, "big",
                                                signed=True)
        count_octets = count.to_bytes(count.bit_length() // 8 + 1, "big")
        varbind = len(counter) + 2 + len(count_octets)
        pdu = 2 + len(request_id_octets) + len(_NO_ERROR) + 4 + varbind
        scoped = len(names) + 2 + pdu
        scoped_length = _LENGTH[scoped]
        header = 2 + len(id_octets) + len(header_tail)
        message = b"".join((
            _SEQUENCE, _LENGTH[_VERSION_OCTETS + 2 + header + len(usm) + 1 + len(scoped_length)
                               + scoped],
            _VERSION, bytes((SEQUENCE, header, INTEGER, len(id_octets))), id_octets, header_tail,
            usm, _SEQUENCE, scoped_length, names,
            bytes((REPORT, pdu, INTEGER, len(request_id_octets))), request_id_octets, _NO_ERROR,
            bytes((SEQUENCE, varbind + 2, SEQUENCE, varbind)), counter,
            bytes((COUNTER32, len(count_octets))), count_octets))
        if signer is None:
            return message
        # The MAC lies before the empty privacy parameters and the scoped PDU.
        mac_at = (len(message) - 1 - len(scoped_length) - scoped - len(_EMPTY_OCTETS)
                  - mac_length)
        return message[:mac_at] + signer.digest(message) + message[mac_at + mac_length:]

    @staticmethod
    def pdu(request_id: int, counter: bytes, count: int) -> bytes:
        """The Report-PDU element carrying `counter` (an OBJECT IDENTIFIER element) = `count`."""
        varbind = counter + integer_element(COUNTER32, count)
        body = b"".join((integer_element(INTEGER, request_id), _NO_ERROR,
                         bytes((SEQUENCE, len(varbind) + 2, SEQUENCE, len(varbind))), varbind))
        return encode_element(REPORT, body)

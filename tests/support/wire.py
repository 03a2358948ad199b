"""Raw SNMP datagrams for regression tests: build, send, decode.

A finding about the wire is proved with the offending packet itself: the
tests build it here (or hold it as hex), send it to a running agent over
UDP and look at the answer, or at its absence.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Any

from pyasn1.codec.ber import decoder, encoder
from pysnmp.proto import api
from pysnmp.proto.api import v1 as api_v1
from pysnmp.proto.api import v2c as api_v2c

from ibsnmp.wire.ber import (INTEGER, OBJECT_IDENTIFIER, OCTET_STRING, SEQUENCE, element, integer_element,
                             oid_octets)

V1, V2C = 0, 1  # msgVersion values of SNMPv1 and SNMPv2c


def split_address(address: str) -> tuple[str, int]:
    """`127.0.0.1:1161` or `[::1]:1161` -> (host, port)."""
    if address.startswith("["):
        host, _, port = address[1:].partition("]:")
    else:
        host, _, port = address.rpartition(":")
    return host, int(port)


def exchange(address: str, payload: bytes, timeout: float = 1.0) -> bytes | None:
    """Send one datagram and return the first answer, or None after `timeout`."""
    host, port = split_address(address)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        sock.sendto(payload, (host, port))
        try:
            return sock.recv(65535)
        except socket.timeout:
            return None


def community_request(pdu_kind: str, oids: Sequence[str | tuple[int, ...]], *,
                      community: str | bytes = "public", version: int = V2C,
                      request_id: int = 4242, non_repeaters: int = 0,
                      max_repetitions: int = 10,
                      values: Sequence[Any] | None = None) -> bytes:
    """An SNMPv1/v2c request as BER: pdu_kind get, next, bulk or set.

    Requests of NULL values are written here directly (the in-process
    comparisons send tens of thousands; pyasn1 spent as long building them as
    the agent answering); those with values, and names pyasn1 would refuse,
    go through pyasn1 (`pyasn1_community_request`), which tests hold equal."""
    names = [_oid(o) for o in oids]
    if values is not None or not all(_plain_name(name) for name in names):
        return pyasn1_community_request(
            pdu_kind, names, community=community, version=version, request_id=request_id,
            non_repeaters=non_repeaters, max_repetitions=max_repetitions, values=values)
    if pdu_kind == "bulk":
        second, third = non_repeaters, max_repetitions
    else:
        second = third = 0
    listed = b"".join(element(SEQUENCE, element(OBJECT_IDENTIFIER, oid_octets(name)) + b"\x05\x00")
                      for name in names)
    pdu = element(_PDU_TAGS[pdu_kind], integer_element(INTEGER, request_id) + integer_element(INTEGER, second)
                  + integer_element(INTEGER, third) + element(SEQUENCE, listed))
    octets = community.encode() if isinstance(community, str) else community
    return element(SEQUENCE, integer_element(INTEGER, version) + element(OCTET_STRING, octets) + pdu)


_PDU_TAGS = {"get": 0xA0, "next": 0xA1, "set": 0xA3, "bulk": 0xA5}


def _plain_name(name: tuple[int, ...]) -> bool:
    """A name whose BER pyasn1 writes without complaint: two arcs or more, the
    first two combinable, none negative."""
    return len(name) >= 2 and (name[0] == 2 or (name[0] in (0, 1) and name[1] < 40)) \
        and min(name) >= 0


def pyasn1_community_request(pdu_kind: str, oids: Sequence[str | tuple[int, ...]], *,
                             community: str | bytes = "public", version: int = V2C,
                             request_id: int = 4242, non_repeaters: int = 0,
                             max_repetitions: int = 10,
                             values: Sequence[Any] | None = None) -> bytes:
    """`community_request` as pyasn1 encodes it (the reference of the direct one)."""
    mod = api_v1 if version == V1 else api_v2c
    pdu_class = {"get": mod.GetRequestPDU, "next": mod.GetNextRequestPDU,
                 "set": mod.SetRequestPDU}
    if pdu_kind == "bulk":
        pdu = api_v2c.GetBulkRequestPDU()
        api_v2c.apiBulkPDU.set_defaults(pdu)
        api_v2c.apiBulkPDU.set_non_repeaters(pdu, non_repeaters)
        api_v2c.apiBulkPDU.set_max_repetitions(pdu, max_repetitions)
    else:
        pdu = pdu_class[pdu_kind]()
        mod.apiPDU.set_defaults(pdu)
    mod.apiPDU.set_request_id(pdu, request_id)
    vals = values if values is not None else [mod.Null("")] * len(oids)
    mod.apiPDU.set_varbinds(pdu, [(mod.ObjectIdentifier(_oid(o)), v) for o, v in zip(oids, vals)])
    message = mod.Message()
    mod.apiMessage.set_defaults(message)
    mod.apiMessage.set_community(message, community)
    mod.apiMessage.set_pdu(message, pdu)
    return bytes(encoder.encode(message))


def inform_answer(community: str) -> bytes:
    """An SNMPv2c Response, as a receiver answers an inform."""
    pdu = api_v2c.ResponsePDU()
    api_v2c.apiPDU.set_defaults(pdu)
    message = api_v2c.Message()
    api_v2c.apiMessage.set_defaults(message)
    api_v2c.apiMessage.set_community(message, community)
    api_v2c.apiMessage.set_pdu(message, pdu)
    return bytes(encoder.encode(message))


def _oid(oid: str | tuple[int, ...]) -> tuple[int, ...]:
    if isinstance(oid, tuple):
        return oid
    return tuple(int(part) for part in oid.strip(".").split("."))


def decode_response(data: bytes) -> tuple[int, int, int, list[tuple[str, Any]]]:
    """(request-id, error-status, error-index, [(oid, value)]) of a v1/v2c answer."""
    version = int(api.decodeMessageVersion(data))
    mod = api.PROTOCOL_MODULES[version]
    message, rest = decoder.decode(data, asn1Spec=mod.Message())
    assert not rest, "trailing octets after the message"
    pdu = mod.apiMessage.get_pdu(message)
    varbinds = [(str(oid), value) for oid, value in mod.apiPDU.get_varbinds(pdu)]
    return (int(mod.apiPDU.get_request_id(pdu)), int(mod.apiPDU.get_error_status(pdu)),
            int(mod.apiPDU.get_error_index(pdu)), varbinds)


def exchange_many(sock: socket.socket, target: tuple[str, int], payloads: Sequence[bytes],
                  count: int, burst: int = 20) -> int:
    """Send `count` datagrams (cycling through `payloads`) and count the answers.

    They go in bursts of `burst`, each burst's answers read before the next,
    so no more are in flight than the socket buffers hold. A burst stops
    counting at the first answer that does not come within the socket's
    timeout.
    """
    answered = 0
    for start in range(0, count, burst):
        size = min(burst, count - start)
        for i in range(size):
            sock.sendto(payloads[(start + i) % len(payloads)], target)
        for _ in range(size):
            try:
                sock.recv(65535)
            except socket.timeout:
                break
            answered += 1
    return answered

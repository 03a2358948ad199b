"""A mutation fuzz of SNMPv3 datagrams against agent.fast_v3: it never raises, never answers a
bent one but with a Report.

Two layers, in deterministic batches (tests/support/wire_fuzz.py's mutators):

- whole datagrams: captured v3 requests (tests/data/wire-corpus) and
  requests sealed for the test's users, bent anywhere. The MAC covers every
  octet, so the only datagrams that may get a Response are the seeds as
  sealed; the others are dropped or refused with a Report.
- scoped PDUs: plaintext ScopedPDUs bent, then sealed correctly (authNoPriv
  and authPriv), so the decoders behind authentication and decryption see
  them. One is answered only if pyasn1 (pysnmp's decoder, with the agent's
  relaxed GETBULK counts) reads the same octets as a ScopedPDU: this path must not answer what pysnmp would refuse.
"""

from __future__ import annotations

from typing import Any

import pytest
from pyasn1.codec.ber import decoder
from pyasn1.error import PyAsn1Error
from pysnmp.proto.mpmod.rfc3412 import SNMPv3Message
from tests.support.agent_support import V3_USERS, agent_settings, make_backend
from tests.wire.test_fast_v3 import Recorder, get_pdu, request
from tests.support.wire_fuzz import load_corpus, mutants

from ibsnmp.agent.bulk_decoding import relaxed_pdus, with_component
from ibsnmp.agent.engine import build_engine
from ibsnmp.agent.fast_v3 import FastV3
from ibsnmp.agent.pending_counts import PendingCounts
from ibsnmp.agent.prefilter import Reply
from ibsnmp.wire.ber import HeaderError
from ibsnmp.wire.header import GET_BULK, GET_NEXT, REPORT, V3Message, read_header
from ibsnmp.wire.usm_inbound import seal_message
from ibsnmp.wire.usm_message import (FLAG_AUTH, FLAG_PRIV, FLAG_REPORTABLE, Outgoing,
                                     encode_scoped_pdu)

BATCHES = 4
DATAGRAMS_PER_BATCH = 12_500
SCOPED_PER_BATCH = 12_500
# pysnmp's ScopedPDU with the PDUs the agent decodes what it hands to pysnmp's
# responders with (agent.handover: negative GETBULK counts allowed).
AGENT_SCOPED_PDU = with_component(
    SNMPv3Message().componentType["msgData"].asn1Object.componentType["plaintext"].asn1Object,
    "data", relaxed_pdus())


@pytest.fixture(scope="module")
def fast() -> FastV3:
    built = build_engine(agent_settings(), *make_backend(), fabric_summary="unit")
    return FastV3(built.engine, V3_USERS, Recorder(), lambda name: False,
                  PendingCounts(built.engine.get_mib_builder()), max_varbinds=256,
                  handover=built.engine.message_dispatcher.parts.handover)


def answered(fast: FastV3, data: bytes) -> bytes | None:
    """What the agent sends for `data`, read by the strict reader first as the agent does."""
    try:
        message = read_header(data)
    except HeaderError:
        return None
    if not isinstance(message, V3Message):
        return None
    verdict = fast.handle(message, data)
    return verdict.datagram if isinstance(verdict, Reply) else None


def is_report(reply: bytes) -> bool:
    sent = read_header(reply)
    return isinstance(sent, V3Message) and sent.pdu is not None and sent.pdu.tag == REPORT


def sealed_seeds(fast: FastV3) -> dict[str, bytes]:
    return {
        "reader-get": request(fast, "reader"),
        "reader-bulk": request(fast, "reader", pdu=get_pdu(GET_BULK, fields=bytes.fromhex(
            "020100020132"))),
        "admin-next": request(fast, "admin", pdu=get_pdu(GET_NEXT)),
        "authonly-get": request(fast, "authonly", level=2),
    }


@pytest.mark.parametrize("batch", range(BATCHES))
def test_bent_datagrams_are_never_answered(fast: FastV3, batch: int) -> None:
    sealed = sealed_seeds(fast)
    corpus = {name: data for name, data in load_corpus().items() if name.startswith(
        ("v3-", "regress-v3-"))}
    assert len(corpus) >= 5
    valid = set(sealed.values())
    for name in sealed:
        reply = answered(fast, sealed[name])
        assert reply is not None and not is_report(reply), name
    for label, data in mutants({**corpus, **sealed}, DATAGRAMS_PER_BATCH, seed=3000 + batch):
        reply = answered(fast, data)
        assert reply is None or data in valid or is_report(reply), label


def scoped_seeds(fast: FastV3) -> dict[str, bytes]:
    return {
        "get": encode_scoped_pdu(fast.engine_id, b"", get_pdu()),
        "bulk": encode_scoped_pdu(fast.engine_id, b"", get_pdu(
            GET_BULK, fields=bytes.fromhex("020101020164"))),
        "next-context": encode_scoped_pdu(fast.engine_id, b"0002c903000a1b2c",
                                          get_pdu(GET_NEXT)),
    }


def _seal(fast: FastV3, user: str, scoped: bytes, level: int) -> bytes:
    keys = fast.users[user.encode()]  # localized once: 2 MB of hashing per user
    out = Outgoing(message_id=9, max_size=65507,
                   flags=FLAG_REPORTABLE | FLAG_AUTH | (FLAG_PRIV if level == 3 else 0),
                   engine_id=fast.engine_id, boots=fast.clock.boots(),
                   engine_time=fast.clock.time(), user=user.encode(),
                   mac_length=keys.mac.mac_length,
                   priv_params=bytes(8) if level == 3 else b"")
    return seal_message(out, keys, scoped)


def _pysnmp_reads(scoped: bytes, *, rest_allowed: bool) -> bool:
    try:
        _, rest = decoder.decode(scoped, asn1Spec=AGENT_SCOPED_PDU)
    except (PyAsn1Error, TypeError, ValueError):
        return False
    return rest_allowed or not rest


@pytest.mark.parametrize("batch", range(BATCHES))
def test_bent_scoped_pdus_behind_valid_security_are_answered_only_if_well_formed(
        fast: FastV3, batch: int) -> None:
    responses = 0
    for label, scoped in mutants(scoped_seeds(fast), SCOPED_PER_BATCH, seed=4000 + batch):
        user, level = ("reader", 3) if len(scoped) % 2 else ("authonly", 2)
        reply: Any = answered(fast, _seal(fast, user, scoped, level))
        if reply is not None and not is_report(reply):
            responses += 1
            assert _pysnmp_reads(scoped, rest_allowed=level == 3), label
    assert responses  # the mutants still reach the responder sometimes

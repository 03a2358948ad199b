"""The fast responder under mutated requests: it never raises, never answers a malformed one.

The mutation fuzzer of wire_fuzz bends the captured requests of
tests/data/wire-corpus; each mutant goes straight to the responder
function (no socket), in batches of BATCH inputs (IBSNMP_FAST_FUZZ_BATCHES
of them; CI runs the default, 200,000 inputs in all). Whatever it answers
must be a well-formed SNMP message as pyasn1 decodes it, answered with its
own request-id; the first answered mutants of each batch are also sent to
pysnmp and must get the same answer.
"""

from __future__ import annotations

import os

import pytest
from tests.support.fast_diff import TwoPaths, assert_same_response
from pyasn1.codec.ber import decoder
from pysnmp.proto import api
from tests.support.wire import decode_response
from tests.support.wire_fuzz import is_well_formed_ber, load_corpus, mutants

from ibsnmp.agent.bulk_decoding import relaxed_pdus, with_component
from ibsnmp.providers.simulated import SimulatedProvider

# Heavy in process (a minute or so): left out of `make quick`.
pytestmark = pytest.mark.slow

BATCH = 25_000
BATCHES = int(os.environ.get("IBSNMP_FAST_FUZZ_BATCHES", "8"))
COMPARED_PER_BATCH = 50


@pytest.fixture(scope="module")
def paths() -> TwoPaths:
    return TwoPaths(SimulatedProvider("single", 1, watch_interval=0))


def _request_id(paths: TwoPaths, data: bytes) -> int:
    """The request-id of a v1/v2c message pyasn1 decodes whole, with the PDUs the
    agent decodes what it hands to pysnmp's responders with (agent.handover)."""
    version = int(api.decodeMessageVersion(data))
    module = api.PROTOCOL_MODULES[version]
    spec = module.Message()
    if version:
        spec = with_component(spec, "data", relaxed_pdus())
    message, rest = decoder.decode(data, asn1Spec=spec)
    assert not rest
    return int(module.apiPDU.get_request_id(module.apiMessage.get_pdu(message)))


@pytest.mark.parametrize("batch", range(BATCHES))
def test_mutants_get_no_answer_unless_well_formed(paths: TwoPaths, batch: int) -> None:
    fast_reads = paths.dispatcher.parts.fast_reads
    answer = fast_reads.answer
    answered: list[bytes] = []
    for label, data in mutants(load_corpus(), BATCH, seed=14_000 + batch):
        passed = paths.passed(data)  # read by the strict reader, as in the agent
        reply = None if passed is None else answer(data, passed)
        if reply is None:
            continue
        assert is_well_formed_ber(data), label
        assert decode_response(reply)[0] == _request_id(paths, data), label
        if len(answered) < COMPARED_PER_BATCH:
            answered.append(data)
    assert fast_reads.failures == 0
    assert answered, "no mutant was a request the fast path answers"
    for data in answered:
        assert_same_response(data, paths.pysnmp(data), paths.fast(data))

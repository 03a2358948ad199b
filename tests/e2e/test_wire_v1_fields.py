"""An SNMPv1 request's error-status and error-index are ignored, whatever they hold."""

from __future__ import annotations

from tests.support.e2e import ibsnmp_agent
from tests.support.wire import decode_response, exchange

# v1 GET sysDescr.0, request-id 4242, error-status 0, error-index -127 (found
# by the fuzzer: pysnmp's v1 -> v2 conversion raised on it).
NEGATIVE_ERROR_INDEX = bytes.fromhex(
    "302702010004067075626c6963a01a02021092020100020181300e300c06082b060102010101000500")


def test_a_negative_error_index_in_a_request_is_ignored() -> None:
    with ibsnmp_agent() as agent:
        answer = exchange(agent.address, NEGATIVE_ERROR_INDEX, timeout=5)
        assert answer is not None
        request_id, status, index, varbinds = decode_response(answer)
        assert (request_id, status, index) == (4242, 0, 0)
        assert varbinds[0][0] == "1.3.6.1.2.1.1.1.0" and "ibsnmp" in str(varbinds[0][1])
        agent.process.terminate()
        output, _ = agent.process.communicate(timeout=10)
    assert "Traceback" not in output and "failed unexpectedly" not in output

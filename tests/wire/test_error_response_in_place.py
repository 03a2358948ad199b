"""A refused request's Response written in place: the request's octets with
its PDU type and two error fields changed (wire.header.error_response)
equals the Response built field by field, for every request whose error
fields take one content octet each."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from pysnmp.proto.api import v2c as api_v2c

from ibsnmp.wire.header import CommunityMessage, _response, error_response, read_header
from tests.support.wire import V1, V2C, community_request, decode_response

NAMES = st.lists(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=40)
                 .map(lambda tail: (1, 3, 6, 1) + tuple(tail)), min_size=0, max_size=70)
VALUES = st.one_of(st.binary(max_size=300).map(api_v2c.OctetString),
                   st.integers(-2**31, 2**31 - 1).map(api_v2c.Integer))


@settings(max_examples=300, deadline=None)
@given(names=NAMES, data=st.data(), version=st.sampled_from([V1, V2C]),
       community=st.binary(min_size=1, max_size=200), request_id=st.integers(-2**31, 2**31 - 1),
       status=st.sampled_from([2, 6, 16, 17]))
def test_in_place_equals_field_by_field(names: list[tuple[int, ...]], data: st.DataObject,
                                        version: int, community: bytes, request_id: int,
                                        status: int) -> None:
    values = [data.draw(VALUES) for _ in names]
    index = data.draw(st.integers(0, min(len(names), 127)))
    request = community_request("set", names, community=community, version=version,
                                request_id=request_id, values=values)
    message = read_header(request)
    assert isinstance(message, CommunityMessage)
    start, end = message.pdu.varbinds
    built = _response(request, message, status, index, request[start:end])
    assert error_response(request, message, status, index) == built
    assert decode_response(built)[:3] == (request_id, status, index)


def test_without_the_pdu_position_it_is_built_field_by_field() -> None:
    request = community_request("set", [(1, 3, 6, 1, 2, 1, 1, 4, 0)],
                                values=[api_v2c.OctetString(b"x")])
    message = read_header(request)
    assert isinstance(message, CommunityMessage)
    unknown = message._replace(pdu_at=-1)
    assert error_response(request, unknown, 6, 1) == error_response(request, message, 6, 1)
    assert decode_response(error_response(request, message, 6, 1))[1:3] == (6, 1)

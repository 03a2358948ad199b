"""The tests' direct request writer gives pyasn1's octets exactly."""

from __future__ import annotations

import random

import pytest
from tests.support.wire import V1, V2C, community_request, pyasn1_community_request

ARCS = (0, 1, 127, 128, 255, 16383, 16384, 2**31, 2**32 - 1, 2**40)


def _name(rng: random.Random) -> tuple[int, ...]:
    first = rng.choice((0, 1, 2))
    second = rng.randrange(40) if first < 2 else rng.choice((0, 39, 40, 128, 2**20))
    return (first, second, *(rng.choice((*ARCS, rng.randrange(1000))) for _ in range(rng.randrange(130))))


@pytest.mark.parametrize("seed", range(2))
def test_requests_equal_pyasn1s(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(120):
        kind = rng.choice(("get", "next", "bulk", "set"))
        names = [_name(rng) for _ in range(rng.randrange(1, 40))]
        community = rng.choice(("public", "x" * 200, b"p@1", ""))
        version = V2C if kind == "bulk" else rng.choice((V1, V2C))
        request_id = rng.choice((0, 127, 128, -1, -128, -129, 2**31 - 1, -2**31))
        non_repeaters, repetitions = rng.choice((0, 1, 300)), rng.choice((0, 10, 2**31 - 1))
        ours = community_request(kind, names, community=community, version=version,
                                 request_id=request_id, non_repeaters=non_repeaters,
                                 max_repetitions=repetitions)
        theirs = pyasn1_community_request(kind, names, community=community, version=version,
                                          request_id=request_id, non_repeaters=non_repeaters,
                                          max_repetitions=repetitions)
        assert ours == theirs, (kind, names[0], community, version, request_id)


def test_names_pyasn1_refuses_are_refused_alike() -> None:
    for name in ((1, 40, 1), (3, 1), (1,)):
        with pytest.raises(Exception) as ours:
            community_request("get", [name])
        with pytest.raises(Exception) as theirs:
            pyasn1_community_request("get", [name])
        assert type(ours.value) is type(theirs.value)

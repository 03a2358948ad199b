"""A deterministic mutation fuzzer over captured SNMP requests.

The seeds are real requests (tests/data/wire-corpus/*.hex: net-snmp
clients' packets, one per kind, plus the packets of the wire regression
tests); every mutant is one of them bent the way a broken or hostile
sender bends packets: bits flipped, lengths lied about, cut short, grown,
spliced. The same seed number gives the same mutants, so a failure names
its input and can be replayed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.support.paths import DATA_DIR

CORPUS_DIR = DATA_DIR / "wire-corpus"
# The agent configuration the corpus's v3 packets were captured against
# (net-snmp's clients, user reader): engine ID and user must match.
CORPUS_AGENT_CONFIG = """
engine_id = "0x8000000001020304"
[[community]]
name = "public"
[[community]]
name = "private"
access = "write"
[[user]]
name = "reader"
auth = "SHA256"
auth_key = "readerpass1"
priv = "AES"
priv_key = "readerpass2"
"""
MAX_DATAGRAM = 65507
# Octets that make BER length and tag parsers take their edge branches.
EDGE_OCTETS = (0x00, 0x01, 0x7F, 0x80, 0x81, 0x82, 0x84, 0xFE, 0xFF)


def load_corpus(directory: Path = CORPUS_DIR) -> dict[str, bytes]:
    """Every `NAME.hex` file of the corpus, by NAME."""
    return {path.stem: bytes.fromhex(path.read_text().strip())
            for path in sorted(directory.glob("*.hex"))}


def _flip_bits(rng: random.Random, data: bytearray, _: list[bytes]) -> None:
    for _step in range(rng.randint(1, 4)):
        position = rng.randrange(len(data))
        data[position] ^= 1 << rng.randrange(8)


def _edge_octet(rng: random.Random, data: bytearray, _: list[bytes]) -> None:
    data[rng.randrange(len(data))] = rng.choice(EDGE_OCTETS)


def _long_length(rng: random.Random, data: bytearray, _: list[bytes]) -> None:
    # A long-form length claiming far more (or fewer) octets than follow.
    position = rng.randrange(1, len(data))
    data[position:position + 1] = bytes([0x84]) + rng.randbytes(4)


def _truncate(rng: random.Random, data: bytearray, _: list[bytes]) -> None:
    del data[rng.randrange(1, len(data)):]


def _insert(rng: random.Random, data: bytearray, _: list[bytes]) -> None:
    position = rng.randrange(len(data) + 1)
    data[position:position] = rng.randbytes(rng.randint(1, 16))


def _delete(rng: random.Random, data: bytearray, _: list[bytes]) -> None:
    start = rng.randrange(len(data))
    del data[start:start + rng.randint(1, 8)]


def _duplicate(rng: random.Random, data: bytearray, _: list[bytes]) -> None:
    start = rng.randrange(len(data))
    piece = data[start:start + rng.randint(1, 32)]
    position = rng.randrange(len(data) + 1)
    data[position:position] = piece * rng.randint(1, 64)


def _splice(rng: random.Random, data: bytearray, seeds: list[bytes]) -> None:
    other = rng.choice(seeds)
    cut = rng.randrange(len(data))
    data[cut:] = other[rng.randrange(len(other)):]


MUTATORS = (_flip_bits, _edge_octet, _long_length, _truncate, _insert, _delete, _duplicate,
            _splice)


def mutants(seeds: dict[str, bytes], count: int, seed: int,
            finish: Callable[[str, bytes], bytes] | None = None) -> Iterator[tuple[str, bytes]]:
    """`count` (label, datagram) pairs; label names the seed and mutant number.

    `finish(seed name, mutant)` may touch each mutant up last (bench/fuzz_traffic.py
    re-signs authenticated SNMPv3 ones); `seeds` is read at every mutant, so
    a caller may replace a seed's octets while iterating (a v3 seed's engine time).
    """
    rng = random.Random(seed)
    names = sorted(seeds)
    pool = [seeds[name] for name in names]
    for number in range(count):
        name = rng.choice(names)
        data = bytearray(seeds[name])
        for _ in range(rng.randint(1, 3)):
            if len(data) < 2:
                break  # nothing left to bend
            rng.choice(MUTATORS)(rng, data, pool)
        mutant = bytes(data[:MAX_DATAGRAM])
        if finish is not None:
            mutant = finish(name, mutant)
        yield f"{name}#{seed}.{number}", mutant


def is_well_formed_ber(data: bytes) -> bool:
    """True when the datagram is one complete BER value and nothing else.

    A structural check of its own (tags, lengths, constructed contents made
    of whole values; no SNMP schema): a datagram failing it is malformed for
    every SNMP version and must get no answer.
    """
    try:
        return _value_end(data, 0, 0) == len(data)
    except _Malformed:
        return False


class _Malformed(Exception):
    pass


MAX_DEPTH = 64


def _value_end(data: bytes, offset: int, depth: int) -> int:
    """Where the BER value starting at `offset` ends; raises _Malformed."""
    if depth > MAX_DEPTH or offset >= len(data):
        raise _Malformed
    first = data[offset]
    offset += 1
    if first & 0x1F == 0x1F:  # high tag number: base-128 octets
        while True:
            if offset >= len(data):
                raise _Malformed
            offset += 1
            if not data[offset - 1] & 0x80:
                break
    if offset >= len(data):
        raise _Malformed
    length = data[offset]
    offset += 1
    constructed = bool(first & 0x20)
    if length == 0x80:  # indefinite: whole values up to end-of-contents
        if not constructed:
            raise _Malformed
        while data[offset:offset + 2] != b"\0\0":
            offset = _value_end(data, offset, depth + 1)
        return offset + 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0x7F or offset + count > len(data):
            raise _Malformed
        length = int.from_bytes(data[offset:offset + count], "big")
        offset += count
    end = offset + length
    if end > len(data):
        raise _Malformed
    if constructed:
        while offset < end:
            offset = _value_end(data, offset, depth + 1)
        if offset != end:
            raise _Malformed
    return end

"""Answers to repeated read requests, found by the request's octets.

A poll or walk of an unchanged fabric repeats a request with a new request-id. Beside an
answer the walk cache keeps (`Steps.answers`), `Repeats` keeps the request it answered: a
v1/v2c datagram but for the request-id's value octets, with the Response around it
(`request_key`, `response_parts`), or an SNMPv3 scoped PDU's (agent.fast_v3). A repeat is
answered with no varbind decoded: it equals a kept request octet for octet but for a
request-id of the same length that the Response writes as it came, so what the strict reader
checked of the first holds for it. An entry is used only while the walk cache gives the very
answer it was made with (`KeptAnswer`, FastReads.answer_again). No I/O."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, NamedTuple, TypeVar

from ibsnmp.wire.ber import integer_octets

from .config import Community
from .pending_counts import Counter
from .read_view import ReadView

# Bounds of what is kept (octets: of the keys, the Responses' other octets,
# and the answers', which the walk cache holds too while they are valid).
MAX_ENTRIES = 8192
MAX_OCTETS = 8 * 1024 * 1024
# A request longer than this is not kept: repeats are polls and walks of a
# few names, and the key is the whole request.
MAX_REQUEST = 1472
MAX_REQUEST_ID_OCTETS = 4  # any INTEGER of up to four octets is in request-id's range

Key = TypeVar("Key", bound=Hashable)
Entry = TypeVar("Entry")


class KeptAnswer(NamedTuple):
    """Where the walk cache keeps an answer: `answer_key` in the steps of
    `context_name` read through `view` (SNMPv1 GETNEXT's own when
    `skips_counter64`), which must still give `kept` (varbind octets, values
    retrieved) for the answer to hold."""

    context_name: bytes
    view: ReadView
    skips_counter64: bool
    answer_key: bytes
    kept: tuple[bytes, int]

    @property
    def octets(self) -> int:
        return len(self.answer_key) + len(self.kept[0])


class Repeats(Generic[Key, Entry]):
    """Kept requests: at most `max_entries`, taking at most `max_octets` as
    their keepers count them (the oldest go first)."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_octets: int = MAX_OCTETS) -> None:
        self.max_entries = max_entries
        self.max_octets = max_octets
        self._entries: dict[Key, tuple[Entry, int]] = {}
        self._octets = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def octets(self) -> int:
        return self._octets

    def get(self, key: Key) -> Entry | None:
        found = self._entries.get(key)
        return None if found is None else found[0]

    def put(self, key: Key, entry: Entry, octets: int) -> None:
        """Keep `entry` under `key`, taking `octets`, unless that is over the bound alone."""
        self.forget(key)
        if octets > self.max_octets or self.max_entries < 1:
            return
        entries = self._entries
        while entries and (len(entries) >= self.max_entries
                           or self._octets + octets > self.max_octets):
            self.forget(next(iter(entries)))
        entries[key] = (entry, octets)
        self._octets += octets

    def forget(self, key: Key) -> None:
        """Drop the entry of `key`, if any."""
        found = self._entries.pop(key, None)
        if found is not None:
            self._octets -= found[1]

    def clear(self) -> None:
        """Drop every entry (a reload: principals, views or limits may differ)."""
        self._entries.clear()
        self._octets = 0


class Repeat(NamedTuple):
    """How to answer a repeat of a kept v1/v2c request: the Response is
    `head`, the request-id's octets, `middle` and the kept varbind octets;
    `community` is checked again for the sender's address; `counters` count
    the request."""

    community: Community
    answer: KeptAnswer
    head: bytes
    middle: bytes
    counters: tuple[Counter, ...]


def request_id_span(data: bytes) -> tuple[int, int] | None:
    """(first, end) of the request-id's value octets in a v1/v2c message, read
    from the octets before them alone (the lengths of the message, version,
    community and PDU, in short or one- or two-octet form): None when the
    datagram is not of that shape. Nothing else is checked: a datagram is
    a repeat only if it equals a kept one but for these octets."""
    try:
        first = data[1]
        pos = 2 if first < 0x80 else 3 if first == 0x81 else 4 if first == 0x82 else 0
        # version INTEGER (three octets), community OCTET STRING (short form)
        if not pos or data[pos + 4] >= 0x80:
            return None
        pos += 5 + data[pos + 4]
        length = data[pos + 1]  # the PDU's
        pos += 2 if length < 0x80 else 3 if length == 0x81 else 4 if length == 0x82 else 0x10000
        start = pos + 2
        end = start + data[pos + 1]
    except IndexError:
        return None
    if end > len(data):
        return None
    return start, end


def written_as_is(request_id: bytes) -> bool:
    """Whether a Response writes the request-id's value octets as they are
    (ibsnmp.wire.ber.integer_octets: pyasn1's form, the shortest but for -2^(8k-1))."""
    return integer_octets(int.from_bytes(request_id, "big", signed=True)) == request_id


def request_key(data: bytes) -> tuple[bytes, bytes] | None:
    """A v1/v2c datagram's key (its octets but the request-id's value) and its
    request-id's octets; None when it has no place for one. A repeat's
    request-id must also be `written_as_is` (checked once a key is found)."""
    span = request_id_span(data)
    if span is None:
        return None
    start, end = span
    return data[:start] + data[end:], data[start:end]


def response_parts(data: bytes, request_id_element: tuple[int, int], reply: bytes,
                   varbinds_octets: int) -> tuple[bytes, bytes, bytes] | None:
    """(key, head, middle): the key of the v1/v2c request `data` (as
    `request_key` gives it), and `reply`, its Response, whose last
    `varbinds_octets` octets are its varbinds, around its request-id;
    `request_id_element`: where the strict reader found the request-id's
    element in `data` (tag to end). None when `data` is not to be kept: too
    long, a request-id that `request_id_span` does not find there (a length
    or version in another form) or longer than four octets, or one `reply`
    does not echo as it came."""
    asked, answered = request_id_span(data), request_id_span(reply)
    if len(data) > MAX_REQUEST or asked is None or answered is None \
            or asked != (request_id_element[0] + 2, request_id_element[1]) \
            or not 0 < asked[1] - asked[0] <= MAX_REQUEST_ID_OCTETS \
            or reply[answered[0]:answered[1]] != data[asked[0]:asked[1]]:
        return None
    return (data[:asked[0]] + data[asked[1]:], reply[:answered[0]],
            reply[answered[1]:len(reply) - varbinds_octets])

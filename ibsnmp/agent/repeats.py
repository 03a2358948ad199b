"""Answers to repeated v1/v2c read requests, found by the request's octets.

`RepeatedRequests` keeps, beside an answer the walk cache keeps (`Steps.answers`), the
datagram it answered but for the request-id's value octets, and the Response around it: a
repeat (a poll or walk of an unchanged fabric) is answered with no header read, no varbind
decoded and no Response written. A repeat equals a kept datagram octet for octet but for a
request-id of the same length that the Response writes as it came, so what the strict reader
and the header checks found of the first holds for it. FastReads.repeat uses an entry only
while the walk cache gives the very answer it was made with. No I/O.
"""

from __future__ import annotations

from typing import NamedTuple

from ibsnmp.wire.ber import integer_octets

from .config import Community
from .pending_counts import Counter
from .read_view import ReadView

# Bounds of what is kept (octets: of the keys, the Responses' other octets,
# and the answers', which the walk cache holds too while they are valid).
MAX_ENTRIES = 8192
MAX_OCTETS = 8 * 1024 * 1024
# A request longer than this is not kept: repeats are polls and walks of a
# few names, and the key is the whole datagram.
MAX_REQUEST = 1472
MAX_REQUEST_ID_OCTETS = 4  # any INTEGER of up to four octets is in request-id's range


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


class Repeat(NamedTuple):
    """How to answer a repeat of a kept request, and when it still holds.

    `context_name`, `view` and `skips_counter64` find the walk-cache steps
    of the first answer (`community` is checked again for the sender's
    address), where `answer_key` must still give `kept` (varbind octets,
    values retrieved); the Response is `head`, the request-id's octets,
    `middle` and the varbind octets; `counters` count the request."""

    community: Community
    context_name: bytes
    view: ReadView
    skips_counter64: bool
    answer_key: bytes
    kept: tuple[bytes, int]
    head: bytes
    middle: bytes
    counters: tuple[Counter, ...]

    @property
    def octets(self) -> int:
        return len(self.answer_key) + len(self.head) + len(self.middle) + len(self.kept[0])


class RepeatedRequests:
    """Kept requests: at most `max_entries`, taking at most `max_octets` with
    their keys (the oldest go first). `find` and `keep` are the whole use."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_octets: int = MAX_OCTETS) -> None:
        self.max_entries = max_entries
        self.max_octets = max_octets
        self._entries: dict[bytes, Repeat] = {}
        self._octets = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def octets(self) -> int:
        """What the entries take, keys included."""
        return self._octets

    def find(self, data: bytes) -> tuple[Repeat, bytes, bytes] | None:
        """The entry `data` repeats, its key and its request-id's value octets;
        None if it repeats none (or the Response would not write its
        request-id as it came)."""
        span = request_id_span(data)
        if span is None:
            return None
        start, end = span
        key = data[:start] + data[end:]
        entry = self._entries.get(key)
        if entry is None:
            return None
        request_id = data[start:end]
        return (entry, key, request_id) if written_as_is(request_id) else None

    def keep(self, data: bytes, reply: bytes, varbinds_octets: int, entry: Repeat) -> None:
        """Keep `entry` for repeats of the request `data`, answered by `reply`,
        whose last `varbinds_octets` octets are the answer's varbinds: its
        head and middle are taken from `reply` around the request-id. A
        request too long or of another shape is not kept."""
        if len(data) > MAX_REQUEST:
            return
        asked, answered = request_id_span(data), request_id_span(reply)
        if asked is None or answered is None:
            return
        start, end = asked
        if not 0 < end - start <= MAX_REQUEST_ID_OCTETS \
                or reply[answered[0]:answered[1]] != data[start:end]:
            return
        entry = entry._replace(head=reply[:answered[0]],
                               middle=reply[answered[1]:len(reply) - varbinds_octets])
        key = data[:start] + data[end:]
        self.forget(key)
        octets = len(key) + entry.octets
        if octets > self.max_octets:
            return
        entries = self._entries
        while entries and (len(entries) >= self.max_entries
                           or self._octets + octets > self.max_octets):
            self.forget(next(iter(entries)))
        entries[key] = entry
        self._octets += octets

    def forget(self, key: bytes) -> None:
        """Drop the entry of `key`, if any."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._octets -= len(key) + entry.octets

    def clear(self) -> None:
        """Drop every entry (a reload: communities, views or limits may differ)."""
        self._entries.clear()
        self._octets = 0

"""How deeply a JSON text nests, measured on its bytes before it is parsed.

json.loads recurses once per array or object level and raises RecursionError past the
interpreter's limit: a text of `[` would escape every handler that expects a JSONDecodeError.
`depth` and `deeper_than` read the nesting without recursing or building a Python object, with
C-level bytes operations only (no Python loop per byte): they run on every message an
aggregator receives. The text must be UTF-8 (or ASCII), where the bytes of `"`, `\\`, brackets
and braces only ever stand for those characters (in UTF-16 the answer means nothing: decode
it as UTF-8 first). No I/O; never raises on any bytes.
"""

from __future__ import annotations

__all__ = ["depth", "deeper_than"]

_STRUCTURE = b'"[]{}'
_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(_STRUCTURE)))
_AS_BRACKETS = bytes.maketrans(b"{}", b"[]")
# Up to this length, counting the opening brackets costs less than the fixed
# cost of the passes, and mostly finds too few to go on (an event, one
# node's counters); past it, counting is a pass over the text that saves none.
_SHORT = 2048


def depth(text: bytes) -> int:
    """How deeply the arrays and objects of the JSON `text` nest: 0 for a
    scalar, 1 for `[1, "]"]` or `{"a": 1}`, 2 for `{"a": []}`.  Exact for a
    valid JSON text; for other bytes, never less than the depth a JSON
    parser reaches before it stops at their first error.

    In the bracket sequence `_brackets` leaves, one pass of removing every
    adjacent `[]` lowers the deepest level by exactly one (each deepest
    point is such a pair), so the number of passes that remove something
    is the depth."""
    brackets = _brackets(text)
    passes = 0
    while True:
        fewer = brackets.replace(b"[]", b"")
        if len(fewer) == len(brackets):
            return passes
        brackets, passes = fewer, passes + 1


def deeper_than(text: bytes, limit: int) -> bool:
    """Whether `text` nests deeper than `limit`, with at most `limit` + 1
    passes over its brackets: exactly `depth(text) > limit` for a valid
    JSON text; other bytes may be found too deep sooner, but never shallower
    than a parser would go in them."""
    if len(text) <= _SHORT and text.count(b"[") + text.count(b"{") <= limit:
        return False  # too few opening brackets to get there, wherever they are
    brackets = _brackets(text)
    if b"[" * (limit + 1) in brackets:
        return True  # a run of opens deep enough by itself: the attack, found at once
    for _ in range(limit):
        fewer = brackets.replace(b"[]", b"")
        if len(fewer) == len(brackets):
            return False
        brackets = fewer
    return b"[]" in brackets


def _brackets(text: bytes) -> bytes:
    """The brackets of `text` outside its string literals, `{}` as `[]`,
    closed at the end (see `_closed`): escape sequences are removed (`\\\\`,
    then `\\"`, left to right, as a reader pairs them), then everything but
    quotes and brackets, then the string literals with what they hold."""
    first = text.find(b"\\")
    if first >= 0:
        # A run of backslashes pairs up from its left; an odd one left over
        # escapes what follows it, which matters only for a quote.  Only
        # the span from the first backslash to the byte after the last is
        # searched: our records have few, in a node description at most (a
        # text full of them costs two more passes over it).
        end = text.rfind(b"\\") + 2
        escaped = text[first:end].replace(b"\\\\", b"").replace(b'\\"', b"")
        text = text[:first] + escaped + text[end:]
    marks = text.translate(None, _NOT_STRUCTURE)
    brackets = marks.translate(_AS_BRACKETS, b'"')
    # Quotes alternate, opening and closing.  When no string holds a
    # bracket, every run of quotes between two brackets is even (its
    # strings whole): counting `""` left to right then finds half of all
    # the quotes, and an odd run finds fewer.
    if 2 * marks.count(b'""') == len(marks) - len(brackets):
        return _closed(brackets)
    # Some string holds a bracket (or the quotes do not pair up).  Taking
    # out two quotes in a row leaves every bracket on its side of the
    # quotes; then keep what lies between a closing quote and the next
    # opening one (few pieces: the strings that hold brackets).
    rest = marks.replace(b'""', b"")
    return _closed(b"".join(rest.split(b'"')[::2]).translate(_AS_BRACKETS))


def _closed(brackets: bytes) -> bytes:
    """`brackets` with as many `]` added as it has unclosed `[`: then every
    deepest point is followed by a `]`, which the passes rely on (adding
    closings at the end lowers no depth)."""
    unclosed = 2 * brackets.count(b"[") - len(brackets)
    return brackets + b"]" * unclosed if unclosed > 0 else brackets

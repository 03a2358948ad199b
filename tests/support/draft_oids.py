"""An independent reading of (descriptor, OID) pairs from a draft's module text.

This does not use pysmi: it strips strings and comments, finds every
`descriptor MACRO ... ::= { parent n ... }` and resolves parents by name, so
the compiled modules can be checked against what the drafts say.
"""

from __future__ import annotations

import re

DEFINING_MACROS = (
    "MODULE-IDENTITY", "OBJECT-IDENTITY", "OBJECT-TYPE", "NOTIFICATION-TYPE",
    "OBJECT-GROUP", "NOTIFICATION-GROUP", "MODULE-COMPLIANCE", "AGENT-CAPABILITIES",
    "OBJECT IDENTIFIER",
)
WELL_KNOWN = {
    "iso": (1,),
    "org": (1, 3),
    "dod": (1, 3, 6),
    "internet": (1, 3, 6, 1),
    "mib-2": (1, 3, 6, 1, 2, 1),
    "experimental": (1, 3, 6, 1, 3),
    "enterprises": (1, 3, 6, 1, 4, 1),
    "infinibandMIB": (1, 3, 6, 1, 3, 117),
}
ASSIGNMENT = re.compile(
    r"(?<![\w-])([a-z][\w-]*)\s+(?:" + "|".join(DEFINING_MACROS) + r")\b"
    r"(?:(?!::=).)*?::=\s*\{\s*([\w-]+)((?:\s+\d+)+|\s+\w+)\s*\}",
    re.S,
)


def strip_strings_and_comments(text: str) -> str:
    """Blank out quoted strings and comments, reading left to right as ASN.1 does."""
    # A comment runs from "--" to the next "--" or the end of its line.
    token = re.compile(r'"[^"]*"|--.*?(?:--|$)', re.M | re.S)
    return token.sub(lambda m: '""' if m.group().startswith('"') else " ", text)


def assignments(text: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """descriptor -> (parent descriptor, sub-identifiers as written)."""
    found: dict[str, tuple[str, tuple[str, ...]]] = {}
    for match in ASSIGNMENT.finditer(strip_strings_and_comments(text)):
        descriptor, parent, arcs = match.groups()
        found[descriptor] = (parent, tuple(arcs.split()))
    return found


def resolve(
    found: dict[str, tuple[str, tuple[str, ...]]],
    parent_aliases: dict[str, str] | None = None,
    arc_values: dict[str, int] | None = None,
) -> dict[str, tuple[int, ...]]:
    """Resolve every descriptor to a numeric OID.

    `parent_aliases` maps a parent name the draft misspelt to the descriptor
    it means; `arc_values` gives a number for an arc the draft left symbolic.
    """
    aliases = parent_aliases or {}
    values = arc_values or {}
    resolved: dict[str, tuple[int, ...]] = {}

    def oid_of(name: str, seen: tuple[str, ...] = ()) -> tuple[int, ...]:
        name = aliases.get(name, name)
        if name in resolved:
            return resolved[name]
        if name in WELL_KNOWN:
            return WELL_KNOWN[name]
        if name in seen or name not in found:
            raise KeyError(f"cannot resolve {name!r}")
        parent, arcs = found[name]
        numbers = tuple(values[a] if a in values else int(a) for a in arcs)
        resolved[name] = oid_of(parent, seen + (name,)) + numbers
        return resolved[name]

    for descriptor in found:
        oid_of(descriptor)
    return {name: resolved[name] for name in found}

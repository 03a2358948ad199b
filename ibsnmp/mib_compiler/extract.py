"""Turn an Internet-Draft's text into the raw text of the MIB module it holds.

The drafts reach us in several layouts: paginated (running headers and
footers between pages), paginated with indentation lost, an idnits report
(the draft collapsed into long lines with the original line numbers left in
them) and a single collapsed line. Each layout is undone here; nothing in
the module text itself is corrected (that is the job of the errata patches).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

MAX_LINE_WIDTH = 90  # a draft line is 72 columns; idnits may pad it
MAX_LINE_GAP = 60  # blank lines and page breaks an idnits report leaves out

MODULE_START = re.compile(r"([A-Z][A-Za-z0-9-]*)\s+DEFINITIONS\s*::=\s*BEGIN")

# A page footer: "Expires December 2003   [Page 7]" or "Expires: April 2004 [Page 5 ]".
PAGE_FOOTER = re.compile(r"\[Page\s+\d+\s*\]\s*$")
# A running header of the page that follows a footer.
PAGE_HEADER = re.compile(r"^\s*Internet[- ]Draft\b", re.IGNORECASE)
# A page break folded into a collapsed line:
# "Strahm Internet Draft- Expires April 2002 6 Infiniband Connection MIB Oct 2001".
FOLDED_PAGE_BREAK = re.compile(
    r"\s*\S+ Internet[- ]Draft\s*-\s*Expires \w+ \d{4} \d+ .{1,60}? "
    r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\w* \d{4}(?=\s)"
)

# Clause keywords that begin a line in every well-formed module. Used to
# restore line structure where a draft was collapsed into one line.
CLAUSE_KEYWORDS = (
    "IMPORTS", "LAST-UPDATED", "ORGANIZATION", "CONTACT-INFO", "DESCRIPTION",
    "REVISION", "SYNTAX", "MAX-ACCESS", "STATUS", "INDEX", "AUGMENTS",
    "REFERENCE", "DISPLAY-HINT", "UNITS", "DEFVAL", "OBJECTS", "MODULE",
    "MANDATORY-GROUPS", "GROUP", "NOTIFICATIONS", "END",
)
# What follows a descriptor (lower case) or a type name (upper case) that
# opens a definition.
VALUE_MACROS = (
    "MODULE-IDENTITY", "OBJECT-TYPE", "OBJECT-IDENTITY", "NOTIFICATION-TYPE",
    "OBJECT-GROUP", "NOTIFICATION-GROUP", "MODULE-COMPLIANCE", "OBJECT IDENTIFIER",
)
TYPE_ASSIGNMENTS = ("TEXTUAL-CONVENTION", "SEQUENCE")


class ExtractError(ValueError):
    """The text holds no MIB module, or its layout cannot be undone."""


@dataclass(frozen=True)
class ExtractedModule:
    name: str
    text: str
    layout: str


def extract(draft_text: str) -> ExtractedModule:
    """Return the MIB module held by a draft, whatever its layout."""
    layout = detect_layout(draft_text)
    if layout == "idnits":
        text = _from_numbered_lines(draft_text)
    elif layout == "collapsed":
        text = _from_collapsed_line(draft_text)
    else:
        text = _from_paged_text(draft_text)
    match = MODULE_START.search(text)
    if match is None:  # pragma: no cover - detect_layout already found one
        raise ExtractError("no 'NAME DEFINITIONS ::= BEGIN' in the text")
    return ExtractedModule(match.group(1), text, layout)


def extract_file(path: Path) -> ExtractedModule:
    raw = path.read_bytes()
    try:
        draft_text = raw.decode("utf-8")
    except UnicodeDecodeError:
        draft_text = raw.decode("latin-1")
    try:
        return extract(draft_text)
    except ExtractError as exc:
        raise ExtractError(f"{path}: {exc}") from None


def detect_layout(draft_text: str) -> str:
    if MODULE_START.search(draft_text) is None:
        raise ExtractError("no 'NAME DEFINITIONS ::= BEGIN' in the text")
    lines = draft_text.splitlines()
    if len(lines) > 20:
        return "paged"
    if _numbered_line_start(draft_text) is not None:
        return "idnits"
    return "collapsed"


# --- paginated drafts -------------------------------------------------------

def _module_start(text: str) -> re.Match[str]:
    """Where the module starts in text that detect_layout found one in."""
    match = MODULE_START.search(text)
    assert match is not None
    return match


def _from_paged_text(draft_text: str) -> str:
    lines = [line.rstrip() for line in draft_text.replace("\f", "\n").splitlines()]
    lines = _drop_page_breaks(lines)
    start = next((i for i, line in enumerate(lines) if MODULE_START.search(line)), None)
    if start is None:
        raise ExtractError("module start is split across a page break")
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].strip() == "END"), None
    )
    if end is None:
        raise ExtractError("no line holding only 'END' after the module start")
    body = lines[start : end + 1]
    body[0] = body[0][_module_start(body[0]).start() :]
    return _dedent("\n".join(body)) + "\n"


def _drop_page_breaks(lines: list[str]) -> list[str]:
    """Remove every footer, the header after it and the blank lines around them."""
    kept: list[str] = []
    i = 0
    while i < len(lines):
        if not PAGE_FOOTER.search(lines[i]):
            kept.append(lines[i])
            i += 1
            continue
        while kept and not kept[-1].strip():
            kept.pop()
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i < len(lines) and PAGE_HEADER.search(lines[i]):
            i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        # A blank line stood between the definitions cut by the page break
        # often enough that keeping one is the faithful choice.
        if kept and _ends_definition(kept[-1]):
            kept.append("")
    return kept


def _ends_definition(line: str) -> bool:
    return bool(re.search(r"::=\s*\{[^}]*\}\s*$", line))


def _dedent(text: str) -> str:
    lines = text.splitlines()
    widths = [len(line) - len(line.lstrip(" ")) for line in lines if line.strip()]
    cut = min(widths, default=0)
    return "\n".join(line[cut:] if line.strip() else "" for line in lines)


# --- idnits reports: one long line with the draft's line numbers inside ----

def _numbered_line_start(draft_text: str) -> int | None:
    """Line number just before the module start, when the text carries them."""
    match = _module_start(draft_text)
    before = re.search(r"(?:^|\s)(\d+)\s+$", draft_text[: match.start()])
    if before is None:
        return None
    number = int(before.group(1))
    after = draft_text[match.end() : match.end() + 400]
    following = {int(n) for n in re.findall(r"\s(\d+)\s", after)}
    if not any(number < n <= number + 3 for n in following):
        return None
    return number


def _from_numbered_lines(draft_text: str) -> str:
    """Cut the text at each embedded line number; numbers run upwards with gaps."""
    match = _module_start(draft_text)
    number = _numbered_line_start(draft_text)
    assert number is not None
    rest = draft_text[match.start() :]
    lines: list[str] = []
    line_start = 0
    for token in re.finditer(r"(?<=\s)(\d+)(?=\s|$)", rest):
        value = int(token.group(1))
        # A line of a draft is at most 72 columns; a number in range further
        # on than that is content, not a line marker.
        if not number < value <= number + MAX_LINE_GAP:
            continue
        if token.start() - line_start > MAX_LINE_WIDTH:
            continue
        lines.append(rest[line_start : token.start()].strip())
        if value > number + 1:
            lines.append("")  # the report dropped blank lines here
        number, line_start = value, token.end()
        if lines[-1] == "END" or lines[-2:-1] == ["END"]:
            break
    else:
        lines.append(rest[line_start:].strip())
    end_index = next((i for i, line in enumerate(lines) if line == "END"), None)
    if end_index is None:
        raise ExtractError("no 'END' line found after the module start")
    return "\n".join(lines[: end_index + 1]) + "\n"


# --- one collapsed line ------------------------------------------------------

def _from_collapsed_line(draft_text: str) -> str:
    match = _module_start(draft_text)
    text = FOLDED_PAGE_BREAK.sub(" ", draft_text[match.start() :])
    end = _end_token(text)
    if end is None:
        raise ExtractError("no 'END' token after the module start")
    return _restore_lines(text[: end + 3]) + "\n"


def _end_token(text: str) -> int | None:
    """Offset of the module's closing END, skipping quoted text."""
    in_string = False
    for match in re.finditer(r'"|\bEND\b', text):
        if match.group() == '"':
            in_string = not in_string
        elif not in_string:
            return match.start()
    return None


def _restore_lines(text: str) -> str:
    """Break a collapsed module into lines before every clause and definition."""
    pieces = re.split(r'("[^"]*")', text)
    out: list[str] = []
    for index, piece in enumerate(pieces):
        if index % 2:  # quoted text stays as it is
            out.append(piece)
            continue
        out.append(_break_clauses(piece))
    lines = [re.sub(r"[ \t]+", " ", line).strip() for line in "".join(out).split("\n")]
    return "\n".join(line for line in lines if line)


def _break_clauses(code: str) -> str:
    code = re.sub(r"\s(--)", r"\n\1", code)
    keywords = "|".join(re.escape(k) for k in CLAUSE_KEYWORDS)
    code = re.sub(rf"\s(?=(?:{keywords})\b(?!-))", "\n", code)
    macros = "|".join(re.escape(m) for m in VALUE_MACROS)
    code = re.sub(rf"\s(?=[a-z][\w-]*\s+(?:{macros})\b)", "\n", code)
    types = "|".join(TYPE_ASSIGNMENTS)
    code = re.sub(rf"\s(?=[A-Z][\w-]*\s+::=\s*(?:{types})\b)", "\n", code)
    code = re.sub(r"(?<!IDENTIFIER)\s(?=::=\s*\{)", "\n", code)
    code = re.sub(r"(\bFROM\s+[A-Za-z][\w-]*;?)\s", r"\1\n", code)
    return code

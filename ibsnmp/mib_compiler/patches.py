"""Errata as unified diffs: write them from raw/clean pairs, apply them strictly.

A patch that does not apply exactly (context or removed lines differ) is an
error: errata must describe the extracted text they were made from.
"""

from __future__ import annotations

import difflib
import re

HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(ValueError):
    """A patch is malformed or does not match the text it is applied to."""


def make_patch(raw: str, clean: str, module: str) -> str:
    """Unified diff turning the extracted `raw` text into the `clean` module."""
    lines = difflib.unified_diff(
        raw.splitlines(keepends=True),
        clean.splitlines(keepends=True),
        fromfile=f"extracted/{module}",
        tofile=f"mib_sources/{module}",
        n=3,
    )
    return "".join(_terminated(line) for line in lines)


def _terminated(line: str) -> str:
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


def apply_patch(text: str, patch: str) -> str:
    """Apply a unified diff to `text`; every hunk must match exactly."""
    source = text.splitlines(keepends=True)
    result: list[str] = []
    cursor = 0  # next unread line of `source`
    patch_lines = patch.splitlines(keepends=True)
    index = 0
    while index < len(patch_lines):
        header = HUNK_HEADER.match(patch_lines[index])
        index += 1
        if header is None:
            continue
        old_start = int(header.group(1))
        old_count = int(header.group(2) or "1")
        start = old_start - 1 if old_count else old_start
        if start < cursor:
            raise PatchError(f"hunk at line {old_start} overlaps the previous one")
        result.extend(source[cursor:start])
        cursor = start
        index = _apply_hunk(source, patch_lines, index, cursor, result, old_start)
        cursor += old_count
    result.extend(source[cursor:])
    return "".join(result)


def _apply_hunk(
    source: list[str],
    patch_lines: list[str],
    index: int,
    cursor: int,
    result: list[str],
    old_start: int,
) -> int:
    """Copy one hunk into `result`; return the index of the line after it."""
    while index < len(patch_lines) and not HUNK_HEADER.match(patch_lines[index]):
        line = patch_lines[index]
        index += 1
        if line.startswith("\\"):
            _strip_newline(result)
            continue
        tag, body = line[:1], line[1:]
        if tag in (" ", "-"):
            expected = source[cursor] if cursor < len(source) else None
            if expected is None or expected.rstrip("\n") != body.rstrip("\n"):
                raise PatchError(
                    f"hunk starting at line {old_start}: line {cursor + 1} is "
                    f"{expected!r}, the patch expects {body!r}"
                )
            if tag == " ":
                result.append(expected)
            cursor += 1
        elif tag == "+":
            result.append(body)
        else:
            raise PatchError(f"unexpected line in hunk at line {old_start}: {line!r}")
    return index


def _strip_newline(result: list[str]) -> None:
    if result and result[-1].endswith("\n"):
        result[-1] = result[-1][:-1]

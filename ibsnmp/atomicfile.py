"""Replacing a file so that a crash leaves the old one or the new one, whole.

A process killed between creating its temporary file and renaming it
leaves the temporary behind; `remove_stale_temporaries` clears those at
the next start.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path

TEMP_SUFFIX = ".tmp"
# mkstemp's random part: 8 characters from this alphabet.
_RANDOM_PART = r"[a-z0-9_]{8}"
# Files modified before this process loaded the module cannot be one it is writing.
_LOADED_AT = time.time()


def _temp_prefix(name: str) -> str:
    return f".{name}."


def write_atomically(path: Path, data: bytes) -> None:
    """Write `data` to a temporary file beside `path` (mode 0600), fsync it,
    rename it over `path` and fsync the directory. OSError on failure, with
    `path` left as it was and no temporary file behind."""
    directory = path.parent
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path.name), suffix=TEMP_SUFFIX,
                               dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def temporary_name(name_pattern: str) -> re.Pattern[str]:
    """The names `write_atomically` gives the temporaries of files whose names
    match `name_pattern` (a regular expression)."""
    # _temp_prefix, the random part, TEMP_SUFFIX.
    return re.compile(rf"\.(?:{name_pattern})\.{_RANDOM_PART}{re.escape(TEMP_SUFFIX)}")


def remove_stale_temporaries(directory: Path, name_pattern: str,
                             older_than: float = _LOADED_AT) -> list[Path]:
    """Delete the temporaries of `name_pattern` files in `directory` last
    modified before `older_than` (by default: before this process started
    writing); other files, and temporaries another process may be writing
    now, stay. A symbolic link with a temporary's name is deleted itself,
    never followed (write_atomically makes none: it is debris or planted).
    Returns what was deleted."""
    pattern = temporary_name(name_pattern)
    removed: list[Path] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if not pattern.fullmatch(entry.name) or not _file_or_link(entry):
                continue
            try:
                if entry.stat(follow_symlinks=False).st_mtime >= older_than:
                    continue
                os.unlink(entry.path)
            except FileNotFoundError:
                continue  # removed meanwhile
            removed.append(Path(entry.path))
    return removed


def _file_or_link(entry: os.DirEntry[str]) -> bool:
    """A regular file or a symbolic link (to anything), judged without following links."""
    return entry.is_file(follow_symlinks=False) or entry.is_symlink()

"""What C code writes on file descriptor 2 during one call, kept off the terminal.

libibumad, and ibsim's preload library in its place, print warnings with
fprintf(stderr) (`ibwarn: [PID] get_abi_version: ...`); its debug level
does not silence them. ibsnmp says itself what is wrong (ibsnmp.mad.diagnose),
so around the calls that print, descriptor 2 points at a temporary file
and the text is handed back, for the debug log.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["call_capturing_stderr"]

_T = TypeVar("_T")
# Descriptor 2 is the process's: one redirection at a time, or a second
# one would save the first's file as "the terminal" and restore it.
_lock = threading.Lock()


def call_capturing_stderr(call: Callable[[], _T]) -> tuple[_T, str]:
    """`call()`'s result and what was written on descriptor 2 while it ran
    (decoded, stripped). The redirection is the process's: what another
    thread writes there meanwhile is taken too. Without a descriptor 2
    `call` runs as it is; an exception from `call` passes, descriptor 2 restored."""
    with _lock:
        if sys.stderr is not None:
            sys.stderr.flush()  # Python's pending text goes where it was meant to
        try:
            saved = os.dup(2)
        except OSError:
            return call(), ""
        try:
            with tempfile.TemporaryFile() as sink:
                os.dup2(sink.fileno(), 2)
                try:
                    result = call()
                finally:
                    os.dup2(saved, 2)
                sink.seek(0)
                said = sink.read()
        finally:
            os.close(saved)
    return result, said.decode(errors="replace").strip()

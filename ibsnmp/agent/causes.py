"""One-line causes for log lines about remote input (never a traceback there)."""

from __future__ import annotations

import sys

MAX_MESSAGE = 120


def current_exception_summary() -> str:
    """`Type: message` of the exception being handled, short."""
    exc = sys.exc_info()[1]
    return f"{type(exc).__name__}: {str(exc)[:MAX_MESSAGE]}" if exc is not None else "unknown"

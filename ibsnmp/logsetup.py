"""Logging for the long-running commands: text for terminals, JSON for collectors.

Both go to standard output, one record per line (containers and journald
collect stdout); JSON records carry time, level, logger and message, and
the exception text when there is one.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable
from datetime import datetime, timezone

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(
                timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(verbose: bool = False, log_format: str = "text") -> None:
    """Send every record at INFO (DEBUG if verbose) and above to stdout."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter() if log_format == "json" else
                         logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)


def print_banner(lines: Iterable[str], log_format: str) -> None:
    """The start-up banner: plain lines for a terminal; log records in JSON mode,
    so that every line a collector reads from standard output parses."""
    if log_format != "json":
        for line in lines:
            print(line, flush=True)
        return
    log = logging.getLogger("ibsnmp.run")
    for line in lines:
        log.info("%s", line.strip())

"""Waiting on a condition, never on the clock alone."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], T | None], timeout: float, what: str,
             interval: float = 0.1) -> T:
    """The first truthy value of `condition()`, polled until `timeout` seconds
    have passed; AssertionError naming `what` if none came."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)

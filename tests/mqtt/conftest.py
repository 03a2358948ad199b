"""Fixtures of the MQTT tests: a stack of what a test starts, and a broker of its own."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.mosquitto import Mosquitto


@pytest.fixture
def stack() -> Iterator[contextlib.ExitStack]:
    """Processes and brokers a test starts, stopped when it ends."""
    with contextlib.ExitStack() as stack:
        yield stack


@pytest.fixture
def broker(tmp_path: Path, stack: contextlib.ExitStack) -> Mosquitto:
    """A mosquitto of the test's own, anonymous, on a free port."""
    broker = Mosquitto(tmp_path).start()
    stack.callback(broker.stop)
    return broker

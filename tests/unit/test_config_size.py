"""A config file over 1 MiB is refused with one line, before it is read:
its size is checked first, and at most one byte over the cap is ever read
(a file that grows after the check is not read to its end either)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from ibsnmp.agent.config import MAX_CONFIG_BYTES, ConfigError, load_config

CAP = MAX_CONFIG_BYTES


def refusal(path: Path) -> str:
    return f"{path}: too large: over {CAP} bytes (1 MiB), the most a config file may hold"


def refused(action: Callable[[], object]) -> tuple[str, int]:
    """The ConfigError `action` must raise, and the most memory Python held meanwhile."""
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError) as caught:
            action()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return str(caught.value), peak


def test_a_file_of_exactly_the_cap_loads(tmp_path: Path) -> None:
    path = tmp_path / "ibsnmp.toml"
    head = b'[system]\nsysLocation = "rack 7"\n'
    path.write_bytes(head + b"#" * (CAP - len(head) - 1) + b"\n")
    assert load_config(path).system.sys_location == "rack 7"


@pytest.mark.parametrize("size", [CAP + 1, 1 << 30], ids=["one-byte-over", "one-GiB"])
def test_a_file_over_the_cap_is_refused_unread(tmp_path: Path, size: int) -> None:
    path = tmp_path / "ibsnmp.toml"
    with path.open("wb") as file:
        file.truncate(size)  # sparse: nothing written, much to read
    message, peak = refused(lambda: load_config(path))
    assert message == refusal(path)
    assert peak < CAP // 4  # not even the first MiB was read


def test_a_file_that_grew_after_the_size_check_is_read_only_to_the_cap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ibsnmp.toml"
    path.write_bytes(b"#" * (4 * CAP))
    monkeypatch.setattr("ibsnmp.agent.config.os.fstat", lambda _fd: SimpleNamespace(st_size=0))
    message, peak = refused(lambda: load_config(path))
    assert message == refusal(path)
    assert peak < 2 * CAP  # the cap and one byte, not the 4 MiB

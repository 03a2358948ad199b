"""--sm-key-file: the SM_Key the live provider gives the SA, read as a secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from ibsnmp.agent.config import ConfigError
from ibsnmp.cli import parse
from ibsnmp.commands.run import _sm_key as sm_key_of


def _sm_key(path: str | None) -> int:
    return sm_key_of(parse(["run", "--provider", "live"] + (["--sm-key-file", path] if path else []), {}))


def key_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "sm_key"
    path.write_text(text)
    path.chmod(0o600)
    return str(path)


def test_no_file_is_key_zero_and_a_file_holds_hex_or_decimal(tmp_path: Path) -> None:
    assert _sm_key(None) == 0
    assert _sm_key(key_file(tmp_path, "0x0000000000000001\n")) == 1
    assert _sm_key(key_file(tmp_path, "18446744073709551615")) == (1 << 64) - 1


def test_an_error_names_the_config_key_that_gave_the_file(tmp_path: Path) -> None:
    config = tmp_path / "ibsnmp.toml"
    config.write_text(f'[provider]\nkind = "live"\nsm_key_file = "{key_file(tmp_path, "x")}"\n')
    with pytest.raises(ConfigError, match=f"^{config}: provider.sm_key_file: .* does not hold a number"):
        sm_key_of(parse(["run", "--config", str(config)], {}))


@pytest.mark.parametrize("text, why", [
    ("not-a-key\n", "does not hold a number"),
    ("0x10000000000000000\n", "has 64 bits"),
    ("", "is empty"),
])
def test_a_bad_key_file_is_a_clear_error_without_the_key(tmp_path: Path, text: str,
                                                          why: str) -> None:
    with pytest.raises(ConfigError, match=why) as raised:
        _sm_key(key_file(tmp_path, text))
    assert "--sm-key-file" in str(raised.value)
    assert text.strip() == "" or text.strip() not in str(raised.value)  # the secret stays out

"""The state directory at start: a stale temporary that is a symbolic link
is removed like a file, the link itself and never what it points to; an
existing directory its group or others may use gets one WARNING naming it,
its mode and the fix."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

from ibsnmp.statedir import prepare_state_dir

STATE_FILE = "ibsnmp-state.json"
AN_HOUR_AGO = time.time() - 3600


def private_dir(path: Path) -> Path:
    path.mkdir()
    os.chmod(path, 0o700)  # whatever the umask
    return path


def old_link(link: Path, target: Path) -> Path:
    link.symlink_to(target)
    os.utime(link, (AN_HOUR_AGO, AN_HOUR_AGO), follow_symlinks=False)
    return link


def test_stale_temporary_symlinks_are_removed_never_followed(tmp_path: Path) -> None:
    state = private_dir(tmp_path / "state")
    victim = tmp_path / "victim.json"
    victim.write_text("keep me")
    elsewhere = private_dir(tmp_path / "elsewhere")
    (elsewhere / "inside").write_text("keep me too")
    links = [old_link(state / f".{STATE_FILE}.abcd_123.tmp", victim),
             old_link(state / f".{STATE_FILE}.efgh_456.tmp", elsewhere),
             old_link(state / f".{STATE_FILE}.ijkl_789.tmp", tmp_path / "absent")]
    lookalike = old_link(state / f"{STATE_FILE}.abcd_123.tmp", victim)  # no leading dot
    prepare_state_dir(state)
    assert not any(os.path.lexists(link) for link in links)
    assert lookalike.is_symlink()
    assert victim.read_text() == "keep me"
    assert (elsewhere / "inside").read_text() == "keep me too"


@pytest.mark.parametrize("mode", [0o755, 0o750, 0o701], ids=["0755", "0750", "0701"])
def test_a_directory_others_may_use_gets_one_warning(tmp_path: Path, mode: int,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "ibsnmp.statedir")
    state = private_dir(tmp_path / "state")
    os.chmod(state, mode)
    assert prepare_state_dir(state) == state
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"state directory {state} is open to its group or others "
                        f"(mode {mode:04o}); chmod 700 it: its files hold the SNMPv3 "
                        "engine state and what SETs configured"]


def test_a_private_or_new_directory_gets_no_warning(tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "ibsnmp.statedir")
    prepare_state_dir(private_dir(tmp_path / "existing"))
    prepare_state_dir(tmp_path / "new" / "state")
    assert not caplog.records

"""Where the agent keeps what must survive a restart.

One directory holds the SNMPv3 engine state (engine ID, snmpEngineBoots) and what SETs
configured, as net-snmp's snmpd keeps both in /var/lib/snmp: `--state-dir DIR`, else
`default_state_dir`. It is created with mode 0700: the files in it decide replay protection
(snmpEngineBoots) and the agent's configuration. An existing one that its group or others may
use is served from all the same, with one WARNING at start. Temporaries a killed agent left
while replacing one of its files are removed at start.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from ibsnmp.atomicfile import remove_stale_temporaries

log = logging.getLogger("ibsnmp.statedir")

SYSTEM_STATE_DIR = Path("/var/lib/ibsnmp")
APP_NAME = "ibsnmp"
# The files the agent keeps here: ibsnmp-engine.json, ibsnmp-state.json (and
# ibsnmp-state-N.json of the other agents of a group: agent.engine_group).
STATE_FILES = r"ibsnmp-[a-z]+(?:-[0-9]+)?\.json"


class StateDirError(Exception):
    """The state directory cannot be created or written; names the directory."""


def default_state_dir(environ: Mapping[str, str] | None = None,
                      euid: int | None = None) -> Path:
    """The state directory when --state-dir is not given: `$STATE_DIRECTORY`
    (set by systemd for a unit with StateDirectory=), else /var/lib/ibsnmp
    when running as root, else `$XDG_STATE_HOME/ibsnmp`
    (`~/.local/state/ibsnmp` by default)."""
    env = os.environ if environ is None else environ
    systemd = env.get("STATE_DIRECTORY", "")
    if systemd:
        # systemd passes a colon-separated list when a unit names several.
        return Path(systemd.split(":")[0])
    if (os.geteuid() if euid is None else euid) == 0:
        return SYSTEM_STATE_DIR
    xdg = env.get("XDG_STATE_HOME", "")
    # The XDG spec says to ignore a relative path.
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "state"
    return base / APP_NAME


def warn_if_open(path: Path) -> None:
    """One WARNING when the directory `path` grants its group or others any
    access (mode & 0o077): they could read the engine state or plant files."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return  # just checked; a directory gone meanwhile fails at the first write
    if mode & 0o077:
        log.warning("state directory %s is open to its group or others (mode %04o); "
                    "chmod 700 it: its files hold the SNMPv3 engine state and what "
                    "SETs configured", path, mode)


def prepare_state_dir(path: Path) -> Path:
    """Create `path` (mode 0700) if needed, check it can be written (else
    StateDirError), warn if others may use it, remove stale temporaries."""
    if not path.exists():
        try:
            path.mkdir(mode=0o700, parents=True)
            os.chmod(path, 0o700)  # mkdir's mode is cut down by the umask
        except FileExistsError:
            pass  # created meanwhile; checked below
        except OSError as exc:
            raise StateDirError(f"{path}: cannot create: {exc.strerror or exc}") from None
    if not path.is_dir():
        raise StateDirError(f"{path}: not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise StateDirError(f"{path}: not writable")
    warn_if_open(path)
    try:
        removed = remove_stale_temporaries(path, STATE_FILES)
    except OSError as exc:
        raise StateDirError(f"{path}: cannot list: {exc.strerror or exc}") from None
    if removed:
        log.info("removed %d temporary file(s) an interrupted write left in %s: %s",
                 len(removed), path, ", ".join(p.name for p in removed))
    return path

"""Where the MIB sources and compiled modules live: package data of ibsnmp.

They are found through importlib.resources, so an installed wheel and a
checkout find them the same way, whatever the working directory. The
checkout's top-level `mib_sources` and `compiled_mibs` are links to these folders.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

# ibsnmp is installed as a directory (wheel or checkout), never zipped:
# pysnmp and net-snmp read these folders as plain files.
PACKAGE_DIR = Path(str(resources.files("ibsnmp")))
MIB_SOURCE_DIR = PACKAGE_DIR / "mib_sources"
BASE_MIB_DIR = MIB_SOURCE_DIR / "base"
ERRATA_DIR = MIB_SOURCE_DIR / "errata"
COMPILED_MIB_DIR = PACKAGE_DIR / "compiled_mibs"

# The five InfiniBand drafts, and the textual conventions they all import.
DRAFT_MODULES = ("SMA-MIB", "IB-SM-MIB", "IB-CA-MIB", "PMA-MIB", "IBCONNECTION-MIB")
PRODUCT_MODULES = ("IB-TC-MIB",) + DRAFT_MODULES


def net_snmp_mib_dirs() -> str:
    """A MIBDIRS value for net-snmp tools: the base modules, then the IB modules."""
    return f"{BASE_MIB_DIR}:{MIB_SOURCE_DIR}"

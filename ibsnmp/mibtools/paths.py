"""Where the project's MIB sources and compiled modules live."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
MIB_SOURCE_DIR = PROJECT_ROOT / "mibs"
BASE_MIB_DIR = MIB_SOURCE_DIR / "base"
ERRATA_DIR = MIB_SOURCE_DIR / "errata"
COMPILED_MIB_DIR = PROJECT_ROOT / "compiled_mibs"

# The five InfiniBand drafts, and the textual conventions they all import.
DRAFT_MODULES = ("SMA-MIB", "IB-SM-MIB", "IB-CA-MIB", "PMA-MIB", "IBCONNECTION-MIB")
PRODUCT_MODULES = ("IB-TC-MIB",) + DRAFT_MODULES

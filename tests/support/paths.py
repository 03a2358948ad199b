"""Where the tests find the project and their data (tests/data stays beside the folders)."""

from __future__ import annotations

from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parents[1]
PROJECT_ROOT = TESTS_DIR.parent
DATA_DIR = TESTS_DIR / "data"
SEEDS_DIR = PROJECT_ROOT.parent / "shared" / "seeds"

# The draft each product module was taken from.
DRAFT_FILES = {
    "SMA-MIB": "000_5e76716e829c1960.txt",
    "IB-SM-MIB": "001_af9e88286be2fddf.txt",
    "IB-CA-MIB": "002_9d9cf18579496bb6.txt",
    "PMA-MIB": "003_6d372e076bdead7e.txt",
    "IBCONNECTION-MIB": "004_cc0d235aae0e4113.txt",
}
SUPPORT_DIR = TESTS_DIR / "support"

"""mib tests (marked `mib` by tests/conftest.py)."""

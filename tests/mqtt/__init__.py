"""mqtt tests (marked `mqtt` by tests/conftest.py)."""

"""wire tests (marked `wire` by tests/conftest.py)."""

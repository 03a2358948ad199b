"""e2e tests (marked `e2e` by tests/conftest.py)."""

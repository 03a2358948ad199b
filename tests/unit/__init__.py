"""unit tests (marked `unit` by tests/conftest.py)."""

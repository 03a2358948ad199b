"""container tests (marked `container` by tests/conftest.py)."""

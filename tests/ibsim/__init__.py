"""ibsim tests (marked `ibsim` by tests/conftest.py)."""

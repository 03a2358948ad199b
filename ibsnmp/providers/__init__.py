"""Data providers: where the fabric model comes from."""

"""Build-time tooling for the InfiniBand MIB modules: extract, patch, compile, check."""

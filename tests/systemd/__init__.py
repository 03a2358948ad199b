"""systemd tests (marked `systemd` by tests/conftest.py): the shipped unit,
installed as docs/systemd.md says, in a booted systemd-nspawn container."""

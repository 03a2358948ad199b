"""Helpers the tests and bench/ import: clients, fixtures, process runners, probes."""

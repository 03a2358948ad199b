"""The error of an invalid configuration, apart from the modules that raise it
(agent.config and agent.secrets read one another's values)."""

from __future__ import annotations

from ibsnmp.documents import DocumentError


class ConfigError(DocumentError):
    """The configuration is invalid; the message names the source (file,
    command line or environment), the key and the problem."""

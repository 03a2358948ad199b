"""The SNMP engine layer: transports, security, VACM, contexts, responders.

Public entry points: `add_run_arguments` / `settings_from_args` for a CLI,
`serve` (async) or `run` (blocking) to answer for a ContextResolver and a
VirtualMib, `start_agent` to embed the agent in a running event loop.
"""

from .config import AgentSettings, Community, ConfigError, SystemInfo, User, load_config
from .runner import (
    EXIT_OK,
    EXIT_START_FAILED,
    Agent,
    add_run_arguments,
    run,
    serve,
    settings_from_args,
    start_agent,
)
from .transport import Endpoint, ListenError, ListenSyntaxError, parse_endpoint

__all__ = [
    "EXIT_OK",
    "EXIT_START_FAILED",
    "Agent",
    "AgentSettings",
    "Community",
    "ConfigError",
    "Endpoint",
    "ListenError",
    "ListenSyntaxError",
    "SystemInfo",
    "User",
    "add_run_arguments",
    "load_config",
    "parse_endpoint",
    "run",
    "serve",
    "settings_from_args",
    "start_agent",
]

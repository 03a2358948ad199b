"""Running the agent: command-line flags, start-up, serving until a signal.

The fabric side (which resolver and VirtualMib to serve) is wired by the
caller: `serve(settings, resolver, mib)` or, from a CLI, `run(...)`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field

from ibsnmp.mib.api import ContextResolver, VirtualMib

from .config import AgentSettings, ConfigError, flag_origin, load_config, merge_settings
from ibsnmp.event_loop import EventLoopError, loop_name
from ibsnmp.event_loop import run as run_on_loop
from ibsnmp.sd_notify import notify

from .engine import AgentEngine, build_engine
from .reload import ReloadHook, reload_configuration
from .secrets import COMMUNITY_ENV, WRITE_COMMUNITY_ENV, flag_communities
from .transport import Endpoint, ListenError, bind_all, bound_endpoint, open_transports

log = logging.getLogger("ibsnmp.agent")

# What runs beside the agent, entered once it listens (see `serve`).
Services = Callable[["Agent"], AbstractAsyncContextManager[None]]

EXIT_OK = 0
EXIT_START_FAILED = 2  # bad config, or a port that cannot be bound


def add_run_arguments(parser: argparse.ArgumentParser, *, writers: bool = True) -> None:
    """Add --listen, --config, --community (and with `writers`, --write-community)."""
    group = parser.add_argument_group("SNMP agent")
    group.add_argument(
        "--listen", action="append", metavar="ADDR:PORT",
        help="UDP address to listen on, e.g. 127.0.0.1:1161 or [::1]:1161; repeatable; "
             "replaces the config file's listen list (default 127.0.0.1:161 and [::1]:161)")
    group.add_argument(
        "--config", metavar="FILE",
        help="TOML configuration file: every option has a key there (listen, [provider], "
             "[agent], [publish], [system], [[community]], [[user]], [[trap_target]], "
             "[limits], [traps], [agentx]); flags and IBSNMP_* variables win over it")
    group.add_argument(
        "--community", action="append", metavar="NAME",
        help="read-only SNMPv1/v2c community; repeatable; replaces the config file's "
             "communities (default: public, when neither communities nor users are configured); "
             "visible in ps: prefer --community-file or $" + COMMUNITY_ENV)
    group.add_argument(
        "--community-file", metavar="FILE",
        help="read-only communities, one a line (blank and # lines ignored), instead of "
             "--community")
    if not writers:
        return
    group.add_argument(
        "--write-community", action="append", metavar="NAME",
        help="read-write SNMPv1/v2c community (SETs of IB-SM-MIB and the system group; reads "
             "the M_Key/SM_Key columns); repeatable; added to the communities in effect; "
             "visible in ps: prefer --write-community-file or $" + WRITE_COMMUNITY_ENV)
    group.add_argument(
        "--write-community-file", metavar="FILE",
        help="read-write communities, one a line, instead of --write-community")


def settings_from_args(args: argparse.Namespace) -> AgentSettings:
    """Load the config file named by --config (if any) and apply the flags.

    Raises ConfigError with a message naming the file, key and problem, or
    the flag or variable that gave a bad value.
    """
    sources = getattr(args, "option_sources", {})

    def origin(dest: str) -> tuple[str, str]:
        source = sources.get(dest)
        return (source.document, source.where) if source is not None else flag_origin(dest)

    file = load_config(args.config) if getattr(args, "config", None) else None
    communities, community_origin = flag_communities(
        "--community", getattr(args, "community", None), getattr(args, "community_file", None),
        COMMUNITY_ENV, origin("community_file"))
    writers, writer_origin = flag_communities(
        "--write-community", getattr(args, "write_community", None),
        getattr(args, "write_community_file", None), WRITE_COMMUNITY_ENV,
        origin("write_community_file"))
    origins = {"community": community_origin, "write_community": writer_origin}
    return merge_settings(file, listen=getattr(args, "listen", None),
                          communities=communities,
                          trap_targets=getattr(args, "trap_target", None),
                          write_communities=writers,
                          agentx=getattr(args, "agentx", None),
                          origin=lambda dest: origins.get(dest) or origin(dest))


@dataclass(slots=True)
class Agent:
    """A started agent: its engine and the endpoints it really listens on."""

    engine: AgentEngine
    endpoints: tuple[Endpoint, ...]
    # Called with the new settings after a reload (e.g. new trap targets).
    reload_hooks: list[ReloadHook] = field(default_factory=list)
    _closed: bool = False

    async def reload(self, load: Callable[[], AgentSettings]) -> bool:
        """Re-read the configuration through `load`; False if it was refused."""
        applied = await reload_configuration(load, self.engine.settings,
                                             self.engine.replace_principals, self.reload_hooks)
        return applied is not None

    def close(self) -> None:
        """Close every transport (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self.engine.engine.close_dispatcher()


async def start_agent(settings: AgentSettings, resolver: ContextResolver, mib: VirtualMib,
                      *, fabric_summary: str = "") -> Agent:
    """Bind every listening socket, build the engine, start answering.

    Raises ListenError (an OSError) if any socket cannot be bound (except
    a default IPv6 one on a host without IPv6): nothing is left open then.
    """
    # First: a busy port fails before any work.
    socks = bind_all(settings.listen, settings.optional_listen, settings.reuse_port)
    try:
        engine = build_engine(settings, resolver, mib, fabric_summary=fabric_summary)
    except BaseException:
        for sock in socks:
            sock.close()
        raise
    endpoints = tuple(bound_endpoint(sock) for sock in socks)
    agent = Agent(engine=engine, endpoints=endpoints)
    try:
        await open_transports(engine.engine, socks)
    except BaseException:
        agent.close()
        for sock in socks:
            sock.close()
        raise
    for endpoint in endpoints:
        log.info("listening on UDP %s", endpoint)
    log.debug("event loop: %s", loop_name(asyncio.get_running_loop()))
    if not settings.communities and not settings.users:
        log.warning("no community and no SNMPv3 user configured: nobody can query this agent")
    return agent


async def serve(settings: AgentSettings, resolver: ContextResolver, mib: VirtualMib, *,
                fabric_summary: str = "", stop: asyncio.Event | None = None,
                on_started: Callable[[Agent], None] | None = None,
                services: Services | None = None,
                reload: Callable[[], AgentSettings] | None = None) -> int:
    """Run the agent until SIGTERM/SIGINT (or `stop` is set); return exit code 0.

    SIGHUP calls `reload` for new settings (the configuration file read
    again) and applies them; it never stops the agent.

    Start-up failures raise (ListenError for sockets); `run` turns them into
    exit code 2. `on_started` is called once every socket is listening.
    `services(agent)` is an async context entered once the agent listens and
    left before it closes: what runs beside the agent (notification
    originator, provider tasks) starts and stops there.
    """
    stop = stop or asyncio.Event()
    tasks: set[asyncio.Task[None]] = set()
    agent = await start_agent(settings, resolver, mib, fabric_summary=fabric_summary)
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, stop.set)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass  # not the main thread (tests), or no signals on this platform
        if reload is not None:
            reloading = asyncio.Lock()

            async def reload_once() -> None:
                async with reloading:  # one reload at a time, in signal order
                    notify("RELOADING=1", "STATUS=reloading the configuration")
                    try:
                        applied = await agent.reload(reload)
                    except Exception:  # a bug here must not end the agent
                        log.exception("configuration reload failed")
                        applied = False
                    notify("READY=1", "STATUS=" + ("serving" if applied else
                                                   "serving; the last reload was refused"))

            def start_reload() -> None:
                task = loop.create_task(reload_once())
                tasks.add(task)
                task.add_done_callback(tasks.discard)

            try:
                loop.add_signal_handler(signal.SIGHUP, start_reload)
                installed.append(signal.SIGHUP)
            except (NotImplementedError, RuntimeError, ValueError, AttributeError):
                pass
        async with services(agent) if services is not None else nullcontext():
            if on_started is not None:
                on_started(agent)
            notify("READY=1", "STATUS=serving on " + (
                ", ".join(map(str, agent.endpoints)) or "AgentX"))
            await stop.wait()
            log.info("stopping")
            notify("STOPPING=1")
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        for task in tasks:
            task.cancel()
        agent.close()
    log.info("stopped")
    return EXIT_OK


def run(settings: AgentSettings, resolver: ContextResolver, mib: VirtualMib, *,
        fabric_summary: str = "", on_started: Callable[[Agent], None] | None = None,
        services: Services | None = None,
        reload: Callable[[], AgentSettings] | None = None) -> int:
    """Blocking entry point for a CLI: serve, mapping start failures to exit code 2.

    The error message (never a secret) goes to stderr as `ibsnmp: ...`.
    """
    try:
        return run_on_loop(serve(settings, resolver, mib, fabric_summary=fabric_summary,
                                 on_started=on_started, services=services, reload=reload))
    except (ListenError, ConfigError, EventLoopError) as exc:
        print(f"ibsnmp: {exc}", file=sys.stderr)
        return EXIT_START_FAILED
    except KeyboardInterrupt:  # a second Ctrl-C during shutdown
        return EXIT_OK

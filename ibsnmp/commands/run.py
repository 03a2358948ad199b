"""`ibsnmp run`: the SNMP agent over a fabric provider."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import re
import signal
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ibsnmp.agent import Agent, add_run_arguments, run, settings_from_args
from ibsnmp.agent.config import AgentSettings, Community, ConfigError, Limits
from ibsnmp.agent.transport import Endpoint
from ibsnmp.agent.option_tables import RUN_OPTIONS
from ibsnmp.agent.runner import Services
from ibsnmp.fabric.spec import SpecError
from ibsnmp.logsetup import LOG_FORMATS, configure_logging, print_banner
from ibsnmp.providers.base import Provider
from ibsnmp.mqtt.arguments import whole_number
from ibsnmp.options import source_of
from ibsnmp.providers.simulated import DEFAULT_SPEC
from ibsnmp.sa.sessions import DEFAULT_LIFETIME_S, DEFAULT_MAX_SESSIONS

if TYPE_CHECKING:
    from ibsnmp.fabric.model import Fabric
    from ibsnmp.agentx.connection import Subagent
    from ibsnmp.mqtt.publisher import Publisher
    from ibsnmp.agent.engine_group import EngineGroup
    from ibsnmp.state.store import AgentState, ConfiguredProvider

EXIT_START_FAILED = 2
log = logging.getLogger("ibsnmp.run")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("run", help="run the SNMP agent")
    add_run_arguments(parser)
    parser.add_argument(
        "--trap-target", action="append", metavar="ADDR[:PORT]",
        help="send SNMPv2c traps (community public) to this receiver, e.g. 127.0.0.1:1162; "
             "repeatable; added to the config file's [[trap_target]] entries")
    parser.add_argument(
        "--agentx", nargs="?", const="", metavar="SOCKET|tcp:HOST:PORT",
        help="serve as an AgentX subagent (RFC 2741) of the master agent at this socket "
             "(default /var/agentx/master, net-snmp's); no UDP port unless --listen is given "
             "too; the config file's [agentx] table does the same")
    add_provider_arguments(parser, ("sysfs", "topology", "live", "mqtt", "simulated"))
    add_state_arguments(parser)
    from ibsnmp.mqtt.arguments import add_aggregator_arguments

    add_aggregator_arguments(parser)
    add_logging_arguments(parser)
    parser.set_defaults(handler=_run, daemon=True, file_options=RUN_OPTIONS)


def add_provider_arguments(parser: argparse.ArgumentParser, choices: tuple[str, ...]) -> None:
    """--provider and each provider's flags (shared by run and publish)."""
    add_fabric_arguments(parser)
    parser.add_argument(
        "--provider", choices=choices,
        help="where the fabric comes from (required; --fabric SPEC alone means simulated): "
             "this host's /sys/class/infiniband (sysfs), an ibnetdiscover dump (topology), "
             + ("the subnet read over MADs (live), the publishers on an MQTT broker (mqtt, "
                "--broker), " if "mqtt" in choices else "")
             + "or a simulated fabric whose values are invented (simulated)",
    )
    parser.set_defaults(provider_choices=choices)
    parser.add_argument(
        "--sysfs-root", default="/sys/class/infiniband", metavar="DIR",
        help="sysfs provider: the InfiniBand class directory (default /sys/class/infiniband)")
    parser.add_argument(
        "--poll-interval", type=float, default=5.0, metavar="S",
        help="sysfs and live providers: seconds between polls (default 5)")
    if "live" in choices:
        parser.add_argument(
            "--ca", metavar="NAME",
            help="live provider: the InfiniBand device whose port reads the subnet (default: "
                 "libibumad's first, e.g. mlx5_0)")
        parser.add_argument(
            "--port", type=int, default=0, metavar="N",
            help="live provider: the port of --ca (default 0: its first active port)")
        parser.add_argument(
            "--sweep-interval", type=float, default=60.0, metavar="S",
            help="live provider: seconds between full sweeps of the subnet; a change seen by "
                 "a poll brings one at once (default 60)")
        parser.add_argument(
            "--mad-timeout", type=_positive_float, default=0.2, metavar="S",
            help="live provider: seconds a MAD waits for its answer, each try (default 0.2)")
        parser.add_argument(
            "--mad-retries", type=_count, default=3, metavar="N",
            help="live provider: tries of a MAD after the first (default 3, as libibmad's)")
        parser.add_argument(
            "--mad-window", type=whole_number(1), default=32, metavar="N",
            help="live provider: MADs in flight at once (default 32)")
        parser.add_argument(
            "--gone-after-sweeps", type=whole_number(1), default=3, metavar="N",
            help="live provider: a node that does not answer is served as last read until it is "
                 "missing from N sweeps in a row, a sweep interval apart (default 3)")
        parser.add_argument(
            "--sm-key-file", metavar="FILE",
            help="live provider: a file holding the SM_Key (0x-hex or decimal), which the SA "
                 "asks before it shows P_Key tables, multicast member GIDs and traps 256-259 "
                 "(default: none, SM_Key 0)")
    parser.add_argument(
        "--topology", metavar="FILE", help="topology provider: ibnetdiscover output to serve")
    parser.add_argument(
        "--lft-dump", metavar="FILE",
        help="topology provider: the SM's linear forwarding tables, OpenSM's opensm-lfts.dump "
             "or ibroute output (without it no forwarding table or trace is served)")
    parser.add_argument(
        "--sm-guid", metavar="GUID",
        help="topology provider: the node or port GUID of the master SM (a dump names none)")
    parser.add_argument(
        "--scenario", metavar="FILE",
        help="simulated provider: TOML file of timed fabric events (port down, error "
             "bursts, bad keys ...) that raise IBA traps, e.g. examples/all-ten.toml")


def add_logging_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-v", "--verbose", action="store_true", help="log every start-up step")
    parser.add_argument("--log-format", choices=LOG_FORMATS, default="text",
                        help="log records on stdout as text lines (default) or JSON objects")


def add_state_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("SETs and SA requests (IB-SM-MIB)")
    group.add_argument(
        "--state-dir", metavar="DIR",
        help="directory of what survives a restart, created with mode 0700: the SNMPv3 "
             "engine ID and boots (ibsnmp-engine.json) and what SETs configure "
             "(ibsnmp-state.json); default $STATE_DIRECTORY, else /var/lib/ibsnmp as root, "
             "else $XDG_STATE_HOME/ibsnmp (~/.local/state/ibsnmp)")
    group.add_argument(
        "--reuse-port", action="store_true",
        help="share the listening ports with other agents of the same state directory "
             "(SO_REUSEPORT): the kernel spreads the managers over them, which answer as one "
             "SNMP engine (more cores; see docs/scaling.md)")
    group.add_argument(
        "--session-lifetime", type=_positive_float, default=DEFAULT_LIFETIME_S, metavar="S",
        help=f"seconds a path/multipath/trace request row lives (default {DEFAULT_LIFETIME_S:g})")
    group.add_argument(
        "--max-sessions", type=_count, default=DEFAULT_MAX_SESSIONS, metavar="N",
        help="request rows open at once; creating more answers resourceUnavailable "
             f"(default {DEFAULT_MAX_SESSIONS})")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


_count = whole_number(0)


def add_fabric_arguments(parser: argparse.ArgumentParser, *, default: str | None = None) -> None:
    """--fabric and --seed; `default`: the spec when --fabric is not given
    (None for run and publish, where --fabric also chooses the provider)."""
    parser.add_argument(
        "--fabric", default=default, metavar="SPEC",
        help="simulated fabric: 'single', 'fat-tree:spines=S,leaves=L,hosts=H' or "
             "'fat-tree3:radix=K[,pods=P]' "
             + (f"(default {default})" if default else
                f"(implies --provider simulated; default with it: {DEFAULT_SPEC})"),
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the simulated fabric")


def provider_kind(args: argparse.Namespace) -> str:
    """The provider to serve: the one named (--provider, IBSNMP_PROVIDER,
    [provider] kind), else simulated when a simulated fabric is asked for
    (--fabric, --scenario); never simulated by default."""
    if args.provider is not None:
        return str(args.provider)
    if args.fabric is not None or getattr(args, "scenario", None) is not None:
        return "simulated"
    raise ConfigError(
        "no provider: name one with --provider " + "|".join(args.provider_choices)
        + ", IBSNMP_PROVIDER, or kind in the config file's [provider] table "
          "(--fabric SPEC alone serves a simulated fabric)")


def _make_provider(args: argparse.Namespace, slot: int = 1) -> Provider:
    """The provider `provider_kind` names; its errors become ConfigError (exit
    2). `slot`: the agent's in its group (an MQTT client ID of its own)."""
    kind = provider_kind(args)
    if kind == "mqtt":
        from ibsnmp.commands.mqtt_from_flags import make_aggregator

        return make_aggregator(args, client_suffix="" if slot == 1 else f"member{slot}")
    if kind == "sysfs":
        from ibsnmp.providers.sysfs import SysfsError, SysfsProvider

        _positive(args, "poll_interval")
        try:
            return SysfsProvider(Path(args.sysfs_root), args.poll_interval)
        except SysfsError as exc:
            raise source_of(args, "sysfs_root").error(str(exc)) from None
    if kind == "live":
        return _make_live_provider(args)
    if kind == "topology":
        from ibsnmp.fabric.ibnetdiscover_read import TopologyError, parse_guid
        from ibsnmp.providers.topology import TopologyProvider

        if not args.topology:
            raise ConfigError("provider topology needs the ibnetdiscover dump to serve: "
                              "--topology FILE, IBSNMP_TOPOLOGY or [provider] topology")
        try:
            sm_guid = parse_guid(args.sm_guid) if args.sm_guid else None
        except ValueError as exc:
            raise source_of(args, "sm_guid").error(str(exc)) from None
        try:
            lft_dump = getattr(args, "lft_dump", None)
            return TopologyProvider(Path(args.topology), sm_guid=sm_guid,
                                    lft_path=Path(lft_dump) if lft_dump else None)
        except (OSError, TopologyError, ValueError) as exc:
            raise source_of(args, "topology").error(str(exc)) from None
    from ibsnmp.providers.scenario import ScenarioError
    from ibsnmp.providers.simulated import SimulatedProvider

    # Every event the provider emits (scenario steps, threshold crossings)
    # becomes a notification to every trap target.
    try:
        return SimulatedProvider(args.fabric or DEFAULT_SPEC, args.seed, scenario=args.scenario)
    except ScenarioError as exc:
        raise source_of(args, "scenario").error(str(exc)) from None


def _positive(args: argparse.Namespace, dest: str) -> None:
    value = getattr(args, dest)
    if not value > 0:
        raise source_of(args, dest).error(f"must be positive, got {value:g}")


def _sm_key(args: argparse.Namespace) -> int:
    """The SM_Key --sm-key-file holds (a secret: never logged), else 0."""
    path = args.sm_key_file
    if path is None:
        return 0
    from ibsnmp.agent.secrets import read_secret_file

    source = source_of(args, "sm_key_file")
    text = read_secret_file(Path(path), source.where, lambda key, why: source.error(why))
    try:
        key = int(text.strip(), 0)
    except ValueError:
        raise source.error(f"{path} does not hold a number (0x-hex or decimal)") from None
    if not 0 <= key < 1 << 64:
        raise source.error(f"{path}: an SM_Key has 64 bits")
    return key


def check_live_options(args: argparse.Namespace) -> int:
    """The live provider's options checked without opening a port; its SM_Key."""
    _positive(args, "poll_interval")
    _positive(args, "sweep_interval")
    if not 0 <= args.port <= 254:
        raise source_of(args, "port").error(f"a port number is 0..254, got {args.port}")
    return _sm_key(args)


def _make_live_provider(args: argparse.Namespace) -> Provider:
    from ibsnmp.providers.live import LiveError, LiveProvider

    sm_key = check_live_options(args)
    try:
        return LiveProvider(args.ca, args.port, poll_interval=args.poll_interval,
                            sweep_interval=args.sweep_interval, sm_key=sm_key,
                            mad_timeout=args.mad_timeout, mad_retries=args.mad_retries,
                            mad_window=args.mad_window, gone_after_sweeps=args.gone_after_sweeps)
    except LiveError as exc:
        raise ConfigError(f"provider live: {exc}") from None


def _services(settings: AgentSettings, provider: Provider, publisher: Publisher | None = None,
              subagent_of: Callable[[Agent], Subagent] | None = None, *,
              saved_authen_traps: int | None = None,
              group: EngineGroup | None = None) -> Services:
    """What runs beside the agent: the AgentX subagent (`subagent_of(agent)`,
    with --agentx), the notification originator (coldStart first, or
    warmStart for an agent that joined its `group`'s engine; then
    authenticationFailure for refusals; the fabric's notifications while
    the group leaves them to this agent), the refusal log's flushes, then
    the provider, then the publisher (--publish). `saved_authen_traps`: the
    snmpEnableAuthenTraps a SET saved, in force before anything else."""
    from ibsnmp.agent.refusals import flushing
    from ibsnmp.mqtt.publisher import publishing
    from ibsnmp.traps.service import notifications
    from ibsnmp.traps.standard import authentication_failures, send_cold_start

    @asynccontextmanager
    async def services(agent: Agent) -> AsyncIterator[None]:
        # As a SET saved it, unless [traps] sets it: before the first refusal.
        agent.engine.authen_traps.restore(saved_authen_traps)
        async with AsyncExitStack() as stack:
            relays = []
            if subagent_of is not None:
                from ibsnmp.agentx.service import master_relay, subagent_running

                # Before the provider: its first events go through the master too.
                subagent = await stack.enter_async_context(subagent_running(subagent_of(agent)))
                relays.append(master_relay(subagent))
            # Targets first, so no event of the provider's first moments is missed.
            service = await stack.enter_async_context(notifications(
                agent.engine.engine, settings.trap_targets, provider,
                if_mib=settings.traps.if_mib, relays=relays,
                leads=group.leads_notifications if group is not None else lambda: True))
            # A reload (SIGHUP) brings new trap targets; the provider keeps running.
            agent.reload_hooks.append(
                lambda new: service.apply(new.trap_targets, new.traps.if_mib))
            # Before the provider's first event.
            send_cold_start(service, joined=group is not None and not group.booted)
            refusals, authen_traps = agent.engine.refusals, agent.engine.authen_traps
            await stack.enter_async_context(flushing(refusals))
            stack.enter_context(authentication_failures(service, refusals,
                                                        lambda: authen_traps.enabled))
            await provider.start()
            try:
                async with publishing(publisher):
                    yield
            finally:
                await provider.stop()

    return services


def _state_dir(args: argparse.Namespace) -> Path:
    """The state directory, created if needed (ConfigError if it cannot be used)."""
    from ibsnmp.statedir import StateDirError, default_state_dir, prepare_state_dir

    given = getattr(args, "state_dir", None)
    try:
        return prepare_state_dir(Path(given) if given else default_state_dir())
    except StateDirError as exc:
        raise ConfigError(f"state directory: {exc} (choose another with --state-dir)") from None


def _join_engine_group(state_dir: Path, settings: AgentSettings) -> EngineGroup:
    """This agent's place in the state directory's group: the snmpEngineID,
    snmpEngineBoots and boot time it serves (a boot saved first), held
    while the agent runs."""
    from ibsnmp.agent.engine_group import GroupError, join_group
    from ibsnmp.agent.engine_state import EngineStateError

    try:
        return join_group(state_dir, settings.engine_id, shared=settings.reuse_port)
    except EngineStateError as exc:
        raise ConfigError(f"engine state file: {exc}") from None
    except GroupError as exc:
        raise ConfigError(f"state directory: {exc}") from None


def _open_state(state_dir: Path, args: argparse.Namespace,
                limits: Limits, slot: int) -> AgentState:
    """The write store: the state file of this agent's slot (loaded if
    present), session and result limits."""
    from ibsnmp.mib.write import state_value_problem
    from ibsnmp.state.store import AgentState, StateFileError, state_file_for

    path = state_file_for(state_dir, slot)
    try:
        state = AgentState.open(path, state_value_problem, lifetime=args.session_lifetime,
                                max_sessions=args.max_sessions,
                                max_result_rows_per_request=limits.max_result_rows_per_request,
                                max_result_rows=limits.max_result_rows)
    except StateFileError as exc:
        raise ConfigError(f"state file: {exc}") from None
    log.info("configuration SETs are kept in %s", path)
    return state


@dataclasses.dataclass(frozen=True, slots=True)
class _Start:
    """What the agent starts from: the settings with the engine identity its
    group gave it, and the provider of its fabric under the SETs saved."""

    settings: AgentSettings
    configured: AgentSettings  # as the flags and the file gave them (a reload starts there)
    kind: str
    group: EngineGroup
    provider: ConfiguredProvider
    state: AgentState
    publisher: Publisher | None


def _run(args: argparse.Namespace) -> int:
    # SIGHUP means "reload", never "stop": ignored until the agent handles it.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    configure_logging(args.verbose, args.log_format)
    from ibsnmp.malloc_threshold import pin_mmap_threshold

    pin_mmap_threshold()  # before the fabric and the caches are built
    try:
        start = _prepare(args)
    except (ConfigError, SpecError) as exc:
        print(f"ibsnmp: {exc}", file=sys.stderr)
        return EXIT_START_FAILED
    return _serve(args, start)


def _prepare(args: argparse.Namespace) -> _Start:
    """The settings, the engine group joined, the provider and the state file
    (ConfigError or SpecError: the agent does not start)."""
    from ibsnmp.mib.sm_sa_live import attach_provider_sa
    from ibsnmp.state.store import ConfiguredProvider

    settings = configured = settings_from_args(args)
    kind = provider_kind(args)  # before anything is written: a missing provider starts nothing
    state_dir = _state_dir(args)
    settings = replace(settings, reuse_port=bool(args.reuse_port))
    group = _join_engine_group(state_dir, settings)
    settings = replace(settings, engine_id=group.state.engine_id,
                       engine_boots=group.state.boots,
                       engine_booted_at=group.state.booted_at)
    provider = _make_provider(args, group.slot)
    state = _open_state(state_dir, args, settings.limits, group.slot)
    publisher = None
    if args.publish:
        from ibsnmp.commands.mqtt_from_flags import make_publisher

        publisher = make_publisher(args, provider, args.publish, url_dest="publish")
    # Every snapshot the agent serves carries what SETs configured.
    configured_provider = ConfiguredProvider(provider, state)
    attach_provider_sa(configured_provider.inner, state)  # a live SM answers request rows
    return _Start(settings, configured, kind, group, configured_provider, state, publisher)


def _summary(args: argparse.Namespace, kind: str, fabric: Fabric) -> str:
    """How the banner and sysDescr name the fabric served."""
    if kind == "simulated":
        summary = f"simulated {fabric.spec or args.fabric or DEFAULT_SPEC}, seed {args.seed}"
        log.warning("serving a simulated fabric: its nodes and values are invented, not read "
                    "from InfiniBand hardware (choose a provider with --provider or [provider] "
                    "kind)")
    else:
        summary = fabric.spec or kind
    return f"{summary}, {len(fabric.nodes)} nodes"


def _serve(args: argparse.Namespace, start: _Start) -> int:
    """Build the MIB over the provider and run the agent until it stops."""
    from ibsnmp.agent.system_defaults import configured_objects, with_saved_values
    from ibsnmp.fabric.interface_history import InterfaceHistory
    from ibsnmp.gc_freeze import settle
    from ibsnmp.mib.registry import build_mib
    from ibsnmp.mib.targets import FabricContexts
    from ibsnmp.providers.topology import rereading

    provider, state = start.provider, start.state
    fabric = provider.snapshot
    summary = _summary(args, start.kind, fabric)
    # IF-MIB's change times, from every snapshot the provider swaps in.
    interfaces = InterfaceHistory()
    interfaces.follow(provider.inner)
    # What the config file sets stays read-only; the rest starts as saved.
    link_traps = _LinkTraps(start.settings.traps.if_mib)
    mib = build_mib(state, read_only_system=configured_objects(start.settings.system),
                    interfaces=interfaces, link_traps=link_traps.enabled)
    settings = dataclasses.replace(
        start.settings, system=with_saved_values(start.settings.system, state.config.system))

    # SIGHUP also re-reads a provider's files (the topology dump).
    reload = rereading(provider.inner, _reloader(args, start.configured, settings))
    contexts = FabricContexts(provider)
    if start.kind == "mqtt":
        from ibsnmp.commands.mqtt_from_flags import AggregatorContexts

        contexts = AggregatorContexts(provider)

    def started(agent: Agent) -> None:
        from ibsnmp.agentx.service import sys_up_time

        agent.reload_hooks.append(link_traps.reload)
        # ifLastChange counts in sysUpTime's time, from the engine's start: a
        # change is never dated after the trap that reports it.
        uptime = sys_up_time(agent.engine.engine)
        interfaces.use_clock(lambda: uptime() / 100)
        print_banner(banner_lines(summary, settings, agent.endpoints, fabric), args.log_format)
        settle()  # the fabric, the MIB modules and the engine live as long as the agent

    subagent_of = None
    if settings.agentx is not None:
        from ibsnmp.agentx.service import build_subagent, sys_up_time

        agentx_settings = settings.agentx

        def subagent_of(agent: Agent) -> Subagent:
            return build_subagent(agentx_settings, contexts, mib, lambda: provider.snapshot,
                                  sys_up_time(agent.engine.engine),
                                  kept_answers=settings.limits.walk_cache)

    return run(settings, contexts, mib, fabric_summary=summary,
               on_started=started,
               services=_services(settings, provider, start.publisher, subagent_of,
                                  saved_authen_traps=state.config.snmp.get("snmpEnableAuthenTraps"),
                                  group=start.group),
               reload=reload)


def banner_lines(summary: str, settings: AgentSettings, endpoints: Sequence[Endpoint],
                 fabric: Fabric) -> list[str]:
    """What the agent serves and a command to try. A configured community is
    a secret and shown as COMMUNITY; the built-in default `public` is not."""
    lines = [f"ibsnmp: serving {summary}"]
    if settings.agentx is not None:
        lines.append(f"  as an AgentX subagent of the master at {settings.agentx.master}")
    try_with = _credentials_to_try(settings)
    if endpoints and try_with is not None:
        endpoint = endpoints[0]
        lines.append(f"  try: snmpbulkwalk {try_with('')} {endpoint} .1.3.6.1.3.117")
        switch = next((n for n in fabric.nodes.values() if n.is_switch), None)
        if switch is not None:
            lines.append(f"  a switch: snmpbulkwalk {try_with(f'{switch.guid:016x}')} {endpoint} "
                         "SMA-MIB::ibSmaMIB")
    lines += [f"  notifications to {target.label}" for target in settings.trap_targets]
    return lines


def _credentials_to_try(settings: AgentSettings) -> Callable[[str], str] | None:
    """net-snmp options that reach a context (a node GUID, "" the default one)."""
    if settings.communities:
        community = "public" if settings.communities == (Community("public"),) else "COMMUNITY"
        return lambda context: f"-v2c -c {community}" + (f"@{context}" if context else "")
    if settings.users:
        user = settings.users[0]
        level = "-l authPriv" if user.priv else "-l authNoPriv"
        keys = f"-a {_net_snmp_protocol(user.auth)} -A AUTH_KEY" + (
            f" -x {_net_snmp_protocol(user.priv)} -X PRIV_KEY" if user.priv else "")
        return lambda context: f"-v3 -u {user.name} {level} {keys}" + (
            f" -n {context}" if context else "")
    return None


def _net_snmp_protocol(name: str) -> str:
    """A USM protocol as net-snmp's -a / -x spell it: SHA256 is SHA-256, AES256C AES-256-C."""
    match = re.fullmatch(r"(SHA|AES)(\d+)(C?)", name)
    return name if match is None else "-".join(part for part in match.groups() if part)


class _LinkTraps:
    """`[traps] if_mib` as it stands (a reload may change it), for
    IF-MIB's ifLinkUpDownTrapEnable."""

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled

    def enabled(self) -> bool:
        return self._enabled

    async def reload(self, new: AgentSettings) -> None:
        self._enabled = new.traps.if_mib


def _reloader(args: argparse.Namespace, configured: AgentSettings,
              started: AgentSettings) -> Callable[[], AgentSettings]:
    """What SIGHUP loads: the flags and file again, completed as at start.

    The engine ID and the system group are what the state directory made of
    the configured ones; while the configured ones stay, so do those (a
    change of either is reported by the reload as needing a restart).
    """

    def load() -> AgentSettings:
        new = dataclasses.replace(settings_from_args(args), reuse_port=started.reuse_port,
                                  engine_booted_at=started.engine_booted_at)
        for key in sorted(set(new.file_options) | set(configured.file_options)):
            if new.file_options.get(key) != configured.file_options.get(key):
                log.warning("configuration reload: %s changed; it takes effect at the next "
                            "start", key)
        if new.engine_id == configured.engine_id:
            new = dataclasses.replace(new, engine_id=started.engine_id,
                                      engine_boots=started.engine_boots)
        if new.system == configured.system:
            new = dataclasses.replace(new, system=started.system)
        return new

    return load

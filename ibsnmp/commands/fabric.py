"""`ibsnmp fabric show|export`: look at a fabric without an agent: a simulated
one (--fabric, --seed) or one read from an ibnetdiscover dump (--topology).
`ibsnmp fabric targets`: what snmp_exporter and Prometheus need to read
every node of it through an agent."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from ibsnmp.fabric.model import Fabric, Node
from ibsnmp.fabric.spec import SpecError
from ibsnmp.prometheus import SHIPPED_SNMP_YML
from ibsnmp.prometheus.scrape_config import (ALERT_RULES, DEFAULT_EXPORTER,
                                             DEFAULT_SCRAPE_INTERVAL, DEFAULT_SCRAPE_TIMEOUT)

from ibsnmp.providers.simulated import DEFAULT_SPEC

from .run import add_fabric_arguments

if TYPE_CHECKING:
    from .prometheus_targets import PrometheusFiles


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fabric = subparsers.add_parser("fabric", help="show or export a simulated or discovered fabric")
    actions = fabric.add_subparsers(dest="fabric_command", required=True)
    show = actions.add_parser("show", help="summarise nodes, links, LIDs and SMs")
    add_fabric_arguments(show, default=DEFAULT_SPEC)
    _add_topology_arguments(show)
    show.set_defaults(handler=_show)
    export = actions.add_parser("export", help="write the fabric as JSON or ibnetdiscover text")
    add_fabric_arguments(export, default=DEFAULT_SPEC)
    _add_topology_arguments(export)
    export.add_argument("--format", choices=("json", "ibnetdiscover"), default="json")
    export.set_defaults(handler=_export)
    _add_targets_parser(actions)


def _guid(text: str) -> int:
    from ibsnmp.fabric.ibnetdiscover_read import parse_guid

    try:
        return parse_guid(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_topology_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--topology", metavar="FILE",
        help="read the fabric from an ibnetdiscover dump instead of simulating one "
             "(--fabric and --seed are then ignored)")
    parser.add_argument(
        "--sm-guid", type=_guid, metavar="GUID",
        help="with --topology: node or port GUID of the master SM, as sminfo prints it "
             "(a dump does not say where the SM runs)")


def _build(args: argparse.Namespace) -> Fabric | None:
    if getattr(args, "topology", None):
        from ibsnmp.fabric.ibnetdiscover_read import TopologyError, load_topology

        try:
            return load_topology(args.topology, sm_guid=args.sm_guid)
        except TopologyError as exc:
            print(f"ibsnmp: {exc}", file=sys.stderr)
            return None
    from ibsnmp.fabric.generators import build_fabric

    try:
        return build_fabric(args.fabric, seed=args.seed)
    except SpecError as exc:
        print(f"ibsnmp: {exc}", file=sys.stderr)
        return None


def _quoted(description: str | None) -> str:
    return repr(description) if description is not None else "(no description)"


def _show(args: argparse.Namespace) -> int:
    fabric = _build(args)
    if fabric is None:
        return 2
    kinds = Counter(node.node_type.name.lower() for node in fabric.nodes.values())
    ports = [port for node in fabric.nodes.values() for port in node.data_ports]
    active = sum(1 for port in ports if port.is_active)
    print(f"fabric {fabric.spec}" + (f", seed {fabric.seed}" if fabric.seed is not None else ""))
    print("nodes: " + ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items())))
    print(f"ports: {len(ports)} data ports, {active} active, {len(fabric.links)} links")
    print(f"LIDs: {len(fabric.lid_map)} base LIDs, highest {fabric.max_lid}")
    local = fabric.local_node
    print(f"local node: {local.guid:016x} {_quoted(local.description)}")
    for sm in fabric.sms:
        node = fabric.nodes[sm.node_guid]
        print(f"SM: {sm.state.name.lower()} on {node.guid:016x} {_quoted(node.description)} "
              f"priority {sm.priority}")
    print(f"partitions: {len(fabric.partitions)}, multicast groups: "
          f"{len(fabric.multicast_groups)}, services: {len(fabric.services)}")
    print()
    _print_nodes(fabric)
    return 0


def _print_nodes(fabric: Fabric) -> None:
    """One line per node, by GUID: its context name, kind, LIDs and name
    (the sysName of its context; last, as it may hold spaces)."""
    from ibsnmp.fabric.naming import KIND_WORDS, node_name

    rows = [(f"{node.guid:016x}", KIND_WORDS[node.node_type], _lids(node), node_name(node))
            for _, node in sorted(fabric.nodes.items())]
    widths = [max(len("LIDS"), *(len(row[2]) for row in rows)) if rows else len("LIDS")]
    print(f"{'GUID':<16}  {'KIND':<6}  {'LIDS':<{widths[0]}}  NAME")
    for guid, kind, lids, name in rows:
        print(f"{guid:<16}  {kind:<6}  {lids:<{widths[0]}}  {name}")


def _lids(node: Node) -> str:
    """A switch's LID (its port 0's), a CA's or router's port LIDs; '-' for none assigned."""
    ports = node.ports[:1] if node.is_switch else node.ports
    lids = [str(port.lid) for port in ports if port.lid]
    return ",".join(lids) or "-"


def _export(args: argparse.Namespace) -> int:
    fabric = _build(args)
    if fabric is None:
        return 2
    if args.format == "ibnetdiscover":
        from ibsnmp.fabric.ibnetdiscover import export

        sys.stdout.write(export(fabric))
    else:
        from ibsnmp.fabric.jsonexport import to_json

        sys.stdout.write(to_json(fabric) + "\n")
    return 0


def _add_targets_parser(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    targets = actions.add_parser(
        "targets", help="write snmp_exporter modules and Prometheus file_sd targets "
                        "for every node's context, and Prometheus' configuration")
    add_fabric_arguments(targets, default=DEFAULT_SPEC)
    _add_topology_arguments(targets)
    targets.add_argument("--agent", required=True, metavar="HOST:PORT",
                         help="the agent's address as the exporter reaches it")
    targets.add_argument("--snmp-yml", type=Path, metavar="FILE", default=SHIPPED_SNMP_YML,
                         help="the modules to copy per node (default: the snmp.yml shipped "
                              "with ibsnmp, examples/prometheus/snmp.yml)")
    targets.add_argument("--auth", type=Path, metavar="FILE",
                         help="TOML: version = 2|3 and an [auth] table with snmp_exporter's "
                              "keys (default: v2c, community public)")
    targets.add_argument("--config-out", required=True, type=Path, metavar="FILE",
                         help="the exporter configuration to write (mode 0600)")
    targets.add_argument("--targets-out", required=True, type=Path, metavar="FILE",
                         help="the file_sd JSON to write")
    targets.add_argument("--per-node", default="ib_if,ib_pma", metavar="MODULES",
                         help="modules copied for every node's context (default ib_if,ib_pma)")
    targets.add_argument("--kinds", default="switch,ca,router", metavar="KINDS",
                         help="node kinds that get targets (default switch,ca,router)")
    targets.add_argument("--from-agent", action="store_true",
                         help="read the nodes from the agent at --agent (its IB-SM-MIB NodeInfo "
                              "table, with the --auth credentials) instead of a fabric")
    _add_prometheus_arguments(targets)
    targets.set_defaults(handler=_targets)


# Options that only mean something with --prometheus-out; None when not given.
_PROMETHEUS_ONLY = ("exporter", "rules_out", "scrape_interval", "scrape_timeout")


def _add_prometheus_arguments(targets: argparse.ArgumentParser) -> None:
    targets.add_argument("--prometheus-out", type=Path, metavar="FILE",
                         help="also write Prometheus' configuration: jobs ib_if, ib_pma and "
                              "ib_sm through the exporter, the --targets-out list, the alert "
                              "rules (paths inside its folder are written relative to it)")
    targets.add_argument("--exporter", metavar="HOST:PORT",
                         help="with --prometheus-out: the exporter's address as Prometheus "
                              f"reaches it (default {DEFAULT_EXPORTER})")
    targets.add_argument("--rules-out", type=Path, metavar="FILE",
                         help="with --prometheus-out: where to write the alert rules (default "
                              f"{ALERT_RULES.name} beside the --prometheus-out file)")
    targets.add_argument("--scrape-interval", metavar="DURATION",
                         help="with --prometheus-out: how often to scrape and evaluate the "
                              f"rules (default {DEFAULT_SCRAPE_INTERVAL}; more on a large fabric)")
    targets.add_argument("--scrape-timeout", metavar="DURATION",
                         help="with --prometheus-out: a scrape's time limit, at most the "
                              f"interval (default {DEFAULT_SCRAPE_TIMEOUT}, or the interval "
                              "when shorter)")


def _prometheus_files(args: argparse.Namespace) -> PrometheusFiles | None:
    """What --prometheus-out and its options ask for; TargetsError for an
    option of it given without it, or for a duration Prometheus refuses."""
    from .prometheus_targets import TargetsError, scrape_files

    if args.prometheus_out is None:
        given = [name for name in _PROMETHEUS_ONLY if getattr(args, name) is not None]
        if given:
            raise TargetsError(f"--{given[0].replace('_', '-')} needs --prometheus-out")
        return None
    return scrape_files(args.prometheus_out, rules_out=args.rules_out, exporter=args.exporter,
                        scrape_interval=args.scrape_interval,
                        scrape_timeout=args.scrape_timeout)


def _targets(args: argparse.Namespace) -> int:
    from . import prometheus_targets as pt

    try:
        kinds = pt.check_kinds(args.kinds.split(","))
        auth = pt.read_auth(args.auth)
        prometheus = _prometheus_files(args)  # checked before any file is written
        if args.from_agent:
            from .agent_nodes import read_agent_nodes

            nodes = read_agent_nodes(args.agent, auth)
        else:
            fabric = _build(args)
            if fabric is None:
                return 2
            nodes = pt.node_targets(fabric)
        nodes = pt.of_kinds(nodes, kinds)
        modules = pt.write_targets(
            nodes, agent=args.agent, shipped=args.snmp_yml, auth=auth,
            config_out=args.config_out, targets_out=args.targets_out,
            per_node=[name for name in args.per_node.split(",") if name])
        if prometheus is not None:
            pt.write_prometheus(prometheus, agent=args.agent, targets_out=args.targets_out)
    except (pt.TargetsError, OSError) as exc:
        print(f"ibsnmp: {exc}", file=sys.stderr)
        return 2
    print(f"{len(nodes)} nodes: {modules} per-node modules in {args.config_out}, "
          f"targets in {args.targets_out}")
    if prometheus is not None:
        print(f"Prometheus configuration in {prometheus.config_out}, "
              f"alert rules in {prometheus.rules_out}")
    return 0

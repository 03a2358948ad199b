"""`ibsnmp fabric show|export`: look at a simulated fabric without an agent."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from ibsnmp.fabric.model import Fabric
from ibsnmp.fabric.spec import SpecError

from .run import add_fabric_arguments


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    fabric = subparsers.add_parser("fabric", help="show or export a simulated fabric")
    actions = fabric.add_subparsers(dest="fabric_command", required=True)
    show = actions.add_parser("show", help="summarise nodes, links, LIDs and SMs")
    add_fabric_arguments(show)
    show.set_defaults(handler=_show)
    export = actions.add_parser("export", help="write the fabric as JSON or ibnetdiscover text")
    add_fabric_arguments(export)
    export.add_argument("--format", choices=("json", "ibnetdiscover"), default="json")
    export.set_defaults(handler=_export)


def _build(args: argparse.Namespace) -> Fabric | None:
    from ibsnmp.fabric.generators import build_fabric

    try:
        return build_fabric(args.fabric, seed=args.seed)
    except SpecError as exc:
        print(f"ibsnmp: {exc}", file=sys.stderr)
        return None


def _show(args: argparse.Namespace) -> int:
    fabric = _build(args)
    if fabric is None:
        return 2
    kinds = Counter(node.node_type.name.lower() for node in fabric.nodes.values())
    ports = [port for node in fabric.nodes.values() for port in node.data_ports]
    active = sum(1 for port in ports if port.is_active)
    print(f"fabric {fabric.spec}, seed {fabric.seed}")
    print("nodes: " + ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items())))
    print(f"ports: {len(ports)} data ports, {active} active, {len(fabric.links)} links")
    print(f"LIDs: {len(fabric.lid_map)} base LIDs, highest {fabric.max_lid}")
    local = fabric.local_node
    print(f"local node: {local.guid:016x} {local.description!r}")
    for sm in fabric.sms:
        node = fabric.nodes[sm.node_guid]
        print(f"SM: {sm.state.name.lower()} on {node.guid:016x} {node.description!r} "
              f"priority {sm.priority}")
    print(f"partitions: {len(fabric.partitions)}, multicast groups: "
          f"{len(fabric.multicast_groups)}, services: {len(fabric.services)}")
    return 0


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

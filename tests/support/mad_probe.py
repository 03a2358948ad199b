"""Run under ibsim's preload library: one directed-route SubnGet(), printed as JSON.

usage: python mad_probe.py ATTRIBUTE PATH [MODIFIER] where PATH is "0" for the
local node or "0,1,7" (smpquery's notation: the ports out of each hop).
A timeout prints {"timeout": true}.

`python mad_probe.py discover [WINDOW]` prints a whole directed-route sweep;
`python mad_probe.py window SIZE PATH...` NodeInfo of each path through one window;
`python mad_probe.py lid ATTRIBUTE LID [MODIFIER]` a LID-routed SubnGet();
`python mad_probe.py perf ATTRIBUTE LID [PORT]` a PerfMgt Get() (PORT_COUNTERS...);
`python mad_probe.py counters LID:PORT...` counters of those ports through one window;
`python mad_probe.py cas` the channel adapters libibumad lists;
`python mad_probe.py tid TID` one NodeInfo sent with that transaction ID, the error if refused.
"""

from __future__ import annotations

import json
import sys

from ibsnmp.mad import attributes
from ibsnmp.mad.counters import extended_counter_lids, poll_counters
from ibsnmp.mad.discovery import discover
from ibsnmp.mad.layout import LayoutError
from ibsnmp.mad.packets import decode_reply, directed_route_get, lid_routed_get, perf_get
from ibsnmp.mad.umad import (
    DIRECTED_ROUTE,
    Address,
    MadTimeout,
    UmadPort,
    ca_names,
    perf_address,
)
from ibsnmp.mad.window import MadWindow


def sweep(window_size: int) -> None:
    with UmadPort() as port:
        window = MadWindow(port, size=window_size)
        subnet = discover(window)
    print(json.dumps({
        "nodes": {f"{guid:#x}": {"route": node.route, "info": node.info,
                                 "description": node.description,
                                 "ports": {str(n): p for n, p in node.ports.items()},
                                 "switch_info": node.switch_info,
                                 "lft": {str(lid): port for lid, port in node.lft.items()}}
                  for guid, node in subnet.nodes.items()},
        "links": [[list(a), list(b)] for a, b in subnet.links.items()],
        "unanswered": subnet.unanswered,
        "stats": vars(window.stats),
    }))


def node_guids_through_window(size: int, paths: list[str]) -> None:
    guids: dict[str, int | None] = {}
    with UmadPort() as port:
        window = MadWindow(port, size=size, timeout=0.2, retries=1)
        for path in paths:
            def handle(answer: bytes | None, path: str = path) -> None:
                guids[path] = (None if answer is None else
                               decode_reply(answer, attributes.NODE_INFO).attribute["NodeGUID"])
            route = [int(hop) for hop in path.split(",")[1:]]
            window.submit(directed_route_get(attributes.NODE_INFO, route, 0), DIRECTED_ROUTE,
                          handle)
        window.drain()
    print(json.dumps({"guids": guids, "stats": vars(window.stats)}))


def print_reply(attribute: attributes.AnyAttribute, request: bytes, address: Address) -> None:
    with UmadPort() as port:
        try:
            answer = port.query(request, address, timeout=0.2, retries=1)
        except MadTimeout:
            print(json.dumps({"timeout": True}))
            return
    reply = decode_reply(answer, attribute)
    print(json.dumps({"status": reply.status, "attribute": reply.attribute},
                     default=lambda octets: octets.hex()))


def counters(targets: list[str]) -> None:
    ports = [(int(lid), int(port)) for lid, port in (t.split(":") for t in targets)]
    with UmadPort() as umad_port:
        window = MadWindow(umad_port, size=32)
        extended = extended_counter_lids(window, (lid for lid, _ in ports))
        values, failures = poll_counters(window, ports, extended)
    print(json.dumps({"extended_lids": sorted(extended),
                      "counters": {f"{lid}:{port}": c for (lid, port), c in values.items()},
                      "failures": {f"{lid}:{port}": f for (lid, port), f in failures.items()}}))


def send_with_tid(tid: int) -> None:
    with UmadPort() as port:
        try:
            port.send(directed_route_get(attributes.NODE_INFO, (), 0), DIRECTED_ROUTE, tid)
        except LayoutError as exc:
            print(json.dumps({"refused": str(exc)}))
            return
        answer = port.receive(2.0)
    print(json.dumps({"answer_tid": None if answer is None else
                      attributes.MAD_HEADER.decode(answer)["TransactionID"]}))


def main(argv: list[str]) -> None:
    if argv[0] == "tid":
        send_with_tid(int(argv[1], 0))
        return
    if argv[0] == "cas":
        print(json.dumps(ca_names()))
        return
    if argv[0] == "counters":
        counters(argv[1:])
        return
    if argv[0] in ("lid", "perf"):
        attribute = getattr(attributes, argv[1])
        lid = int(argv[2])
        number = int(argv[3]) if len(argv) > 3 else 0
        if argv[0] == "lid":
            print_reply(attribute, lid_routed_get(attribute, 0, number), Address(lid=lid))
        else:
            print_reply(attribute, perf_get(attribute, 0, number), perf_address(lid))
        return
    if argv[0] == "window":
        node_guids_through_window(int(argv[1]), argv[2:])
        return
    if argv[0] == "discover":
        sweep(int(argv[1]) if len(argv) > 1 else 32)
        return
    attribute = getattr(attributes, argv[0])
    path = [int(hop) for hop in argv[1].split(",")[1:]]
    modifier = int(argv[2]) if len(argv) > 2 else 0
    print_reply(attribute, directed_route_get(attribute, path, 0, modifier), DIRECTED_ROUTE)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Run under ibsim's preload library: one directed-route SubnGet(), printed as JSON.

usage: python mad_probe.py ATTRIBUTE PATH [MODIFIER] where PATH is "0" for the
local node or "0,1,7" (smpquery's notation: the ports out of each hop).
A timeout prints {"timeout": true}.
"""

from __future__ import annotations

import json
import sys

from ibsnmp.mad import attributes
from ibsnmp.mad.packets import decode_reply, directed_route_get
from ibsnmp.mad.umad import DIRECTED_ROUTE, MadTimeout, UmadPort


def main(argv: list[str]) -> None:
    attribute = getattr(attributes, argv[0])
    path = [int(hop) for hop in argv[1].split(",")[1:]]
    modifier = int(argv[2]) if len(argv) > 2 else 0
    with UmadPort() as port:
        try:
            answer = port.query(directed_route_get(attribute, path, 0, modifier),
                                DIRECTED_ROUTE, timeout=0.2, retries=1)
        except MadTimeout:
            print(json.dumps({"timeout": True}))
            return
    reply = decode_reply(answer, attribute)
    print(json.dumps({"status": reply.status, "attribute": reply.attribute}))


if __name__ == "__main__":
    main(sys.argv[1:])

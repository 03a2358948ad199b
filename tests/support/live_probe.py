"""Run under ibsim's preload library: a LiveProvider built and polled in this
process, what it saw printed as JSON.

usage: python live_probe.py POLLS [GUID PORT]
With GUID (hex) and PORT, also that port's IF-MIB counters after the polls.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from ibsnmp.fabric.traffic import interface_counters
from ibsnmp.providers.live import LiveProvider


def main(polls: int, guid: int | None = None, port: int = 0) -> None:
    provider = LiveProvider()
    refreshed = []
    for _ in range(polls):
        result = provider._refresh_now()
        refreshed.append(sorted(f"{ref.guid:x}:{ref.port}" for ref in result.port_octets))  # answered
        provider.poll()
    out = {"sweeps": provider.sweeps, "polls": provider.polls,
           "ports": sum(len(n.ports) for n in provider.snapshot.nodes.values()),
           "refreshed": refreshed}
    if guid is not None:
        fabric = provider.snapshot
        target = fabric.port(guid, port)
        assert target is not None, f"no port {guid:x}/{port}"
        counters = interface_counters(fabric, target, 0.0)
        out["interface"] = None if counters is None else dataclasses.asdict(counters)
    print(json.dumps(out))


if __name__ == "__main__":
    main(int(sys.argv[1]), *((int(sys.argv[2], 16), int(sys.argv[3])) if len(sys.argv) > 3 else ()))

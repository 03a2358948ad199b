"""Run under ibsim's preload library: a LiveProvider built and polled in this
process, what it saw printed as JSON.

usage: python live_probe.py POLLS
"""

from __future__ import annotations

import json
import sys

from ibsnmp.providers.live import LiveProvider


def main(polls: int) -> None:
    provider = LiveProvider()
    refreshed = []
    for _ in range(polls):
        result = provider._refresh_now()
        refreshed.append(sorted(f"{ref.guid:x}:{ref.port}" for ref in result.port_infos))
        provider.poll()
    print(json.dumps({"sweeps": provider.sweeps, "polls": provider.polls,
                      "ports": sum(len(n.ports) for n in provider.snapshot.nodes.values()),
                      "refreshed": refreshed}))


if __name__ == "__main__":
    main(int(sys.argv[1]))

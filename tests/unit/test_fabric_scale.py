"""A 10,000-node fabric must build fast and small; routing stays lazy."""

from __future__ import annotations

import json
import subprocess
import sys

from ibsnmp.fabric import build_fabric, routing, traffic

# 72 leaves x 138 hosts + 18 spines + 72 leaves = 10,026 nodes.  (275 hosts
# per leaf would need 293-port leaves; InfiniBand allows 254.)
BIG = "fat-tree:spines=18,leaves=72,hosts=138"

_MEASURE = f"""
import json, resource, time

def peak_mb():
    # VmHWM is this process's own peak; ru_maxrss on Linux also counts the
    # forking parent's RSS, which would charge pytest's memory to us.
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

from ibsnmp.fabric import build_fabric
before = peak_mb()
start = time.process_time()  # its own CPU: other processes' load does not count
fabric = build_fabric({BIG!r}, seed=1)
seconds = time.process_time() - start
after = peak_mb()
print(json.dumps({{"nodes": len(fabric.nodes), "seconds": round(seconds, 3),
                  "peak_rss_mb": round(after, 1), "grew_mb": round(after - before, 1)}}))
"""


def test_ten_thousand_nodes_build_in_a_fresh_process() -> None:
    # A fresh interpreter, so the RSS figure is this build's and nobody else's.
    done = subprocess.run([sys.executable, "-c", _MEASURE], capture_output=True, text=True, timeout=60, check=True)
    figures = json.loads(done.stdout)
    print(f"\n10k-node build: {figures}")
    assert figures["nodes"] >= 10_000
    assert figures["seconds"] < 3.0  # CPU seconds: several times what it takes
    assert figures["peak_rss_mb"] < 150


def test_big_fabric_routes_lazily() -> None:
    """Laziness shown by what is computed (the forwarding tables asked for),
    not by a clock."""
    fabric = build_fabric(BIG, seed=1)
    assert not fabric.derive(routing._LFTS)
    leaf = next(n for n in fabric.nodes.values() if n.description == "leaf01")
    table = routing.linear_forwarding_table(fabric, leaf.guid)
    assert len(table) == fabric.max_lid + 1 == 10_027
    first, last = fabric.nodes[fabric.sorted_ca_guids()[0]], fabric.nodes[fabric.sorted_ca_guids()[-1]]
    first_port, last_port = first.port(1), last.port(1)
    assert first_port is not None and last_port is not None
    path = routing.trace(fabric, first_port.lid, last_port.lid)
    assert path.hop_count in (2, 4)
    at_a_minute = traffic.port_counters(fabric, first_port, 60)
    assert at_a_minute is not None and at_a_minute.port_xmit_data > 0
    assert len(fabric.derive(routing._LFTS)) <= 4  # leaf01 + the path

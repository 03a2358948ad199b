#!/usr/bin/env python3
"""ibsnmp benchmark: loading a large state file, every value checked.

    .venv/bin/python bench/state_load.py

The state holds 10,000 service associations (the cap), a partition edit
with 10,000 members and 1,000 SL-to-VL maps (about 2.5 MB of JSON), saved
with save_state_file to a temporary directory. Timed (median of 5):

- load: load_state_file, i.e. size and nesting bounds, JSON parse, and the
  check of every value against the MIB object that serves it;
- peer, json.loads: parsing the same file and nothing else.

The agent loads its state once, at start.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

from ibsnmp.mib.loader import definitions
from ibsnmp.mib.write import state_value_problem
from ibsnmp.state.overrides import FULL, ConfigState, PartitionEdit
from ibsnmp.state.store import load_state_file, save_state_file

ROUNDS = 5


def large_state() -> ConfigState:
    return ConfigState(
        service_assoc={(i.to_bytes(16, "big"), f"svc-{i}".encode()): 1 for i in range(10_000)},
        partitions={1: PartitionEdit(members={(g, 1): FULL for g in range(1, 10_001)})},
        sl2vl={(g, 1): tuple(range(16)) for g in range(1, 1_001)},
    )


def median_seconds(action) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    definitions()  # the compiled MIB is loaded once per process, not per file
    state = large_state()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "ibsnmp-state.json"
        save_state_file(path, state)
        assert load_state_file(path, state_value_problem) == state
        def cold_load() -> None:
            state_value_problem.cache_clear()  # as at start: no value checked yet
            load_state_file(path, state_value_problem)

        load = median_seconds(cold_load)
        parse = median_seconds(lambda: json.loads(path.read_text()))
        size = path.stat().st_size
    print(f"state file {size / 1e6:.1f} MB: load {load:.2f} s, json.loads alone {parse:.2f} s "
          f"(x{load / parse:.1f})")


if __name__ == "__main__":
    main()

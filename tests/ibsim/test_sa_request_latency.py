"""How soon an IB-SM-MIB path request is answered by OpenSM's SA on ibsim: the
result row is there within milliseconds of the SET, and holds the SA's answer.

The median of 20 requests is held to 20 ms, not every request: a loaded
machine may stall one. Each request is timed as a manager sees it, SET then
reads of the result table (sa_latency_probe.py, through the agent's own path
to the SA's worker thread).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from tests.support.ibsim import Fabric
from tests.support.infiniband_diags import run_diag, saquery_records
from tests.ibsim.test_mad_ibsim_sa import fabric_with_sa, path_row  # noqa: F401 - the fixture
from tests.support.paths import SUPPORT_DIR

LATENCY_PROBE = SUPPORT_DIR / "sa_latency_probe.py"
REQUESTS = 20
SLID, DLIDS = 1, (2, 3, 4, 5, 6, 7)  # ring.net at LMC 0: one LID a port
MEDIAN_LIMIT_S = 0.020


def test_a_path_requests_result_row_is_there_within_20_ms(fabric_with_sa: Fabric) -> None:  # noqa: F811
    done = fabric_with_sa.run([sys.executable, str(LATENCY_PROBE), str(REQUESTS), str(SLID),
                               *map(str, DLIDS)])
    assert done.returncode == 0, done.stderr
    ours = json.loads(done.stdout)
    answers = {dlid: [path_row(p) for p in saquery_records(run_diag(
        fabric_with_sa, "saquery", "--src-to-dst", f"{SLID}:{dlid}"))] for dlid in DLIDS}
    assert ours["rows"] == [answers[DLIDS[n % len(DLIDS)]] for n in range(REQUESTS)]
    latencies = ours["latencies"]
    assert len(latencies) == REQUESTS
    assert statistics.median(latencies) < MEDIAN_LIMIT_S, \
        f"{[round(s * 1e3, 1) for s in latencies]} ms"

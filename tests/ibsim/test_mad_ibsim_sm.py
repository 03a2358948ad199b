"""LID-routed SMPs and PerfMgt MADs through libibumad on an ibsim fabric that
OpenSM has brought up, compared with `smpquery` and `perfquery`."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.ibsim import NET_DIR, Fabric, ibsim_fabric, opensm_running
from tests.support.infiniband_diags import ibroute, labelled_values, run_diag, smpquery_node_info
from tests.support.paths import SUPPORT_DIR

PROBE = SUPPORT_DIR / "mad_probe.py"
PORT_ACTIVE = 4
SUBNET_UP_TIMEOUT = 60.0


def probe(fabric: Fabric, *args: str | int) -> dict[str, object]:
    done = fabric.run([sys.executable, str(PROBE), *map(str, args)])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result.get("status") == 0, result
    attribute: dict[str, object] = result["attribute"]
    return attribute


@pytest.fixture(scope="module")
def fabric_with_sm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fabric]:
    with ibsim_fabric(NET_DIR / "ring.net", tmp_path_factory.mktemp("ibsim-sm")) as fabric:
        with opensm_running(fabric):
            # The subnet is up once the farthest HCA's port is active.
            deadline = time.monotonic() + SUBNET_UP_TIMEOUT
            while probe(fabric, "PORT_INFO", "0,1,8,1", 1)["PortState"] != PORT_ACTIVE:
                if time.monotonic() > deadline:
                    pytest.fail(f"OpenSM did not bring the subnet up in {SUBNET_UP_TIMEOUT} s")
                time.sleep(0.5)
            yield fabric


def switch_lid(fabric: Fabric, route: str) -> int:
    lid = probe(fabric, "PORT_INFO", route, 0)["LID"]
    assert isinstance(lid, int) and lid > 0
    return lid


def test_lid_routed_node_info_matches_smpquery(fabric_with_sm: Fabric) -> None:
    lid = switch_lid(fabric_with_sm, "0,1,7")
    ours = probe(fabric_with_sm, "lid", "NODE_INFO", lid)
    assert ours == smpquery_node_info(fabric_with_sm, str(lid), directed=False)
    assert ours["NodeGUID"] == 0x200001


@pytest.mark.parametrize("attribute, extended", [("PORT_COUNTERS", False),
                                                  ("PORT_COUNTERS_EXTENDED", True)])
def test_port_counters_match_perfquery(fabric_with_sm: Fabric, attribute: str,
                                       extended: bool) -> None:
    # Port 1 of S-2 leads to H-3, off the path these queries take, so it stays still.
    lid = switch_lid(fabric_with_sm, "0,1,7")
    ours = probe(fabric_with_sm, "perf", attribute, lid, 1)
    theirs = labelled_values(run_diag(fabric_with_sm, "perfquery", *(["-x"] if extended else []),
                                      str(lid), "1"))
    assert set(theirs) <= set(ours), set(theirs) - set(ours)
    assert {name: int(theirs[name], 0) for name in theirs} == {name: ours[name] for name in theirs}
    # OpenSM's sweep crossed that link, so the data counters are not all zero.
    assert ours["PortXmitPkts"] and ours["PortRcvPkts"]


def test_perf_class_port_info_matches_perfquery(fabric_with_sm: Fabric) -> None:
    lid = switch_lid(fabric_with_sm, "0,1,7")
    ours = probe(fabric_with_sm, "perf", "CLASS_PORT_INFO", lid)
    header = run_diag(fabric_with_sm, "perfquery", str(lid), "1").splitlines()[0]
    assert f"(CapMask: {ours['CapabilityMask']:#06x})" in header, header


def test_sweep_reads_the_forwarding_tables_ibroute_prints(fabric_with_sm: Fabric) -> None:
    done = fabric_with_sm.run([sys.executable, str(PROBE), "discover"])
    assert done.returncode == 0, done.stderr
    sweep = json.loads(done.stdout)
    assert sweep["unanswered"] == []
    switches = [n for n in sweep["nodes"].values() if n["info"]["NodeType"] == 2]
    assert len(switches) == 3
    for switch in switches:
        route = ",".join(["0", *map(str, switch["route"])])
        lft = {int(lid): port for lid, port in switch["lft"].items() if port != 0xFF}
        assert lft == ibroute(fabric_with_sm, route), switch["description"]
        # OpenSM routed every LID of the ring (7 nodes, one LID each at LMC 0).
        assert switch["switch_info"]["LinearFDBTop"] == 7 and len(lft) == 7


def test_counter_poll_of_many_ports_matches_perfquery(fabric_with_sm: Fabric) -> None:
    s2, s3 = switch_lid(fabric_with_sm, "0,1,7"), switch_lid(fabric_with_sm, "0,1,8")
    # Every port of two switches; ports 2-6 have no cable, and ports 1 lead to
    # H-3 and H-4, off the paths of these queries, so they stay still.
    targets = [f"{lid}:{port}" for lid in (s2, s3) for port in range(1, 9)]
    done = fabric_with_sm.run([sys.executable, str(PROBE), "counters", *targets])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["failures"] == {}
    assert result["extended_lids"] == sorted((s2, s3))  # CapMask 0x1300 has the 0x200 bit
    assert sorted(result["counters"]) == sorted(targets)
    for lid in (s2, s3):
        ours = result["counters"][f"{lid}:1"]
        basic = labelled_values(run_diag(fabric_with_sm, "perfquery", str(lid), "1"))
        extended = labelled_values(run_diag(fabric_with_sm, "perfquery", "-x", str(lid), "1"))
        # The data counters come from PortCountersExtended, the errors from PortCounters.
        theirs = {**basic, **extended}
        assert {name: int(value, 0) for name, value in theirs.items()} == {
            name: ours[name] for name in theirs}

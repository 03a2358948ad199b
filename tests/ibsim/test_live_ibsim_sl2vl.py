"""`ibsnmp run --provider live` on a 3x3 torus (tests/data/ibsim/torus.net)
that OpenSM's torus-2QoS routing engine programmed: a switch's SL-to-VL
table differs by input port (a packet that crossed a dateline keeps to
other VLs), and every (output port, input port) pair is served as
`smpquery sl2vl` reads it, output port 0 (the switch itself) included."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from tests.ibsim.test_live_ibsim import PORT_ACTIVE, Live, agent_listening, lid_of, port_state, until

from tests.support.ibsim import NET_DIR, Fabric, ibsim_fabric, opensm_running
from tests.support.infiniband_diags import run_diag

# ibsim numbers the switches of torus.net from 0x200000 in the order they
# are listed (S-x-y at y * 3 + x); H-22 is the far corner's HCA, reached
# from H-1 through S-0-0, x-1 to S-2-0, y-1 to S-2-2.
SWITCHES = {f"S-{x}-{y}": 0x200000 + y * 3 + x for y in range(3) for x in range(3)}
H22_ROUTE = "0,1,2,4,5"
DATA_PORTS = range(1, 6)
INPUT_PORTS = range(0, 9)  # ibsim's switches have 8 ports; 0 is the switch itself
SMA_NO_PORT = 255  # SMA-MIB's index of switch port 0
# torus-2QoS needs the torus's size and the switches at (0,0,0) -> (1,0,0)
# and (0,0,0) -> (0,1,0) to place the others.
TORUS_CONFIG = f"""torus 3 3 1
xp_link {SWITCHES['S-0-0']:#x} {SWITCHES['S-1-0']:#x}
yp_link {SWITCHES['S-0-0']:#x} {SWITCHES['S-0-1']:#x}
"""
SMPQUERY_ROW = re.compile(r"^ports: in\s+(\d+), out\s+(\d+):\s*\|(.*)\|$")


def smpquery_sl2vl(fabric: Fabric, lid: int, out: int) -> dict[int, tuple[int, ...]]:
    """`smpquery sl2vl LID OUT`: input port -> VL of each SL."""
    rows = {}
    for line in run_diag(fabric, "smpquery", "sl2vl", str(lid), str(out)).splitlines():
        if match := SMPQUERY_ROW.match(line):
            assert int(match[2]) == out, line
            rows[int(match[1])] = tuple(int(v) for v in match[3].split("|"))
    return rows


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    workdir = tmp_path_factory.mktemp("ibsim-torus")
    config = workdir / "torus-2QoS.conf"
    config.write_text(TORUS_CONFIG)
    with ibsim_fabric(NET_DIR / "torus.net", workdir) as fabric, ExitStack() as stack:
        stack.enter_context(opensm_running(fabric, "--qos", "--routing_engine", "torus-2QoS",
                                           "--torus_config", str(config)))
        until("H-22 port 1", lambda: port_state(fabric, H22_ROUTE, 1), lambda s: s == PORT_ACTIVE)
        agent, address, log = agent_listening(stack, fabric)
        yield Live(fabric, None, agent, address, None, log)  # type: ignore[arg-type]  # no SM


def served_sma_tables(live: Live, guid: int) -> dict[tuple[int, int], tuple[int, ...]]:
    """SMA-MIB's SL-to-VL table of a switch: (output, input index) -> VL of each SL."""
    cells = {tuple(map(int, key.split("."))): int(vl) for key, vl in
             live.column(guid, "ibSmaVirtualLane", "SMA-MIB::ibSmaSL2VLMapTable").items()}
    pairs = {(out, into) for out, into, _ in cells}
    return {pair: tuple(cells[(*pair, sl)] for sl in range(1, 17)) for pair in pairs}


def test_every_output_and_input_pair_is_served_as_smpquery_reads_it(live: Live) -> None:
    differing = 0
    for name, guid in SWITCHES.items():
        lid = lid_of(live, guid)
        served = served_sma_tables(live, guid)
        theirs: dict[tuple[int, int], tuple[int, ...]] = {}
        for out in (0, *DATA_PORTS):
            rows = smpquery_sl2vl(live.fabric, lid, out)
            assert sorted(rows) == list(INPUT_PORTS), (name, out, rows)
            differing += out != 0 and len(set(rows.values())) > 1
            theirs.update(((out or SMA_NO_PORT, into or SMA_NO_PORT), table)
                          for into, table in rows.items())
        # Ports 6..8 have no link: their tables are served too, as read.
        compared = (SMA_NO_PORT, *DATA_PORTS)
        assert {pair: table for pair, table in served.items() if pair[0] in compared} == theirs, name
        assert {out for out, _ in served} == {SMA_NO_PORT, *range(1, 9)}, name
    # The fabric is what the test is for: tables that differ by input port.
    assert differing >= 9, differing


def test_ib_sm_mib_serves_each_pair_of_data_ports(live: Live) -> None:
    guid = SWITCHES["S-0-0"]
    lid = lid_of(live, guid)
    walked = live.walk(None, "IB-SM-MIB::ibSmSwSLtoVLMapTable")
    served: dict[tuple[int, int], dict[int, int]] = {}
    for key, value in walked.items():
        column, _, index = key.partition(".")
        match = re.fullmatch(r"ibSmSwSLtoVLMapSL(\d+)toVL", column)
        parts = index.split(".")
        if match and int("".join(f"{int(p):02x}" for p in parts[8:16]), 16) == guid:
            served.setdefault((int(parts[16]), int(parts[17])), {})[int(match[1])] = int(value)
    for out in DATA_PORTS:
        for into, table in smpquery_sl2vl(live.fabric, lid, out).items():
            if into:  # input port 0 is outside IB-SM-MIB's 1..255
                assert tuple(served[(into, out)][sl] for sl in range(16)) == table, (into, out)
    assert (0, 1) not in served and len(served) == 8 * 8

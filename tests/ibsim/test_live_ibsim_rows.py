"""`ibsnmp run --provider live` on five 18-port switches, the rows of two
per-port tables compared with what `smpquery` reads, row for row and value
for value:

- GUIDInfo (SMA-MIB ibSmaGuidInfoTable) of every switch and every CA port:
  a switch answers GUIDInfo for its port 0 alone (IBA 14.2.5.5: the
  attribute modifier names a block of eight GUIDs, never a port), served
  under 255 as SMA-MIB's other port-0 rows; a CA port's under its number.
- SL-to-VL (SMA-MIB ibSmaSL2VLMapTable) of every switch: one table per
  (input port, output port) pair, 0..18 each (IBA 14.2.5.8), port 0 served
  as 255: output port 0 included.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import pytest
from tests.ibsim.test_live_ibsim import (
    PORT_ACTIVE,
    Live,
    agent_listening,
    port_state,
    until,
)
from tests.ibsim.test_live_ibsim_sl2vl import served_sma_tables, smpquery_sl2vl

from tests.support.ibsim import Fabric, ibsim_fabric, opensm_running
from tests.support.infiniband_diags import run_diag

SWITCH_PORTS = 18
SWITCH_COUNT = 5
NO_PORT = 255  # SMA-MIB's index of switch port 0 (IbDataPortAndInvalid)
RING_OUT, RING_IN = 18, 17  # S-k[18] -- S-(k+1)[17], around the ring
# Directed routes from H-1 (the first node: the agent and the tools attach
# there) to the far end of each CA link, and that CA port: H-2..H-5 on port 1
# of S-2..S-5, H-6 on S-1 port 2, H-1's own port 2 on S-2 port 2.
CA_PORTS = (("0,1,18,1", 1), ("0,1,18,18,1", 1), ("0,1,17,17,1", 1), ("0,1,17,1", 1),
            ("0,1,2", 1), ("0,1,18,2", 2))


def ring_net() -> str:
    """ibsim's topology: S-1..S-5 (18 ports each) in a ring over ports 17
    and 18; H-2..H-5 on port 1 of S-2..S-5; H-1 dual-homed (S-1 port 1,
    S-2 port 2); H-6 on S-1 port 2. Ports 3..16 have no link."""
    def switch(k: int) -> str:
        after, before = k % SWITCH_COUNT + 1, (k - 2) % SWITCH_COUNT + 1
        lines = [f'Switch\t{SWITCH_PORTS} "S-{k}"']
        if k == 1:
            lines += ['[1]\t"H-1"[1]', '[2]\t"H-6"[1]']
        elif k == 2:
            lines += ['[1]\t"H-2"[1]', '[2]\t"H-1"[2]']
        else:
            lines += [f'[1]\t"H-{k}"[1]']
        lines += [f'[{RING_IN}]\t"S-{before}"[{RING_OUT}]', f'[{RING_OUT}]\t"S-{after}"[{RING_IN}]']
        return "\n".join(lines)

    cas = ['Hca\t2 "H-1"\n[1]\t"S-1"[1]\n[2]\t"S-2"[2]']
    cas += [f'Hca\t1 "H-{k}"\n[1]\t"S-{k}"[1]' for k in range(2, SWITCH_COUNT + 1)]
    cas += ['Hca\t1 "H-6"\n[1]\t"S-1"[2]']
    return "\n\n".join([cas[0], *map(switch, range(1, SWITCH_COUNT + 1)), *cas[1:]]) + "\n"


@dataclass(frozen=True)
class Nodes:
    """The fabric as ibnetdiscover prints it: each switch's port-0 LID, each CA port's LID."""

    switches: dict[int, int]  # node GUID -> LID
    ca_ports: dict[int, dict[int, int]]  # node GUID -> port -> LID


SWITCH_LINE = re.compile(r'^Switch\s+\d+\s+"S-([0-9a-f]{16})".*\bport 0 lid (\d+)\b')
CA_LINE = re.compile(r'^Ca\s+\d+\s+"H-([0-9a-f]{16})"')
CA_PORT_LINE = re.compile(r"^\[(\d+)\]\([0-9a-f]+\)\s.*#\s+lid (\d+)\b")


def discovered(fabric: Fabric) -> Nodes:
    switches: dict[int, int] = {}
    ca_ports: dict[int, dict[int, int]] = {}
    ca: dict[int, int] | None = None
    for line in run_diag(fabric, "ibnetdiscover").splitlines():
        if match := SWITCH_LINE.match(line):
            switches[int(match[1], 16)] = int(match[2])
            ca = None
        elif match := CA_LINE.match(line):
            ca = ca_ports.setdefault(int(match[1], 16), {})
        elif ca is not None and (match := CA_PORT_LINE.match(line)):
            ca[int(match[1])] = int(match[2])
    return Nodes(switches, ca_ports)


GUID_PAIR = re.compile(r"^\s*(\d+): 0x([0-9a-f]{16}) 0x([0-9a-f]{16})$")
GUID_CAP = re.compile(r"^(\d+) guids capacity for this port$")


def smpquery_guids(fabric: Fabric, lid: int) -> tuple[int, ...]:
    """`smpquery guidinfo LID`: the GUIDCap entries of the port at LID, in
    order. smpquery prints them two by two, so an odd capacity shows one
    more (past the capacity: not an entry)."""
    entries: list[int] = []
    cap = None
    for line in run_diag(fabric, "smpquery", "guidinfo", str(lid)).splitlines():
        if match := GUID_PAIR.match(line):
            assert int(match[1]) == len(entries), line
            entries += [int(match[2], 16), int(match[3], 16)]
        elif match := GUID_CAP.match(line):
            cap = int(match[1])
    assert cap is not None and len(entries) >= cap, entries
    return tuple(entries[:cap])


def assigned(entries: tuple[int, ...]) -> tuple[int, ...]:
    """The GUIDInfo entries up to the last one assigned: a GUID of 0 is no
    GUID, and SMA-MIB lists the GUIDs assigned to a port (ibSmaGuidIndex:
    one 0 entry for a port with none)."""
    kept = list(entries)
    while kept and not kept[-1]:
        kept.pop()
    return tuple(kept) or (0,)


def served_guids(live: Live, guid: int) -> dict[tuple[int, int], int]:
    """SMA-MIB's GUIDInfo table in a node's context: (port index, GUID index) -> GUID."""
    rows = {}
    for key, value in live.column(guid, "ibSmaGuidVal", "SMA-MIB::ibSmaGuidInfoTable").items():
        port, index = map(int, key.split("."))
        rows[(port, index)] = int(re.sub("[^0-9a-fA-F]", "", value), 16)
    return rows


def smpquery_guid_rows(live: Live, nodes: Nodes, guid: int) -> dict[tuple[int, int], int]:
    """The rows smpquery's reading of a node gives: a switch's port 0 under
    255, each CA port with a LID under its number."""
    ports = ({NO_PORT: nodes.switches[guid]} if guid in nodes.switches
             else nodes.ca_ports[guid])
    return {(index, i + 1): value for index, lid in ports.items()
            for i, value in enumerate(assigned(smpquery_guids(live.fabric, lid)))}


def smpquery_sl2vl_pairs(live: Live, lid: int) -> dict[tuple[int, int], tuple[int, ...]]:
    """Every (output, input) pair `smpquery sl2vl LID OUT` reads, OUT 0..18,
    indexed as SMA-MIB indexes them (port 0 as 255)."""
    pairs = {}
    for out in range(SWITCH_PORTS + 1):
        for into, table in smpquery_sl2vl(live.fabric, lid, out).items():
            pairs[(out or NO_PORT, into or NO_PORT)] = table
    return pairs


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    workdir = tmp_path_factory.mktemp("ibsim-rows")
    net = workdir / "ring18.net"
    net.write_text(ring_net())
    with ibsim_fabric(net, workdir) as fabric, ExitStack() as stack:
        stack.enter_context(opensm_running(fabric))
        for route, port in CA_PORTS:
            until(f"the CA port at {route}",
                  functools.partial(port_state, fabric, route, port),
                  lambda state: state == PORT_ACTIVE)
        agent, address, log = agent_listening(stack, fabric)
        yield Live(fabric, None, agent, address, None, log)  # type: ignore[arg-type]  # no SM


@pytest.fixture(scope="module")
def nodes(live: Live) -> Nodes:
    found = discovered(live.fabric)
    assert len(found.switches) == SWITCH_COUNT and len(found.ca_ports) == 6, found
    assert sorted(map(len, found.ca_ports.values())) == [1, 1, 1, 1, 1, 2], found
    return found


def test_guid_info_rows_are_those_smpquery_reads(live: Live, nodes: Nodes) -> None:
    for guid in [*nodes.switches, *nodes.ca_ports]:
        assert served_guids(live, guid) == smpquery_guid_rows(live, nodes, guid), f"{guid:#x}"


def test_a_switch_has_the_guid_info_of_port_0_alone(live: Live, nodes: Nodes) -> None:
    for guid, lid in nodes.switches.items():
        # GUID 0 of a port is its port GUID; a switch's ports share port 0's.
        assert smpquery_guids(live.fabric, lid)[0] == guid
        assert served_guids(live, guid) == {(NO_PORT, 1): guid}, f"{guid:#x}"


def test_every_sl2vl_pair_is_served_as_smpquery_reads_it(live: Live, nodes: Nodes) -> None:
    every_pair = {(out or NO_PORT, into or NO_PORT) for out in range(SWITCH_PORTS + 1)
                  for into in range(SWITCH_PORTS + 1)}
    for guid, lid in nodes.switches.items():
        theirs = smpquery_sl2vl_pairs(live, lid)
        assert set(theirs) == every_pair, f"{guid:#x}"  # ibsim answers every pair
        served = served_sma_tables(live, guid)
        assert served == theirs, (f"{guid:#x}", sorted(set(theirs) ^ set(served)))

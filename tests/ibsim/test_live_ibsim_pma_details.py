"""`ibsnmp run --provider live` on ibsim's live.net: the PMA detail
attributes ibsim answers (PortRcvErrorDetails, PortXmitDiscardDetails,
PortFlowCtlCounters, PortVLXmitFlowCtlUpdateErrors, PortVLXmitWaitCounters,
and the per-opcode PortOpRcvCounters, PortVLOpPackets, PortVLOpData) are
served in PMA-MIB's detail tables as perfquery reads them, after ibsim's
`PerformanceSet` gave every field its own value; a per-opcode one in the
one row of the opcode it counted; what ibsim does not answer
(SwPortVLCongestion) has no instance."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from tests.ibsim.test_live_ibsim import Live, agent_listening, lid_of, subnet_up, until

from tests.support.ibsim import NET_DIR, ibsim_fabric
from tests.support.infiniband_diags import labelled_values, run_diag

SWEEP_S = 2.0  # the detail attributes are read at each sweep
H6, S3 = 0x10000F, 0x200002
NUM_VLS = 16
# perfquery's option, its labels -> PMA-MIB's table and columns.
ATTRIBUTES = {
    "-E": ("ibPmaPortRcvErrTable", {
        "PortLocalPhysicalErrors": "ibPmaPortRcvErrLocalPhysErrs",
        "PortMalformedPktErrors": "ibPmaPortMalformedPacketErrs",
        "PortBufferOverrunErrors": "ibPmaPortBufferOverrunErrs",
        "PortDLIDMappingErrors": "ibPmaPortDLIDMappingErrs",
        "PortVLMappingErrors": "ibPmaPortVLMappingErrs",
        "PortLoopingErrors": "ibPmaPortLoopingErrs"}),
    "-D": ("ibPmaPortXmitDiscardTable", {
        "PortInactiveDiscards": "ibPmaPortInactiveDiscards",
        "PortNeighborMTUDiscards": "ibPmaPortNeighborMtuDiscards",
        "PortSwLifetimeLimitDiscards": "ibPmaPortSwLifetimeLimitDiscards",
        "PortSwHOQLifetimeLimitDiscards": "ibPmaPortSwHoqLimitDiscards"}),
    "--flowctlcounters": ("ibPmaPortFlowCtlCntrsTable", {
        "PortXmitFlowPkts": "ibPmaPortFlowCtlXmitFlowPkts",
        "PortRcvFlowPkts": "ibPmaPortFlowCtlRcvFlowPkts"}),
    "--vlxmitflowctlerrors": ("ibPmaPortVlXmitFCUpErrTable", {
        f"PortVLXmitFlowCtlUpdateErrors{vl}": f"ibPmaPortVlXmitFCUpErr{vl}" for vl in range(NUM_VLS)}),
    "--vlxmitcounters": ("ibPmaPortVlXmitWaitCntrsTable", {
        f"PortVLXmitWait{vl}": f"ibPmaPortVlXmitWait{vl}" for vl in range(NUM_VLS)}),
}
# ibsim's console names (PerformanceSet "node"[port] Attribute.Field=value), each
# field a value of its own that fits its width (the update errors have 2 bits).
IBSIM_SETS = [
    *(f"PortRcvErrorDetails.{field}={10 + i}" for i, field in enumerate((
        "PortLocalPhysicalErrors", "PortMalformedPacketErrors", "PortBufferOverrunErrors",
        "PortDLIDMappingErrors", "PortVLMappingErrors", "PortLoopingErrors"))),
    *(f"PortXmitDiscardDetails.{field}={20 + i}" for i, field in enumerate((
        "PortInactiveDiscards", "PortNeighborMTUDiscards", "PortSwLifetimeLimitDiscards",
        "PortSwHOQLifetimeLimitDiscards"))),
    "PortFlowCtlCounters.PortXmitFlowPkts=70000", "PortFlowCtlCounters.PortRcvFlowPkts=80000",
    *(f"PortVLXmitFlowCtlUpdateErrors.PortVLXmitFlowCtlUpdateErrors{vl}={vl % 4}"
      for vl in range(NUM_VLS)),
    *(f"PortVLXmitWaitCounters.PortVLXmitWaitCounters{vl}={300 + vl}" for vl in range(NUM_VLS)),
    "PortOpRcvCounters.PortOpRcvPkts=90000", "PortOpRcvCounters.PortOpRcvData=91000",
    *(f"PortVLOpPackets.PortVLOpPackets{vl}={400 + vl}" for vl in range(NUM_VLS)),
    *(f"PortVLOpData.PortVLOpData{vl}={500 + vl}" for vl in range(NUM_VLS)),
]
# The per-opcode ones: perfquery's option and labels -> PMA-MIB's table and
# columns (indexed by port and opcode + 1).
OPCODE_ATTRIBUTES = {
    "--oprcvcounters": ("ibPmaPortOpCodeRcvCntrsTable", {
        "PortOpRcvPkts": "ibPmaPortOpCodeRcvCntrsRcvPkts",
        "PortOpRcvData": "ibPmaPortOpCodeRcvCntrsRcvData"}),
    "--vloppackets": ("ibPmaPortOpCodeVlCntrsTable", {
        f"PortVLOpPackets{vl}": f"ibPmaPortVlOpPkt{vl}" for vl in range(NUM_VLS)}),
    "--vlopdata": ("ibPmaPortOpCodeVlDataCntrsTable", {
        f"PortVLOpData{vl}": f"ibPmaPortVlOpData{vl}" for vl in range(NUM_VLS)}),
}
SET_PORTS = (("S-3", 1), ("S-3", 8), ("H-6", 1))


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    workdir = tmp_path_factory.mktemp("ibsim-pma-details")
    with ibsim_fabric(NET_DIR / "live.net", workdir, console=True) as fabric, \
            ExitStack() as stack:
        sm = subnet_up(stack, fabric)
        agent, address, log = agent_listening(stack, fabric, "--poll-interval", "1",
                                              "--sweep-interval", str(SWEEP_S))
        for node, port in SET_PORTS:
            for assignment in IBSIM_SETS:
                fabric.command(f'PerformanceSet "{node}"[{port}] {assignment}')
        yield Live(fabric, sm, agent, address, None, log)  # type: ignore[arg-type]  # no traps


def perfquery(live: Live, option: str, lid: int, port: int) -> dict[str, int]:
    return {label: int(value, 0) for label, value in
            labelled_values(run_diag(live.fabric, "perfquery", option, str(lid), str(port))).items()
            if label not in ("PortSelect", "CounterSelect")}


def served(live: Live, guid: int, table: str, port: int) -> dict[str, int]:
    """One row of a PMA-MIB table: column -> value."""
    return {key.split(".")[0]: int(value) for key, value in
            live.walk(guid, f"PMA-MIB::{table}").items() if key.endswith(f".{port}")}


def assert_served_as_perfquery_reads(live: Live, attributes: dict[str, tuple[str, dict[str, str]]],
                                     row_of: Callable[[int, str, int], dict[str, int]]) -> None:
    """Each attribute of S-3's eight ports and H-6's one, as perfquery reads it,
    equals the PMA-MIB row `row_of(guid, table, port)` serves."""
    for guid, ports in ((S3, range(1, 9)), (H6, (1,))):
        lid = lid_of(live, guid)
        for option, (table, columns) in attributes.items():
            for port in ports:
                theirs = perfquery(live, option, lid, port)
                assert set(theirs) == set(columns), (option, theirs)
                ours = row_of(guid, table, port)
                assert ours == {columns[label]: value for label, value in theirs.items()}, \
                    (hex(guid), port, option)


def test_detail_attributes_are_served_as_perfquery_reads_them(live: Live) -> None:
    # The values set show once a sweep has read them.
    until("S-3 port 8's looping errors", lambda: served(live, S3, "ibPmaPortRcvErrTable", 8),
          lambda row: row.get("ibPmaPortLoopingErrs") == 15)
    until("H-6's VL15 wait", lambda: served(live, H6, "ibPmaPortVlXmitWaitCntrsTable", 1),
          lambda row: row.get("ibPmaPortVlXmitWait15") == 315)
    assert_served_as_perfquery_reads(
        live, ATTRIBUTES, lambda guid, table, port: served(live, guid, table, port))
    # Every field was set to a value of its own: a field read from another
    # offset would not match above.
    assert served(live, S3, "ibPmaPortFlowCtlCntrsTable", 1) == {
        "ibPmaPortFlowCtlXmitFlowPkts": 70000, "ibPmaPortFlowCtlRcvFlowPkts": 80000}


def served_rows(live: Live, guid: int, table: str, port: int) -> dict[int, dict[str, int]]:
    """The rows of a per-opcode PMA-MIB table of one port: opcode index ->
    column -> value."""
    rows: dict[int, dict[str, int]] = {}
    for key, value in live.walk(guid, f"PMA-MIB::{table}").items():
        column, _, index = key.partition(".")
        if index.startswith(f"{port}."):
            rows.setdefault(int(index.split(".")[1]), {})[column] = int(value)
    return rows


def test_per_opcode_attributes_are_served_for_the_opcode_counted(live: Live) -> None:
    """Each counts the one opcode a PerfMgt Set() chose: one row per port, that
    opcode's, holding what perfquery reads."""
    until("H-6's op data on VL14", lambda: served_rows(live, H6, "ibPmaPortOpCodeVlDataCntrsTable", 1),
          lambda rows: [row.get("ibPmaPortVlOpData14") for row in rows.values()] == [514])

    def the_one_row(guid: int, table: str, port: int) -> dict[str, int]:
        rows = served_rows(live, guid, table, port)
        assert len(rows) == 1, (hex(guid), port, table, rows)
        (row,) = rows.values()
        return row

    assert_served_as_perfquery_reads(live, OPCODE_ATTRIBUTES, the_one_row)
    (row,) = served_rows(live, S3, "ibPmaPortOpCodeRcvCntrsTable", 8).values()
    assert row == {"ibPmaPortOpCodeRcvCntrsRcvPkts": 90000, "ibPmaPortOpCodeRcvCntrsRcvData": 91000}


def test_attributes_ibsim_does_not_answer_have_no_instances(live: Live) -> None:
    # (Asked of a switch: under ibsim, a PerfMgt MAD it does not answer goes
    # on to the client attached at the node, and OpenSM does not survive it.)
    lid = str(lid_of(live, S3))
    done = live.fabric.run(["perfquery", "--swportvlcong", "-t", "200", lid, "1"])
    assert done.returncode != 0  # ibsim has no SwPortVLCongestion
    assert instances(live, S3, "ibPmaPortVlSwCongestionTable") == 0
    # The PortCounters rows are there, for comparison.
    assert instances(live, S3, "ibPmaPortCntrsTable") == 8 * 12


def instances(live: Live, guid: int, table: str) -> int:
    """How many objects a walk of `table` finds (net-snmp names the table
    itself, "No Such Object", when it finds none)."""
    return sum("." in key for key in live.walk(guid, f"PMA-MIB::{table}"))

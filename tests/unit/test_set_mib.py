"""IB-SM-MIB SETs through the agent's MIB, without SNMP: RowStatus, the
SA request tables, configuration, partitions, services, SL-to-VL and VL
arbitration, every RFC 3416 error, all or nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest
from pysnmp.proto import rfc1902
from tests.support.set_support import Agent, i, instance, s

from ibsnmp.fabric.iba import SmState
from ibsnmp.fabric.model import Port
from ibsnmp.mib.api import Oid, SetError
from ibsnmp.sa import query

SPEC = "fat-tree:spines=2,leaves=3,hosts=2,faults=0"
LMC_SPEC = "fat-tree:spines=2,leaves=2,hosts=2,faults=0,lmc=1"
CREATE_AND_GO, CREATE_AND_WAIT, ACTIVE, NOT_IN_SERVICE, DESTROY = 4, 5, 1, 2, 6

T = TypeVar("T")


def present(value: T | None) -> T:
    """`value`, which the test expects to be there."""
    assert value is not None
    return value


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    return Agent(SPEC, seed=4, path=tmp_path / "state.json")


def hosts(agent: Agent) -> list[Port]:
    return [p for n in agent.fabric.nodes.values() if n.is_ca for p in n.ports if p.lid]


def path_req(agent: Agent, column: str, session: int) -> Oid:
    return instance(f"ibSmPathReq{column}", agent.prefix, session)


def refused(agent: Agent, *varbinds: tuple[Oid, Any], context: bytes = b"") -> tuple[str, int]:
    with pytest.raises(SetError) as caught:
        agent.set(*varbinds, context=context)
    return caught.value.status, caught.value.index


def results(agent: Agent, table: str, session: int) -> list[dict[str, Any]]:
    """Result rows of one session: {short column: value} in index order."""
    rows: dict[int, dict[str, Any]] = {}
    for column in ("DstLID", "SrcLID", "MTU", "Rate", "PKey", "NumbPath", "Preference", "SL",
                   "PktLifeTime") if table != "Trace" else (
                   "NodeType", "NodeID", "EntryPort", "ExitPort", "EntryPortID"):
        for suffix, value in agent.column(f"ibSm{table}Result{column}").items():
            if suffix[8] == session:
                rows.setdefault(suffix[9], {})[column] = value
    return [rows[n] for n in sorted(rows)]


# -- path requests --------------------------------------------------------------------------------


def test_create_and_go_computes_the_path(agent: Agent) -> None:
    src, dst = hosts(agent)[0], hosts(agent)[-1]
    agent.set((path_req(agent, "RowStatus", 7), i(CREATE_AND_GO)),
              (path_req(agent, "SrcLID", 7), i(src.lid)),
              (path_req(agent, "DstLID", 7), i(dst.lid)))
    (row,) = results(agent, "Path", 7)
    (expected,) = query.path_records(agent.fabric, query.PathQuery(slid=src.lid, dlid=dst.lid))
    assert row["SrcLID"] == src.lid and row["DstLID"] == dst.lid
    assert row["MTU"] == expected.mtu - 1 and row["Rate"] == expected.rate
    assert row["NumbPath"] == 1 and row["Preference"] == 0
    assert agent.get(path_req(agent, "RowStatus", 7)) == ACTIVE
    # The mask was never written: it is that of the columns written (SLID, DLID).
    mask = int.from_bytes(agent.get(path_req(agent, "RowCompMask", 7)), "big")
    assert mask == query.PR.SLID | query.PR.DLID
    assert agent.get(path_req(agent, "CreationTime", 7)) == 0
    assert agent.get(path_req(agent, "SrcGID", 7)) is None  # never written


def test_create_and_wait_then_active(agent: Agent) -> None:
    src, dst = hosts(agent)[0], hosts(agent)[1]
    agent.set((path_req(agent, "RowStatus", 8), i(CREATE_AND_WAIT)))
    assert agent.get(path_req(agent, "RowStatus", 8)) == NOT_IN_SERVICE
    agent.set((path_req(agent, "SrcGID", 8), s(src.gid().to_bytes(16, "big"))))
    agent.set((path_req(agent, "DstGID", 8), s(dst.gid().to_bytes(16, "big"))),
              (path_req(agent, "SL", 8), i(2)))
    assert results(agent, "Path", 8) == []
    agent.set((path_req(agent, "RowStatus", 8), i(ACTIVE)))
    (row,) = results(agent, "Path", 8)
    assert (row["SrcLID"], row["DstLID"], row["SL"]) == (src.lid, dst.lid, 2)
    # An active request cannot change; notInService drops its results.
    assert refused(agent, (path_req(agent, "SL", 8), i(3))) == ("inconsistentValue", 0)
    agent.set((path_req(agent, "RowStatus", 8), i(NOT_IN_SERVICE)))
    assert results(agent, "Path", 8) == []
    agent.set((path_req(agent, "SL", 8), i(3)), (path_req(agent, "RowStatus", 8), i(ACTIVE)))
    assert results(agent, "Path", 8)[0]["SL"] == 3
    agent.set((path_req(agent, "RowStatus", 8), i(DESTROY)))
    assert agent.get(path_req(agent, "RowStatus", 8)) is None
    assert results(agent, "Path", 8) == []


def test_component_mask_selects_the_fields_that_count(agent: Agent) -> None:
    src, dst = hosts(agent)[0], hosts(agent)[-1]
    mask = (query.PR.SLID | query.PR.DLID).to_bytes(8, "big")
    # SL is written but not in the mask: it does not count (SL 0).
    agent.set((path_req(agent, "RowStatus", 9), i(CREATE_AND_GO)),
              (path_req(agent, "RowCompMask", 9), s(mask)),
              (path_req(agent, "SrcLID", 9), i(src.lid)),
              (path_req(agent, "DstLID", 9), i(dst.lid)),
              (path_req(agent, "SL", 9), i(5)))
    assert results(agent, "Path", 9)[0]["SL"] == 0
    # Only SLID in the mask: every other end port is a destination.
    agent.set((path_req(agent, "RowStatus", 10), i(CREATE_AND_GO)),
              (path_req(agent, "RowCompMask", 10), s(int(query.PR.SLID).to_bytes(8, "big"))),
              (path_req(agent, "SrcLID", 10), i(src.lid)),
              (path_req(agent, "DstLID", 10), i(dst.lid)))
    ends = len(set(agent.fabric.lid_map.values()))
    assert len(results(agent, "Path", 10)) == ends - 1


def test_unknown_lids_give_an_empty_result(agent: Agent) -> None:
    agent.set((path_req(agent, "RowStatus", 11), i(CREATE_AND_GO)),
              (path_req(agent, "SrcLID", 11), i(hosts(agent)[0].lid)),
              (path_req(agent, "DstLID", 11), i(40000)))
    assert agent.get(path_req(agent, "RowStatus", 11)) == ACTIVE
    assert results(agent, "Path", 11) == []


def test_numb_path_caps_the_lmc_paths(tmp_path: Path) -> None:
    agent = Agent(LMC_SPEC, seed=2, path=tmp_path / "s.json")
    src, dst = hosts(agent)[0], hosts(agent)[-1]
    gids = (s(src.gid().to_bytes(16, "big")), s(dst.gid().to_bytes(16, "big")))
    agent.set((path_req(agent, "RowStatus", 1), i(CREATE_AND_GO)),
              (path_req(agent, "SrcGID", 1), gids[0]), (path_req(agent, "DstGID", 1), gids[1]))
    assert len(results(agent, "Path", 1)) == 4
    agent.set((path_req(agent, "RowStatus", 2), i(CREATE_AND_GO)),
              (path_req(agent, "SrcGID", 2), gids[0]), (path_req(agent, "DstGID", 2), gids[1]),
              (path_req(agent, "NumbPath", 2), i(2)))
    rows = results(agent, "Path", 2)
    assert [r["Preference"] for r in rows] == [0, 0]


def test_sessions_expire_and_are_capped(tmp_path: Path) -> None:
    agent = Agent(SPEC, seed=4, path=tmp_path / "s.json", lifetime=60, max_sessions=2)
    lid = hosts(agent)[0].lid
    for session in (1, 2):
        agent.set((path_req(agent, "RowStatus", session), i(CREATE_AND_GO)),
                  (path_req(agent, "SrcLID", session), i(lid)),
                  (path_req(agent, "DstLID", session), i(lid)))
    status, _ = refused(agent, (path_req(agent, "RowStatus", 3), i(CREATE_AND_WAIT)))
    assert status == "resourceUnavailable"
    agent.clock.now += 59
    assert agent.get(path_req(agent, "RowStatus", 1)) == ACTIVE
    assert len(results(agent, "Path", 1)) == 1
    agent.clock.now += 1
    assert agent.get(path_req(agent, "RowStatus", 1)) is None
    assert results(agent, "Path", 1) == []
    agent.set((path_req(agent, "RowStatus", 3), i(CREATE_AND_WAIT)))
    # Sessions are never saved: the state file does not exist (no configuration).
    assert not (tmp_path / "s.json").exists()


# -- multipath and trace -----------------------------------------------------------------------------


def test_multipath_between_gid_blocks(tmp_path: Path) -> None:
    agent = Agent(LMC_SPEC, seed=2, path=tmp_path / "s.json")
    src, dst = hosts(agent)[0], hosts(agent)[-1]

    def mp(column: str) -> Oid:
        return instance(f"ibSmMultiPathReq{column}", agent.prefix, 5)

    block = src.gid().to_bytes(16, "big") + dst.gid().to_bytes(16, "big")
    assert refused(agent, (mp("RowStatus"), i(CREATE_AND_GO))) == ("inconsistentValue", 0)
    agent.set((mp("RowStatus"), i(CREATE_AND_GO)), (mp("SGIDCount"), i(1)),
              (mp("DGIDCount"), i(1)), (mp("SDGIDBlock1"), s(block)),
              (mp("IndepSel"), i(1)), (mp("NumbPath"), i(2)))
    rows = results(agent, "MultiPath", 5)
    assert len(rows) == 2 and [r["Preference"] for r in rows] == [0, 0]
    assert {(r["SrcLID"], r["DstLID"]) for r in rows} <= {
        (a, b) for a in (src.lid, src.lid + 1) for b in (dst.lid, dst.lid + 1)}
    status, index = refused(agent, (instance("ibSmMultiPathReqSDGIDBlock2", agent.prefix, 6),
                                     s(b"x" * 17)))
    assert status == "wrongLength"


def test_trace_follows_the_path_request_of_its_session(agent: Agent) -> None:
    src, dst = hosts(agent)[0], hosts(agent)[-1]
    trace_status = instance("ibSmTraceReqRowStatus", agent.prefix, 3)
    assert refused(agent, (trace_status, i(CREATE_AND_GO))) == ("inconsistentValue", 0)
    # Both rows in one SET: the path row is planned first.
    agent.set((trace_status, i(CREATE_AND_GO)),
              (path_req(agent, "RowStatus", 3), i(CREATE_AND_WAIT)),
              (path_req(agent, "SrcLID", 3), i(src.lid)),
              (path_req(agent, "DstLID", 3), i(dst.lid)))
    hops = results(agent, "Trace", 3)
    (record,) = query.path_records(agent.fabric, query.PathQuery(slid=src.lid, dlid=dst.lid))
    assert [int.from_bytes(h["NodeID"], "big") for h in hops] == [
        h.node_guid for h in present(record.route).hops]
    assert hops[0]["NodeType"] == 1 and hops[1]["NodeType"] == 2
    assert agent.get(instance("ibSmTraceReqSessionId", agent.prefix, 3)) == 3
    # The trace mask filters records: only switches.
    agent.set((instance("ibSmTraceReqRowStatus", agent.prefix, 4), i(CREATE_AND_GO)),
              (instance("ibSmTraceReqNodeType", agent.prefix, 4), i(2)),
              (path_req(agent, "RowStatus", 4), i(CREATE_AND_WAIT)),
              (path_req(agent, "SrcLID", 4), i(src.lid)),
              (path_req(agent, "DstLID", 4), i(dst.lid)))
    assert [h["NodeType"] for h in results(agent, "Trace", 4)] == [2, 2, 2]
    status, _ = refused(agent, (instance("ibSmTraceReqSessionId", agent.prefix, 4), i(5)))
    assert status == "inconsistentValue"


# -- RFC 3416 errors and all or nothing ----------------------------------------------------------------


def test_each_set_error(agent: Agent) -> None:
    prefix = agent.prefix
    lid = hosts(agent)[0].lid
    agent.set((path_req(agent, "RowStatus", 1), i(CREATE_AND_WAIT)))
    cases = [
        ((path_req(agent, "SrcLID", 1), s(b"x")), "wrongType"),
        ((path_req(agent, "SrcLID", 1), rfc1902.Unsigned32(3)), "wrongType"),
        ((path_req(agent, "RowCompMask", 1), s(b"\x01\x02")), "wrongLength"),
        ((path_req(agent, "SrcLID", 1), i(0)), "wrongValue"),  # INTEGER (1..65535)
        ((path_req(agent, "SL", 1), i(16)), "wrongValue"),  # a 4-bit IBA field
        ((path_req(agent, "RowStatus", 1), i(3)), "wrongValue"),  # notReady
        ((path_req(agent, "RowStatus", 1), i(7)), "wrongValue"),
        ((path_req(agent, "CreationTime", 1), rfc1902.TimeTicks(1)), "notWritable"),
        ((instance("ibSmNodeInfoDescription", prefix, b"\0" * 8), s(b"x")), "notWritable"),
        ((instance("ibSmPortInfoState", prefix, b"\0" * 8, 1), i(1)), "notWritable"),
        ((path_req(agent, "SubnetPrefix", 1), s(prefix)), "notWritable"),  # not-accessible
        (((1, 3, 6, 1, 3, 117, 7, 1, 99, 1), i(1)), "notWritable"),
        ((instance("ibSmPathReqRowStatus", b"\1" * 8, 1), i(CREATE_AND_GO)), "noCreation"),
        ((path_req(agent, "RowStatus", 1) + (5,), i(CREATE_AND_GO)), "noCreation"),
        ((instance("ibSmCaSLtoVLMapSL0toVL", prefix, b"\0" * 8, 1), i(1)), "noCreation"),
        ((path_req(agent, "DstLID", 2), i(lid)), "inconsistentName"),
        ((path_req(agent, "RowStatus", 1), i(CREATE_AND_GO)), "inconsistentValue"),
        ((path_req(agent, "RowStatus", 2), i(ACTIVE)), "inconsistentValue"),
        ((instance("ibSmConfigMinUnicastLID", prefix), i(49151)), "inconsistentValue"),
    ]
    for varbind, status in cases:
        assert refused(agent, varbind) == (status, 0), varbind
    # destroy of a row that does not exist is fine (RFC 2579).
    agent.set((path_req(agent, "RowStatus", 2), i(DESTROY)))


def test_a_set_is_all_or_nothing(agent: Agent) -> None:
    prefix = agent.prefix
    sweep = instance("ibSmConfigSweepInterval", prefix)
    before = agent.get(sweep)
    saved = agent.state.saves
    status, index = refused(
        agent, (sweep, i(before + 7)), (path_req(agent, "RowStatus", 1), i(CREATE_AND_GO)),
        (instance("ibSmConfigMaxUnicastLID", prefix), i(1)))
    assert (status, index) == ("inconsistentValue", 2)
    assert agent.get(sweep) == before and agent.get(path_req(agent, "RowStatus", 1)) is None
    assert agent.state.saves == saved
    agent.set((sweep, i(before + 7)), (instance("ibSmConfigMaxUnicastLID", prefix), i(40000)))
    assert agent.get(sweep) == before + 7


# -- configuration ----------------------------------------------------------------------------------


def test_config_table_and_admin_status(agent: Agent) -> None:
    prefix = agent.prefix
    master = present(agent.fabric.master_sm)
    standby = [sm for sm in agent.fabric.sms if sm is not master]
    agent.set((instance("ibSmConfigPriority", prefix), i(9)),
              (instance("ibSmConfigSMKey", prefix), s(b"\x00\x00\x00\x00\xca\xfe\xba\xbe")),
              (instance("ibSmConfigDefaultLMC", prefix), i(2)),
              (instance("ibSmConfigMKeyLeasePeriod", prefix), i(61)))
    assert agent.get(instance("ibSmConfigPriority", prefix)) == 9
    assert agent.get(instance("ibSmConfigDefaultLMC", prefix)) == 2
    assert present(agent.fabric.sm_config).m_key_lease_period_s == 61
    sm_info = {int.from_bytes(k[8:], "big"): v for k, v in
               agent.column("ibSmSMInfoPriority").items()}
    assert sm_info[master.guid] == 9
    assert refused(agent, (instance("ibSmConfigPriority", prefix), i(16)))[0] == "wrongValue"
    assert refused(agent, (instance("ibSmConfigStatus", prefix), i(DESTROY)))[0] == \
        "inconsistentValue"
    agent.set((instance("ibSmConfigStatus", prefix), i(ACTIVE)))
    # Disabling the SM: it goes NOTACTIVE, a standby takes over as master.
    agent.set((instance("ibSmConfigAdminStatus", prefix), i(2)))
    assert agent.get(instance("ibSmConfigAdminStatus", prefix)) == 2
    assert agent.get(instance("ibSmConfigOperStatus", prefix)) == SmState.NOT_ACTIVE
    if standby:
        assert present(agent.fabric.master_sm).guid != master.guid
    agent.set((instance("ibSmConfigAdminStatus", prefix), i(1)))
    assert agent.get(instance("ibSmConfigOperStatus", prefix)) == SmState.MASTER


# -- partitions ---------------------------------------------------------------------------------------


def partition_members(agent: Agent, pkey: int) -> set[tuple[int, int, int]]:
    out = set()
    for suffix, vector in agent.column("ibSmPartitionVector").items():
        if suffix[8:10] == (pkey >> 8, pkey & 0xFF):
            for at in range(0, len(vector), 10):
                element = vector[at:at + 10]
                out.add((int.from_bytes(element[:8], "big"), element[8], element[9]))
    return out


def test_partition_actions(agent: Agent) -> None:
    prefix = agent.prefix
    host = hosts(agent)[0]

    def scalar(name: str) -> Oid:
        return instance(f"ibSmPartitionConfig{name}", )

    action = scalar("Action")
    base = [(scalar("SubnetPrefix"), s(prefix)), (scalar("Key"), s(b"\x00\x33"))]
    agent.set(*base, (action, i(2)))
    assert agent.get(action) == 2
    assert partition_members(agent, 0x33) == set()
    member = [(scalar("MemberNodeGUID"), s(host.node_guid.to_bytes(8, "big"))),
              (scalar("MemberPortNum"), i(host.num)), (scalar("MemberType"), i(1))]
    agent.set(*member, (action, i(4)))
    assert partition_members(agent, 0x33) == {(host.node_guid, host.num, 1)}
    # The member's P_Key table (SMA-MIB, in its node's context) shows it.
    context = f"{host.node_guid:016x}".encode()
    pkeys = agent.column("ibSmaPKeyBase", context=context)
    assert 0x33 in pkeys.values()
    # Operands are consumed by the action: adding again needs them again.
    assert agent.get(scalar("MemberNodeGUID")) == bytes(8)  # the initial value again
    assert refused(agent, (action, i(4)))[0] == "inconsistentValue"
    assert refused(agent, *member, (action, i(4)))[0] == "inconsistentValue"  # already in
    agent.set(*member[:2], (scalar("MemberType"), i(2)), (action, i(6)))
    assert partition_members(agent, 0x33) == {(host.node_guid, host.num, 2)}
    agent.set(member[0], (action, i(5)))  # port 0 (unwritten): every port of the CA
    assert partition_members(agent, 0x33) == set()
    assert 0x33 not in agent.column("ibSmaPKeyBase", context=context).values()
    agent.set((action, i(3)))
    assert partition_members(agent, 0x33) == set() and all(
        s_[8:10] != (0, 0x33) for s_ in agent.column("ibSmPartitionVector"))
    assert refused(agent, (action, i(3)))[0] == "inconsistentValue"
    agent.set((scalar("Key"), s(b"\x7f\xff")))
    assert refused(agent, (action, i(3)))[0] == "inconsistentValue"  # the default partition
    # A member removed from a partition the provider made.
    default_members = partition_members(agent, 0x7FFF)
    agent.set(member[0], member[1], (action, i(5)))
    assert partition_members(agent, 0x7FFF) == default_members - {(host.node_guid, host.num, 1)}


# -- service associations ---------------------------------------------------------------------------


def test_service_associations(agent: Agent) -> None:
    key = bytes(range(16))
    status = instance("ibSmServiceAssocRowStatus", agent.prefix, key, b"storage")
    agent.set((status, i(CREATE_AND_WAIT)))
    assert agent.get(status) == NOT_IN_SERVICE
    agent.set((status, i(ACTIVE)))
    assert agent.get(instance("ibSmServiceAssocName", agent.prefix, key, b"storage")) == \
        b"storage"
    assert refused(agent, (instance("ibSmServiceAssocName", agent.prefix, key, b"storage"),
                           s(b"other")))[0] == "inconsistentValue"
    assert refused(agent, (instance("ibSmServiceAssocName", agent.prefix, key, b"x"),
                           s(b"x")))[0] == "inconsistentName"
    assert refused(agent, (instance("ibSmServiceAssocRowStatus", agent.prefix, key,
                                    b"\x01bad"), i(CREATE_AND_GO)))[0] == "noCreation"
    agent.set((status, i(DESTROY)))
    assert agent.get(status) is None


# -- SL-to-VL and VL arbitration ----------------------------------------------------------------------


def test_sl_to_vl_changes_what_sma_mib_shows(agent: Agent) -> None:
    host = hosts(agent)[0]
    guid = host.node_guid.to_bytes(8, "big")
    agent.set((instance("ibSmCaSLtoVLMapSL3toVL", agent.prefix, guid, host.num), i(7)))
    assert agent.get(instance("ibSmCaSLtoVLMapSL3toVL", agent.prefix, guid, host.num)) == 7
    context = f"{host.node_guid:016x}".encode()
    assert agent.get(instance("ibSmaVirtualLane", host.num, 255, 4), context=context) == 7
    # A switch row (in, out) sets the output port's table.
    switch = next(n for n in agent.fabric.nodes.values() if n.is_switch)
    sw = switch.guid.to_bytes(8, "big")
    agent.set((instance("ibSmSwSLtoVLMapSL0toVL", agent.prefix, sw, 1, 2), i(5)))
    assert agent.get(instance("ibSmSwSLtoVLMapSL0toVL", agent.prefix, sw, 3, 2)) == 5
    context = f"{switch.guid:016x}".encode()
    assert agent.get(instance("ibSmaVirtualLane", 2, 1, 1), context=context) == 5
    # SL 3 now maps to VL 7 at the host: paths on SL 3 still route (not VL15);
    # VL15 drops the SL: no path.
    agent.set((instance("ibSmCaSLtoVLMapSL4toVL", agent.prefix, guid, host.num), i(15)))
    assert query.path_records(agent.fabric, query.PathQuery(
        slid=host.lid, dlid=hosts(agent)[-1].lid, sl=4)) == []


def test_vl_arbitration_weight(agent: Agent) -> None:
    host = hosts(agent)[0]
    guid = host.node_guid.to_bytes(8, "big")
    weight = instance("ibSmVLArbitrationWeight", agent.prefix, guid, host.num, 1)
    agent.set((weight, i(200)))
    assert agent.get(weight) == 200
    context = f"{host.node_guid:016x}".encode()
    assert agent.get(instance("ibSmaLowPriWeight", host.num, 1), context=context) == 200
    assert refused(agent, (weight, i(256)))[0] == "wrongValue"


# -- persistence ------------------------------------------------------------------------------------------


def test_configuration_survives_a_restart(agent: Agent) -> None:
    host = hosts(agent)[0]
    guid = host.node_guid.to_bytes(8, "big")
    prefix = agent.prefix
    agent.set((instance("ibSmConfigSweepInterval", prefix), i(77)),
              (instance("ibSmCaSLtoVLMapSL1toVL", prefix, guid, host.num), i(9)),
              (instance("ibSmVLArbitrationWeight", prefix, guid, host.num, 2), i(3)),
              (instance("ibSmServiceAssocRowStatus", prefix, b"k" * 16, b"svc"), i(CREATE_AND_GO)),
              (path_req(agent, "RowStatus", 1), i(CREATE_AND_WAIT)))
    agent.set((instance("ibSmPartitionConfigSubnetPrefix"), s(prefix)),
              (instance("ibSmPartitionConfigKey"), s(b"\x00\x44")),
              (instance("ibSmPartitionConfigAction"), i(2)))
    again = agent.restarted()
    assert again.get(instance("ibSmConfigSweepInterval", prefix)) == 77
    assert again.get(instance("ibSmCaSLtoVLMapSL1toVL", prefix, guid, host.num)) == 9
    assert again.get(instance("ibSmVLArbitrationWeight", prefix, guid, host.num, 2)) == 3
    assert again.get(instance("ibSmServiceAssocRowStatus", prefix, b"k" * 16, b"svc")) == ACTIVE
    assert again.get(instance("ibSmPartitionConfigAction")) == 2
    assert any(s_[8:10] == (0, 0x44) for s_ in again.column("ibSmPartitionVector"))
    # Request sessions are not configuration.
    assert again.get(path_req(agent, "RowStatus", 1)) is None


def test_a_failed_save_is_commit_failed_and_changes_nothing(agent: Agent,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import ibsnmp.state.store as store

    def broken(path: Path, state: object) -> NoReturn:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store, "save_state_file", broken)
    sweep = instance("ibSmConfigSweepInterval", agent.prefix)
    before = agent.get(sweep)
    assert refused(agent, (sweep, i(before + 1)))[0] == "commitFailed"
    assert agent.get(sweep) == before

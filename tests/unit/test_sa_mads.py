"""SA MADs: records against answers OpenSM gave on an ibsim fabric (ring.net),
RMPP reassembly with ACKs, Reports answered, Notices turned into trap events."""

from __future__ import annotations

from pathlib import Path

import pytest

from ibsnmp.events import IbaTrap
from ibsnmp.mad.layout import LayoutError
from ibsnmp.mad.umad import Address, UmadError
from ibsnmp.sa import records
from ibsnmp.sa.client import (
    SaClient,
    SaError,
    nodes_listed,
    sa_request,
    subscription,
)
from ibsnmp.sa.mad_backend import block_number
from ibsnmp.sa.notices import notice_event
from ibsnmp.sa.records import METHOD_GET_TABLE, SA_MAD
from tests.support.paths import DATA_DIR

MADS = DATA_DIR / "mads"
SM = Address(lid=1, qp=1, qkey=0x80010000)


def captured(name: str) -> bytes:
    return bytes.fromhex((MADS / f"{name}.hex").read_text().strip())


class FakePort:
    """Answers from a script: each request sent gets the next answers."""

    def __init__(self, answers: list[list[bytes]]) -> None:
        self.answers = answers
        self.sent: list[bytes] = []
        self.inbox: list[bytes] = []

    def new_transaction_id(self) -> int:
        return 0x42

    def send(self, mad: bytes, address: Address) -> None:
        assert address == SM
        self.sent.append(mad)
        header = SA_MAD.decode(mad)
        if header["RMPPType"] != records.RMPP_ACK and self.answers:
            tid = header["TransactionID"].to_bytes(8, "big")
            for answer in self.answers.pop(0):  # answers carry the request's TID
                self.inbox.append(answer[:8] + tid + answer[16:])

    def receive_sized(self, timeout: float) -> bytes | None:
        return self.inbox.pop(0) if self.inbox else None

    def close(self) -> None:
        pass


def test_path_record_request_masks_the_lids_as_saquery_does() -> None:
    mad = sa_request(METHOD_GET_TABLE, records.PATH_RECORD, {"SLID": 1, "DLID": 2})
    header = SA_MAD.decode(mad)
    # OpenSM's IB_PR_COMPMASK_DLID | IB_PR_COMPMASK_SLID
    assert header["ComponentMask"] == (1 << 4) | (1 << 5)
    assert (header["MgmtClass"], header["ClassVersion"], header["Method"]) == (3, 2, 0x12)
    assert header["AttributeID"] == 0x35
    assert mad[56 + 40:56 + 44] == bytes.fromhex("00020001")
    with pytest.raises(LayoutError, match="no component"):
        records.PATH_RECORD.mask(["Nothing"])


def test_path_record_answer_decodes_as_saquery_prints_it() -> None:
    # saquery --src-to-dst 1:2 on the same fabric: mtu 0x83, rate 0x83, pkt_life 0x92.
    port = FakePort([[captured("sa_pathrecord_1_2")]])
    client = SaClient(port, SM)  # type: ignore[arg-type]  # a fake port
    answer = client.get_table(records.PATH_RECORD, {"SLID": 1, "DLID": 2})
    assert answer.complete
    (record,) = answer.records
    assert record["SGID"] == bytes.fromhex("fe800000000000000000000000100001")
    assert record["DGID"] == bytes.fromhex("fe800000000000000000000000200000")
    assert (record["SLID"], record["DLID"], record["PKey"], record["Reversible"]) == (1, 2, 0xFFFF, 1)
    assert (record["MTUSelector"], record["MTU"]) == (2, 3)
    assert (record["RateSelector"], record["Rate"]) == (2, 3)
    assert (record["PacketLifeTimeSelector"], record["PacketLifeTime"]) == (2, 18)


def test_inform_info_answer_echoes_the_subscription() -> None:
    port = FakePort([[captured("sa_informinfo_set_resp")]])
    client = SaClient(port, SM)  # type: ignore[arg-type]  # a fake port
    accepted = client.set(records.INFORM_INFO, subscription(128))
    assert accepted["TrapNumber"] == 128 and accepted["Subscribe"] == 1
    assert accepted["LIDRangeBegin"] == 0xFFFF and accepted["ProducerType"] == 0xFFFFFF
    sent = SA_MAD.decode(port.sent[0])
    assert (sent["Method"], sent["AttributeID"]) == (2, 3)


def _segment(number: int, flags: int, payload_length: int, data: bytes) -> bytes:
    return bytes(SA_MAD.encode({
        "BaseVersion": 1, "MgmtClass": 3, "ClassVersion": 2, "Response": 1, "Method": 0x12,
        "TransactionID": 0x42, "AttributeID": 0x35, "RMPPVersion": 1,
        "RMPPType": records.RMPP_DATA, "RMPPFlags": flags, "RMPPData1": number,
        "RMPPData2": payload_length, "AttributeOffset": 8, "Data": data,
    }))


def _path(slid: int) -> bytes:
    return bytes(records.PATH_RECORD.layout.encode({"SLID": slid, "DLID": 9}))


def test_rmpp_segments_are_reassembled_and_each_acknowledged() -> None:
    paths = b"".join(_path(lid) for lid in range(1, 6))  # 320 octets: two segments
    active = records.RMPP_ACTIVE
    first = _segment(1, active | records.RMPP_FIRST, 2 * 20 + len(paths), paths[:200])
    last = _segment(2, active | records.RMPP_LAST, 20 + 120, paths[200:])
    port = FakePort([[first, first, last]])  # a repeated segment is acknowledged again
    answer = SaClient(port, SM).get_table(  # type: ignore[arg-type]  # a fake port
        records.PATH_RECORD)
    assert [r["SLID"] for r in answer.records] == [1, 2, 3, 4, 5]
    acks = [SA_MAD.decode(m) for m in port.sent[1:]]
    assert all(a["RMPPType"] == records.RMPP_ACK and a["Method"] == 0x12 for a in acks)
    assert [(a["RMPPData1"], a["RMPPData2"]) for a in acks] == [(1, 33), (1, 33), (2, 2)]


def test_an_unnumbered_answer_that_fills_the_mad_is_marked_incomplete() -> None:
    # What ibsim's preload delivers for 49 paths: RMPP active, segment 0, 200 octets.
    three = b"".join(_path(lid) for lid in (1, 2, 3))
    port = FakePort([[_segment(0, records.RMPP_ACTIVE, 0, three)]])
    answer = SaClient(port, SM).get_table(  # type: ignore[arg-type]  # a fake port
        records.PATH_RECORD)
    assert not answer.complete and len(answer.records) == 3


def test_a_short_unnumbered_answer_is_whole_and_ends_where_it_was_sent() -> None:
    # ibsim forwards OpenSM's 120-octet answer (one record) with its own stack
    # garbage after it in the 256-octet frame; the received length ends it.
    short = _segment(0, records.RMPP_ACTIVE, 0, _path(1))[:56 + 64]
    answer = SaClient(FakePort([[short]]), SM).get_table(  # type: ignore[arg-type]  # a fake port
        records.PATH_RECORD)
    assert answer.complete and [r["SLID"] for r in answer.records] == [1]
    garbage = short + bytes(range(1, 137))
    answer = SaClient(FakePort([[garbage]]), SM).get_table(  # type: ignore[arg-type]  # a fake port
        records.PATH_RECORD)
    assert len(answer.records) == 3 and not answer.complete


def test_an_aborted_transfer_is_an_error() -> None:
    abort = bytearray(_segment(1, records.RMPP_ACTIVE | records.RMPP_FIRST, 0, b""))
    SA_MAD.encode({"RMPPType": records.RMPP_ABORT, "RMPPStatus": 118}, into=abort)
    with pytest.raises(UmadError, match="RMPP status 118"):
        SaClient(FakePort([[bytes(abort)]]), SM).get_table(  # type: ignore[arg-type]  # a fake port
            records.PATH_RECORD)


def test_sa_error_status_is_raised_and_no_records_is_empty() -> None:
    error = bytearray(captured("sa_pathrecord_1_2"))
    SA_MAD.encode({"Status": 2 << 8}, into=error)
    with pytest.raises(SaError, match="ERR_REQ_INVALID"):
        SaClient(FakePort([[bytes(error)]]), SM).get_table(  # type: ignore[arg-type]  # a fake port
            records.PATH_RECORD)
    SA_MAD.encode({"Status": 3 << 8}, into=error)
    answer = SaClient(FakePort([[bytes(error)]]),  # type: ignore[arg-type]  # a fake port
                      SM).get_table(records.PATH_RECORD)
    assert answer.records == ()


def _report(trap: int, issuer_lid: int, details: bytes) -> bytes:
    notice = records.NOTICE.layout.encode({
        "IsGeneric": 1, "Type": 1, "ProducerType": 2, "TrapNumber": trap,
        "IssuerLID": issuer_lid, "DataDetails": details,
        "IssuerGID": bytes.fromhex("fe800000000000000000000000200001")})
    return bytes(SA_MAD.encode({
        "BaseVersion": 1, "MgmtClass": 3, "ClassVersion": 2, "Method": records.METHOD_REPORT,
        "TransactionID": 0x77, "AttributeID": records.NOTICE.attribute_id, "Data": bytes(notice)}))


def test_a_report_is_answered_and_its_notice_becomes_trap_128() -> None:
    notices = []
    port = FakePort([])
    port.inbox.append(_report(128, 3, (3).to_bytes(2, "big")))
    client = SaClient(port, SM,  # type: ignore[arg-type]  # a fake port
                      on_report=lambda n, lid: notices.append(n))
    client.serve_reports(0.0)
    (response,) = port.sent
    header = SA_MAD.decode(response)
    assert (header["Response"], header["Method"], header["TransactionID"]) == (1, 6, 0x77)
    event = notice_event(notices[0], {3: 0x200001}.get)
    assert event is not None
    assert (event.trap, event.node_guid, event.lid) == (IbaTrap.LINK_STATE_CHANGE, 0x200001, 3)


def test_notice_details_of_traps_129_and_144() -> None:
    details = (0).to_bytes(2, "big") + (7).to_bytes(2, "big") + bytes([5])
    notice = records.NOTICE.layout.decode(_report(129, 7, details)[56:])
    event = notice_event(notice)
    assert event is not None
    # No LID map: the node is the IssuerGID's interface ID.
    assert (event.trap, event.node_guid, event.lid, event.port) == (129, 0x200001, 7, 5)
    details = bytes(4) + bytes(2) + (0x02510A68).to_bytes(4, "big")
    event = notice_event(records.NOTICE.layout.decode(_report(144, 7, details)[56:]))
    assert event is not None and event.capability_mask == 0x02510A68
    assert notice_event(records.NOTICE.layout.decode(_report(999, 7, b"")[56:])) is None


def test_notice_details_of_traps_145_256_and_257() -> None:
    # Offsets of IBA 14.2.5.1 (OpenSM's ib_mad_notice_attr_t agrees).
    details = bytes(2) + (7).to_bytes(2, "big") + bytes(2) + (0xABCD).to_bytes(8, "big")
    event = notice_event(records.NOTICE.layout.decode(_report(145, 7, details)[56:]))
    assert event is not None and event.system_image_guid == 0xABCD
    details = (bytes(2) + (7).to_bytes(2, "big") + (0xFFFF).to_bytes(2, "big") + bytes([0x02, 0])
               + (0x0015).to_bytes(2, "big") + bytes(2) + (3).to_bytes(4, "big")
               + (0x1122334455667788).to_bytes(8, "big"))
    event = notice_event(records.NOTICE.layout.decode(_report(256, 7, details)[56:]))
    assert event is not None
    assert (event.method, event.attribute_id, event.attribute_modifier, event.key) == (
        2, 0x15, 3, 0x1122334455667788)
    details = (bytes(2) + (9).to_bytes(2, "big") + (7).to_bytes(2, "big")
               + (0x8001).to_bytes(4, "big") + (0x3 << 28 | 0x48).to_bytes(4, "big")
               + (0x49).to_bytes(4, "big") + (1).to_bytes(16, "big") + (2).to_bytes(16, "big"))
    event = notice_event(records.NOTICE.layout.decode(_report(257, 7, details)[56:]),
                         {7: 0x200001}.get)
    assert event is not None
    # ibSmaNodeLid is LIDADDR1 (the requester); the node is the issuer.
    assert (event.lid, event.lid2, event.node_guid, event.key) == (9, 7, 0x200001, 0x8001)
    assert (event.sl, event.qp1, event.qp2, event.gid1, event.gid2) == (3, 0x48, 0x49, 1, 2)


def test_pkey_table_records_as_opensm_sends_them() -> None:
    # saquery --smkey 1 PKTR 1/1: blocks 0 and 1 of LID 1 port 1, 0xffff first in block 0.
    # The answer is 200 octets (two 72-octet records), and OpenSM writes
    # BlockNum in its host's byte order: block 1 arrives as 0x0100.
    mad = captured("sa_pkeytable_1_1")
    assert len(mad) == 200
    answer = SaClient(FakePort([[mad]]), SM).get_table(  # type: ignore[arg-type]  # a fake port
        records.PKEY_TABLE_RECORD, {"LID": 1, "PortNum": 1})
    assert answer.complete
    first, second = answer.records
    assert (first["LID"], first["PortNum"], first["BlockNum"]) == (1, 1, 0)
    assert first["P_KeyTable"] == (0xFFFF, *([0] * 31))
    assert (second["LID"], second["PortNum"], second["BlockNum"]) == (1, 1, 0x0100)
    assert block_number(second["BlockNum"]) == 1


def test_mcmember_records_as_opensm_sends_them() -> None:
    # saquery --smkey 1 -m: the IPoIB broadcast group, MLID 0xC000, H-1's port
    # (fe80::10:1) a full member, scope 2 (ScopeState 0x21).
    mad = captured("sa_mcmember_table")
    (member,) = SaClient(FakePort([[mad]]), SM).get_table(  # type: ignore[arg-type]  # a fake port
        records.MCMEMBER_RECORD).records
    assert member["MGID"] == bytes.fromhex("ff12401bffff000000000000ffffffff")
    assert member["PortGID"] == bytes.fromhex("fe800000000000000000000000100001")
    assert (member["MLID"], member["Scope"], member["JoinState"], member["ProxyJoin"]) == (
        0xC000, 2, 1, 0)
    assert (member["QKey"], member["PKey"]) == (0x0B1B, 0xFFFF)


def test_inform_info_record_holds_the_inform_info_at_octet_24() -> None:
    """IBA 15.2.5.12: SubscriberGID, Enum, 6 reserved octets, then the InformInfo."""
    gid = bytes.fromhex("fe800000000000000000000000100001")
    inform = bytes(records.INFORM_INFO.layout.encode(subscription(130)))
    record = records.INFORM_INFO_RECORD.layout.decode(gid + (7).to_bytes(2, "big") + bytes(6) + inform)
    assert (record["SubscriberGID"], record["Enum"]) == (gid, 7)
    assert (record["IsGeneric"], record["Subscribe"], record["Type"], record["TrapNumber"]) == (1, 1, 0xFFFF, 130)
    assert records.INFORM_INFO_RECORD.mask(["SubscriberGID"]) == 1
    assert records.INFORM_INFO_RECORD.record_size == 64


def _node_records(*guids: int) -> bytes:
    """A GetTable(NodeRecord) answer as one MAD, ending after its records."""
    data = b"".join(bytes(records.NODE_RECORD.layout.encode(
        {"LID": 8, "NodeType": 2, "NodeGUID": guid, "NodeDescription": "S-3"})) + bytes(4)
        for guid in guids)
    mad = SA_MAD.encode({
        "BaseVersion": 1, "MgmtClass": 3, "ClassVersion": 2, "Response": 1, "Method": 0x12,
        "AttributeID": records.NODE_RECORD.attribute_id, "RMPPVersion": 1,
        "RMPPType": records.RMPP_DATA, "RMPPFlags": records.RMPP_ACTIVE,
        "AttributeOffset": records.NODE_RECORD.record_size // 8, "Data": data})
    if not guids:
        SA_MAD.encode({"Status": 3 << 8}, into=mad)  # ERR_NO_RECORDS
    return bytes(mad[:56 + len(data)])


def test_node_records_are_asked_by_node_guid_and_tell_whom_the_sm_lists() -> None:
    """IBA 15.2.5.2: NodeInfo from octet 4, NodeDescription from 44; NodeGUID is component 7."""
    port = FakePort([[_node_records(0x200002)], [_node_records()], []])
    listed = nodes_listed(SaClient(port, SM),  # type: ignore[arg-type]  # a fake port
                          [0x200002, 0x300000, 0x400000, 0x500000],
                          seconds=0.05)
    # The third went unanswered: neither it nor the fourth is known.
    assert listed == {0x200002: True, 0x300000: False}
    asked = [SA_MAD.decode(mad) for mad in port.sent]
    assert [a["ComponentMask"] for a in asked] == [1 << 7] * 3
    decoded = [records.NODE_RECORD.layout.decode(a["Data"]) for a in asked]
    assert [d["NodeGUID"] for d in decoded] == [0x200002, 0x300000, 0x400000]
    record = records.NODE_RECORD.layout.decode(_node_records(0x200002)[56:])
    assert (record["LID"], record["NodeType"], record["NodeDescription"]) == (8, 2, "S-3")
    assert records.NODE_RECORD.record_size == 112

"""SA records made model objects: paths, partitions, multicast groups, services."""

from __future__ import annotations

import asyncio

from ibsnmp.fabric.iba import JoinState
from ibsnmp.fabric.model import PartitionMember, ServiceRecord
from ibsnmp.live.subnet_sa import read_sa_objects
from ibsnmp.mad import records_generated as mad_records
from ibsnmp.sa import records
from ibsnmp.sa.backend import SaUnavailable
from ibsnmp.sa.mad_backend import (
    block_number,
    groups_of,
    partitions_of,
    path_record,
    path_values,
    services_of,
)
from ibsnmp.sa.query import PathQuery

IPOIB = 0xFF12_401B_FFFF_0000_0000_0000_FFFF_FFFF


def test_a_path_query_asks_only_for_what_it_constrains() -> None:
    values = path_values(PathQuery(slid=1, dlid=7, sl=0, mtu_selector=2, mtu=4))
    assert values == {"SLID": 1, "DLID": 7, "SL": 0, "MTUSelector": 2, "MTU": 4}
    mask = records.PATH_RECORD.mask(values)
    assert mask == (1 << 4) | (1 << 5) | (1 << 15) | (1 << 16) | (1 << 17)
    assert "SLID" not in path_values(PathQuery(slid=1, sl=3), multipath=True)


def test_numb_path_is_the_sas_as_answered() -> None:
    def record(slid: int, numb_path: int) -> mad_records.PathRecord:
        r = records.PATH_RECORD.layout.decode(bytes(64))
        return {**r, "SLID": slid, "SGID": (1).to_bytes(16, "big"),
                "DGID": (5).to_bytes(16, "big"), "NumbPath": numb_path}

    paths = [path_record(record(1, 0)), path_record(record(2, 3))]
    assert [p.numb_path for p in paths] == [0, 3]
    assert all(p.route is None for p in paths)


def test_opensm_block_numbers_are_read_in_either_byte_order() -> None:
    assert [block_number(b) for b in (0, 1, 0x0100, 0x0300, 0x0101)] == [0, 1, 1, 3, 0x0101]


def test_partitions_from_pkey_table_records() -> None:
    def table(lid: int, port: int, *keys: int) -> mad_records.P_KeyTableRecord:
        return {"LID": lid, "BlockNum": 0, "PortNum": port,
                "P_KeyTable": (*keys, *([0] * (32 - len(keys))))}

    found = partitions_of([table(1, 1, 0xFFFF, 0x0012), table(2, 0, 0xFFFF, 0x8012),
                           table(99, 1, 0xFFFF)],
                          {1: 0x100, 2: 0x200}.get, frozenset({0x7FFF}))
    assert [(p.pkey, p.ipoib) for p in found] == [(0x12, False), (0x7FFF, True)]
    assert found[0].members == (PartitionMember(0x100, 1, False), PartitionMember(0x200, 0, True))


def test_groups_from_member_records_keep_memberless_groups() -> None:
    base = records.MCMEMBER_RECORD.layout.decode(bytes(52))
    member: mad_records.MCMemberRecord = {
        **base, "MGID": IPOIB.to_bytes(16, "big"), "MLID": 0xC000, "QKey": 0x0B1B,
        "PKey": 0xFFFF, "MTU": 4, "Rate": 3, "JoinState": 1,
        "PortGID": (0xFE80 << 112 | 0x100001).to_bytes(16, "big")}
    empty: mad_records.MCMemberRecord = {
        **member, "MGID": (IPOIB ^ 1).to_bytes(16, "big"), "PortGID": bytes(16)}
    groups = groups_of([member, empty], {0xFE80 << 112 | 0x100001: (0x100000, 1)}.get)
    assert [(g.mgid, g.mlid, len(g.members)) for g in groups] == [
        (IPOIB ^ 1, 0xC000, 0), (IPOIB, 0xC000, 1)]
    assert groups[1].members[0].join_state is JoinState.FULL_MEMBER


def test_services_carry_their_data_in_order() -> None:
    base = records.SERVICE_RECORD.layout.decode(bytes(176))
    record: mad_records.ServiceRecord = {**base, "ServiceID": 0x1000, "ServiceName": "svc",
                                         "ServiceData8": (1, *([0] * 15)),
                                         "ServiceData64": (0, 7)}
    (service,) = services_of([record])
    assert service.name == "svc" and len(service.data) == 64
    assert service.data[0] == 1 and service.data[-1] == 7


def test_sa_objects_are_read_each_on_its_own() -> None:
    service = ServiceRecord(1, 2, 0xFFFF, 0, bytes(16), "svc")

    class HalfAnsweringSa:
        async def partitions(self) -> tuple[()]:
            raise SaUnavailable("ERR_REQ_INVALID: not trusted")

        async def multicast_groups(self) -> tuple[()]:
            return ()

        async def services(self) -> tuple[ServiceRecord, ...]:
            return (service,)

    sa = HalfAnsweringSa()
    objects = asyncio.run(read_sa_objects(sa))  # type: ignore[arg-type]  # a partial SA
    assert objects.partitions is None  # not read: not "no partitions"
    assert objects.multicast_groups == () and objects.services == (service,)

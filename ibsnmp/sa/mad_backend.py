"""An `SaBackend` that asks the subnet's SA over MADs (`ibsnmp.sa.client`).

Queries run on the `SaWorker` thread. SA records become the agent's model objects here:
PathRecords the request tables' rows, P_KeyTableRecords partitions, MCMemberRecords multicast
groups, ServiceRecords services. The node and port behind a LID or GID come from the caller
(the live provider's latest snapshot), since SA records name ports by LID and GID only. An
answer the transport cut short (no RMPP underneath, as under ibsim) is never served as if
whole: path queries then fail (SaUnavailable), and partitions are asked port by port, whose
answers fit one MAD.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from ibsnmp.fabric.iba import JoinState, Mtu, Rate
from ibsnmp.fabric.model import (
    McMember,
    MulticastGroup,
    Partition,
    PartitionMember,
    ServiceRecord,
)
from ibsnmp.mad import records_generated as mad_records
from ibsnmp.mad.layout import AnyRecord, FieldValue
from ibsnmp.mad.umad import UmadError
from ibsnmp.sa import records
from ibsnmp.sa.backend import SaUnavailable
from ibsnmp.sa.client import SaAnswer, SaClient, SaError
from ibsnmp.sa.query import PathQuery, PathRecord
from ibsnmp.sa.worker import SaWorker

log = logging.getLogger("ibsnmp.sa.backend")

_R = TypeVar("_R", bound=AnyRecord)

NodeOfLid = Callable[[int], int | None]  # LID -> node GUID
PortOfGid = Callable[[int], tuple[int, int] | None]  # port GID -> (node GUID, port number)
LidPorts = Callable[[], Iterable[tuple[int, int]]]  # every (LID, port number) with a P_Key table
_FULL = 0x8000
_IPOIB_MGID_MASK = (0xFF10_401B_0000_0000_0000_0000_FFFF_FFFF, 0xFFF0_FFFF_0000_FFFF_FFFF_FFFF_FFFF_FFFF)

# PathQuery field -> PathRecord component (the MultiPathRecord shares the names).
_PATH_FIELDS = {
    "raw_traffic": "RawTraffic", "flow_label": "FlowLabel", "hop_limit": "HopLimit",
    "tclass": "TClass", "numb_path": "NumbPath", "pkey": "PKey", "sl": "SL",
    "mtu_selector": "MTUSelector", "mtu": "MTU", "rate_selector": "RateSelector", "rate": "Rate",
    "pkt_life_selector": "PacketLifeTimeSelector", "pkt_life": "PacketLifeTime",
}


def _gid(value: bytes) -> int:
    return int.from_bytes(value, "big")


def path_values(query: PathQuery, multipath: bool = False) -> dict[str, FieldValue]:
    """The request record of a PathQuery: only the fields it constrains."""
    values: dict[str, FieldValue] = {
        component: getattr(query, name) for name, component in _PATH_FIELDS.items()
        if getattr(query, name) is not None}
    if not multipath:
        for name, component in (("slid", "SLID"), ("dlid", "DLID"),
                                ("preference", "Preference")):
            if getattr(query, name) is not None:
                values[component] = getattr(query, name)
        for name, component in (("sgid", "SGID"), ("dgid", "DGID")):
            if getattr(query, name) is not None:
                values[component] = getattr(query, name).to_bytes(16, "big")
    return values


def path_record(record: mad_records.PathRecord) -> PathRecord:
    return PathRecord(
        sgid=_gid(record["SGID"]), dgid=_gid(record["DGID"]), slid=record["SLID"],
        dlid=record["DLID"], raw_traffic=record["RawTraffic"],
        flow_label=record["FlowLabel"], hop_limit=record["HopLimit"],
        tclass=record["TClass"], pkey=record["PKey"], sl=record["SL"],
        mtu=record["MTU"], rate=record["Rate"],
        pkt_life=record["PacketLifeTime"], preference=record["Preference"],
        route=None, numb_path=record["NumbPath"])  # as the SA answered (OpenSM: 0)


def block_number(raw: int) -> int:
    """A P_KeyTableRecord's BlockNum. OpenSM writes it in its host's byte
    order, so from a little-endian SM block b arrives as b << 8; no P_Key
    table has 256 blocks or more (IBA: PartitionCap entries, 32 a block, and
    no device near 8,192), so a value with an empty low octet is swapped."""
    return raw >> 8 if raw >= 0x100 and not raw & 0xFF else raw


def partitions_of(pkey_records: Iterable[mad_records.P_KeyTableRecord], node_of_lid: NodeOfLid,
                  ipoib_pkeys: frozenset[int] = frozenset()) -> tuple[Partition, ...]:
    """Partitions from P_KeyTableRecords: a member per port holding the P_Key
    (full member when the key's top bit is set); unknown LIDs are left out."""
    members: dict[int, set[PartitionMember]] = defaultdict(set)
    for record in pkey_records:
        guid = node_of_lid(record["LID"])
        if guid is None:
            continue
        for key in record["P_KeyTable"]:
            if key & 0x7FFF:
                members[key & 0x7FFF].add(
                    PartitionMember(guid, record["PortNum"], bool(key & _FULL)))
    return tuple(Partition(pkey=pkey, name="", members=tuple(sorted(found)),
                           ipoib=pkey in ipoib_pkeys)
                 for pkey, found in sorted(members.items()))


def ipoib_partitions(groups: Iterable[MulticastGroup]) -> frozenset[int]:
    """Partitions with an IPoIB broadcast group (MGID ff1S:401b:PKEY::ffff:ffff)."""
    value, mask = _IPOIB_MGID_MASK
    return frozenset((g.mgid >> 80) & 0x7FFF for g in groups if g.mgid & mask == value)


def groups_of(member_records: Iterable[mad_records.MCMemberRecord], port_of_gid: PortOfGid
              ) -> tuple[MulticastGroup, ...]:
    """Multicast groups from MCMemberRecords, one record per member port."""
    firsts: dict[int, mad_records.MCMemberRecord] = {}
    members: dict[int, list[McMember]] = defaultdict(list)
    for record in member_records:
        mgid = _gid(record["MGID"])
        firsts.setdefault(mgid, record)
        port = port_of_gid(_gid(record["PortGID"]))
        if port is None:
            log.debug("MCMemberRecord of an unknown port GID %#x", _gid(record["PortGID"]))
            continue
        members[mgid].append(McMember(port[0], port[1], JoinState(record["JoinState"]),
                                      bool(record["ProxyJoin"])))
    return tuple(
        MulticastGroup(
            mgid=mgid, mlid=r["MLID"], q_key=r["QKey"], mtu=Mtu(r["MTU"]),
            rate=Rate(r["Rate"]), sl=r["SL"], pkey=r["PKey"],
            members=tuple(sorted(members[mgid])), traffic_class=r["TClass"],
            flow_label=r["FlowLabel"], hop_limit=r["HopLimit"],
            packet_life_time=r["PacketLifeTime"])
        for mgid, r in sorted(firsts.items()))


def _service_data(record: mad_records.ServiceRecord) -> bytes:
    arrays = ((record["ServiceData8"], 1), (record["ServiceData16"], 2),
              (record["ServiceData32"], 4), (record["ServiceData64"], 8))
    return b"".join(v.to_bytes(octets, "big") for values, octets in arrays for v in values)


def services_of(service_records: Iterable[mad_records.ServiceRecord]) -> tuple[ServiceRecord, ...]:
    out = []
    for r in service_records:
        out.append(ServiceRecord(service_id=r["ServiceID"], gid=_gid(r["ServiceGID"]),
                                 pkey=r["ServicePKey"], lease=r["ServiceLease"],
                                 key=r["ServiceKey"], name=r["ServiceName"],
                                 data=_service_data(r)))
    return tuple(sorted(out, key=lambda s: (s.service_id, s.gid, s.pkey)))


def _whole(answer: SaAnswer[_R], what: str) -> tuple[_R, ...]:
    if not answer.complete:
        raise SaUnavailable(f"the SA's {what} answer was cut short (no RMPP on this port)")
    return answer.records


class MadSaBackend:
    """The SA over MADs; `worker` owns the port. See the module text."""

    def __init__(self, worker: SaWorker, node_of_lid: NodeOfLid, port_of_gid: PortOfGid,
                 lid_ports: LidPorts) -> None:
        self.worker = worker
        self.node_of_lid = node_of_lid
        self.port_of_gid = port_of_gid
        self.lid_ports = lid_ports

    async def _ask(self, call: Callable[[SaClient], SaAnswer[_R]], what: str) -> tuple[_R, ...]:
        try:
            return _whole(await self.worker.call(call), what)
        except (SaError, UmadError) as exc:
            raise SaUnavailable(str(exc)) from exc

    async def path_records(self, query: PathQuery) -> list[PathRecord]:
        values = path_values(query)
        found = await self._ask(lambda c: c.get_table(records.PATH_RECORD, values), "PathRecord")
        return [path_record(r) for r in found]

    async def multipath_records(self, query: PathQuery, sgids: Sequence[int],
                                dgids: Sequence[int], *, independent: bool = False
                                ) -> list[PathRecord]:
        gids = [*sgids, *dgids]
        if len(gids) > records.MAX_MULTIPATH_GIDS:
            raise SaUnavailable(f"{len(gids)} GIDs: one MultiPathRecord holds "
                                f"{records.MAX_MULTIPATH_GIDS}")
        values = {**path_values(query, multipath=True), "SGIDCount": len(sgids),
                  "DGIDCount": len(dgids), "IndependenceSelector": int(independent),
                  "SDGID": b"".join(g.to_bytes(16, "big") for g in gids)}
        components = [k for k in values if k != "SDGID"]
        found = await self._ask(
            lambda c: c.get_multi(records.MULTIPATH_RECORD, values, components,
                                  answer=records.PATH_RECORD), "MultiPathRecord")
        return [path_record(r) for r in found]

    async def partitions(self) -> tuple[Partition, ...]:
        groups = await self.multicast_groups()
        try:
            found = await self._ask(lambda c: c.get_table(records.PKEY_TABLE_RECORD),
                                    "P_KeyTableRecord")
        except SaUnavailable:
            found = await self._partitions_port_by_port()
        fixed: list[mad_records.P_KeyTableRecord] = [
            {**r, "BlockNum": block_number(r["BlockNum"])} for r in found]
        return partitions_of(fixed, self.node_of_lid, ipoib_partitions(groups))

    async def _partitions_port_by_port(self) -> tuple[mad_records.P_KeyTableRecord, ...]:
        found: list[mad_records.P_KeyTableRecord] = []
        for lid, port in self.lid_ports():
            values: dict[str, FieldValue] = {"LID": lid, "PortNum": port}

            def table(c: SaClient, v: dict[str, FieldValue] = values
                      ) -> SaAnswer[mad_records.P_KeyTableRecord]:
                return c.get_table(records.PKEY_TABLE_RECORD, v)

            found.extend(await self._ask(table, "P_KeyTableRecord"))
        return tuple(found)

    async def multicast_groups(self) -> tuple[MulticastGroup, ...]:
        found = await self._ask(lambda c: c.get_table(records.MCMEMBER_RECORD), "MCMemberRecord")
        return groups_of(found, self.port_of_gid)

    async def services(self) -> tuple[ServiceRecord, ...]:
        found = await self._ask(lambda c: c.get_table(records.SERVICE_RECORD), "ServiceRecord")
        return services_of(found)


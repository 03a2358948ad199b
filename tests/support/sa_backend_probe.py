"""Run under ibsim's preload library: `MadSaBackend` on an `SaWorker`, printed as JSON.

usage: python sa_backend_probe.py SM_KEY SLID DLID...

Registers a ServiceRecord for the local port and joins it to the IPoIB
broadcast group (so the SA has a service and a member to show), then prints
the backend's PathRecords from SLID to each DLID, its partitions, multicast
groups and services. LIDs and GIDs are resolved through a directed-route
sweep, as the live provider resolves them through its snapshot.
"""

from __future__ import annotations

import asyncio
import json
import sys

from ibsnmp.mad.discovery import discover
from ibsnmp.mad.umad import UmadPort
from ibsnmp.mad.window import MadWindow
from ibsnmp.sa import records
from ibsnmp.sa.client import SaClient
from ibsnmp.sa.mad_backend import MadSaBackend
from ibsnmp.sa.query import PathQuery
from ibsnmp.sa.worker import SaWorker

IPOIB_BROADCAST = bytes.fromhex("ff12401bffff000000000000ffffffff")
IPOIB_QKEY = 0x0B1B
SERVICE_ID = 0x1000


def maps() -> tuple[dict[int, int], dict[int, tuple[int, int]], list[tuple[int, int]], int]:
    with UmadPort() as port:
        subnet = discover(MadWindow(port))
    node_of_lid: dict[int, int] = {}
    port_of_gid: dict[int, tuple[int, int]] = {}
    lid_ports: list[tuple[int, int]] = []
    local_gid = 0
    for node in subnet.nodes.values():
        for number, info in node.ports.items():
            lid = info["LID"]
            if lid:
                node_of_lid[lid] = node.guid
                lid_ports.append((lid, number))
        # The port each node was entered by is the one whose GUID NodeInfo gives.
        entry = node.info["LocalPortNum"]
        entered = node.ports.get(entry, node.ports.get(0))
        prefix = entered["GidPrefix"] if entered is not None else 0
        gid = prefix << 64 | node.info["PortGUID"]
        port_of_gid[gid] = (node.guid, 0 if node.is_switch else entry)
        if not node.route:
            local_gid = gid
    return node_of_lid, port_of_gid, lid_ports, local_gid


def register(client: SaClient, local_gid: int) -> None:
    gid = local_gid.to_bytes(16, "big")
    client.set(records.SERVICE_RECORD, {
        "ServiceID": SERVICE_ID, "ServiceGID": gid, "ServicePKey": 0xFFFF,
        "ServiceLease": 0xFFFFFFFF, "ServiceName": "ibsnmp-test"})
    client.set(records.MCMEMBER_RECORD, {
        "MGID": IPOIB_BROADCAST, "PortGID": gid, "QKey": IPOIB_QKEY, "PKey": 0xFFFF,
        "TClass": 0, "FlowLabel": 0, "SL": 0, "JoinState": 1})


async def main(sm_key: int, slid: int, dlids: list[int]) -> dict[str, object]:
    node_of_lid, port_of_gid, lid_ports, local_gid = maps()
    worker = SaWorker(lambda: SaClient.open(sm_key=sm_key))
    worker.start()
    try:
        await worker.call(lambda client: register(client, local_gid))
        backend = MadSaBackend(worker, node_of_lid.get, port_of_gid.get, lambda: lid_ports)
        paths = {dlid: await backend.path_records(PathQuery(slid=slid, dlid=dlid))
                 for dlid in dlids}
        partitions = await backend.partitions()
        groups = await backend.multicast_groups()
        services = await backend.services()
    finally:
        worker.stop()
    return {
        "paths": {str(d): [[p.slid, p.dlid, f"{p.sgid:032x}", f"{p.dgid:032x}", p.pkey, p.mtu,
                            p.rate, p.pkt_life, p.numb_path] for p in found]
                  for d, found in paths.items()},
        "partitions": [[p.pkey, p.ipoib, [list(m) for m in p.members]] for p in partitions],
        "groups": [[f"{g.mgid:032x}", g.mlid, g.q_key, int(g.mtu), g.pkey,
                    [[m.guid, m.port, int(m.join_state)] for m in g.members]] for g in groups],
        "services": [[s.service_id, f"{s.gid:032x}", s.pkey, s.lease, s.name] for s in services],
        "local_gid": f"{local_gid:032x}",
        "lid_ports": [[node_of_lid[lid], port, lid] for lid, port in lid_ports],
    }


if __name__ == "__main__":
    key, source, *targets = (int(a, 0) for a in sys.argv[1:])
    print(json.dumps(asyncio.run(main(key, source, targets))))

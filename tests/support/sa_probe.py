"""Run under ibsim's preload library: SA queries through `SaClient`, printed as JSON.

usage: python sa_probe.py path SLID DLID      PathRecords of one LID pair
       python sa_probe.py multipath SGID DGID MultiPathRecord (GIDs in hex)
       python sa_probe.py pkeys SM_KEY LID PORT  P_KeyTableRecords of one port
       python sa_probe.py subscribe SM_KEY TRAP...  Set(InformInfo) for each trap
       python sa_probe.py raw SLID DLID       the PathRecord answer MAD as hex
       python sa_probe.py reports SECONDS TRAP...  subscribe, print one line, then
                                              print the trap events Reports bring

ibsim hands unsolicited MADs on QP1 (an SA's Report) only to a client that holds
the issm device (ibsim.c find_client), so `reports` opens it once the port is
open; a host's kernel delivers Reports to any agent registered for the method.
"""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import json
import os
import sys
from typing import cast

from ibsnmp.events import TrapEvent
from ibsnmp.live.subnet_sa import LiveSa
from ibsnmp.mad.layout import AnyRecord
from ibsnmp.mad.umad import UmadPort
from ibsnmp.sa import records
from ibsnmp.sa.client import (
    ReportHandler,
    SaAnswer,
    SaClient,
    sa_request,
    subscribe,
)
from ibsnmp.sa.records import METHOD_GET_TABLE


def plain(answer: SaAnswer[AnyRecord]) -> dict[str, object]:
    return {"complete": answer.complete,
            "records": [{k: v.hex() if isinstance(v, bytes) else v for k, v in r.items()}
                        for r in answer.records]}


def reports(seconds: float, traps: list[int]) -> object:
    """`LiveSa` on an event loop: the events it emits while the link changes,
    until the first arrives (or `seconds` pass without one)."""
    events: list[TrapEvent] = []

    def open_client(on_report: ReportHandler) -> SaClient:
        client = SaClient.open(on_report=on_report)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.open.argtypes = [ctypes.c_char_p, ctypes.c_int]
        if libc.open(b"/dev/infiniband/issm0", os.O_RDWR) < 0:
            raise SystemExit("cannot open the issm device")
        return client

    async def listen() -> None:
        loop, arrived = asyncio.get_running_loop(), asyncio.Event()

        def received(event: TrapEvent) -> None:  # from the SA client's thread too
            events.append(event)
            loop.call_soon_threadsafe(arrived.set)

        sa = LiveSa(open_client, received, lambda lid: None, lambda gid: None, list, traps)
        outcome = await sa.start()
        print(json.dumps({str(k): v for k, v in outcome.items()}), flush=True)
        try:
            await asyncio.wait_for(arrived.wait(), seconds)
        except TimeoutError:
            pass  # the test finds no event, and says so
        await sa.stop()

    asyncio.run(listen())
    return [{k: v for k, v in dataclasses.asdict(e).items() if v is not None} for e in events]


def main(command: str, *args: str) -> object:
    if command == "reports":
        return reports(float(args[0]), [int(a) for a in args[1:]])
    keyed = command in ("pkeys", "subscribe")
    client = SaClient.open(sm_key=int(args[0], 0) if keyed else 0)
    try:
        if command == "path":
            return plain(client.get_table(records.PATH_RECORD,
                                          {"SLID": int(args[0]), "DLID": int(args[1])}))
        if command == "multipath":
            gids = bytes.fromhex(args[0] + args[1])
            return plain(client.get_multi(
                records.MULTIPATH_RECORD, {"SGIDCount": 1, "DGIDCount": 1, "SDGID": gids},
                ("SGIDCount", "DGIDCount"), answer=records.PATH_RECORD))
        if command == "pkeys":
            return plain(client.get_table(records.PKEY_TABLE_RECORD,
                                          {"LID": int(args[1]), "PortNum": int(args[2])}))
        if command == "subscribe":
            outcome = subscribe(client, [int(a) for a in args[1:]])
            subscribe(client, [t for t, refused in outcome.items() if not refused], False)
            return {str(k): v for k, v in outcome.items()}
        if command == "raw":
            tid = client.port.new_transaction_id()
            client.port.send(sa_request(METHOD_GET_TABLE, records.PATH_RECORD,
                                        {"SLID": int(args[0]), "DLID": int(args[1])},
                                        transaction_id=tid), client.sm)
            answer = cast(UmadPort, client.port).receive(2.0)  # SaClient.open: an SaPort
            return answer.hex() if answer else None
        raise SystemExit(f"unknown command {command}")
    finally:
        client.close()


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:])))

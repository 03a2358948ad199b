"""Run under ibsim's preload library: SA queries through `SaClient`, printed as JSON.

usage: python sa_probe.py path SLID DLID      PathRecords of one LID pair
       python sa_probe.py multipath SGID DGID MultiPathRecord (GIDs in hex)
       python sa_probe.py pkeys SM_KEY LID PORT  P_KeyTableRecords of one port
       python sa_probe.py subscribe TRAP...   Set(InformInfo) for each trap
       python sa_probe.py raw SLID DLID       the PathRecord answer MAD as hex
"""

from __future__ import annotations

import json
import sys

from ibsnmp.mad import sa_records as records
from ibsnmp.mad.sa_client import METHOD_GET_TABLE, SaAnswer, SaClient, sa_request, subscribe


def plain(answer: SaAnswer) -> dict[str, object]:
    return {"complete": answer.complete,
            "records": [{k: v.hex() if isinstance(v, bytes) else v for k, v in r.items()}
                        for r in answer.records]}


def main(command: str, *args: str) -> object:
    client = SaClient.open(sm_key=int(args[0], 0) if command == "pkeys" else 0)
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
            return {str(k): v for k, v in subscribe(client, [int(a) for a in args]).items()}
        if command == "raw":
            tid = client.port.new_transaction_id()
            client.port.send(sa_request(METHOD_GET_TABLE, records.PATH_RECORD,
                                        {"SLID": int(args[0]), "DLID": int(args[1])},
                                        transaction_id=tid), client.sm)
            answer = client.port.receive(2.0)
            return answer.hex() if answer else None
        raise SystemExit(f"unknown command {command}")
    finally:
        client.close()


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:])))

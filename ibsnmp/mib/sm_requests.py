"""IB-SM-MIB request tables (ibSmPathReqTable, ibSmMultiPathReqTable,
ibSmTraceReqTable): which columns a request has, their component mask bits,
and how a stored request session reads as a row.

Shared by the read bindings (sm.py, which shows the rows) and the SETs
(sm_write.py, which fill them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ibsnmp.sa import query
from ibsnmp.sa.sessions import MULTIPATH, PATH, TRACE, Session
from ibsnmp.state.store import AgentState


def number(value: Any) -> int:
    """An integer written as an INTEGER or as a big-endian OCTET STRING."""
    return int.from_bytes(value, "big") if isinstance(value, bytes) else int(value)


@dataclass(frozen=True, eq=False)
class RequestTable:
    kind: str  # the session table
    prefix: str  # descriptor prefix of the request columns
    entry: str
    mask_column: str
    bits: Mapping[str, int]  # column -> component mask bit
    ranges: Mapping[str, tuple[int, int]]  # IBA field widths of unbounded INTEGER columns
    index_column: str | None = None  # a read-create copy of the session id


_PATH_RANGES = {"NumbPath": (0, 127), "HopLimit": (0, 255), "TClass": (0, 255), "SL": (0, 15),
                "Rate": (0, 63), "PktLifeTime": (0, 63), "Preference": (0, 255)}
_PR = query.PR
_MPR = query.MPR
_TR = query.TR

PATH_REQUEST = RequestTable(
    kind=PATH, prefix="ibSmPathReq", entry="ibSmPathReqEntry", mask_column="RowCompMask",
    bits={"DstGID": _PR.DGID, "SrcGID": _PR.SGID, "NumbPath": _PR.NUMB_PATH, "DstLID": _PR.DLID,
          "SrcLID": _PR.SLID, "RawTraffic": _PR.RAW_TRAFFIC, "FlowLabel": _PR.FLOW_LABEL,
          "HopLimit": _PR.HOP_LIMIT, "TClass": _PR.TCLASS, "PKey": _PR.PKEY, "SL": _PR.SL,
          "MTUSel": _PR.MTU_SELECTOR, "MTU": _PR.MTU, "RateSel": _PR.RATE_SELECTOR,
          "Rate": _PR.RATE, "PktLifeTimeSel": _PR.PKT_LIFE_SELECTOR,
          "PktLifeTime": _PR.PKT_LIFE, "Preference": _PR.PREFERENCE},
    ranges=_PATH_RANGES,
)
MULTIPATH_REQUEST = RequestTable(
    kind=MULTIPATH, prefix="ibSmMultiPathReq", entry="ibSmMultiPathReqEntry",
    mask_column="CompMask",
    bits={"RawTraffic": _MPR.RAW_TRAFFIC, "FlowLabel": _MPR.FLOW_LABEL,
          "HopLimit": _MPR.HOP_LIMIT, "TClass": _MPR.TCLASS, "NumbPath": _MPR.NUMB_PATH,
          "PKey": _MPR.PKEY, "SL": _MPR.SL, "MTUSel": _MPR.MTU_SELECTOR, "MTU": _MPR.MTU,
          "RateSel": _MPR.RATE_SELECTOR, "Rate": _MPR.RATE,
          "PktLifeTimeSel": _MPR.PKT_LIFE_SELECTOR, "PktLifeTime": _MPR.PKT_LIFE,
          "IndepSel": _MPR.INDEP_SELECTOR, "SGIDCount": _MPR.SGID_COUNT,
          "DGIDCount": _MPR.DGID_COUNT},
    ranges=_PATH_RANGES,
)
TRACE_REQUEST = RequestTable(
    kind=TRACE, prefix="ibSmTraceReq", entry="ibSmTraceReqEntry", mask_column="CompMask",
    bits={"IDGeneration": _TR.ID_GENERATION, "NodeType": _TR.NODE_TYPE, "NodeID": _TR.NODE_ID,
          "ChassisID": _TR.CHASSIS_ID, "EntryPortID": _TR.ENTRY_PORT_ID,
          "ExitPortID": _TR.EXIT_PORT_ID, "EntryPort": _TR.ENTRY_PORT,
          "ExitPort": _TR.EXIT_PORT},
    ranges={},
    index_column="SessionId",
)
REQUEST_TABLES = {t.kind: t for t in (PATH_REQUEST, MULTIPATH_REQUEST, TRACE_REQUEST)}


def effective_mask(spec: RequestTable, request: Mapping[str, Any]) -> int:
    """The written component mask, else the bits of the columns written."""
    if spec.mask_column in request:
        return number(request[spec.mask_column])
    mask = 0
    for column in request:
        mask |= spec.bits.get(column, 0)
    return mask


def request_row(state: AgentState, session: Session) -> dict[str, Any]:
    """A request session as its request table shows it (short column names)."""
    spec = REQUEST_TABLES[session.table]
    row = dict(session.request)
    row["RowStatus"] = session.status
    row["CreationTime"] = state.ticks(session.created)
    row[spec.mask_column] = effective_mask(spec, session.request).to_bytes(8, "big")
    if spec.index_column is not None:
        row[spec.index_column] = session.index[1]
    return row

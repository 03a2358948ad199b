"""IB-SM-MIB SETs: SA requests, SM configuration, partitions, services, SL-to-VL, VL arbitration.

Every writer plans into the write store's transaction (ibsnmp.state.store): nothing changes
before all varbinds of a SET passed, and the store saves configuration before the SET is
acknowledged. Error statuses follow RFC 3416 4.2.5 and RFC 2579 (RowStatus) as net-snmp
applies them. A request row (ibSmPathReqTable, ibSmMultiPathReqTable, ibSmTraceReqTable)
computes its results when it becomes active; a trace request traces the ibSmPathReqTable row
of the same subnet prefix and session id.
Reference: docs/sets.md, 'Requests, configuration, errors and persistence'.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ibsnmp.fabric import routing
from ibsnmp.sa import query
from ibsnmp.sa.backend import SaBackend
from ibsnmp.state.overrides import (
    FULL,
    HIGH,
    LIMITED,
    LOW,
    REMOVED,
    SM_CONFIG_COLUMNS,
    PartitionBuffer,
    PartitionEdit,
    SmOverride,
    with_entry,
)
from ibsnmp.sa.sessions import MULTIPATH, PATH, TRACE, Session
from ibsnmp.state.store import AgentState, Transaction

from .api import ContextTarget, SetError
from .binding import WriterBinding
from .facts import named_value
from .loader import definitions
from .sm import config_sm
from .sm_requests import (
    MULTIPATH_REQUEST,
    PATH_REQUEST,
    REQUEST_TABLES,
    TRACE_REQUEST,
    RequestTable,
    effective_mask,
    number,
)
from .write import (
    ACTIVE,
    CREATE_AND_GO,
    CREATE_AND_WAIT,
    DESTROY,
    NOT_IN_SERVICE,
    WRITABLE,
    WriteRequest,
    require_range,
    row_status_check,
)

_SELECTOR_EXACTLY = 2  # what an SA answers for MTU, rate and lifetime selectors
MAX_SERVICE_ASSOCIATIONS = 10_000


def _writable(entry_or_scalars: str | Iterable[str]) -> frozenset[str]:
    mib = definitions()
    if isinstance(entry_or_scalars, str):
        names = [c.name for c in mib.columns_of(entry_or_scalars)]
    else:
        names = list(entry_or_scalars)
    return frozenset(n for n in names if mib.objects[n].access in WRITABLE)


def _by_row(requests: Sequence[WriteRequest]) -> list[tuple[tuple[Any, ...], list[WriteRequest]]]:
    """Requests grouped by row, rows in the order of their first varbind."""
    rows: dict[tuple[Any, ...], list[WriteRequest]] = {}
    for request in requests:
        rows.setdefault(request.instance, []).append(request)
    return list(rows.items())


def _prefix_of(target: ContextTarget) -> bytes:
    prefix: int = target.fabric.subnet_prefix  # ContextTarget types it loosely
    return prefix.to_bytes(8, "big")


def _check_prefix(target: ContextTarget, prefix: bytes, request: WriteRequest) -> None:
    if prefix != _prefix_of(target):
        raise SetError("noCreation", request.index, "not the subnet prefix of this fabric")


def _short(request: WriteRequest, prefix: str) -> str:
    return request.name[len(prefix):]


# -- request tables ----------------------------------------------------------------------------

_GID_BLOCKS = tuple(f"SDGIDBlock{n}" for n in range(1, 33))


def _masked(spec: RequestTable, request: Mapping[str, Any], mask: int, column: str) -> int | None:
    """A request field as the query sees it: None unless masked; 0 if masked but never written."""
    if not mask & spec.bits[column]:
        return None
    return number(request.get(column, 0))


def _path_query(spec: RequestTable, request: Mapping[str, Any]) -> query.PathQuery:
    mask = effective_mask(spec, request)

    def get(column: str) -> int | None:
        return _masked(spec, request, mask, column) if column in spec.bits else None

    mtu = get("MTU")
    return query.PathQuery(
        sgid=get("SrcGID"), dgid=get("DstGID"), slid=get("SrcLID"), dlid=get("DstLID"),
        raw_traffic=get("RawTraffic"), flow_label=get("FlowLabel"), hop_limit=get("HopLimit"),
        tclass=get("TClass"), numb_path=get("NumbPath"), pkey=get("PKey"), sl=get("SL"),
        mtu_selector=get("MTUSel"), mtu=None if mtu is None else mtu + 1,  # mtu256(0): IBA 1
        rate_selector=get("RateSel"), rate=get("Rate"),
        pkt_life_selector=get("PktLifeTimeSel"), pkt_life=get("PktLifeTime"),
        preference=get("Preference"),
    )


def _path_row(record: query.PathRecord) -> dict[str, Any]:
    return {
        "DstGID": record.dgid.to_bytes(16, "big"),
        "SrcGID": record.sgid.to_bytes(16, "big"),
        "NumbPath": record.numb_path,
        "DstLID": record.dlid,
        "SrcLID": record.slid,
        "RawTraffic": record.raw_traffic,
        "FlowLabel": (record.flow_label & 0xFFFFF).to_bytes(3, "big"),
        "HopLimit": record.hop_limit,
        "TClass": record.tclass,
        "PKey": record.pkey.to_bytes(2, "big"),
        "SL": record.sl,
        "MTUSel": _SELECTOR_EXACTLY,
        "MTU": record.mtu - 1,  # IBA code 1 (256) is mtu256(0)
        "RateSel": _SELECTOR_EXACTLY,
        "Rate": record.rate,
        "PktLifeTimeSel": _SELECTOR_EXACTLY,
        "PktLifeTime": record.pkt_life,
        "Preference": record.preference,
    }


def _trace_row(record: query.TraceRecord) -> dict[str, Any]:
    return {
        "IDGeneration": record.id_generation,
        "NodeType": record.node_type,
        "NodeID": record.node_id.to_bytes(8, "big"),
        "ChassisID": record.chassis_id.to_bytes(8, "big"),
        "EntryPortID": record.entry_port_id.to_bytes(8, "big"),
        "ExitPortID": record.exit_port_id.to_bytes(8, "big"),
        "EntryPort": record.entry_port,
        "ExitPort": record.exit_port,
    }


def _gids(request: Mapping[str, Any]) -> list[int]:
    data = b"".join(request.get(block, b"") for block in _GID_BLOCKS)
    return [int.from_bytes(data[i : i + 16], "big") for i in range(0, len(data), 16)]


def _multipath_gids(spec: RequestTable, request: Mapping[str, Any], index: int
                    ) -> tuple[list[int], list[int], bool]:
    """A multipath request's source GIDs, destination GIDs and IndepSel (SetError if unusable)."""
    mask = effective_mask(spec, request)
    sources = _masked(spec, request, mask, "SGIDCount")
    destinations = _masked(spec, request, mask, "DGIDCount")
    if not sources or not destinations:
        raise SetError("inconsistentValue", index,
                       "a multipath request needs SGIDCount and DGIDCount (both > 0)")
    gids = _gids(request)
    if len(gids) < sources + destinations:
        raise SetError("inconsistentValue", index,
                       f"SGIDCount + DGIDCount is {sources + destinations} but the "
                       f"SDGID blocks hold {len(gids)} GIDs")
    independent = _masked(spec, request, mask, "IndepSel") == 1
    return gids[:sources], gids[sources:sources + destinations], independent


def _traced_path(session: Session, txn: Transaction, index: int) -> Mapping[str, Any]:
    """The request of the ibSmPathReqTable row a trace request traces."""
    path_session = txn.session((PATH, session.index))
    if path_session is None:
        raise SetError("inconsistentValue", index,
                       "no ibSmPathReqTable row with this subnet prefix and session id "
                       "names the path to trace")
    return path_session.request


def _trace_rows(spec: RequestTable, request: Mapping[str, Any], fabric: Any,
                records: Iterable[query.PathRecord], limit: int = query.MAX_RECORDS
                ) -> tuple[dict[str, Any], ...]:
    """The trace rows of the paths, hop by hop, that the trace request's mask keeps.
    A path the SA answered is followed through the forwarding tables read.
    TooManyRecords as soon as there are more than `limit` (at most MAX_RECORDS)."""
    limit = min(limit, query.MAX_RECORDS)
    mask = effective_mask(spec, request)
    wanted = {column: _masked(spec, request, mask, column) for column in spec.bits}
    rows = []
    for record in records:
        route = record.route or routing.trace(fabric, record.slid, record.dlid)
        for hop in query.trace_records(fabric, route):
            row = _trace_row(hop)
            if all(value is None or number(row[column]) == value
                   for column, value in wanted.items()):
                rows.append(row)
        if len(rows) > limit:
            raise query.TooManyRecords(f"more than {limit} trace records")
    return tuple(rows)


def _results(state: AgentState, spec: RequestTable, session: Session, txn: Transaction,
             target: ContextTarget, index: int) -> tuple[dict[str, Any], ...]:
    """The result rows of a request becoming active (SetError if it cannot).
    The draft's result tables cannot say that an answer was cut short, so an
    answer past the [limits] result rows is refused (resourceUnavailable),
    and its computation stops at the first row past them."""
    fabric = target.fabric
    request = session.request
    room = state.result_room(txn.sessions, session.key)
    try:
        if spec.kind == PATH:
            records = query.path_records(fabric, _path_query(spec, request), room)
            return tuple(_path_row(r) for r in records)
        if spec.kind == MULTIPATH:
            sources, destinations, independent = _multipath_gids(spec, request, index)
            records = query.multipath_records(
                fabric, _path_query(spec, request), sources, destinations,
                independent=independent, limit=room)
            return tuple(_path_row(r) for r in records)
        path_request = _traced_path(session, txn, index)
        # The paths traced are bounded as the path request's own results are.
        records = query.path_records(fabric, _path_query(PATH_REQUEST, path_request), room)
        return _trace_rows(spec, request, fabric, records, room)
    except query.TooManyRecords as exc:
        raise SetError("resourceUnavailable", index,
                       f"query too large: {exc} (room for {room} result rows: [limits] "
                       "max_result_rows_per_request, max_result_rows)") from None


def _ask_sa(spec: RequestTable, session: Session, txn: Transaction, target: ContextTarget,
            index: int) -> None:
    """With a live SM: check the request now, ask the SA once the SET is committed."""
    path_request = None
    if spec.kind == MULTIPATH:
        _multipath_gids(spec, session.request, index)
    elif spec.kind == TRACE:
        path_request = _traced_path(session, txn, index)
    txn.sa_pending.append((session, target.fabric, path_request))


async def sa_results(backend: SaBackend, session: Session, fabric: Any,
                     path_request: Mapping[str, Any] | None) -> tuple[dict[str, Any], ...]:
    """The result rows of an active request, from the SA's answer (SaUnavailable
    when there is none; routing.NoRoute when a path leaves the tables read)."""
    spec = REQUEST_TABLES[session.table]
    request = session.request
    if spec.kind == PATH:
        return tuple(_path_row(r) for r in await backend.path_records(_path_query(spec, request)))
    if spec.kind == MULTIPATH:
        sources, destinations, independent = _multipath_gids(spec, request, 0)
        records = await backend.multipath_records(_path_query(spec, request), sources,
                                                  destinations, independent=independent)
        return tuple(_path_row(r) for r in records)
    assert path_request is not None
    records = await backend.path_records(_path_query(PATH_REQUEST, path_request))
    return _trace_rows(spec, request, fabric, records)


def _check_request_column(spec: RequestTable, column: str, request: WriteRequest) -> None:
    if column in spec.ranges:
        require_range(request, *spec.ranges[column])
    elif column == "FlowLabel" and number(request.value) > 0xFFFFF:
        raise SetError("wrongValue", request.index, "a flow label has 20 bits")
    elif column.startswith("SDGIDBlock") and len(request.value) % 16:
        raise SetError("wrongLength", request.index, "a GID block holds whole 16-octet GIDs")


def _plan_requests(state: AgentState, target: ContextTarget, requests: Sequence[WriteRequest],
                   txn: Transaction) -> None:
    # Path rows first: a trace request in the same SET may trace them.
    order = {PATH_REQUEST.prefix: 0, MULTIPATH_REQUEST.prefix: 1, TRACE_REQUEST.prefix: 2}
    tables = sorted({_table_of(r) for r in requests}, key=lambda t: order[t.prefix])
    for spec in tables:
        mine = [r for r in requests if _table_of(r) is spec]
        for instance, row in _by_row(mine):
            _plan_request_row(state, spec, target, instance, row, txn)


def _table_of(request: WriteRequest) -> RequestTable:
    for spec in (MULTIPATH_REQUEST, PATH_REQUEST, TRACE_REQUEST):
        if request.name.startswith(spec.prefix):
            return spec
    raise AssertionError(request.name)


def _plan_request_row(state: AgentState, spec: RequestTable, target: ContextTarget,
                      instance: tuple[Any, ...], row: list[WriteRequest], txn: Transaction) -> None:
    prefix, session_id = instance
    first = row[0]
    _check_prefix(target, prefix, first)
    key = (spec.kind, instance)
    current = txn.session(key)
    status: WriteRequest | None = None
    updates: dict[str, WriteRequest] = {}
    for request in row:
        column = _short(request, spec.prefix)
        if column == "RowStatus":
            status = request
        elif column == spec.index_column:
            if request.value != session_id:
                raise SetError("inconsistentValue", request.index,
                               "the session id column must equal the row's index")
        else:
            _check_request_column(spec, column, request)
            updates[column] = request
    if status is not None:
        row_status_check(current is not None, status.value, status.index)
        if status.value == DESTROY:
            txn.drop_session(key)
            return
        if status.value in (CREATE_AND_GO, CREATE_AND_WAIT):
            if len(txn.sessions) >= state.max_sessions:
                raise SetError("resourceUnavailable", status.index,
                               f"{state.max_sessions} request sessions are open already")
            current = Session(spec.kind, instance, NOT_IN_SERVICE, txn.now)
    elif current is None:
        raise SetError("inconsistentName", first.index,
                       "no such request: create it with RowStatus createAndGo or createAndWait")
    elif current.status == ACTIVE and updates:
        raise SetError("inconsistentValue", next(iter(updates.values())).index,
                       "the request is active: set its RowStatus to notInService to change it")
    assert current is not None
    new_status = current.status
    if status is not None:
        new_status = {CREATE_AND_GO: ACTIVE, CREATE_AND_WAIT: NOT_IN_SERVICE}.get(
            status.value, status.value)
    request_values = dict(current.request)
    request_values.update((column, r.value) for column, r in updates.items())
    session = dataclasses.replace(current, request=request_values, status=new_status, results=())
    if new_status == ACTIVE:
        assert status is not None or current.status == ACTIVE
        at = status.index if status is not None else first.index
        if state.sa_runner is not None:
            _ask_sa(spec, session, txn, target, at)
        else:
            session = dataclasses.replace(
                session, results=_results(state, spec, session, txn, target, at))
    txn.put_session(session)


# -- ibSmConfigTable ---------------------------------------------------------------------------

# column -> (SmConfig field, lowest, highest): the IBA field widths.
_CONFIG_FIELDS = SM_CONFIG_COLUMNS
_ADMIN_DISABLE = named_value("ibSmConfigAdminStatus", "disable")


def _plan_config(state: AgentState, target: ContextTarget, requests: Sequence[WriteRequest],
                 txn: Transaction) -> None:
    for (prefix,), row in _by_row(requests):
        first = row[0]
        _check_prefix(target, prefix, first)
        sm = config_sm(target, state.designated_sm)
        if sm is None:
            raise SetError("noCreation", first.index, "no subnet manager runs on this subnet")
        sm_config = dict(txn.config.sm_config)
        override = txn.config.sm.get(sm.guid, SmOverride())
        lid_requests: list[WriteRequest] = []
        for request in row:
            column = _short(request, "ibSmConfig")
            if column == "Status":
                row_status_check(True, request.value, request.index)
                if request.value != ACTIVE:
                    raise SetError("inconsistentValue", request.index,
                                   "the subnet manager this agent serves stays in the table: "
                                   "use ibSmConfigAdminStatus to disable it")
            elif column == "Priority":
                # SMInfo Priority is a 4-bit field.
                override = dataclasses.replace(override, priority=require_range(request, 0, 15))
            elif column == "SMKey":
                override = dataclasses.replace(override, sm_key=number(request.value))
            elif column == "AdminStatus":
                override = dataclasses.replace(override, disabled=request.value == _ADMIN_DISABLE)
            else:
                name, low, high = _CONFIG_FIELDS[column]
                if target.fabric.sm_config is None:
                    raise SetError("inconsistentValue", request.index,
                                   "the provider knows no subnet manager configuration")
                sm_config[name] = require_range(request, low, high)
                if column in ("MinUnicastLID", "MaxUnicastLID"):
                    lid_requests.append(request)
        if lid_requests:
            current = target.fabric.sm_config
            low = sm_config.get("min_unicast_lid", current.min_unicast_lid)
            high = sm_config.get("max_unicast_lid", current.max_unicast_lid)
            if not low < high:
                raise SetError("inconsistentValue", lid_requests[-1].index,
                               f"ibSmConfigMinUnicastLID ({low}) must be less than "
                               f"ibSmConfigMaxUnicastLID ({high})")
        txn.config = dataclasses.replace(
            txn.config, sm_config=sm_config,
            sm=with_entry(txn.config.sm, sm.guid, override if override != SmOverride() else None))


# -- ibSmServiceAssocTable ----------------------------------------------------------------------


def _plan_service_assoc(state: AgentState, target: ContextTarget,
                        requests: Sequence[WriteRequest], txn: Transaction) -> None:
    for instance, row in _by_row(requests):
        prefix, key, name = instance
        first = row[0]
        _check_prefix(target, prefix, first)
        if len(name) > 64 or not all(32 <= c < 127 for c in name):
            raise SetError("noCreation", first.index,
                           "a service name is at most 64 printable ASCII characters")
        associations = txn.config.service_assoc
        current = associations.get((key, name))
        status: WriteRequest | None = None
        for request in row:
            column = _short(request, "ibSmServiceAssoc")
            if column == "RowStatus":
                status = request
            elif request.value != (key if column == "Key" else name):
                raise SetError("inconsistentValue", request.index,
                               f"ibSmServiceAssoc{column} must equal the row's index")
        new = current
        if status is not None:
            row_status_check(current is not None, status.value, status.index)
            if status.value == DESTROY:
                new = None
            elif status.value in (CREATE_AND_GO, CREATE_AND_WAIT):
                if len(associations) >= MAX_SERVICE_ASSOCIATIONS:
                    raise SetError("resourceUnavailable", status.index,
                                   f"{MAX_SERVICE_ASSOCIATIONS} service associations exist")
                new = ACTIVE if status.value == CREATE_AND_GO else NOT_IN_SERVICE
            else:
                new = status.value
        elif current is None:
            raise SetError("inconsistentName", first.index,
                           "no such association: create it with RowStatus createAndGo")
        if new != current:
            txn.config = dataclasses.replace(
                txn.config, service_assoc=with_entry(associations, (key, name), new))


# -- ibSmPartitionConfig -----------------------------------------------------------------------

_NONE, _CREATE, _DELETE, _ADD, _REMOVE, _UPDATE = (
    named_value("ibSmPartitionConfigAction", label) for label in (
        "none", "createPartition", "deletePartition", "addMember", "removeMember",
        "updateMemberType"))
_DEFAULT_PARTITION = 0x7FFF
_PARTITION_SCALARS = tuple(f"ibSmPartitionConfig{n}" for n in (
    "SubnetPrefix", "Key", "Action", "MemberNodeGUID", "MemberPortNum", "MemberType"))


def _plan_partition_config(state: AgentState, target: ContextTarget,
                           requests: Sequence[WriteRequest], txn: Transaction) -> None:
    buffer = txn.config.partition_buffer
    action: WriteRequest | None = None
    for request in requests:
        column = _short(request, "ibSmPartitionConfig")
        if column == "Action":
            action = request
        else:
            field = {"SubnetPrefix": "prefix", "Key": "key", "MemberNodeGUID": "guid",
                     "MemberPortNum": "port", "MemberType": "member_type"}[column]
            buffer = dataclasses.replace(buffer, **{field: request.value})
    partitions = txn.config.partitions
    if action is not None:
        if action.value != _NONE:
            partitions = _partition_action(target, partitions, buffer, action)
        # The member operands are consumed by the action: the next one
        # names its own (so an optional port cannot carry over).
        buffer = dataclasses.replace(buffer, guid=None, port=None, member_type=None,
                                     last_action=action.value)
    txn.config = dataclasses.replace(txn.config, partitions=partitions, partition_buffer=buffer)


def _partition_action(target: ContextTarget, edits: Mapping[int, PartitionEdit],
                      buffer: PartitionBuffer, action: WriteRequest) -> dict[int, PartitionEdit]:
    fabric = target.fabric
    operands = buffer.operands(_prefix_of(target))  # as the scalars read

    def refuse(problem: str) -> SetError:
        return SetError("inconsistentValue", action.index, problem)

    if operands.prefix != _prefix_of(target):
        raise refuse("ibSmPartitionConfigSubnetPrefix must be this fabric's subnet prefix")
    pkey = int.from_bytes(operands.key, "big") & 0x7FFF
    if not pkey:
        raise refuse("ibSmPartitionConfigKey must name a partition (a P_Key other than 0)")
    existing = fabric.partition(pkey)
    edit = edits.get(pkey, PartitionEdit())
    if action.value == _CREATE:
        if existing is not None:
            raise refuse(f"partition 0x{pkey:04x} exists")
        return with_entry(edits, pkey, PartitionEdit(name=edit.name, fresh=True))
    if existing is None:
        raise refuse(f"no partition 0x{pkey:04x}")
    if action.value == _DELETE:
        if pkey == _DEFAULT_PARTITION:
            raise refuse("the default partition cannot be deleted")
        return with_entry(edits, pkey, PartitionEdit(name=edit.name, deleted=True))
    guid = int.from_bytes(operands.guid, "big")
    node = fabric.nodes.get(guid)
    if node is None:
        raise refuse(f"no node {guid:016x} in this fabric (set ibSmPartitionConfigMemberNodeGUID)")
    members = {(m.guid, m.port): (FULL if m.full else LIMITED) for m in existing.members}
    changes: dict[tuple[int, int], int] = {}
    port = operands.port
    if action.value == _REMOVE:
        # Port 0: a switch's member port, or every port of a CA (which has no port 0).
        ports = [m for m in members if m[0] == guid and (port == 0 or m[1] == port)]
        if not ports:
            raise refuse("not a member of the partition")
        changes = {member: REMOVED for member in ports}
    else:
        if node.port(port) is None or (node.is_switch and port != 0):
            raise refuse(f"node {guid:016x} has no end port {port} (a switch joins by port 0)")
        member = (guid, port)
        if action.value == _ADD:
            if member in members:
                raise refuse("already a member: use updateMemberType")
            holder = node.management_port if node.is_switch else node.port(port)
            assert holder is not None
            capacity = node.partition_cap
            if capacity is not None and len([k for k in holder.pkeys if k & 0x7FFF]) >= capacity:
                raise refuse("the port's P_Key table is full (PartitionCap)")
        elif member not in members:
            raise refuse("not a member of the partition")
        changes = {member: FULL if operands.member_type == FULL else LIMITED}
    return with_entry(edits, pkey, dataclasses.replace(edit, members={**edit.members, **changes}))


# -- SL-to-VL maps and VL arbitration -------------------------------------------------------------


def _sl_column(request: WriteRequest, prefix: str) -> int:
    return int(_short(request, prefix)[2:-4])  # "SL12toVL" -> 12


def _plan_sl2vl(switch: bool) -> Callable[[AgentState, ContextTarget, Sequence[WriteRequest],
                                           Transaction], None]:
    prefix = "ibSmSwSLtoVLMap" if switch else "ibSmCaSLtoVLMap"

    def plan(state: AgentState, target: ContextTarget, requests: Sequence[WriteRequest],
             txn: Transaction) -> None:
        fabric = target.fabric
        tables = dict(txn.config.sl2vl)
        for instance, row in _by_row(requests):
            first = row[0]
            _check_prefix(target, instance[0], first)
            guid = int.from_bytes(instance[1], "big")
            node = fabric.nodes.get(guid)
            # A switch row (in, out) shows the output port's table, which
            # the model keeps once for all input ports: a SET changes it
            # for every input port.
            numbers = instance[2:]
            ports = [node.port(n) for n in numbers] if node is not None else []
            if (node is None or node.is_switch != switch or not ports
                    or any(p is None or p.num < 1 or not p.sl2vl for p in ports)):
                raise SetError("noCreation", first.index, "no such SL-to-VL table")
            out = ports[-1]
            assert out is not None
            table = list(tables.get((guid, out.num), out.sl2vl))
            table += [0] * (16 - len(table))
            for request in row:
                table[_sl_column(request, prefix)] = request.value
            tables[(guid, out.num)] = tuple(table[:16])
        txn.config = dataclasses.replace(txn.config, sl2vl=tables)

    return plan


def _plan_vl_arb(state: AgentState, target: ContextTarget, requests: Sequence[WriteRequest],
                 txn: Transaction) -> None:
    fabric = target.fabric
    weights = dict(txn.config.vl_arb)
    for instance, row in _by_row(requests):
        first = row[0]
        _check_prefix(target, instance[0], first)
        guid = int.from_bytes(instance[1], "big")
        num, priority = instance[2], instance[3]
        port = fabric.port(guid, num)
        entries = (port.vl_arb_high if priority == HIGH else port.vl_arb_low) if port else ()
        if priority not in (LOW, HIGH) or not entries:
            raise SetError("noCreation", first.index, "no such VL arbitration entry")
        for request in row:
            # VLArbitrationTable weights are 8-bit.
            weights[(guid, num, priority)] = require_range(request, 0, 255, "a weight")
    txn.config = dataclasses.replace(txn.config, vl_arb=weights)


# -- the writers ------------------------------------------------------------------------------------


LIVE_SM_NOT_WRITABLE = ("a live subnet manager owns its configuration (opensm.conf, "
                        "partitions.conf); the agent does not write it")


# A writer's plan over the agent's state, and the same bound to one state.
StatePlan = Callable[[AgentState, ContextTarget, Sequence[WriteRequest], Transaction], None]
BoundPlan = Callable[[ContextTarget, Sequence[WriteRequest], Transaction], None]


def sm_writers(state: AgentState) -> tuple[WriterBinding, ...]:
    def bound(plan: StatePlan) -> BoundPlan:
        return lambda target, requests, txn: plan(state, target, requests, txn)

    def sm_owned(plan: StatePlan) -> BoundPlan:
        # With a live SM these are the SM's own settings: no MAD writes them
        # for good (the SM programs them again on its next sweep).
        def run(target: ContextTarget, requests: Sequence[WriteRequest], txn: Transaction) -> None:
            if not state.sm_config_writable:
                raise SetError("notWritable", 0, LIVE_SM_NOT_WRITABLE)
            plan(state, target, requests, txn)
        return run

    return (
        WriterBinding("SA requests",
                      _writable(PATH_REQUEST.entry) | _writable(MULTIPATH_REQUEST.entry)
                      | _writable(TRACE_REQUEST.entry),
                      bound(_plan_requests),
                      alters_only_stamped=True),
        WriterBinding("SM configuration", _writable("ibSmConfigEntry"), sm_owned(_plan_config)),
        WriterBinding("service associations", _writable("ibSmServiceAssocEntry"),
                      sm_owned(_plan_service_assoc)),
        WriterBinding("partition configuration", _writable(_PARTITION_SCALARS),
                      sm_owned(_plan_partition_config)),
        WriterBinding("switch SL-to-VL", _writable("ibSmSwSLtoVLMapEntry"),
                      sm_owned(_plan_sl2vl(True))),
        WriterBinding("CA SL-to-VL", _writable("ibSmCaSLtoVLMapEntry"),
                      sm_owned(_plan_sl2vl(False))),
        WriterBinding("VL arbitration", _writable("ibSmVLArbitrationEntry"),
                      sm_owned(_plan_vl_arb)),
    )

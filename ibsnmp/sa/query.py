"""Subnet administration queries computed from the fabric model.

PathRecord (IBA 15.2.5.16), MultiPathRecord (15.2.5.20) and TraceRecord (15.2.5.17) answers,
as an SA (OpenSM's) builds them, from the routes the fabric's linear forwarding tables really
take (`fabric.routing`): MTU and rate the smallest along the path, a P_Key both end ports hold,
the requested SL unless it maps to VL15 on the path, a lifetime from the switches crossed
(`path_lifetime`), up to NumbPath paths per port pair over their LMC LIDs (`_lid_pairs`).
Unmasked fields are wildcards; unknown LIDs or GIDs match nothing. Nothing here knows of SNMP.
Reference: docs/sets.md, 'Requests, configuration, errors and persistence'.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from enum import IntFlag
from itertools import product

from ibsnmp.fabric import routing
from ibsnmp.fabric.iba import Mtu, NodeType, Rate, make_gid
from ibsnmp.fabric.lineage import Aspect, Derived
from ibsnmp.fabric.model import Fabric, Port, PortRef

__all__ = [
    "PR",
    "MPR",
    "TR",
    "PathQuery",
    "PathRecord",
    "TraceRecord",
    "TooManyRecords",
    "path_records",
    "multipath_records",
    "trace_records",
    "gid_port",
    "port_gids",
]

MAX_LIFETIME = 63  # 6-bit PacketLifeTime field
MAX_PAIRS = 20_000  # port pairs one query may cover
MAX_RECORDS = 20_000  # records one query may return
_FULL = 0x8000


class PR(IntFlag):
    """PathRecord component mask bits (IBA 15.2.5.16; OpenSM IB_PR_COMPMASK_*)."""

    DGID = 1 << 2
    SGID = 1 << 3
    DLID = 1 << 4
    SLID = 1 << 5
    RAW_TRAFFIC = 1 << 6
    FLOW_LABEL = 1 << 8
    HOP_LIMIT = 1 << 9
    TCLASS = 1 << 10
    REVERSIBLE = 1 << 11
    NUMB_PATH = 1 << 12
    PKEY = 1 << 13
    SL = 1 << 15
    MTU_SELECTOR = 1 << 16
    MTU = 1 << 17
    RATE_SELECTOR = 1 << 18
    RATE = 1 << 19
    PKT_LIFE_SELECTOR = 1 << 20
    PKT_LIFE = 1 << 21
    PREFERENCE = 1 << 22


class MPR(IntFlag):
    """MultiPathRecord component mask bits (IBA 15.2.5.20; OpenSM IB_MPR_COMPMASK_*)."""

    RAW_TRAFFIC = 1 << 0
    FLOW_LABEL = 1 << 2
    HOP_LIMIT = 1 << 3
    TCLASS = 1 << 4
    REVERSIBLE = 1 << 5
    NUMB_PATH = 1 << 6
    PKEY = 1 << 7
    SL = 1 << 9
    MTU_SELECTOR = 1 << 10
    MTU = 1 << 11
    RATE_SELECTOR = 1 << 12
    RATE = 1 << 13
    PKT_LIFE_SELECTOR = 1 << 14
    PKT_LIFE = 1 << 15
    INDEP_SELECTOR = 1 << 17
    SGID_COUNT = 1 << 19
    DGID_COUNT = 1 << 20


class TR(IntFlag):
    """TraceRecord component mask bits, one per component in record order
    (IBA 15.2.5.17: GIDPrefix, IDGeneration, reserved, NodeType, NodeID,
    ChassisID, EntryPortID, ExitPortID, EntryPort, ExitPort)."""

    GID_PREFIX = 1 << 0
    ID_GENERATION = 1 << 1
    NODE_TYPE = 1 << 3
    NODE_ID = 1 << 4
    CHASSIS_ID = 1 << 5
    ENTRY_PORT_ID = 1 << 6
    EXIT_PORT_ID = 1 << 7
    ENTRY_PORT = 1 << 8
    EXIT_PORT = 1 << 9


class TooManyRecords(Exception):
    """A query would cover more port pairs or return more records than one
    answer may hold (MAX_PAIRS, MAX_RECORDS)."""


@dataclass(frozen=True, slots=True)
class PathQuery:
    """The constraints of a PathRecord or MultiPathRecord request: None is a
    wildcard (the component is not in the mask). `mtu` and `rate` are IBA
    codes (Mtu 1..5, Rate 2..); a selector counts only with its value, as
    OpenSM does; selectors: 0 greater than, 1 less than, 2 exactly."""

    sgid: int | None = None
    dgid: int | None = None
    slid: int | None = None
    dlid: int | None = None
    raw_traffic: int | None = None
    flow_label: int | None = None
    hop_limit: int | None = None
    tclass: int | None = None
    numb_path: int | None = None
    pkey: int | None = None
    sl: int | None = None
    mtu_selector: int | None = None
    mtu: int | None = None
    rate_selector: int | None = None
    rate: int | None = None
    pkt_life_selector: int | None = None
    pkt_life: int | None = None
    preference: int | None = None


@dataclass(frozen=True, slots=True)
class PathRecord:
    """One path: IBA codes for MTU and rate; `route` the hops it takes (None
    when an SA answered the path: a trace then follows the read LFTs)."""

    sgid: int
    dgid: int
    slid: int
    dlid: int
    raw_traffic: int
    flow_label: int
    hop_limit: int
    tclass: int
    pkey: int
    sl: int
    mtu: int
    rate: int
    pkt_life: int
    preference: int
    route: routing.Path | None
    numb_path: int = 1  # records returned for this port pair


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One node on a traced path (IBA 15.2.5.17). IDs are GUIDs; port IDs
    and numbers are 0 where IBA reserves them for the node's type."""

    id_generation: int
    node_type: int
    node_id: int
    chassis_id: int
    entry_port_id: int
    exit_port_id: int
    entry_port: int
    exit_port: int


# -- ports, GIDs, LIDs --------------------------------------------------------------


def port_gids(port: Port) -> tuple[int, ...]:
    """The GIDs a port answers to: its GID table, else prefix + GUIDInfo."""
    if port.gids is not None:
        return tuple(g for g in port.gids if g)
    prefix = port.info.gid_prefix
    if prefix is None or not port.guids:
        return ()
    return tuple(make_gid(prefix, guid) for guid in port.guids)


def _gid_index(fabric: Fabric) -> dict[int, PortRef]:
    index: dict[int, PortRef] = {}
    for ref in _endports(fabric):
        for gid in port_gids(fabric.port_at(ref)):
            index.setdefault(gid, ref)
    return index


def gid_port(fabric: Fabric, gid: int) -> PortRef | None:
    """The end port (CA port or switch port 0) owning a GID."""
    return fabric.derive(_GID_INDEX).get(gid)


def _endports(fabric: Fabric) -> tuple[PortRef, ...]:
    """Every port that owns LIDs (CA and router ports, switch port 0), sorted."""
    return fabric.derive(_ENDPORTS)


_ENDPORTS = Derived("end ports", Aspect.LIDS, lambda fabric: tuple(sorted(set(fabric.lid_map.values()))))
# A port's GIDs are its GID table or its prefix and GUIDInfo: what it holds.
_GID_INDEX = Derived("ports by GID", Aspect.LIDS | Aspect.NODES, _gid_index)


def _lids(port: Port) -> tuple[int, ...]:
    base = port.info.lid
    return tuple(range(base, base + (1 << port.info.lmc))) if base else ()


def _gid0(port: Port) -> int:
    gids = port_gids(port)
    return gids[0] if gids else 0


class _End:
    __slots__ = ("ref", "lids", "gid")

    def __init__(self, ref: PortRef, lids: tuple[int, ...], gid: int) -> None:
        self.ref = ref
        self.lids = lids
        self.gid = gid


def _ends(fabric: Fabric, gid: int | None, lid: int | None) -> list[_End] | None:
    """The end ports a (GID, LID) constraint selects: None for a wildcard
    (both absent), [] when nothing matches (an unknown GID or LID, or a GID
    and LID of different ports)."""
    if gid is None and lid is None:
        return None
    ref = None
    if lid is not None:
        ref = fabric.resolve_lid(lid) if 0 < lid <= 0xBFFF else None
        if ref is None:
            return []
    if gid is not None:
        owner = gid_port(fabric, gid)
        if owner is None or (ref is not None and owner != ref):
            return []
        ref = owner
    assert ref is not None
    port = fabric.port_at(ref)
    lids = (lid,) if lid is not None else _lids(port)
    return [_End(ref, lids, gid if gid is not None else _gid0(port))]


def _all_ends(fabric: Fabric) -> list[_End]:
    ends = []
    for ref in _endports(fabric):
        port = fabric.port_at(ref)
        lids = _lids(port)
        if lids:
            ends.append(_End(ref, lids, _gid0(port)))
    return ends


# -- path properties ------------------------------------------------------------------


def _pkey_table(fabric: Fabric, ref: PortRef) -> tuple[int, ...]:
    node = fabric.nodes[ref.guid]
    port = node.management_port if node.is_switch else fabric.port_at(ref)
    return port.pkeys


def shared_pkey(src: Sequence[int], dst: Sequence[int], want: int | None = None) -> int | None:
    """A P_Key both tables hold, at least one end as a full member (two
    limited members cannot talk, IBA 10.9.1.2): the source's entry, in
    table order; with `want`, only that partition (15-bit base) counts."""
    for key in src:
        base = key & 0x7FFF
        if base == 0 or (want is not None and base != want & 0x7FFF):
            continue
        for other in dst:
            if other & 0x7FFF == base and (key | other) & _FULL:
                return key
    return None


def path_lifetime(fabric: Fabric, route: routing.Path) -> int | None:
    """PacketLifeTime code of a route: 0 for loopback (IBA 1.2 Table 205),
    else the code of the sum of the time each switch crossed may hold the
    packet: a switch holds one 4.096 us * 2**LifeTimeValue (SwitchInfo), so
    the code is ceil(log2(sum of 2**LifeTimeValue)); None when a
    switch's LifeTimeValue was not read and no SM configuration gives the
    subnet's packet lifetime (nothing to build it from)."""
    if route.src == route.dst:
        return 0
    fallback = fabric.sm_config.packet_life_time if fabric.sm_config is not None else None
    total = 0
    for hop in route.hops:
        if hop.node_type is not NodeType.SWITCH:
            continue
        info = fabric.nodes[hop.node_guid].switch
        value = info.life_time_value if info is not None else None
        if value is None:
            value = fallback
        if value is None:
            return None
        total += 1 << value
    if total == 0:  # CA to CA back to back: one link
        if fallback is None:
            return None
        total = 1 << fallback
    return min(math.ceil(math.log2(total)), MAX_LIFETIME)


def _sl_usable(fabric: Fabric, route: routing.Path, sl: int) -> bool:
    """False if an output port on the route maps `sl` to VL15 (drop)."""
    for hop in route.hops:
        if hop.out_port is None:
            continue
        port = fabric.port(hop.node_guid, hop.out_port)
        if port is not None and len(port.sl2vl) > sl and port.sl2vl[sl] == 15:
            return False
    return True


def select_mtu(path_mtu: int, selector: int | None, want: int | None) -> int | None:
    """The MTU code a record gets, or None when the selector rules it out."""
    if selector is None or want is None:
        return path_mtu
    if selector == 0:  # greater than
        return path_mtu if path_mtu > want else None
    if selector == 1:  # less than
        best = min(path_mtu, want - 1)
        return best if best >= Mtu.MTU_256 else None
    if selector == 2:  # exactly
        return want if Mtu.MTU_256 <= want <= path_mtu else None
    return path_mtu  # 3: the largest available


def select_rate(path_rate: int, selector: int | None, want: int | None) -> int | None:
    """The rate code a record gets, or None. Codes are not ordered by speed:
    comparisons use each code's Gb/s."""
    if selector is None or want is None:
        return path_rate
    have = Rate(path_rate).gbps
    try:
        wanted = Rate(want).gbps
    except ValueError:
        return None  # a reserved code matches no path
    if selector == 0:
        return path_rate if have > wanted else None
    if selector == 1:
        slower = [r for r in Rate if r.gbps < wanted and r.gbps <= have]
        return max(slower, key=lambda r: r.gbps).value if slower else None
    if selector == 2:
        return want if wanted <= have else None
    return path_rate


def select_lifetime(life: int, selector: int | None, want: int | None) -> int | None:
    if selector is None or want is None:
        return life
    if selector == 0:
        return life if life > want else None
    if selector == 1:
        return life if life < want else None
    if selector == 2:
        return want if life <= want else None
    return life  # 3: the smallest available


def _route(fabric: Fabric, slid: int, dlid: int) -> routing.Path | None:
    try:
        return routing.trace(fabric, slid, dlid)
    except (routing.NoRoute, KeyError, TypeError, ValueError):
        # TypeError: a provider that does not know a port's MTU (None).
        return None


# -- PathRecord ---------------------------------------------------------------------------


def _lid_pairs(slids: tuple[int, ...], dlids: tuple[int, ...]) -> Iterator[tuple[int, int, int]]:
    """(slid, dlid, preference): the preferred pairings first. A port with
    LMC n owns 2**n LIDs, so a pair of ports has up to 2**(n_src + n_dst)
    paths: the preferred ones pair the i-th source LID with the i-th
    destination LID (preference 0), the others follow (preference 1)."""
    count = max(len(slids), len(dlids))
    preferred = [(slids[i % len(slids)], dlids[i % len(dlids)]) for i in range(count)]
    for slid, dlid in preferred:
        yield slid, dlid, 0
    chosen = set(preferred)
    for slid, dlid in product(slids, dlids):
        if (slid, dlid) not in chosen:
            yield slid, dlid, 1


def _records(fabric: Fabric, q: PathQuery, src: _End, dst: _End) -> Iterator[PathRecord]:
    """Every record between two end ports that meets the query, best first."""
    pkey = shared_pkey(_pkey_table(fabric, src.ref), _pkey_table(fabric, dst.ref), q.pkey)
    if pkey is None:
        return
    sl = q.sl if q.sl is not None else 0
    for slid, dlid, preference in _lid_pairs(src.lids, dst.lids):
        if q.preference is not None and preference != q.preference:
            continue
        route = _route(fabric, slid, dlid)
        if route is None or not _sl_usable(fabric, route, sl):
            continue
        # A record is built only from values that were read: a route with
        # an MTU, rate or lifetime nobody read has no record.
        lifetime = path_lifetime(fabric, route)
        if route.mtu is None or route.rate is None or lifetime is None:
            continue
        mtu = select_mtu(int(route.mtu), q.mtu_selector, q.mtu)
        rate = select_rate(int(route.rate), q.rate_selector, q.rate)
        life = select_lifetime(lifetime, q.pkt_life_selector, q.pkt_life)
        if mtu is None or rate is None or life is None:
            continue
        yield PathRecord(
            sgid=src.gid, dgid=dst.gid, slid=slid, dlid=dlid,
            raw_traffic=q.raw_traffic or 0, flow_label=q.flow_label or 0,
            # Within one subnet no GRH is needed: hop limit 0 unless asked.
            hop_limit=q.hop_limit or 0, tclass=q.tclass or 0,
            pkey=pkey, sl=sl, mtu=mtu, rate=rate, pkt_life=life, preference=preference,
            route=route,
        )


def _limited(records: Iterable[PathRecord], limit: int | None) -> list[PathRecord]:
    out = []
    for record in records:
        out.append(record)
        if limit and len(out) >= limit:
            break
    return out


def path_records(fabric: Fabric, q: PathQuery, limit: int = MAX_RECORDS) -> list[PathRecord]:
    """The PathRecords a GetTable(PathRecord) with these constraints returns.

    Without a source (SGID/SLID) or destination (DGID/DLID) every end port
    is one; such wildcard queries leave out loopback pairs. NumbPath (1..127)
    caps the records per port pair; 0 or absent: all of them.
    Raises TooManyRecords past MAX_PAIRS pairs or `limit` records (at most
    MAX_RECORDS), as soon as the record past the limit is found.
    """
    limit = min(limit, MAX_RECORDS)
    srcs = _ends(fabric, q.sgid, q.slid)
    dsts = _ends(fabric, q.dgid, q.dlid)
    explicit = srcs is not None and dsts is not None
    if srcs is None:
        srcs = _all_ends(fabric)
    if dsts is None:
        dsts = _all_ends(fabric)
    if len(srcs) * len(dsts) > MAX_PAIRS:
        raise TooManyRecords(f"{len(srcs) * len(dsts)} port pairs (at most {MAX_PAIRS})")
    out: list[PathRecord] = []
    for src in srcs:
        for dst in dsts:
            if not explicit and src.ref == dst.ref:
                continue
            pair = _limited(_records(fabric, q, src, dst), q.numb_path)
            out.extend(_numbered(pair))
            if len(out) > limit:
                raise TooManyRecords(f"more than {limit} records")
    return out


def _numbered(pair: list[PathRecord]) -> list[PathRecord]:
    return [replace(r, numb_path=len(pair)) for r in pair]


# -- MultiPathRecord -------------------------------------------------------------------------


def multipath_records(fabric: Fabric, q: PathQuery, sgids: Sequence[int], dgids: Sequence[int],
                      *, independent: bool = False, limit: int = MAX_RECORDS
                      ) -> list[PathRecord]:
    """The paths a GetMulti(MultiPathRecord) returns between every source
    GID and every destination GID (unknown GIDs match nothing). NumbPath
    caps the total. With `independent` (IndepSel 1) paths that share the
    fewest switches with those already chosen come first; preference is
    then how many switches a path shares with the earlier ones (capped 255),
    not counting the switches every candidate crosses. Raises
    TooManyRecords past MAX_RECORDS candidates or `limit` records returned.
    """
    candidates: list[PathRecord] = []
    for sgid, dgid in product(dict.fromkeys(sgids), dict.fromkeys(dgids)):
        src = _ends(fabric, sgid, None)
        dst = _ends(fabric, dgid, None)
        if not src or not dst:
            continue
        pair = list(_records(fabric, q, src[0], dst[0]))
        candidates.extend(_numbered(pair))
        if len(candidates) > MAX_RECORDS:
            raise TooManyRecords(f"more than {MAX_RECORDS} records")
    chosen = _limited(_independent_order(candidates) if independent else candidates, q.numb_path)
    if len(chosen) > limit:
        raise TooManyRecords(f"more than {limit} records")
    return chosen


def _switches(record: PathRecord) -> frozenset[int]:
    hops = record.route.hops if record.route is not None else ()
    return frozenset(h.node_guid for h in hops if h.node_type is NodeType.SWITCH)


def _independent_order(records: list[PathRecord]) -> list[PathRecord]:
    """Greedy: next the path sharing the fewest switches with those chosen.
    Switches every candidate crosses (the leaf switches of the end ports)
    cannot be avoided and do not count."""
    if not records:
        return records
    sets = [_switches(r) for r in records]
    unavoidable = frozenset.intersection(*sets)
    remaining = [(r, s - unavoidable) for r, s in zip(records, sets)]
    used: set[int] = set()
    out = []
    while remaining:
        best = min(range(len(remaining)), key=lambda i: len(remaining[i][1] & used))
        record, switches = remaining.pop(best)
        out.append(replace(record, preference=min(len(switches & used), 255)))
        used |= switches
    return out


# -- TraceRecord ------------------------------------------------------------------------------


def trace_records(fabric: Fabric, route: routing.Path) -> list[TraceRecord]:
    """One TraceRecord per node of a route, source first. ChassisID is the
    node's system image GUID (0 if unknown); IDGeneration is 0 (the model
    keeps no GUID generations)."""
    out = []
    for hop in route.hops:
        node = fabric.nodes[hop.node_guid]
        entry_id = exit_id = entry = exit_ = 0
        if hop.node_type is NodeType.SWITCH:
            entry = hop.in_port or 0
            exit_ = hop.out_port or 0
        elif hop.node_type is NodeType.ROUTER:
            entry_id = hop.in_port_guid or 0
            exit_id = hop.out_port_guid or 0
        else:  # a CA: the port it sends or receives on
            entry_id = (hop.in_port_guid if hop.in_port is not None else hop.out_port_guid) or 0
        out.append(TraceRecord(
            id_generation=0, node_type=int(hop.node_type), node_id=hop.node_guid,
            chassis_id=node.system_image_guid or 0, entry_port_id=entry_id,
            exit_port_id=exit_id, entry_port=entry, exit_port=exit_,
        ))
    return out

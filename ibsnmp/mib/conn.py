"""IBCONNECTION-MIB: the transport endpoints of the context's node.

Tables come from the model's NodeConnections (already sorted as the MIB indexes them), the
scalar counters from counters.connection_counters_at at `target.elapsed`. A switch has no
transport endpoints: its tables are empty and its scalars absent; so are a CA's when the model
has no NodeConnections for it (no active port). IBQuePairNumber and IBEtoEContext carry the
wire value plus one (1..16777216), "to allow this value to be an index"; GidTC is the 16-octet
GID, LidTC the 16-bit LID.
Reference: docs/mibs.md, 'What each module serves'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..fabric.traffic import connection_counters_at
from ..fabric.lineage import Aspect
from .api import ContextTarget
from .binding import ModuleBinding, ScalarBinding, TableBinding, reads_time
from .facts import truth as _truth


def _gid(gid: int) -> bytes:
    return gid.to_bytes(16, "big")


def _index_number(wire: int) -> int:
    """QPN / EECN as IBQuePairNumber / IBEtoEContext: the 24-bit wire value + 1."""
    return (wire & 0xFFFFFF) + 1


def _connections(target: ContextTarget) -> Any | None:
    node = target.node
    if not node.is_ca:
        return None
    return target.fabric.connections.get(node.guid)


def _ud_rows(target: ContextTarget) -> Iterator[tuple[tuple[Any, ...], tuple[Any, ...]]]:
    conns = _connections(target)
    for ep in conns.ud if conns is not None else ():
        key = (_gid(ep.gid), ep.lid, _index_number(ep.qpn))
        yield key, key  # every column of the row is an index column


def _rd_rows(target: ContextTarget) -> Iterator[tuple[tuple[Any, ...], tuple[Any, ...]]]:
    conns = _connections(target)
    for rd in conns.rd if conns is not None else ():
        key = (
            _gid(rd.local_gid), rd.local_lid, _index_number(rd.local_eecn),
            _gid(rd.remote_gid), rd.remote_lid, _index_number(rd.remote_eecn),
        )
        yield key, key


def _connected_rows(target: ContextTarget) -> Iterator[tuple[tuple[Any, ...], tuple[Any, ...]]]:
    conns = _connections(target)
    for qp in conns.connected if conns is not None else ():
        key = (
            _gid(qp.local_gid), qp.local_lid, _index_number(qp.local_qpn),
            _gid(qp.remote_gid), qp.remote_lid, _index_number(qp.remote_qpn),
        )
        # iba.CmState is numbered as ibConnCState: listen(1) .. drepTimeout(14).
        yield key, key + (int(qp.state), _truth(qp.reliable))


def _part(i: int) -> Callable[[tuple[Any, ...], ContextTarget], Any]:
    return lambda row, target: row[i]


def _counter(name: str) -> Callable[[ContextTarget], int | None]:
    @reads_time
    def get(target: ContextTarget) -> int | None:
        conns = _connections(target)
        if conns is None:
            return None
        count: int | None = getattr(connection_counters_at(conns, target.elapsed), name)
        return count

    return get


def _columns(*names: str) -> dict[str, Callable[[tuple[Any, ...], ContextTarget], Any]]:
    """Columns in row-tuple order."""
    return {name: _part(i) for i, name in enumerate(names)}


IBCONNECTION_MIB = ModuleBinding(
    module="IBCONNECTION-MIB",
    scalars=(
        ScalarBinding("ibConnUDInDatagrams", _counter("ud_in_datagrams")),
        ScalarBinding("ibConnUDNoQP", _counter("ud_no_qp")),
        ScalarBinding("ibConnUDInErrors", _counter("ud_in_errors")),
        ScalarBinding("ibConnUDOutDatagrams", _counter("ud_out_datagrams")),
        ScalarBinding("ibConnRDInDatagrams", _counter("rd_in_datagrams")),
        ScalarBinding("ibConnRDNoQP", _counter("rd_no_qp")),
        ScalarBinding("ibConnRDInErrors", _counter("rd_in_errors")),
        ScalarBinding("ibConnRDOutDatagrams", _counter("rd_out_datagrams")),
        ScalarBinding("ibConnCInSegs", _counter("connected_in_segments")),
        ScalarBinding("ibConnCOutSegs", _counter("connected_out_segments")),
    ),
    tables=(
        TableBinding(
            entry="ibConnUDEntry",
            rows=_ud_rows,
            depends=Aspect.CONNECTIONS,
            columns=_columns("ibConnUDGID", "ibConnUDLID", "ibConnUDLocalQPN"),
        ),
        TableBinding(
            entry="ibConnRDEntry",
            rows=_rd_rows,
            depends=Aspect.CONNECTIONS,
            columns=_columns("ibConnRDLGID", "ibConnRDLLID", "ibConnRDLEEC", "ibConnRDRGID", "ibConnRDRLID", "ibConnRDREEC"),
        ),
        TableBinding(
            entry="ibConnCEntry",
            rows=_connected_rows,
            depends=Aspect.CONNECTIONS,
            columns=_columns(
                "ibConnCLGID", "ibConnCLLID", "ibConnCLQPN", "ibConnCRGID", "ibConnCRLID", "ibConnCRQPN",
                "ibConnCState", "ibConnCReliable",
            ),
        ),
    ),
)

"""Simulated transport endpoints (IBCONNECTION-MIB data), made on demand.

Each CA's endpoints are a pure function of the seed and the host's place in
the host list, computed the first time someone asks: a 10,000-host fabric
pays nothing at start-up.  Host i connects to hosts i+d for a few offsets
d, and accepts from i-d, so both ends of every connection agree on QPNs and
state without any shared table.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from .detrand import mix as _mix
from .detrand import unit as _unit
from .iba import CmState
from .model import ConnectedQp, Node, NodeConnections, Port, RdConnection, UdEndpoint

_QPN_SPACE = 0xFFFFFF - 0x100  # QPN 0 and 1 are the SMI and GSI QPs

# (initiator state, responder state, share of connections) in a busy cluster.
_STATES = (
    (CmState.ESTABLISHED, CmState.ESTABLISHED, 0.90),
    (CmState.REQ_SENT, CmState.REQ_RCVD, 0.04),
    (CmState.TIME_WAIT, CmState.TIME_WAIT, 0.03),
    (CmState.DREQ_SENT, CmState.DREQ_RCVD, 0.03),
)


class SimulatedConnections(Mapping[int, NodeConnections]):
    """node GUID -> NodeConnections for every CA with an active port."""

    def __init__(self, seed: int, nodes: Mapping[int, Node], host_guids: Sequence[int]) -> None:
        self._seed = seed
        self._nodes = nodes
        self._hosts = [g for g in host_guids if _first_active(nodes[g]) is not None]
        self._position = {guid: i for i, guid in enumerate(self._hosts)}
        self._offsets = _offsets(seed, len(self._hosts))
        self._cache: dict[int, NodeConnections] = {}

    def __getitem__(self, guid: int) -> NodeConnections:
        found = self._cache.get(guid)
        if found is None:
            if guid not in self._position:
                raise KeyError(guid)
            found = self._cache.setdefault(guid, self._build(guid))
        return found

    def __iter__(self) -> Iterator[int]:
        return iter(self._hosts)

    def __len__(self) -> int:
        return len(self._hosts)

    def __contains__(self, guid: object) -> bool:
        return guid in self._position

    def _endpoint(self, index: int) -> Port:
        port = _first_active(self._nodes[self._hosts[index]])
        assert port is not None
        return port

    def _build(self, guid: int) -> NodeConnections:
        node = self._nodes[guid]
        seed, here = self._seed, self._position[guid]
        ud: list[UdEndpoint] = []
        for port in node.ports:
            if port.is_active and port.lid:
                gid = port.gid()
                ipoib_qpn = 0x100 + _mix(seed, _guid(port), 7) % 0x10000
                ud.extend(UdEndpoint(gid, port.lid, qpn) for qpn in (0, 1, ipoib_qpn))
        connected = []
        count = len(self._hosts)
        for d in self._offsets:
            connected.append(self._connection(here, (here + d) % count, d, local_is_client=True))
            connected.append(self._connection((here - d) % count, here, d, local_is_client=False))
        connected.sort(key=lambda c: (c.local_gid, c.local_lid, c.local_qpn, c.remote_gid, c.remote_lid, c.remote_qpn))
        ud.sort(key=lambda e: (e.gid, e.lid, e.qpn))
        rd: tuple[RdConnection, ...] = ()  # no simulated adapter supports RD
        busy = sum(1 for c in connected if c.state is CmState.ESTABLISHED)
        return NodeConnections(
            ud=tuple(ud),
            rd=rd,
            connected=tuple(connected),
            ud_datagrams_per_s=50.0 + 5000.0 * _unit(seed, guid, 1),
            segments_per_s=busy * (1e3 + 1e5 * _unit(seed, guid, 2)),
        )

    def _connection(self, client: int, server: int, offset: int, local_is_client: bool) -> ConnectedQp:
        seed = self._seed
        a, b = self._endpoint(client), self._endpoint(server)
        key = (_guid(a), _guid(b), offset)
        client_qpn = 0x100 + _mix(seed, *key, 1) % _QPN_SPACE
        server_qpn = 0x100 + _mix(seed, *key, 2) % _QPN_SPACE
        client_state, server_state = _states(_unit(seed, *key, 3))
        reliable = _unit(seed, *key, 4) < 0.9  # RC mostly, some UC
        if local_is_client:
            return ConnectedQp(a.gid(), a.lid, client_qpn, b.gid(), b.lid, server_qpn, client_state, reliable)
        return ConnectedQp(b.gid(), b.lid, server_qpn, a.gid(), a.lid, client_qpn, server_state, reliable)


def _states(draw: float) -> tuple[CmState, CmState]:
    for client, server, share in _STATES:
        if draw < share:
            return client, server
        draw -= share
    return _STATES[-1][0], _STATES[-1][1]


def _first_active(node: Node) -> Port | None:
    return next((p for p in node.ports if p.is_active and p.lid), None)


def _offsets(seed: int, count: int) -> tuple[int, ...]:
    if count < 2:
        return ()
    chosen = {1, count // 2, 1 + _mix(seed, count, 5) % (count - 1)}
    return tuple(sorted(d for d in chosen if 0 < d < count))


def _guid(port: Port) -> int:
    """A simulated port's GUID: the simulation gives every port one."""
    assert port.guid is not None
    return port.guid

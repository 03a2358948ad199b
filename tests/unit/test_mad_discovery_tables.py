"""A sweep with tables (ibsnmp.mad.discovery) against a scripted subnet whose
SMAs answer as IBA's do: which ports are asked GUIDInfo and SL-to-VL, and
what the snapshot (ibsnmp.live.snapshot) and SMA-MIB make of the answers.

The subnet: the local CA (two ports) on switch ports 1 and 3 of a 4-port
switch, a second CA on port 2; switch port 4 has no link.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from tests.support.mib_walk import walk

from ibsnmp.live.snapshot import build_fabric
from ibsnmp.mad import attributes as attrs
from ibsnmp.mad.discovery import Subnet, discover
from ibsnmp.mad.layout import FieldValue
from ibsnmp.mad.umad import Address
from ibsnmp.mib.api import ContextTarget
from ibsnmp.mib.loader import definitions
from ibsnmp.mib.sma import SMA_MIB
from ibsnmp.mib.virtual import InfinibandMib

LOCAL, OTHER, SWITCH = 0x1000, 0x2000, 0x3000
SWITCH_PORTS = 4
LINKS = {(LOCAL, 1): (SWITCH, 1), (LOCAL, 2): (SWITCH, 3), (OTHER, 1): (SWITCH, 2)}
CA_GUID_CAP, SWITCH_GUID_CAP = 10, 1  # a CA reads two GUIDInfo blocks
ACTIVE, DOWN, LINK_UP, POLLING = 4, 1, 5, 2
NO_PORT = 255  # SMA-MIB's index of switch port 0
Request = tuple[int, int, int]  # (node GUID, attribute ID, attribute modifier)
ATTRIBUTES = {a.attribute_id: a for a in (
    attrs.NODE_INFO, attrs.NODE_DESCRIPTION, attrs.PORT_INFO, attrs.SWITCH_INFO, attrs.GUID_INFO,
    attrs.P_KEY_TABLE, attrs.SL_TO_VL_MAPPING_TABLE, attrs.VL_ARBITRATION_TABLE,
    attrs.LINEAR_FORWARDING_TABLE, attrs.MULTICAST_FORWARDING_TABLE)}


def linked(guid: int, port: int) -> tuple[int, int] | None:
    return LINKS.get((guid, port)) or next((a for a, b in LINKS.items() if b == (guid, port)), None)


def port_guid(guid: int, port: int) -> int:
    """A CA port's own GUID; every port of a switch has port 0's (the node GUID)."""
    return guid if guid == SWITCH else guid + port


def sl2vl(into: int, out: int) -> tuple[int, ...]:
    """The table the scripted switch keeps for a pair: a different one for every pair."""
    return tuple((into * 5 + out * 3 + sl) % 15 for sl in range(16))


def ca_sl2vl(guid: int, port: int) -> tuple[int, ...]:
    return tuple((guid // 0x1000 + port + sl) % 8 for sl in range(16))


@dataclass
class ScriptedSubnet:
    """A MadWindow that answers each directed-route SubnGet() from the
    subnet above, recording (node GUID, attribute, modifier) of each.
    `silent` requests go unanswered."""

    silent: set[Request] = field(default_factory=set)
    asked: list[Request] = field(default_factory=list)
    queue: deque[tuple[bytes, Callable[[bytes | None], None]]] = field(default_factory=deque)

    def submit(self, mad: bytes, address: Address, handler: Callable[[bytes | None], None]) -> None:
        self.queue.append((mad, handler))

    def drain(self) -> None:
        while self.queue:
            mad, handler = self.queue.popleft()
            handler(self.answer(mad))

    def answer(self, mad: bytes) -> bytes | None:
        head = attrs.DIRECTED_ROUTE_SMP.decode(mad)
        hops = head["HopCount"]
        guid, arrival = self.reached(head["InitialPath"][1:1 + hops])
        attribute = ATTRIBUTES[head["AttributeID"]]
        modifier = head["AttributeModifier"]
        self.asked.append((guid, attribute.attribute_id, modifier))
        if (guid, attribute.attribute_id, modifier) in self.silent:
            return None
        values = self.values(guid, arrival, attribute, modifier)
        reply = bytearray(mad)
        attrs.DIRECTED_ROUTE_SMP.encode({"Response": 1}, into=reply)
        reply[attrs.DATA_OFFSET:attrs.DATA_OFFSET + attrs.SMP_DATA_SIZE] = \
            attribute.layout.encode(values)
        return bytes(reply)

    @staticmethod
    def reached(path: tuple[int, ...]) -> tuple[int, int]:
        """The node a route ends at and the port it came in on (LOCAL port 1 for none)."""
        guid, port = LOCAL, 1
        for hop in path:
            far = linked(guid, hop)
            assert far is not None, path
            guid, port = far
        return guid, port

    @staticmethod
    def values(guid: int, arrival: int, attribute: attrs.AnyAttribute,
               modifier: int) -> dict[str, FieldValue]:
        switch = guid == SWITCH
        if attribute is attrs.NODE_INFO:
            return {"NodeType": 2 if switch else 1, "NodeGUID": guid,
                    "NumPorts": SWITCH_PORTS if switch else (2 if guid == LOCAL else 1),
                    "PortGUID": port_guid(guid, arrival), "LocalPortNum": arrival,
                    "PartitionCap": 32}
        if attribute is attrs.PORT_INFO:
            port = modifier if switch or modifier else arrival
            up = port == 0 or linked(guid, port) is not None
            return {"PortState": ACTIVE if up else DOWN,
                    "PortPhysicalState": LINK_UP if up else POLLING, "LocalPortNum": arrival,
                    "GUIDCap": (SWITCH_GUID_CAP if port == 0 else 0) if switch else CA_GUID_CAP}
        if attribute is attrs.GUID_INFO:  # the modifier is a block: no port in it
            owner = 0 if switch else arrival
            return {"GUIDBlock": (port_guid(guid, owner) if modifier == 0 else 0,) + (0,) * 7}
        if attribute is attrs.SL_TO_VL_MAPPING_TABLE:
            return {"SLtoVL": sl2vl(modifier >> 8 & 0xFF, modifier & 0xFF) if switch
                    else ca_sl2vl(guid, arrival)}
        return {}


def swept(silent: Collection[Request] = ()) -> tuple[ScriptedSubnet, Subnet]:
    """The scripted subnet (with what it was asked) and the sweep's reading of it."""
    subnet = ScriptedSubnet(set(silent))
    return subnet, discover(subnet, tables=True)  # type: ignore[arg-type]  # a scripted port


def asked_of(subnet: ScriptedSubnet, guid: int, attribute: attrs.AnyAttribute) -> list[int]:
    return sorted(m for g, a, m in subnet.asked if g == guid and a == attribute.attribute_id)


def test_a_switch_is_asked_guid_info_once_for_port_0() -> None:
    subnet, found = swept()
    # One block for GUIDCap 1, asked once: the modifier names no port, so
    # reading it per external port would only read port 0's again.
    assert asked_of(subnet, SWITCH, attrs.GUID_INFO) == [0]
    tables = found.nodes[SWITCH].tables
    assert tables[0].table("guids") == (SWITCH,) + (0,) * 7
    assert all(tables[port].table("guids") is None for port in range(1, SWITCH_PORTS + 1))


def test_each_ca_port_is_asked_guid_info_through_itself() -> None:
    subnet, found = swept()
    # Two blocks (GUIDCap 10) for each of the three CA ports.
    assert asked_of(subnet, LOCAL, attrs.GUID_INFO) == [0, 0, 1, 1]
    assert asked_of(subnet, OTHER, attrs.GUID_INFO) == [0, 1]
    for guid, port in ((LOCAL, 1), (LOCAL, 2), (OTHER, 1)):
        tables = found.nodes[guid].tables[port]
        assert tables.table("guids") == (port_guid(guid, port),) + (0,) * 15
        assert tables.table("sl2vl") == ca_sl2vl(guid, port)  # the port's own, modifier 0


def test_every_input_and_output_pair_of_a_switch_is_asked_port_0_included() -> None:
    subnet, found = swept()
    ports = range(SWITCH_PORTS + 1)
    assert asked_of(subnet, SWITCH, attrs.SL_TO_VL_MAPPING_TABLE) == sorted(
        (into << 8) | out for into in ports for out in ports)
    for out in ports:
        assert found.nodes[SWITCH].tables[out].sl2vl_by_input == {
            into: sl2vl(into, out) for into in ports}


def test_the_snapshot_keeps_output_port_0s_tables_and_port_0s_guids() -> None:
    _, found = swept()
    switch = build_fabric(found, LOCAL).nodes[SWITCH]
    port_0 = switch.port(0)
    assert port_0 is not None and port_0.guids == (SWITCH,)
    assert port_0.sl2vl_inputs == tuple((into, sl2vl(into, 0)) for into in range(SWITCH_PORTS + 1))
    assert port_0.sl2vl == sl2vl(0, 0)
    assert all(p.guids == () for p in switch.data_ports)


def served(guid: int, column: str, silent: Collection[Request] = ()
           ) -> dict[tuple[int, ...], int | bytes]:
    """One SMA-MIB column as served in the node's context after a sweep:
    index -> value (an integer, or the octets of a GUID)."""
    _, found = swept(silent)
    fabric = build_fabric(found, LOCAL)
    start = definitions().objects[column].oid
    cells = walk(InfinibandMib([SMA_MIB]), ContextTarget(fabric, fabric.nodes[guid], False, 10.0),
                 start)
    return {oid[len(start):]: bytes(value) if column == "ibSmaGuidVal" else int(value)
            for oid, value in cells.items()}


def test_sma_mib_serves_a_switchs_guid_info_as_port_0s_under_255() -> None:
    assert served(SWITCH, "ibSmaGuidVal") == {(NO_PORT, 1): SWITCH.to_bytes(8, "big")}


def test_sma_mib_serves_a_cas_guid_info_by_port_entries_in_use() -> None:
    assert served(LOCAL, "ibSmaGuidVal") == {(port, 1): port_guid(LOCAL, port).to_bytes(8, "big")
                                             for port in (1, 2)}


def test_sma_mib_serves_every_sl2vl_pair_as_read_and_no_unanswered_one() -> None:
    # Input port 2's table of output port 0 never answers: that pair has no rows.
    unanswered = (SWITCH, attrs.SL_TO_VL_MAPPING_TABLE.attribute_id, (2 << 8) | 0)
    lanes = served(SWITCH, "ibSmaVirtualLane", {unanswered})
    ports = range(SWITCH_PORTS + 1)
    assert lanes == {(out or NO_PORT, into or NO_PORT, sl + 1): vl
                     for out in ports for into in ports if (into, out) != (2, 0)
                     for sl, vl in enumerate(sl2vl(into, out))}
    assert len(lanes) == (len(ports) ** 2 - 1) * 16

"""TrapEvent -> SMA-MIB notification: OIDs, OBJECTS, compiled types and ranges."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyasn1.type import univ
from pysnmp.proto import rfc1902

from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.mib.loader import definitions
from ibsnmp.mib_compiler.paths import MIB_SOURCE_DIR
from ibsnmp.traps.defaults import default_event
from ibsnmp.traps.mapping import (
    FIELD_OF,
    NOTIFICATION_OF,
    SNMP_TRAP_OID_0,
    SYS_UP_TIME_0,
    MappingError,
    map_event,
    resolve_trap,
    spec_of,
    specs,
)
from ibsnmp.traps.originator import node_context_name

SMA_MIB = MIB_SOURCE_DIR / "SMA-MIB"
NOTIFICATIONS = 1, 3, 6, 1, 3, 117, 3, 2
NODE_GUID_0 = (1, 3, 6, 1, 3, 117, 3, 1, 1, 7, 0)  # SMA-MIB ibSmaNodeGuid.0


def mib_notifications() -> dict[str, tuple[list[str], int]]:
    """NAME -> (OBJECTS, sub-id) as the MIB source text gives them."""
    text = SMA_MIB.read_text()
    found = {}
    for match in re.finditer(r"^(\w+)\s+NOTIFICATION-TYPE\s+OBJECTS\s*\{([^}]*)\}.*?::=\s*"
                             r"\{\s*ibSmaNotifications\s+(\d+)\s*\}", text, re.S | re.M):
        found[match[1]] = ([o.strip() for o in match[2].split(",")], int(match[3]))
    return found


def full_event(trap: IbaTrap, **fields: int) -> TrapEvent:
    values = dict(lid=7, port=3, capability_mask=0x02510A48, system_image_guid=0x0002C90300A1B2C3,
                  key=0x8001, method=2, attribute_id=0x15, attribute_modifier=3, lid2=12,
                  gid1=0xFE80 << 112 | 1, gid2=0xFE80 << 112 | 2, qp1=1, qp2=0x48, sl=0,
                  switch_lid=4, data_valid=0xFF)
    values.update(fields)
    return TrapEvent(trap, 0x0002C90300A1B2C3, **values)


def test_the_ten_notifications_are_the_mibs() -> None:
    source = mib_notifications()
    assert len(source) == 10
    assert set(source) == set(NOTIFICATION_OF.values())
    for trap, spec in specs().items():
        objects, sub_id = source[spec.name]
        assert spec.trap is trap
        assert spec.oid == NOTIFICATIONS + (sub_id,)
        assert [o.name for o in spec.objects] == objects  # exactly, in clause order
        # The draft's DESCRIPTION names the IBA trap it translates.
        assert f"Trap {int(trap)}" in re.sub(r"\s+", " ", SMA_MIB.read_text().split(
            f"{spec.name}  NOTIFICATION-TYPE")[1].split("::=")[0])


@pytest.mark.parametrize("trap", list(IbaTrap))
def test_varbinds_are_the_objects_with_compiled_types(trap: IbaTrap) -> None:
    event = full_event(trap)
    notification = map_event(event)
    spec = notification.spec
    # The OBJECTS, then the GUID of the node that raised it (its name when known).
    objects = notification.varbinds[:len(spec.objects)]
    assert [oid for oid, _ in notification.varbinds[len(spec.objects):]] == [NODE_GUID_0]
    defs = definitions()
    for (oid, value), obj in zip(objects, spec.objects, strict=True):
        assert oid == defs.objects[obj.name].oid + (0,)
        assert type(value) is type(obj.syntax)  # the compiled syntax, not a re-typed one
        raw = getattr(event, FIELD_OF[obj.name])
        if isinstance(value, univ.OctetString):
            assert int.from_bytes(value.asOctets(), "big") == raw
            assert len(value.asOctets()) == {"ibSmaNodeKey": 8, "ibSmaNodeGid1": 16,
                                             "ibSmaNodeGid2": 16, "ibSmaNodeCapMask": 4,
                                             "ibSmaSystemImageGuid": 8,
                                             "ibSmaNodeDataValid": 2}[obj.name]
        else:
            assert int(value) == raw
    header = notification.v2_varbinds(1234)
    assert header[0] == (SYS_UP_TIME_0, rfc1902.TimeTicks(1234))
    assert header[1] == (SNMP_TRAP_OID_0, rfc1902.ObjectIdentifier(spec.oid))
    assert header[2:] == list(notification.varbinds)


def test_only_the_listed_objects() -> None:
    # 128 lists ibSmaNodeLid only: a port in the event is not sent (the node's GUID follows).
    notification = map_event(full_event(IbaTrap.LINK_STATE_CHANGE))
    assert [oid for oid, _ in notification.varbinds] == [
        definitions().objects["ibSmaNodeLid"].oid + (0,), NODE_GUID_0]
    # 259's DESCRIPTION mentions <PORTNO>, but its OBJECTS do not list it.
    names = [o.name for o in spec_of(259).objects]
    assert "ibSmaNodePortNum" not in names and len(names) == 10


@pytest.mark.parametrize("trap,field,obj", [
    (IbaTrap.LOCAL_LINK_INTEGRITY, "port", "ibSmaNodePortNum"),
    (IbaTrap.CAPABILITY_MASK_CHANGED, "capability_mask", "ibSmaNodeCapMask"),
    (IbaTrap.SYSTEM_IMAGE_GUID_CHANGED, "system_image_guid", "ibSmaSystemImageGuid"),
    (IbaTrap.BAD_M_KEY, "attribute_modifier", "ibSmaNodeAttributeModifier"),
    (IbaTrap.BAD_P_KEY, "gid2", "ibSmaNodeGid2"),
    (IbaTrap.BAD_P_KEY_AT_SWITCH_PORT, "data_valid", "ibSmaNodeDataValid"),
])
def test_a_missing_field_is_an_error(trap: IbaTrap, field: str, obj: str) -> None:
    event = full_event(trap, **{field: None})  # type: ignore[arg-type]  # None on purpose
    with pytest.raises(MappingError) as info:
        map_event(event)
    assert str(info.value) == (f"{NOTIFICATION_OF[trap]} needs TrapEvent.{field} ({obj}); "
                               f"the event has none")


@pytest.mark.parametrize("trap,field,value,problem", [
    (IbaTrap.LINK_STATE_CHANGE, "lid", 65536, "outside the range the MIB allows (0..65535)"),
    (IbaTrap.LOCAL_LINK_INTEGRITY, "port", 0, "outside the range the MIB allows (1..254)"),
    (IbaTrap.LOCAL_LINK_INTEGRITY, "port", 255, "outside the range the MIB allows (1..254)"),
    (IbaTrap.BAD_P_KEY, "sl", 16, "outside the range the MIB allows (0..15)"),
    (IbaTrap.BAD_P_KEY, "qp1", 1 << 24, "outside the range the MIB allows (0..16777215)"),
    (IbaTrap.BAD_M_KEY, "method", 256, "outside the range the MIB allows (0..255)"),
    (IbaTrap.BAD_M_KEY, "attribute_id", 65536, "outside the range the MIB allows (0..65535)"),
    (IbaTrap.BAD_M_KEY, "attribute_modifier", 1 << 32,
     "outside the range the MIB allows (0..4294967295)"),
    (IbaTrap.BAD_Q_KEY, "key", 1 << 64, "does not fit in 8 octets"),
    (IbaTrap.CAPABILITY_MASK_CHANGED, "capability_mask", 1 << 32, "does not fit in 4 octets"),
    (IbaTrap.BAD_P_KEY_AT_SWITCH_PORT, "data_valid", 0x10000, "does not fit in 2 octets"),
    (IbaTrap.BAD_P_KEY, "gid1", -1, "does not fit in 16 octets"),
])
def test_out_of_range_is_an_error(trap: IbaTrap, field: str, value: int, problem: str) -> None:
    with pytest.raises(MappingError, match=re.escape(problem)) as info:
        map_event(full_event(trap, **{field: value}))
    assert f"{NOTIFICATION_OF[trap]}: TrapEvent.{field} " in str(info.value)


def test_range_edges_are_accepted() -> None:
    map_event(full_event(IbaTrap.LOCAL_LINK_INTEGRITY, port=254, lid=65535))
    map_event(full_event(IbaTrap.BAD_P_KEY, sl=15, qp1=(1 << 24) - 1, key=(1 << 64) - 1))


def test_v1_mapping_rfc3584() -> None:
    for trap, spec in specs().items():
        number = spec.oid[-1]
        assert spec.v1_enterprise == NOTIFICATIONS
        assert spec.v1_specific == number
        # What a receiver rebuilds: ibSmaNotificationPrefix.N, not the OID itself.
        assert spec.v1_translated_oid == NOTIFICATIONS + (0, number)
        assert spec.v1_translated_oid != spec.oid


def test_resolve_trap() -> None:
    assert resolve_trap("ibSmaBadPartitionKey") is IbaTrap.BAD_P_KEY
    assert resolve_trap("SMA-MIB::ibsmabadpartitionkey") is IbaTrap.BAD_P_KEY
    assert resolve_trap("257") is IbaTrap.BAD_P_KEY
    assert resolve_trap("ibSmaNotifications.1") is IbaTrap.LINK_STATE_CHANGE
    for trap, name in NOTIFICATION_OF.items():
        assert resolve_trap(name) is trap and resolve_trap(str(int(trap))) is trap
    with pytest.raises(MappingError, match="not an IBA trap"):
        resolve_trap("64")
    with pytest.raises(MappingError, match="unknown notification"):
        resolve_trap("ibSmaNoSuchTrap")


def test_context_names() -> None:
    assert node_context_name(0x0002C90300A1B2C3, None) == b"0002c90300a1b2c3"
    assert node_context_name(0x0002C90300A1B2C3, 0x0002C90300A1B2C3) == b""


def test_default_events_from_a_simulated_node_map_cleanly() -> None:
    fabric = build_fabric("fat-tree:spines=2,leaves=2,hosts=2", seed=3)
    local = fabric.local_node
    for trap in IbaTrap:
        event = default_event(fabric, trap)
        map_event(event)  # every needed field is there and in range
        node = fabric.nodes[event.node_guid]
        assert event.lid == node.management_port.lid
        if trap in (IbaTrap.LINK_STATE_CHANGE, IbaTrap.FLOW_CONTROL_WATCHDOG,
                    IbaTrap.BAD_P_KEY_AT_SWITCH_PORT):
            assert node.is_switch  # switch traps come from the local node's switch
        else:
            assert node is local
    bad_p_key = default_event(fabric, IbaTrap.BAD_P_KEY)
    assert bad_p_key.key is not None
    local_port = local.port(local.local_port_num)
    assert local_port is not None
    held = {p & 0x7FFF for p in local_port.pkeys}
    assert bad_p_key.key & 0x7FFF not in held
    override = default_event(fabric, IbaTrap.BAD_P_KEY, overrides={"lid": 99, "sl": 4})
    assert (override.lid, override.sl) == (99, 4)
    with pytest.raises(MappingError, match="no node with GUID"):
        default_event(fabric, IbaTrap.BAD_P_KEY, node_guid=0x1234)


def test_the_default_bad_m_key_tells_nothing_of_the_port_s_key() -> None:
    fabric = build_fabric("fat-tree:spines=2,leaves=2,hosts=2", seed=3)
    local = fabric.local_node
    event = default_event(fabric, IbaTrap.BAD_M_KEY)
    local_port = local.port(local.local_port_num)
    assert local_port is not None
    m_key = local_port.info.m_key
    assert m_key not in (0, 1)  # the simulated fabric protects its ports
    assert event.key == 0  # an SMP without a key, not a near miss of the real one

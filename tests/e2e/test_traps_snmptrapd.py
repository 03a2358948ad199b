"""All ten SMA notifications through a real snmptrapd with ibsnmp's MIBs loaded.

Each is sent by the TrapOriginator (the code `ibsnmp run` uses) as an
SNMPv1 trap, SNMPv2c trap, SNMPv2c inform, SNMPv3 authPriv trap and SNMPv3
authPriv inform; snmptrapd's log is checked varbind by varbind, by name and
value. Also: an inform whose receiver starts late is still delivered.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.e2e import MIB_DIRS, free_udp_port
from pysnmp.entity import config as pc
from pysnmp.entity.engine import SnmpEngine
from pysnmp.proto.api import v2c
from tests.support.trapd import ENGINE_ID, USER, Received, TrapReceiver, expected_varbinds

from ibsnmp.agent.trap_targets import TrapTarget, parse_trap_address
from ibsnmp.agent.engine import AUTH, PRIV
from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.model import Fabric
from ibsnmp.traps.defaults import default_event
from ibsnmp.traps.mapping import NOTIFICATION_OF, spec_of
from ibsnmp.traps.originator import TrapOriginator, node_context_name

SPEC = "fat-tree:spines=2,leaves=2,hosts=2"
SEED = 3
# sysUpTime.0, snmpTrapOID.0 (SNMPv2-MIB is not among ibsnmp's MIBs: numeric-ish names)
V2_HEADER = ["SNMPv2-MIB::sysUpTime.0", "SNMPv2-MIB::snmpTrapOID.0"]


@pytest.fixture(scope="module")
def fabric() -> Fabric:
    return build_fabric(SPEC, seed=SEED)


@pytest.fixture(scope="module")
def events(fabric: Fabric) -> list[TrapEvent]:
    """One event per trap, every field from the simulated fabric."""
    return [default_event(fabric, trap) for trap in IbaTrap]


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrapReceiver]:
    with TrapReceiver(tmp_path_factory.mktemp("trapd"), v1_handler=True) as running:
        yield running


# The engine ID of the traps net-snmp's snmptrap sends here: not the agent's,
# whose later boots and time the receiver has seen (its traps would be old).
CLI_ENGINE_ID = "80001f8880c1c2c3c4c5c6c7c8"


@pytest.fixture(scope="module")
def strict_receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrapReceiver]:
    """Accepts SNMPv3 only from USER at authPriv."""
    with TrapReceiver(tmp_path_factory.mktemp("trapd-v3"), strict_v3=True,
                      engine_ids=(ENGINE_ID, CLI_ENGINE_ID)) as running:
        yield running


def make_engine() -> SnmpEngine:
    engine = SnmpEngine(snmpEngineID=v2c.OctetString(hexValue=ENGINE_ID))
    pc.add_v3_user(engine, USER[0], AUTH["SHA256"], USER[1], PRIV["AES"], USER[2])
    return engine


async def send_all(target: TrapTarget, events: list[TrapEvent], local_guid: int) -> None:
    """Send every event through an originator with this one target; wait until
    all are sent (informs: acknowledged)."""
    engine = make_engine()
    originator = TrapOriginator(engine, [target], local_node_guid=lambda: local_guid)
    await originator.start()
    try:
        for event in events:
            originator.notify(event)
        deadline = time.monotonic() + 20
        (sender,) = originator.senders
        while sender.stats.sent < len(events) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert sender.stats.sent == len(events), originator.stats()
        assert sender.stats.failed == 0 and originator.rejected == 0
    finally:
        await originator.stop()
        engine.close_dispatcher()


def target(receiver: TrapReceiver, version: Any, kind: Any = "trap") -> TrapTarget:
    return TrapTarget(parse_trap_address(receiver.address), version=version, kind=kind,
                      user=USER[0] if version == "3" else None, timeout=1.0, retries=3)


def check_v2(got: Received, event: TrapEvent) -> None:
    name = NOTIFICATION_OF[event.trap]
    names = [n for n, _v in got.varbinds]
    assert names[:2] == V2_HEADER, got
    assert got.value(V2_HEADER[1]) == f"OID: SMA-MIB::{name}"
    assert got.value(V2_HEADER[0]).startswith("Timeticks: (")
    assert list(got.varbinds[2:]) == expected_varbinds(event), got


@pytest.mark.parametrize("version,kind", [("2c", "trap"), ("2c", "inform")])
async def test_v2c(receiver: TrapReceiver, events: list[TrapEvent], fabric: Fabric,
                   version: str, kind: str) -> None:
    since = len(receiver.received())
    await send_all(target(receiver, version, kind), events, fabric.local_node_guid)
    got = receiver.wait_for(len(events), since=since)
    assert len(got) == len(events)
    for received, event in zip(got, events, strict=True):
        assert received.kind == ("TRAP2" if kind == "trap" else "INFORM")
        assert received.security.endswith("SNMP v2c, community public")
        check_v2(received, event)


async def test_v1(receiver: TrapReceiver, events: list[TrapEvent], fabric: Fabric) -> None:
    since = len(receiver.received())
    handled_since = len(receiver.handled_records())
    await send_all(target(receiver, "1"), events, fabric.local_node_guid)
    got = receiver.wait_for(len(events), since=since)
    assert len(got) == len(events)
    for received, event in zip(got, events, strict=True):
        spec = spec_of(event.trap)
        assert received.security == "TRAP, SNMP v1, community public"
        # RFC 3584 3.2: enterprise = ibSmaNotifications, generic 6, specific N.
        assert received.enterprise == "SMA-MIB::ibSmaNotifications"
        assert (received.generic, received.specific) == ("6", str(spec.oid[-1]))
        assert received.agent_address == "127.0.0.1"  # what the agent sends from
        # The OBJECTS and the node's GUID: sysUpTime and the trap OID are header
        # fields in v1, and snmpTrapAddress became agent-addr.
        assert list(received.varbinds) == expected_varbinds(event)
    # Translated back to v2 (RFC 3584 3.1), as snmptrapd hands it to traphandle.
    deadline = time.monotonic() + 10
    while len(receiver.handled_records()) < handled_since + len(events) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    handled = receiver.handled_records()[handled_since:]
    assert len(handled) == len(events)
    for lines, event in zip(handled, events, strict=True):
        fields = dict(line.split(" ", 1) for line in lines)
        number = spec_of(event.trap).oid[-1]
        assert fields["SNMPv2-MIB::snmpTrapOID.0"] == \
            f"SMA-MIB::ibSmaNotificationPrefix.{number}"
        assert fields["SNMPv2-MIB::snmpTrapEnterprise.0"] == "SMA-MIB::ibSmaNotifications"
        assert fields["SNMPv2-SMI::snmpModules.18.1.3.0"] == "127.0.0.1"  # snmpTrapAddress


@pytest.mark.parametrize("kind", ["trap", "inform"])
async def test_v3_auth_priv(strict_receiver: TrapReceiver, events: list[TrapEvent],
                            fabric: Fabric, kind: str) -> None:
    since = len(strict_receiver.received())
    await send_all(target(strict_receiver, "3", kind), events, fabric.local_node_guid)
    got = strict_receiver.wait_for(len(events), since=since)
    assert len(got) == len(events)
    for received, event in zip(got, events, strict=True):
        assert received.kind == ("TRAP2" if kind == "trap" else "INFORM")
        assert received.version == "v3" and f"user {USER[0]}" in received.security
        # Sent in the node's context: "" for the local node, else its GUID.
        context = node_context_name(event.node_guid, fabric.local_node_guid).decode()
        assert received.context == context
        check_v2(received, event)
    contexts = {r.context for r in got}
    assert "" in contexts and len(contexts) > 1  # both the local node and a switch


def test_strict_receiver_refuses_auth_no_priv(strict_receiver: TrapReceiver) -> None:
    """The v3 receiver above really checks the level: authNoPriv is not logged."""
    since = len(strict_receiver.received())

    def send(level: list[str], lid: str) -> None:
        result = subprocess.run(
            ["snmptrap", "-v3", *level, "-u", USER[0], "-a", "SHA-256", "-A", USER[1],
             "-e", f"0x{CLI_ENGINE_ID}", "-M", MIB_DIRS, "-m", "ALL", strict_receiver.address, "",
             "SMA-MIB::ibSmaPortLinkStateChange", "SMA-MIB::ibSmaNodeLid.0", "i", lid],
            capture_output=True, text=True, timeout=30, check=False,
            env={"SNMPCONFPATH": "/nonexistent", "PATH": "/usr/bin:/bin"})
        assert result.returncode == 0, result.stderr

    send(["-l", "authNoPriv"], "1")
    # An authPriv trap sent after it is logged: by then the first would be too.
    send(["-l", "authPriv", "-x", "AES", "-X", USER[2]], "2")
    got = strict_receiver.wait_for(1, since=since)
    assert len(got) == 1, strict_receiver.log.read_text()[-3000:]
    (marker,) = got
    assert marker.value("SMA-MIB::ibSmaNodeLid.0") == "INTEGER: 2"
    assert len(strict_receiver.received()[since:]) == 1


async def test_inform_to_a_receiver_that_starts_late(tmp_path: Path, events: list[TrapEvent],
                                                     fabric: Fabric) -> None:
    """Informs sent while nobody listens are re-sent until answered: no loss, in order."""
    port = free_udp_port()
    late = TrapReceiver(tmp_path, port=port)
    engine = make_engine()
    inform = TrapTarget(parse_trap_address(late.address), "2c", "inform", timeout=0.3,
                        retries=1)
    originator = TrapOriginator(engine, [inform], local_node_guid=lambda: fabric.local_node_guid)
    await originator.start()
    try:
        for event in events[:3]:
            originator.notify(event)
        (sender,) = originator.senders
        deadline = time.monotonic() + 15
        while sender.stats.failed < 1 and time.monotonic() < deadline:  # 2 tries unanswered
            await asyncio.sleep(0.05)
        assert sender.stats.sent == 0 and sender.stats.failed >= 1
        await asyncio.to_thread(late.start)
        deadline = time.monotonic() + 15
        while sender.stats.sent < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert sender.stats.sent == 3 and sender.stats.dropped == 0
        got = late.wait_for(3)
        # The first one may be logged twice (a re-send that crossed the answer);
        # each arrives, in order.
        names = [r.trap_oid for r in got]
        wanted = [f"OID: SMA-MIB::{NOTIFICATION_OF[e.trap]}" for e in events[:3]]
        deduplicated = [n for i, n in enumerate(names) if i == 0 or n != names[i - 1]]
        assert deduplicated == wanted
    finally:
        await originator.stop()
        engine.close_dispatcher()
        late.stop()


async def test_ipv6_receiver(tmp_path: Path, events: list[TrapEvent], fabric: Fabric) -> None:
    with TrapReceiver(tmp_path, ipv6=True) as v6:
        for kind in ("trap", "inform"):
            await send_all(target(v6, "2c", kind), events[:2], fabric.local_node_guid)
        got = v6.wait_for(4)
    assert [r.kind for r in got] == ["TRAP2", "TRAP2", "INFORM", "INFORM"]
    for received, event in zip(got, events[:2] * 2, strict=True):
        check_v2(received, event)

"""IF-MIB linkDown / linkUp beside IBA trap 128: which port changes raise
them (RFC 2863's rule), their varbinds, and snmptrapd printing them with
the stock IF-MIB names in every notification form; `[traps] if_mib =
false` leaves only the IBA traps."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support import sysfs_trees as trees
from tests.support.e2e import ibsnmp_agent
from tests.support.link_ends import leaf_to_host
from pysnmp.entity.engine import SnmpEngine
from pysnmp.smi import builder
from tests.support.trapd import AGENT_USERS, ENGINE_ID, USER, Received, TrapReceiver

from ibsnmp.agent.config import AgentSettings, ConfigError, TrapSettings, parse_config
from ibsnmp.agent.trap_targets import TrapTarget, parse_trap_address
from ibsnmp.agent.reload import describe_changes
from ibsnmp.fabric.changes import with_port_state
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.iba import PortState
from ibsnmp.fabric.interfaces import IfOperStatus
from ibsnmp.fabric.model import Fabric, Port, PortRef
from ibsnmp.mib_compiler.paths import COMPILED_MIB_DIR
from ibsnmp.fabric.swap import Swap
from ibsnmp.providers.simulated import SimulatedProvider
from ibsnmp.providers.sysfs import SysfsProvider
from ibsnmp.traps.link_events import (
    LINK_DOWN,
    LINK_OBJECTS,
    LINK_UP,
    LinkChange,
    PortStatusWatch,
    link_notification,
    notification_if_index,
)
from ibsnmp.traps.service import NotificationService

SPEC = "fat-tree:spines=2,leaves=2,hosts=2"
SEED = 3
IF_ENTRY = (1, 3, 6, 1, 2, 1, 2, 2, 1)


@pytest.fixture(scope="module")
def fabric() -> Fabric:
    return build_fabric(SPEC, seed=SEED)


# -- the rule and the varbinds ------------------------------------------------------------


def test_the_compiled_if_mib_names_these_notifications() -> None:
    mibs = builder.MibBuilder()
    mibs.add_mib_sources(builder.DirMibSource(str(COMPILED_MIB_DIR)))
    mibs.load_modules("IF-MIB")
    down, up = mibs.import_symbols("IF-MIB", "linkDown", "linkUp")
    for notification, oid in ((down, LINK_DOWN), (up, LINK_UP)):
        assert tuple(notification.getName()) == oid
        assert tuple(name for _, name in notification.getObjects()) == LINK_OBJECTS


def test_a_link_down_and_up_changes_both_ends(fabric: Fabric) -> None:
    leaf_port, host_port = leaf_to_host(fabric)
    watch = PortStatusWatch(fabric)
    down, _ = with_port_state(fabric, leaf_port.ref, PortState.DOWN, at=10.0)
    changes = watch.changes(down)
    assert {(c.node_guid, c.port.num, c.before, c.after) for c in changes} == {
        (leaf_port.node_guid, leaf_port.num, IfOperStatus.UP, IfOperStatus.DOWN),
        (host_port.node_guid, host_port.num, IfOperStatus.UP, IfOperStatus.DOWN)}
    assert {c.notification_name for c in changes} == {"linkDown"}
    assert watch.changes(down) == []  # the same snapshot again: nothing new
    up, _ = with_port_state(down, leaf_port.ref, PortState.ACTIVE, at=20.0)
    changes = watch.changes(up)
    assert len(changes) == 2 and {c.notification_name for c in changes} == {"linkUp"}

    (leaf_down,) = (c for c in watch_changes(fabric, down) if c.node_guid == leaf_port.node_guid)
    notification = link_notification(leaf_down)
    assert notification is not None and notification.oid == LINK_DOWN
    n = leaf_port.num
    assert [(oid, int(value)) for oid, value in notification.varbinds[:3]] == [
        (IF_ENTRY + (1, n), n), (IF_ENTRY + (7, n), 1), (IF_ENTRY + (8, n), 2)]
    assert notification.node_guid == leaf_port.node_guid


def watch_changes(before: Fabric, after: Fabric) -> list[LinkChange]:
    return PortStatusWatch(before).changes(after)


def test_a_swap_naming_its_changed_nodes_finds_what_the_full_comparison_finds(fabric: Fabric) -> None:
    leaf_port, host_port = leaf_to_host(fabric)
    down, _ = with_port_state(fabric, leaf_port.ref, PortState.DOWN, at=10.0)
    told = PortStatusWatch(fabric).changes(down, {leaf_port.node_guid, host_port.node_guid})
    assert _described(told) == _described(watch_changes(fabric, down)) and len(told) == 2


def test_a_swap_naming_one_node_looks_at_no_other(fabric: Fabric) -> None:
    leaf_port, host_port = leaf_to_host(fabric)
    down, _ = with_port_state(fabric, leaf_port.ref, PortState.DOWN, at=10.0)
    assert down.nodes[host_port.node_guid] is not fabric.nodes[host_port.node_guid]  # the host differs too
    changes = PortStatusWatch(fabric).changes(down, {leaf_port.node_guid})
    assert [(c.node_guid, c.port.num) for c in changes] == [(leaf_port.node_guid, leaf_port.num)]


def test_a_swap_after_one_not_seen_is_compared_whole(fabric: Fabric) -> None:
    leaf_port, _ = leaf_to_host(fabric)
    down, _ = with_port_state(fabric, leaf_port.ref, PortState.DOWN, at=10.0)
    # It names the leaf alone since `down`, but the watch last saw `fabric`.
    changes = PortStatusWatch(fabric).changes_at(Swap(down, down, frozenset({leaf_port.node_guid})))
    assert len(changes) == 2


def _described(changes: list[LinkChange]) -> set[tuple[object, ...]]:
    return {(c.node_guid, c.port.num, c.before, c.after, c.if_index) for c in changes}


def test_rfc_2863_rule_on_dormant(fabric: Fabric) -> None:
    leaf_port, _ = leaf_to_host(fabric)
    down, _ = with_port_state(fabric, leaf_port.ref, PortState.DOWN, at=10.0)
    training, _ = with_port_state(down, leaf_port.ref, PortState.INIT, at=11.0)
    # down -> dormant (waiting for the SM) leaves down: linkUp, ifOperStatus dormant(5).
    changes = watch_changes(down, training)
    assert {(c.after, c.notification_name) for c in changes} == {(IfOperStatus.DORMANT, "linkUp")}
    notification = link_notification(changes[0])
    assert notification is not None and int(notification.varbinds[2][1]) == 5
    # up -> dormant does not enter down: nothing.
    back, _ = with_port_state(fabric, leaf_port.ref, PortState.INIT, at=12.0)
    changes = watch_changes(fabric, back)
    assert changes and all(link_notification(c) is None for c in changes)


def test_the_local_node_numbers_its_ports_as_the_default_context_does(tmp_path: Path) -> None:
    trees.two_hcas(tmp_path)
    host = SysfsProvider(tmp_path).snapshot
    assert sorted(host.host_node_guids) == [trees.MLX_NODE_GUID, trees.MLX1_NODE_GUID]
    first, second = host.nodes[trees.MLX_NODE_GUID], host.nodes[trees.MLX1_NODE_GUID]
    assert host.local_node_guid == first.guid
    # Not the local node: its own context, ifIndex = port number.
    assert notification_if_index(host, second, 1) == 1
    # The local node speaks in the default context: the second CA by GUID is 257.
    assert notification_if_index(dataclasses.replace(host, local_node_guid=second.guid),
                                 second, 1) == 257
    assert notification_if_index(host, first, 1) == 1


def test_if_mib_switch_in_the_config() -> None:
    assert parse_config({}).traps.if_mib is True
    assert parse_config({"traps": {"if_mib": False}}).traps.if_mib is False
    with pytest.raises(ConfigError, match=r"traps\.if_mib: expected true or false"):
        parse_config({"traps": {"if_mib": "no"}})
    with pytest.raises(ConfigError, match=r"traps\.ifmib: unknown key"):
        parse_config({"traps": {"ifmib": False}})
    # A reload applies it, and says so.
    on, off = AgentSettings(), AgentSettings(traps=TrapSettings(if_mib=False))
    assert describe_changes(on, off) == ["traps.if_mib: true -> false"]


# -- through ibsnmp run and snmptrapd -------------------------------------------------------


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrapReceiver]:
    with TrapReceiver(tmp_path_factory.mktemp("trapd")) as running:
        yield running


USERS = f'engine_id = "0x{ENGINE_ID}"\n' + AGENT_USERS


def targets(address: str, forms: tuple[tuple[str, str], ...]) -> str:
    text = ""
    for version, kind in forms:
        text += f'\n[[trap_target]]\naddress = "{address}"\nversion = "{version}"\nkind = "{kind}"\n'
        if version == "3":
            text += f'user = "{USER[0]}"\n'
    return text


def flap(port: Port) -> str:
    """leaf01's port down 6 s after the provider starts (time_scale 0.2:
    after the agent is up), up again 1 s later; 2 s after that, a marker
    (an M_Key violation at the local node) that follows whatever the flap
    sent to each target."""
    return (f'[scenario]\ntime_scale = 0.2\n\n[[event]]\nat = 30\n'
            f'action = "port-down"\nnode = "leaf01"\nport = {port.num}\nup_after = 5\n'
            '\n[[event]]\nat = 45\naction = "bad-m-key"\nnode = "local"\n')


def is_marker(received: Received) -> bool:
    return any(name.startswith("SMA-MIB::ibSmaNodeKey.") for name, _ in received.varbinds)


def run_flap(tmp_path: Path, receiver: TrapReceiver, config: str, port: Port,
             targets: int) -> list[Received]:
    """What the flap sent to the `targets` targets, once the marker that
    follows it reached each of them (so nothing more of it can come)."""
    (tmp_path / "ibsnmp.toml").write_text(config)
    (tmp_path / "flap.toml").write_text(flap(port))
    since = len(receiver.received())

    def events() -> list[Received]:
        # Without the agent's coldStart to each target (test_standard_traps).
        return [r for r in receiver.received()[since:]
                if r.trap_oid != "OID: SNMPv2-MIB::coldStart" and (r.version, r.generic) != ("v1", "0")]

    with ibsnmp_agent("--config", str(tmp_path / "ibsnmp.toml"), "--scenario",
                      str(tmp_path / "flap.toml"), fabric=SPEC, seed=SEED):
        deadline = time.monotonic() + 40
        while sum(map(is_marker, events())) < targets and time.monotonic() < deadline:
            time.sleep(0.05)
        got = events()
        assert sum(map(is_marker, got)) == targets, got
        return [r for r in got if not is_marker(r)]


def if_index_of(received: Received) -> str:
    """The n of the IF-MIB::ifIndex.<n> varbind."""
    (name,) = (name for name, _ in received.varbinds if name.startswith("IF-MIB::ifIndex."))
    return name.rpartition(".")[2]


def of(received: list[Received], security: str) -> list[Received]:
    return [r for r in received if r.security == security]


FORMS = (("2c", "trap"), ("1", "trap"), ("2c", "inform"), ("3", "trap"))


def test_snmptrapd_prints_link_down_and_up_beside_trap_128(
        tmp_path: Path, receiver: TrapReceiver, fabric: Fabric) -> None:
    leaf_port, host_port = leaf_to_host(fabric)
    # Per form: down (2 linkDown + one 128 from the switch), up (2 linkUp + one 128).
    got = run_flap(tmp_path, receiver, USERS + targets(receiver.address, FORMS), leaf_port,
                   len(FORMS))
    assert len(got) == 6 * len(FORMS), got
    leaf, host = f"{leaf_port.node_guid:016x}", f"{host_port.node_guid:016x}"
    ends = {leaf: leaf_port.num, host: host_port.num}
    for security in ("TRAP2, SNMP v2c, community public", "INFORM, SNMP v2c, community public"):
        stream = of(got, security)
        names = [r.trap_oid for r in stream]
        # Trap 128 first, then the linkDowns of the same change; the same when it comes up.
        assert [name.split("::")[1] for name in names] == [
            "ibSmaPortLinkStateChange", "linkDown", "linkDown",
            "ibSmaPortLinkStateChange", "linkUp", "linkUp"], names
        numbers = sorted(ends.values())
        for name, oper in (("linkDown", "down(2)"), ("linkUp", "up(1)")):
            sent = [r for r in stream if r.trap_oid == f"OID: IF-MIB::{name}"]
            assert sorted(int(if_index_of(r)) for r in sent) == numbers
            for r in sent:
                n = if_index_of(r)
                assert r.varbinds[2:5] == (
                    (f"IF-MIB::ifIndex.{n}", f"INTEGER: {n}"),
                    (f"IF-MIB::ifAdminStatus.{n}", "INTEGER: up(1)"),
                    (f"IF-MIB::ifOperStatus.{n}", f"INTEGER: {oper}"))
    # SNMPv3: each from its node's context.
    v3 = [r for r in got if r.version == "v3" and "IF-MIB::link" in r.trap_oid]
    assert len(v3) == 4
    for r in v3:
        assert if_index_of(r) == str(ends[r.context or ""])
    # SNMPv1 (RFC 3584): generic-trap linkDown(2) / linkUp(3), enterprise snmpTraps.
    v1 = [r for r in got if r.version == "v1" and r.generic in ("2", "3")]
    assert sorted(r.generic for r in v1) == ["2", "2", "3", "3"]
    assert {r.enterprise for r in v1} == {"SNMPv2-MIB::snmpTraps"}, v1
    assert {r.specific for r in v1} == {"0"}
    assert all(r.varbinds[0][0].startswith("IF-MIB::ifIndex.") for r in v1)


def test_if_mib_false_sends_only_the_iba_traps(tmp_path: Path, receiver: TrapReceiver,
                                                fabric: Fabric) -> None:
    leaf_port, _ = leaf_to_host(fabric)
    config = USERS + "\n[traps]\nif_mib = false\n" + targets(receiver.address, (("2c", "trap"),))
    got = run_flap(tmp_path, receiver, config, leaf_port, 1)
    assert [r.trap_oid for r in got] == ["OID: SMA-MIB::ibSmaPortLinkStateChange"] * 2


class ServiceSending:
    """The agent's notification service over `provider`, sending v2c traps
    to `receiver`; `until_sent(n)` waits (yielding to the loop) until n went out."""

    def __init__(self, provider: Any, receiver: TrapReceiver) -> None:
        self.engine = SnmpEngine()
        self.service = NotificationService(self.engine, provider)
        self.target = TrapTarget(parse_trap_address(receiver.address))

    async def __aenter__(self) -> ServiceSending:
        await self.service.apply((self.target,))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.service.close()
        self.engine.close_dispatcher()

    async def until_sent(self, count: int, timeout: float = 10.0) -> None:
        assert self.service.originator is not None
        (sender,) = self.service.originator.senders
        deadline = time.monotonic() + timeout
        while sender.stats.sent < count and time.monotonic() < deadline:
            await asyncio.sleep(0.02)


async def test_a_sysfs_hosts_port_raises_them_without_an_iba_trap(
        tmp_path: Path, receiver: TrapReceiver) -> None:
    """A CA's port raises no trap 128 (a switch's trap), but its interface
    goes down and up: IF-MIB says so, as the agent's service sends it."""
    trees.mlx5_two_port(tmp_path)
    provider = SysfsProvider(tmp_path, poll_interval=1.0)
    since = len(receiver.received())
    async with ServiceSending(provider, receiver) as sending:
        for sent, (state, phys) in enumerate((("1: DOWN", "3: Disabled"),
                                              ("4: ACTIVE", "5: LinkUp")), start=1):
            trees.set_file(tmp_path, "mlx5_0/ports/2/state", state)
            trees.set_file(tmp_path, "mlx5_0/ports/2/phys_state", phys)
            assert provider.poll() == ()  # no IBA trap for a CA's port
            await sending.until_sent(sent)
    got = receiver.wait_for(2, since=since)
    assert [(r.trap_oid, r.varbinds[2:5]) for r in got] == [
        ("OID: IF-MIB::linkDown", (("IF-MIB::ifIndex.2", "INTEGER: 2"),
                                   ("IF-MIB::ifAdminStatus.2", "INTEGER: down(2)"),
                                   ("IF-MIB::ifOperStatus.2", "INTEGER: down(2)"))),
        ("OID: IF-MIB::linkUp", (("IF-MIB::ifIndex.2", "INTEGER: 2"),
                                 ("IF-MIB::ifAdminStatus.2", "INTEGER: up(1)"),
                                 ("IF-MIB::ifOperStatus.2", "INTEGER: up(1)")))]


async def test_steps_applied_back_to_back_keep_each_change_with_its_iba_trap(
        tmp_path: Path, receiver: TrapReceiver, fabric: Fabric) -> None:
    """Scenario steps that fell due together run without a pause between
    them: each change's linkDowns still follow its trap 128 and come
    before the next change's."""
    leaf_port, _ = leaf_to_host(fabric)
    (tmp_path / "flap.toml").write_text(flap(leaf_port))
    provider = SimulatedProvider(SPEC, SEED, tmp_path / "flap.toml", watch_interval=0)
    since = len(receiver.received())
    async with ServiceSending(provider, receiver) as sending:
        down, up, _marker = provider.steps
        provider.apply(down)
        provider.apply(up)
        await sending.until_sent(6)
    got = receiver.wait_for(6, since=since)
    assert [r.trap_oid.split("::")[1] for r in got] == [
        "ibSmaPortLinkStateChange", "linkDown", "linkDown",
        "ibSmaPortLinkStateChange", "linkUp", "linkUp"]

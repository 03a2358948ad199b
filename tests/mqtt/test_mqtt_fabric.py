"""A fabric over MQTT end to end: a real mosquitto, `ibsnmp publish` and
`ibsnmp run --publish` over sysfs trees and a simulated fabric, and
`ibsnmp run --provider mqtt` answering net-snmp and sending traps."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from tests.support import sysfs_trees as trees
from ibsnmp.fabric.generators import build_fabric
from tests.support.mosquitto import Agent, Mosquitto, Process, make_certificates
from tests.support.trapd import Received, TrapReceiver

HOST_B_GUID = 0x0C42A1030017D000
P = TypeVar("P", bound=Process)
T = TypeVar("T")
A, B = f"{trees.MLX_NODE_GUID:016x}", f"{HOST_B_GUID:016x}"
NODE_DESCRIPTION = ".1.3.6.1.3.117.3.1.1.1.0"  # SMA-MIB::ibSmaNodeString.0
# PMA-MIB::ibPmaPortRcvData.1 (the fake tree's port_rcv_data of port 1).
RCV_DATA_PORT1 = ".1.3.6.1.3.117.6.1.1.2.1.3.1"
PUBLISH_TIMING = ("--interval", "1", "--refresh", "5")


@pytest.fixture
def hosts(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "host-a", tmp_path / "host-b"
    a.mkdir()
    b.mkdir()
    trees.mlx5_two_port(a)
    trees.mlx5_two_port(b, guid=HOST_B_GUID)
    return a, b


def _start(stack: contextlib.ExitStack, process: P) -> P:
    stack.callback(process.stop)
    return process


def _publisher(stack: contextlib.ExitStack, tmp_path: Path, root: Path, broker: Mosquitto,
               name: str, *extra: str) -> Process:
    return _start(stack, Process(tmp_path / f"{name}.log", "publish", "--provider", "sysfs", "--sysfs-root",
                                 str(root), "--poll-interval", "0.5", "--broker", broker.url, "--client-id",
                                 name, *PUBLISH_TIMING, *extra))


def _aggregator(stack: contextlib.ExitStack, tmp_path: Path, broker: Mosquitto, *extra: str,
                name: str = "aggregator") -> Agent:
    agent = Agent(tmp_path / f"{name}.log", "--provider", "mqtt", "--broker", broker.url, "--client-id", name,
                  *extra)
    _start(stack, agent)
    agent.wait_for("ibsnmp: serving")
    agent.warm_up()
    return agent


def _cap_mask(received: Received) -> str:
    """The capability mask an ibSmaCapabilityMaskModified carries."""
    (value,) = [value for name, value in received.varbinds if "ibSmaNodeCapMask" in name]
    return value


def _until(check: Callable[[], T], timeout: float = 20.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def _joined(agent: Agent, *guids: str) -> None:
    for guid in guids:
        agent.wait_for(f"node {guid} (")  # "mqtt: node GUID (description) joins the fabric"


def test_every_context_answers_as_its_own_host_does(tmp_path: Path, stack: contextlib.ExitStack,
                                                    broker: Mosquitto,
                                                    hosts: tuple[Path, Path]) -> None:
    # Host A serves SNMP itself and publishes (run --publish); host B only publishes.
    local_a = _start(stack, Agent(tmp_path / "a.log", "--provider", "sysfs", "--sysfs-root", str(hosts[0]),
                                  "--publish", broker.url, "--client-id", "host-a", *PUBLISH_TIMING))
    local_a.wait_for("ibsnmp: serving")
    local_a.warm_up()
    _publisher(stack, tmp_path, hosts[1], broker, "host-b")
    local_b = _start(stack, Agent(tmp_path / "b.log", "--provider", "sysfs", "--sysfs-root", str(hosts[1])))
    simulated = _start(stack, Process(tmp_path / "sim.log", "publish", "--fabric", "single", "--broker",
                                      broker.url, "--client-id", "sim", *PUBLISH_TIMING))
    local_sim = _start(stack, Agent(tmp_path / "sim-local.log", "--fabric", "single"))
    aggregator = _aggregator(stack, tmp_path, broker)
    _joined(aggregator, A, B)
    simulated.wait_for("connected to")
    for local in (local_b, local_sim):
        local.wait_for("ibsnmp: serving")
        local.warm_up()

    for guid, local in ((A, local_a), (B, local_b)):
        mine = aggregator.walk(guid)
        assert len(mine) > 80 and mine == local.walk(guid)
        # The host's own default context is the same node.
        assert local.walk("") == mine
    context = f"{build_fabric('single', seed=1).local_node_guid:016x}"
    _joined(aggregator, context)
    # Counters of a simulated port are taken when published, and the SM's
    # ActCount grows with time (each process has its own start); everything
    # else is equal.
    static = ".1.3.6.1.3.117.3.1"  # SMA-MIB node and port information
    act_count = ".1.3.6.1.3.117.3.1.12.1.1.1.4."  # ibSmaSmInfoActCount

    def without_act_count(lines: list[str]) -> list[str]:
        return [line for line in lines if not line.startswith(act_count)]

    mine = aggregator.walk(context, static)
    assert len(mine) > 300
    assert without_act_count(mine) == without_act_count(local_sim.walk(context, static))
    # IB-SM-MIB's node table is the union: both hosts and the simulated node.
    node_guids = aggregator.walk("", ".1.3.6.1.3.117.7.1.2.1.1.2")
    for guid in (A, B, context):
        assert any(guid in line.replace(" ", "").lower() for line in node_guids), (guid, node_guids)
    # Its PortInfo table too, where a sysfs port has no M_Key, MTU or VL fields.
    port_rows = aggregator.walk("", ".1.3.6.1.3.117.7.1.3")
    a_port1 = "." + ".".join(str(b) for b in trees.MLX_NODE_GUID.to_bytes(8, "big")) + ".1 = "
    assert sum(a_port1 in line for line in port_rows) > 10


def test_a_counter_change_is_served_within_two_intervals(tmp_path: Path,
                                                         stack: contextlib.ExitStack,
                                                         broker: Mosquitto,
                                                         hosts: tuple[Path, Path]) -> None:
    _publisher(stack, tmp_path, hosts[1], broker, "host-b")
    aggregator = _aggregator(stack, tmp_path, broker)
    _joined(aggregator, B)
    before = aggregator.get(B, RCV_DATA_PORT1)
    assert before == str(trees.ACTIVE_COUNTERS["port_rcv_data"])
    trees.set_file(hosts[1], "mlx5_0/ports/1/counters/port_rcv_data", "1234600000\n")
    changed = time.monotonic()
    assert _until(lambda: aggregator.get(B, RCV_DATA_PORT1) == "1234600000", timeout=2 * 1.0 + 1.5)
    assert time.monotonic() - changed <= 2 * 1.0 + 1.5


def test_an_event_reaches_the_trap_receiver_once(tmp_path: Path, stack: contextlib.ExitStack,
                                                 broker: Mosquitto,
                                                 hosts: tuple[Path, Path]) -> None:
    receiver = TrapReceiver(tmp_path / "trapd").start()
    stack.callback(receiver.stop)
    _publisher(stack, tmp_path, hosts[1], broker, "host-b")
    aggregator = _aggregator(stack, tmp_path, broker, "--trap-target", f"127.0.0.1:{receiver.port}")
    _joined(aggregator, B)
    trees.set_file(hosts[1], "mlx5_0/ports/1/cap_mask", "0x2659e84a\n")
    received = receiver.wait_for(2, timeout=20)
    assert received[0].trap_oid == "OID: SNMPv2-MIB::coldStart"  # the aggregator's start
    assert received[1].trap_oid.endswith("SMA-MIB::ibSmaCapabilityMaskModified")
    # Once: the next notification is the next change's (published with the
    # state again), not the first one repeated.
    trees.set_file(hosts[1], "mlx5_0/ports/1/cap_mask", "0x2659e84b\n")
    marker = receiver.wait_for(3, timeout=20)[2]
    assert marker.trap_oid.endswith("SMA-MIB::ibSmaCapabilityMaskModified")
    assert _cap_mask(marker) != _cap_mask(received[1])


def test_a_hosts_port_going_down_raises_if_mib_link_down_at_the_aggregator(
        tmp_path: Path, stack: contextlib.ExitStack, broker: Mosquitto,
        hosts: tuple[Path, Path]) -> None:
    receiver = TrapReceiver(tmp_path / "trapd").start()
    stack.callback(receiver.stop)
    _publisher(stack, tmp_path, hosts[1], broker, "host-b")
    aggregator = _aggregator(stack, tmp_path, broker, "--trap-target", f"127.0.0.1:{receiver.port}")
    _joined(aggregator, B)
    trees.set_file(hosts[1], "mlx5_0/ports/2/state", "1: DOWN\n")
    trees.set_file(hosts[1], "mlx5_0/ports/2/phys_state", "2: Polling\n")
    (cold_start, received) = receiver.wait_for(2, timeout=20)
    assert cold_start.trap_oid == "OID: SNMPv2-MIB::coldStart"  # the aggregator's start
    # A CA's port: no IBA trap, IF-MIB's linkDown from host-b's node.
    assert received.trap_oid == "OID: IF-MIB::linkDown"
    assert received.varbinds[2:5] == (("IF-MIB::ifIndex.2", "INTEGER: 2"),
                                     ("IF-MIB::ifAdminStatus.2", "INTEGER: up(1)"),
                                     ("IF-MIB::ifOperStatus.2", "INTEGER: down(2)"))
    # Once, whatever publishing the state again: the next notification is
    # the port's coming back, not the linkDown repeated.
    trees.set_file(hosts[1], "mlx5_0/ports/2/state", "4: ACTIVE\n")
    trees.set_file(hosts[1], "mlx5_0/ports/2/phys_state", "5: LinkUp\n")
    marker = receiver.wait_for(3, timeout=20)[2]
    assert marker.trap_oid == "OID: IF-MIB::linkUp"


def test_a_killed_publisher_leaves_by_its_last_will_and_comes_back(
        tmp_path: Path, stack: contextlib.ExitStack, broker: Mosquitto,
        hosts: tuple[Path, Path]) -> None:
    _publisher(stack, tmp_path, hosts[0], broker, "host-a")
    b = _publisher(stack, tmp_path, hosts[1], broker, "host-b")
    aggregator = _aggregator(stack, tmp_path, broker)
    _joined(aggregator, A, B)
    assert aggregator.get(B, NODE_DESCRIPTION) is not None
    b.kill()
    aggregator.wait_for(f"node {B} leaves the fabric: its publisher anonymous/host-b is offline (last will)")
    assert _until(lambda: aggregator.get(B, NODE_DESCRIPTION, timeout=1) is None, timeout=10)
    assert aggregator.get(A, NODE_DESCRIPTION) is not None
    _publisher(stack, tmp_path, hosts[1], broker, "host-b")
    aggregator.wait_for(f"node {B} (node01 HCA-1) joins the fabric", count=2)
    assert _until(lambda: aggregator.get(B, NODE_DESCRIPTION) is not None, timeout=5)


def test_a_stale_node_leaves(tmp_path: Path, stack: contextlib.ExitStack, broker: Mosquitto,
                             hosts: tuple[Path, Path]) -> None:
    b = _publisher(stack, tmp_path, hosts[1], broker, "host-b")
    aggregator = _aggregator(stack, tmp_path, broker, "--stale-after", "2")
    _joined(aggregator, B)
    b.process.send_signal(19)  # SIGSTOP: connected, silent
    stack.callback(lambda: b.process.send_signal(18))
    aggregator.wait_for(f"node {B} leaves the fabric: no state for 2 s (stale)")
    assert aggregator.get(B, NODE_DESCRIPTION, timeout=1) is None


def test_a_broker_restart_loses_nothing(tmp_path: Path, stack: contextlib.ExitStack,
                                        broker: Mosquitto, hosts: tuple[Path, Path]) -> None:
    receiver = TrapReceiver(tmp_path / "trapd").start()
    stack.callback(receiver.stop)
    # -v: the publisher logs each event the broker acknowledged.
    publisher = _publisher(stack, tmp_path, hosts[1], broker, "host-b", "-v")
    aggregator = _aggregator(stack, tmp_path, broker, "--trap-target", f"127.0.0.1:{receiver.port}")
    _joined(aggregator, B)

    broker.kill()
    aggregator.wait_for("lost the broker")
    # Served from what the aggregator has, while the broker is away.
    assert aggregator.get(B, NODE_DESCRIPTION) == "node01 HCA-1"
    trees.set_file(hosts[1], "mlx5_0/ports/1/counters/port_rcv_data", "1234600000\n")
    trees.set_file(hosts[1], "mlx5_0/ports/1/cap_mask", "0x2659e84a\n")  # an event, queued by the publisher
    # Read by a poll (the counter by that one or an earlier one) while the broker is away.
    publisher.wait_for("-> 0x2659e84a")  # the capability mask, as logged
    assert aggregator.get(B, NODE_DESCRIPTION) == "node01 HCA-1"
    broker.start()
    aggregator.wait_for("reconnected to")
    publisher.wait_for("connected to", count=2)
    # Each aggregator's start sends a coldStart too.
    assert len(receiver.wait_for(2, timeout=20)) == 2
    assert _until(lambda: aggregator.get(B, RCV_DATA_PORT1) == "1234600000", timeout=10)

    # An acknowledged QoS 1 event waits in the aggregator's persistent
    # session while it is away, and survives a broker killed meanwhile.
    aggregator.stop()
    trees.set_file(hosts[1], "mlx5_0/ports/1/cap_mask", "0x2659e84b\n")
    publisher.wait_for("connected to", count=2)
    # Trap 144 (CapabilityMaskModified): the second event, acknowledged by the broker.
    publisher.wait_for("(trap 144) sent", count=2)
    broker.kill()
    broker.start()
    _aggregator(stack, tmp_path, broker, "--trap-target", f"127.0.0.1:{receiver.port}", name="aggregator")
    received = receiver.wait_for(4, timeout=20)
    events = [_cap_mask(r) for r in received if r.trap_oid.endswith("ibSmaCapabilityMaskModified")]
    assert len(events) == 2 and len(set(events)) == 2  # both changes, each once, and two coldStarts
    # Nothing more comes of them: the next notification is the next change's.
    trees.set_file(hosts[1], "mlx5_0/ports/1/cap_mask", "0x2659e84c\n")
    marker = receiver.wait_for(5, timeout=20)[4]
    assert marker.trap_oid.endswith("SMA-MIB::ibSmaCapabilityMaskModified")
    assert _cap_mask(marker) not in events


def test_refused_credentials_are_one_line_and_exit_2(tmp_path: Path,
                                                     stack: contextlib.ExitStack) -> None:
    broker = Mosquitto(tmp_path, users={"ib": "s3cret-pass"}).start()
    stack.callback(broker.stop)
    # A state directory of its own: another agent on the machine, holding the
    # default one, would add its warning to the one line this test reads.
    bad = Agent(tmp_path / "bad.log", "--provider", "mqtt", "--broker", f"mqtt://ib@127.0.0.1:{broker.port}",
                "--state-dir", str(tmp_path / "state"), env={"IBSNMP_MQTT_PASSWORD": "wrong-pass"})
    assert bad.process.wait(timeout=30) == 2
    bad.stop()
    lines = [line for line in bad.text().splitlines() if line.strip()]
    assert lines == [f"ibsnmp: the broker mqtt://ib@127.0.0.1:{broker.port} refused the connection: "
                     "not authorised (check the user name and password)"]
    # The right password from a file: served, and never printed.
    secret = tmp_path / "password"
    secret.write_text("s3cret-pass\n")
    good = _start(stack, Agent(tmp_path / "good.log", "--provider", "mqtt", "--broker",
                               f"mqtt://ib@127.0.0.1:{broker.port}", "--broker-password-file", str(secret)))
    good.wait_for("connected to")
    assert "s3cret" not in good.text()


def test_mqtts_with_a_client_certificate(tmp_path: Path, stack: contextlib.ExitStack,
                                         hosts: tuple[Path, Path]) -> None:
    pems = make_certificates(tmp_path / "pki")
    broker = Mosquitto(tmp_path, tls=(pems["ca"], pems["server"], pems["server_key"])).start()
    stack.callback(broker.stop)
    tls = ("--broker-ca", str(pems["ca"]), "--broker-cert", str(pems["client"]), "--broker-key",
           str(pems["client_key"]))
    _publisher(stack, tmp_path, hosts[1], broker, "host-b", *tls)
    aggregator = _aggregator(stack, tmp_path, broker, *tls)
    _joined(aggregator, B)
    assert aggregator.get(B, NODE_DESCRIPTION) == "node01 HCA-1"
    # Without a certificate the broker closes the TLS handshake: retried, never served.
    lone = _start(stack, Agent(tmp_path / "lone.log", "--provider", "mqtt", "--broker", broker.url,
                               "--broker-ca", str(pems["ca"])))
    lone.wait_for("cannot be reached now")


def test_a_publisher_that_stops_says_its_nodes_are_offline(tmp_path: Path,
                                                           stack: contextlib.ExitStack,
                                                           broker: Mosquitto,
                                                           hosts: tuple[Path, Path]) -> None:
    b = _publisher(stack, tmp_path, hosts[1], broker, "host-b")
    aggregator = _aggregator(stack, tmp_path, broker)
    _joined(aggregator, B)
    assert b.stop() == 0
    aggregator.wait_for(f"node {B} leaves the fabric: its status is offline")
    assert aggregator.get(B, NODE_DESCRIPTION, timeout=1) is None

"""`ibsnmp run` with [[trap_target]]s: scenario events arrive at snmptrapd, in
order, in every version; a receiver that is down does not slow GETs."""

from __future__ import annotations

import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.support.e2e import PROJECT_ROOT, free_udp_port
from tests.support.logged_agent import LoggedAgent, logged_agent
from tests.support.narrow import present
from pyasn1.codec.ber import decoder, encoder
from pysnmp.proto import api
from tests.support.trapd import AGENT_USERS, ENGINE_ID, USER, TrapReceiver

from ibsnmp.fabric.generators import build_fabric
from ibsnmp.traps.mapping import NOTIFICATION_OF

SPEC = "fat-tree:spines=2,leaves=2,hosts=2"
SEED = 3
# One trap of each kind, far enough apart (0.4 s real) that the order is
# fixed: the threshold watcher (traps 129/130) polls every 0.1 s. Times
# count from the provider's creation; the first event (30 = 6 s real) comes
# after the agent has started, or due events would all fire at once.
SCENARIO = """
[scenario]
time_scale = 0.2
watch_interval = 0.5

[[event]]
at = 31
action = "port-down"
node = "leaf02"
port = 1
up_after = 2

[[event]]
at = 32
action = "error-burst"
node = "leaf01"
port = 3
errors = { local_link_integrity = 20 }

[[event]]
at = 34
action = "error-burst"
node = "spine01"
port = 2
errors = { excessive_buffer_overrun = 10 }

[[event]]
at = 35
action = "flow-control-watchdog"
node = "leaf01"
port = 4

[[event]]
at = 36
action = "capability-mask"
node = "host002"
set = ["IS_SM"]

[[event]]
at = 37
action = "system-image-guid"
node = "leaf02"

[[event]]
at = 38
action = "bad-m-key"
node = "leaf01"
from = "host001"

[[event]]
at = 39
action = "bad-p-key"
from = "host002"
to = "host003"

[[event]]
at = 40
action = "bad-q-key"
from = 1
to = 4

[[event]]
at = 41
action = "bad-p-key-switch"
node = "leaf02"
port = 1
to = "host004"
"""
EXPECTED = ["ibSmaPortLinkStateChange", "ibSmaLinkIntegrityThresReached",
            "ibSmaPortLinkStateChange", "ibSmaExcessBuffOverrunThres",
            "ibSmaFlowCntrlUpdateTimerExpire", "ibSmaCapabilityMaskModified",
            "ibSmaSysImageGuidModified", "ibSmaBadManagementKey", "ibSmaBadPartitionKey",
            "ibSmaBadQueueKey", "ibSmaBadPKeyAtSwitchPort"]


@contextmanager
def run_agent(*args: str) -> Iterator[LoggedAgent]:
    """`ibsnmp run` on the scenario's fabric, a temporary state directory, its output read all along."""
    with logged_agent("--seed", str(SEED), *args, fabric=SPEC) as agent:
        yield agent


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def trap_target(address: str, version: str, kind: str = "trap", **extra: object) -> str:
    lines = ["[[trap_target]]", f'address = "{address}"', f'version = "{version}"',
             f'kind = "{kind}"']
    if version == "3":
        lines.append(f'user = "{USER[0]}"')
    lines += [f"{key} = {value!r}".replace("'", '"') for key, value in extra.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrapReceiver]:
    with TrapReceiver(tmp_path_factory.mktemp("trapd")) as running:
        yield running


def test_scenario_events_reach_every_target_in_order(tmp_path: Path,
                                                     receiver: TrapReceiver) -> None:
    fabric = build_fabric(SPEC, seed=SEED)
    by_name = {present(n.description).split()[0]: n for n in fabric.nodes.values()}
    # The IBA traps alone (IF-MIB's linkDown / linkUp: test_traps_link_events).
    config = (f'engine_id = "0x{ENGINE_ID}"\n[traps]\nif_mib = false\n' + AGENT_USERS
              + trap_target(receiver.address, "2c")
              + trap_target(receiver.address, "1")
              + trap_target(receiver.address, "2c", "inform")
              + trap_target(receiver.address, "3", "trap")
              + trap_target(receiver.address, "3", "inform"))
    since = len(receiver.received())
    with run_agent("--config", write(tmp_path, "ibsnmp.toml", config), "--scenario",
                   write(tmp_path, "scenario.toml", SCENARIO)) as agent:
        got = receiver.wait_for(5 * (len(EXPECTED) + 1), timeout=30, since=since)
    assert len(got) == 5 * (len(EXPECTED) + 1), agent.output
    # Each target's coldStart first (test_standard_traps), then the events.
    got = [r for r in got if r.trap_oid != "OID: SNMPv2-MIB::coldStart"
           and (r.version, r.generic) != ("v1", "0")]
    assert f"engine ID 0x{ENGINE_ID}" in agent.output
    streams = {
        "v2c trap": [r for r in got if r.security == "TRAP2, SNMP v2c, community public"],
        "v2c inform": [r for r in got if r.security == "INFORM, SNMP v2c, community public"],
        "v3 trap": [r for r in got if r.kind == "TRAP2" and r.version == "v3"],
        "v3 inform": [r for r in got if r.kind == "INFORM" and r.version == "v3"],
    }
    for label, stream in streams.items():
        assert [r.trap_oid for r in stream] == [f"OID: SMA-MIB::{n}" for n in EXPECTED], label
    v1 = [r for r in got if r.version == "v1"]
    numbers = {"ibSmaPortLinkStateChange": 1, "ibSmaLinkIntegrityThresReached": 2,
               "ibSmaExcessBuffOverrunThres": 3, "ibSmaFlowCntrlUpdateTimerExpire": 4,
               "ibSmaCapabilityMaskModified": 5, "ibSmaSysImageGuidModified": 6,
               "ibSmaBadManagementKey": 7, "ibSmaBadPartitionKey": 8, "ibSmaBadQueueKey": 9,
               "ibSmaBadPKeyAtSwitchPort": 10}
    assert [r.specific for r in v1] == [str(numbers[n]) for n in EXPECTED]
    assert {r.enterprise for r in v1} == {"SMA-MIB::ibSmaNotifications"}
    # The node is in the varbinds (its LID) and, for v3, in the context.
    v2 = streams["v2c trap"]
    leaf01, leaf02, host002 = by_name["leaf01"], by_name["leaf02"], by_name["host002"]
    assert v2[0].value("SMA-MIB::ibSmaNodeLid.0") == f"INTEGER: {leaf02.management_port.lid}"
    assert v2[1].value("SMA-MIB::ibSmaNodeLid.0") == f"INTEGER: {leaf01.management_port.lid}"
    assert v2[1].value("SMA-MIB::ibSmaNodePortNum.0") == "Gauge32: 3"
    for stream in (streams["v3 trap"], streams["v3 inform"]):
        assert stream[0].context == f"{leaf02.guid:016x}"
        assert stream[5].context == f"{host002.guid:016x}"
        known = {""} | {f"{guid:016x}" for guid in fabric.nodes if guid != fabric.local_node_guid}
        assert {r.context for r in stream} <= known
    # One log line per notification: which, from which node and port, to how many receivers.
    sent = [line for line in agent.output.splitlines()
            if "sent to 5 receivers" in line and "of the agent" not in line]  # not coldStart
    assert len(sent) == len(EXPECTED), agent.output
    assert (f"notification ibSmaPortLinkStateChange (IBA trap 128) from node {leaf02.guid:016x}, "
            f"LID {leaf02.management_port.lid} sent to 5 receivers") in sent[0]
    assert (f"notification ibSmaLinkIntegrityThresReached (IBA trap 129) from node {leaf01.guid:016x}, "
            f"LID {leaf01.management_port.lid} port 3 sent to 5 receivers") in sent[1]


def test_bad_trap_target_config_fails_at_start(tmp_path: Path) -> None:
    config = write(tmp_path, "bad.toml", AGENT_USERS + '[[trap_target]]\naddress = "127.0.0.1"\n'
                   'version = "3"\nuser = "nobody"\n')
    result = subprocess.run([sys.executable, "-m", "ibsnmp", "run", "--config", config,
                             "--listen", f"127.0.0.1:{free_udp_port()}",
                             "--state-dir", str(tmp_path / "state")],
                            capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=60)
    assert result.returncode == 2
    assert "trap_target[0].user: names no [[user]]" in result.stderr


# -- a receiver that is down does not slow GETs ------------------------------------------

FLOOD = """
[scenario]
watch_interval = 60

[[event]]
at = 0
action = "bad-p-key"
from = "host002"
to = "host003"
repeat = 3000
period = 0.005
"""
SYS_DESCR = (1, 3, 6, 1, 2, 1, 1, 1, 0)
P_KEY_VIOLATIONS = ".1.3.6.1.3.117.7.1.3.1.1.37"  # IB-SM-MIB ibSmPortInfoPKeyViolation


def p_key_violations(agent: LoggedAgent) -> int:
    """The P_Key violations the subnet's ports have counted, summed."""
    result = agent.snmp("snmpwalk", "-v2c", "-c", "public", "-Oqv", P_KEY_VIOLATIONS)
    return sum(int(value) for value in result.stdout.split() if value.isdigit())
NODE_LID = (1, 3, 6, 1, 3, 117, 3, 1, 1, 4, 0)  # ibSmaNodeType.0: answered from the fabric


def get_latencies(port: int, count: int, interval: float) -> list[float]:
    """Seconds each of `count` SNMPv2c GETs took (a lost one counts as 5 s)."""
    v2 = api.PROTOCOL_MODULES[api.SNMP_VERSION_2C]
    latencies = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("127.0.0.1", port))
        sock.settimeout(5.0)
        for request_id in range(1, count + 1):
            pdu = v2.GetRequestPDU()
            v2.apiPDU.set_defaults(pdu)
            v2.apiPDU.set_request_id(pdu, request_id)
            v2.apiPDU.set_varbinds(pdu, [(SYS_DESCR, v2.Null("")), (NODE_LID, v2.Null(""))])
            msg = v2.Message()
            v2.apiMessage.set_defaults(msg)
            v2.apiMessage.set_community(msg, "public")
            v2.apiMessage.set_pdu(msg, pdu)
            start = time.perf_counter()
            sock.send(encoder.encode(msg))
            try:
                while True:
                    answer, _ = decoder.decode(sock.recv(65535), asn1Spec=v2.Message())
                    if v2.apiPDU.get_request_id(v2.apiMessage.get_pdu(answer)) == request_id:
                        break
                latencies.append(time.perf_counter() - start)
            except TimeoutError:
                latencies.append(5.0)
            time.sleep(interval)
    return latencies


def p95(values: Sequence[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def test_down_receivers_do_not_slow_gets(tmp_path: Path) -> None:
    closed = free_udp_port()  # nothing listens: ICMP port unreachable
    flood = write(tmp_path, "flood.toml", FLOOD)
    config = (AGENT_USERS
              + trap_target(f"127.0.0.1:{closed}", "2c", "inform", timeout=0.5, retries=2,
                            queue_size=100)
              + trap_target("192.0.2.1:162", "2c", "inform", queue_size=100)  # TEST-NET-1
              + trap_target(f"[::1]:{closed}", "3", "inform", queue_size=100)
              + trap_target(f"127.0.0.1:{closed}", "2c", "trap", queue_size=100))
    results = {}
    outputs = {}
    for label, args in (("without targets", ("--config", write(tmp_path, "plain.toml", AGENT_USERS))),
                        ("with down targets", ("--config", write(tmp_path, "down.toml", config)))):
        with run_agent(*args, "--scenario", flood) as agent:
            assert agent.wait_until(lambda: p_key_violations(agent) > 0), "the flood is not on"
            results[label] = get_latencies(agent.port, 100, 0.03)
            outputs[label] = agent.output
    down = outputs["with down targets"]
    # The originator was under pressure: queues overflowed, informs unanswered.
    assert "queue full" in down and "inform unanswered" in down, down[-3000:]
    summary = {label: (statistics.median(v), p95(v), max(v)) for label, v in results.items()}
    print("GET latency median / p95 / max (s):", summary)
    assert max(results["with down targets"]) < 1.0, summary
    assert p95(results["with down targets"]) < p95(results["without targets"]) + 0.25, summary


# -- `ibsnmp trap` ------------------------------------------------------------------------------


def ibsnmp_trap(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ibsnmp", "trap", *args, "--fabric", SPEC,
                           "--seed", str(SEED)], capture_output=True, text=True,
                          cwd=PROJECT_ROOT, timeout=60, check=False)


def test_trap_command_every_notification(receiver: TrapReceiver) -> None:
    fabric = build_fabric(SPEC, seed=SEED)
    since = len(receiver.received())
    for name in NOTIFICATION_OF.values():
        result = ibsnmp_trap(name, "--target", receiver.address)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"sent: {name} ")
    got = receiver.wait_for(10, since=since)
    assert [r.trap_oid for r in got] == [f"OID: SMA-MIB::{n}" for n in NOTIFICATION_OF.values()]
    local = fabric.local_node
    pkey = next(r for r in got if r.trap_oid.endswith("ibSmaBadPartitionKey"))
    assert pkey.value("SMA-MIB::ibSmaNodeLid.0") == f"INTEGER: {local.management_port.lid}"


def test_trap_command_overrides_and_versions(receiver: TrapReceiver) -> None:
    since = len(receiver.received())
    common = ["--node", "7cfe:9003:0021:6360", "--lid", "77", "--key", "0x8123", "--lid2", "9",
              "--gid1", "fe80::1", "--qp1", "0x48", "--sl", "3"]
    for extra in (["--version", "1"], ["--version", "2c", "--inform"],
                  ["--version", "3", "--user", USER[0], "--auth-key", USER[1], "--priv-key",
                   USER[2], "--engine-id", ENGINE_ID],
                  ["--version", "3", "--inform", "--user", USER[0], "--auth-key", USER[1],
                   "--priv-key", USER[2]]):
        result = ibsnmp_trap("ibsmabadpartitionkey", "--target", receiver.address, *common,
                             *extra)
        assert result.returncode == 0, result.stderr
    got = receiver.wait_for(4, since=since)
    assert [r.version for r in got] == ["v1", "v2c", "v3", "v3"]
    assert [r.kind for r in got] == ["TRAP", "INFORM", "TRAP2", "INFORM"]
    for received in got:
        assert received.value("SMA-MIB::ibSmaNodeLid.0") == "INTEGER: 77"
        assert received.value("SMA-MIB::ibSmaNodeLid2.0") == "INTEGER: 9"
        assert received.value("SMA-MIB::ibSmaNodeKey.0") == "Hex-STRING: 00 00 00 00 00 00 81 23"
        assert received.value("SMA-MIB::ibSmaNodeGid1.0") == \
            "Hex-STRING: FE 80 00 00 00 00 00 00 00 00 00 00 00 00 00 01"
        assert received.value("SMA-MIB::ibSmaNodeQueuePair1.0") == "INTEGER: 72"
        assert received.value("SMA-MIB::ibSmaNodeServiceLevel.0") == "INTEGER: 3"
    assert got[2].context == got[3].context == "7cfe900300216360"  # --node: leaf01


def test_trap_command_errors() -> None:
    closed = free_udp_port()
    result = ibsnmp_trap("257", "--target", f"127.0.0.1:{closed}", "--inform", "--timeout",
                         "0.2", "--retries", "1")
    assert result.returncode == 1
    assert "not acknowledged after 2 tries" in result.stderr
    result = ibsnmp_trap("ibSmaNoSuchThing", "--target", "127.0.0.1:162")
    assert result.returncode == 2 and "unknown notification" in result.stderr
    result = ibsnmp_trap("129", "--target", "127.0.0.1:162", "--port", "255")
    assert result.returncode == 2
    assert "TrapEvent.port (ibSmaNodePortNum) = 255 is outside the range the MIB allows " \
           "(1..254)" in result.stderr
    result = ibsnmp_trap("257", "--target", "127.0.0.1:162", "--version", "1", "--inform")
    assert result.returncode == 2 and "SNMPv1 has no informs" in result.stderr
    result = ibsnmp_trap("257", "--target", "127.0.0.1:162", "--version", "3")
    assert result.returncode == 2 and "--user" in result.stderr

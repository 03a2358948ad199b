"""Two `ibsnmp run --reuse-port` aggregators on one UDP port, fed by one
real mosquitto: the kernel spreads managers over both, and either answers
alike (the same walk, the same SNMPv3 engine ID, boots and time, so a
manager that discovered one is answered by the other), the second sends
warmStart where the first sent coldStart, and each fabric notification
reaches snmptrapd once, from whichever holds the lead, also after the
leader is killed."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from tests.support.e2e import free_udp_port
from tests.support.mosquitto import Agent, Mosquitto, Process
from tests.support.waiting import wait_for
from tests.support.trapd import Received, TrapReceiver
from tests.support.wire import community_request, decode_response, exchange
from tests.support.wire_v3 import Auth, decode_v3, discover, v3_message

USER, AUTH = b"group-reader", Auth("SHA256", "group-auth-key-1")
SNMP_IN_PKTS = (1, 3, 6, 1, 2, 1, 11, 1, 0)
SYS_UP_TIME = (1, 3, 6, 1, 2, 1, 1, 3, 0)
NODE_TABLE = ".1.3.6.1.3.117.7.1.2.1.1.2"  # IB-SM-MIB node GUIDs: the fabric's union
BAD_M_KEY = "ibSmaBadManagementKey"
# Four M_Key violations: the second marks that the first came once; the
# leader is killed between the second and the third; the fourth marks the third.
SCENARIO = "".join(f"""
[[event]]
at = {at}
action = "bad-m-key"
node = "local"
key = "0x{n:016x}"
""" for n, at in enumerate((3, 5, 12, 14), start=1))


def config(tmp_path: Path, receiver: TrapReceiver) -> Path:
    path = tmp_path / "group.toml"
    path.write_text(f"""engine_id = "0x80004fb80501020304"

[agent]
reuse_port = true

[[community]]
name = "public"

[[user]]
name = "{USER.decode()}"
auth = "SHA256"
auth_key = "{AUTH.passphrase}"

[[trap_target]]
address = "{receiver.address}"
version = "2c"
""")
    path.chmod(0o600)
    return path


def member(stack: contextlib.ExitStack, tmp_path: Path, name: str, port: int, *args: str) -> Agent:
    """An aggregator on the shared `port` and on a port of its own (its Agent.port)."""
    agent = Agent(tmp_path / f"{name}.log", "--listen", f"127.0.0.1:{port}", "--client-id", name,
                  *args)
    stack.callback(agent.stop)
    agent.wait_for("ibsnmp: serving")
    agent.warm_up()
    return agent


def get(address: str, oid: tuple[int, ...]) -> int:
    answer = exchange(address, community_request("get", [oid]), timeout=5.0)
    assert answer is not None, f"{address} does not answer"
    return int(decode_response(answer)[3][0][1])


def bad_m_keys(receiver: TrapReceiver) -> list[Received]:
    return [r for r in receiver.received() if BAD_M_KEY in r.trap_oid]


def test_two_aggregators_on_one_port_answer_as_one_agent(tmp_path: Path, stack: contextlib.ExitStack,
                                                         broker: Mosquitto) -> None:
    receiver = TrapReceiver(tmp_path / "trapd").start()
    stack.callback(receiver.stop)
    shared = free_udp_port()
    common = ("--provider", "mqtt", "--broker", broker.url, "--config", str(config(tmp_path, receiver)),
              "--state-dir", str(tmp_path / "state"))
    first = member(stack, tmp_path, "first", shared, *common)
    second = member(stack, tmp_path, "second", shared, *common)
    assert "joined the running agents" in second.text() and "joined" not in first.text()
    # coldStart from the engine's boot, warmStart from the member that joined it.
    kinds = wait_for(lambda: sorted(r.trap_oid.rsplit("::", 1)[-1] for r in receiver.received()
                                    if "Start" in r.trap_oid) if len(receiver.received()) >= 2 else None,
                     30, "coldStart and warmStart")
    assert kinds == ["coldStart", "warmStart"], receiver.received()
    (tmp_path / "scenario.toml").write_text(SCENARIO)
    publisher = Process(tmp_path / "publisher.log", "publish", "--fabric", "fat-tree:spines=1,leaves=1,hosts=2",
                        "--scenario", str(tmp_path / "scenario.toml"), "--broker", broker.url,
                        "--client-id", "publisher", "--interval", "1", "--refresh", "5")
    stack.callback(publisher.stop)
    for agent in (first, second):
        agent.wait_for("joins the fabric", count=4)  # both switches' and both hosts' nodes

    # Either member answers alike: the fabric's union, sysUpTime from one boot.
    walks = [agent.walk("", NODE_TABLE) for agent in (first, second)]
    assert len(walks[0]) == 4 and walks[0] == walks[1]
    up_times = [get(agent.address, SYS_UP_TIME) for agent in (first, second)]
    assert abs(up_times[0] - up_times[1]) < 200, up_times  # hundredths: the same zero

    # Managers from 32 source ports reach both members through the shared port.
    before = [get(agent.address, SNMP_IN_PKTS) for agent in (first, second)]
    for _ in range(32):
        assert get(f"127.0.0.1:{shared}", SYS_UP_TIME) > 0
    after = [get(agent.address, SNMP_IN_PKTS) for agent in (first, second)]
    served = [b - a - 1 for a, b in zip(before, after)]  # less the GET of `before` itself
    assert sum(served) == 32 and min(served) > 0, served

    # One engine: discovered through the shared port, it answers an
    # authenticated GET from every source port, with no Report.
    engine = discover(f"127.0.0.1:{shared}")
    assert engine.engine_id == bytes.fromhex("80004fb80501020304")
    for agent in (first, second):
        alike = discover(agent.address)
        assert (alike.engine_id, alike.boots) == (engine.engine_id, engine.boots)
        assert abs(alike.engine_time - engine.engine_time) <= 2
    started = time.monotonic()
    for n in range(32):
        request = v3_message("get", [SYS_UP_TIME], user=USER, auth=AUTH, engine_id=engine.engine_id,
                             boots=engine.boots,
                             engine_time=engine.engine_time + int(time.monotonic() - started),
                             msg_id=100 + n, request_id=100 + n)
        answer = exchange(f"127.0.0.1:{shared}", request, timeout=5.0)
        assert answer is not None
        decoded = decode_v3(answer)
        assert decoded.pdu_type == "response" and decoded.error_status == 0, decoded

    # Each fabric notification once: the second event shows the first came once.
    wait_for(lambda: len(bad_m_keys(receiver)) >= 2, 30, "the first two M_Key traps")
    assert len(bad_m_keys(receiver)) == 2, bad_m_keys(receiver)
    leader, other = (first, second) if "sends the fabric's notifications" in first.text() \
        else (second, first)
    assert "sends the fabric's notifications" in leader.text()
    assert "sends the fabric's notifications" not in other.text()
    leader.kill()
    wait_for(lambda: len(bad_m_keys(receiver)) >= 4, 40, "the last two M_Key traps")
    assert len(bad_m_keys(receiver)) == 4, bad_m_keys(receiver)
    assert "sends the fabric's notifications" in other.text()
    # The four events in order (each scenario event its own M_Key), with
    # sysUpTime from the one boot: later ones from the member that took over.
    assert [r.value("SMA-MIB::ibSmaNodeKey.0").split()[-1] for r in bad_m_keys(receiver)] == \
        ["01", "02", "03", "04"]
    up = [int(r.value("SNMPv2-MIB::sysUpTime.0").split("(")[1].split(")")[0])
          for r in bad_m_keys(receiver)]
    assert up == sorted(up), up

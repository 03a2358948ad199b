"""A broker many hosts share, as tests see it beside ibsnmp's processes
(no tests here).

- `MqttClient`: a plain MQTT 3.1.1 client that plays a host, an attacker
  or an onlooker. paho-mqtt (aiomqtt's own transport) with its network
  thread: a synchronous test connects, publishes and waits for each
  acknowledgement, and reads what a subscription received so far. A
  publish the broker's ACL refuses is acknowledged all the same (MQTT 3.1.1
  has no way to say otherwise): only the broker's log and the subscribers
  tell;
- what a hostile host sends: `forged_state` (a copy of a node's real state
  with other fields), `fake_states` (states of made-up nodes, each a valid
  record of its own);
- what a test watches: `Watch` (a thread asking the aggregator for some
  nodes' descriptions over and over, keeping every wrong answer) and
  `memory_kib` (a process's resident memory as the kernel reports it).
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

from tests.support.mosquitto import Agent

# SMA-MIB::ibSmaNodeString.0: a node's description in its own context.
NODE_DESCRIPTION = ".1.3.6.1.3.117.3.1.1.1.0"
# IB-SM-MIB's node table, the GUID column: every node served, in the default context.
NODE_TABLE_GUIDS = ".1.3.6.1.3.117.7.1.2.1.1.2"


def forged_state(real: bytes, **node_fields: Any) -> bytes:
    """`real` (a state payload) with its node's fields replaced."""
    data = json.loads(real)
    data["node"].update(node_fields)
    return json.dumps(data, separators=(",", ":")).encode()


def _guid_hex(guid: int) -> str:
    return f"{guid:016x}"


def fake_states(template: bytes, first_guid: int, count: int) -> Iterator[tuple[int, bytes]]:
    """(guid, payload) of `count` made-up nodes shaped as `template` (a
    CA's state): node GUIDs first_guid, first_guid + 0x10, ...; their ports'
    GUIDs, GIDs and LIDs their own, the description `fake <n>`."""
    data = json.loads(template)
    for n in range(count):
        guid = first_guid + 0x10 * n
        node = dict(data["node"], guid=_guid_hex(guid), system_image_guid=_guid_hex(guid),
                    description=f"fake {n}")
        ports = []
        for index, port in enumerate(data["ports"]):
            port_guid = guid + index
            info = dict(port["info"], lid=0x1000 + 2 * n + index)
            ports.append(dict(port, guid=_guid_hex(port_guid), guids=[_guid_hex(port_guid)], info=info,
                              gids=[f"fe80000000000000{port_guid:016x}"] + port["gids"][1:]))
        yield guid, json.dumps(dict(data, node=node, ports=ports), separators=(",", ":")).encode()


class Watch(threading.Thread):
    """Reads SMA-MIB::ibSmaNodeString.0 of every context in `expected`
    (context -> description) from `agent`, round after round, until
    `stop()`; `wrong` lists (context, answer) of every answer that was not
    the expected one (None: no answer)."""

    def __init__(self, agent: Agent, expected: dict[str, str]) -> None:
        super().__init__(name="ibsnmp-test-watch", daemon=True)
        self._agent, self._expected = agent, expected
        self._stop_event = threading.Event()
        self.rounds = 0
        self.wrong: list[tuple[str, str | None]] = []

    def run(self) -> None:
        while not self._stop_event.is_set():
            for context, description in self._expected.items():
                answer = self._agent.get(context, NODE_DESCRIPTION)
                if answer != description:
                    self.wrong.append((context, answer))
            self.rounds += 1

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=30)


def memory_kib(pid: int, field: str = "VmRSS") -> int:
    """A field of /proc/PID/status in KiB (VmRSS: resident now; VmHWM: the peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise KeyError(field)


CONNECT_TIMEOUT_S = 10.0


class Received(NamedTuple):
    topic: str
    payload: bytes
    retain: bool


class MqttClient:
    """Connected on creation (AssertionError if the broker refuses it);
    `close()` disconnects cleanly, `abort()` drops the socket so that the
    broker publishes the last will."""

    def __init__(self, port: int, client_id: str, *, user: str | None = None, password: str | None = None,
                 will: tuple[str, bytes] | None = None, tls: ssl.SSLContext | None = None,
                 host: str = "127.0.0.1") -> None:
        self.client_id = client_id
        self._client = paho.Client(CallbackAPIVersion.VERSION2, client_id=client_id,
                                   protocol=paho.MQTTv311, clean_session=True)
        self._client.max_inflight_messages_set(256)
        self._client.max_queued_messages_set(0)
        if user is not None:
            self._client.username_pw_set(user, password)
        if will is not None:
            self._client.will_set(will[0], will[1], qos=1, retain=True)
        if tls is not None:
            self._client.tls_set_context(tls)
        self._lock = threading.Lock()
        self._received: list[Received] = []
        self._connected = threading.Event()
        self._refused: list[str] = []
        self._client.on_connect = self._on_connect
        self._client.on_message = self._on_message
        self._client.connect(host, port, keepalive=60)
        self._client.loop_start()
        if not self._connected.wait(CONNECT_TIMEOUT_S) or self._refused:
            self._client.loop_stop()
            raise AssertionError(f"{client_id}: the broker did not accept the connection {self._refused}")

    def _on_connect(self, client: paho.Client, userdata: object, flags: object, reason: object,
                    properties: object) -> None:
        if getattr(reason, "is_failure", False):
            self._refused.append(str(reason))
        self._connected.set()

    def _on_message(self, client: paho.Client, userdata: object, message: paho.MQTTMessage) -> None:
        with self._lock:
            self._received.append(Received(message.topic, bytes(message.payload), bool(message.retain)))

    def subscribe(self, pattern: str) -> None:
        """Subscribe at QoS 1 and wait for the SUBACK."""
        done = threading.Event()
        self._client.on_subscribe = lambda *args: done.set()
        result, _ = self._client.subscribe(pattern, qos=1)
        assert result == paho.MQTT_ERR_SUCCESS and done.wait(CONNECT_TIMEOUT_S), f"{pattern}: no SUBACK"

    def publish(self, topic: str, payload: bytes, *, retain: bool = False, qos: int = 1) -> None:
        self.publish_many([(topic, payload)], retain=retain, qos=qos)

    def publish_many(self, messages: Iterable[tuple[str, bytes]], *, retain: bool = False, qos: int = 1,
                     timeout: float = 120.0) -> None:
        """Publish in order and wait until the broker acknowledged them all
        (QoS 1: its PUBACK; QoS 0: written to the socket)."""
        infos = [self._client.publish(topic, payload, qos=qos, retain=retain) for topic, payload in messages]
        deadline = time.monotonic() + timeout
        for info in infos:
            info.wait_for_publish(max(0.0, deadline - time.monotonic()))
            assert info.is_published(), f"{self.client_id}: a publish was not acknowledged in {timeout} s"

    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def wait_for(self, check: Callable[[list[Received]], bool], timeout: float = 20.0) -> list[Received]:
        """What was received once `check` holds of it; AssertionError past `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.received()
            if check(got):
                return got
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.client_id}: not received in {timeout} s; last: {got[-3:]}")
            time.sleep(0.05)

    def close(self) -> None:
        """A clean DISCONNECT: the broker drops the last will."""
        self._client.disconnect()
        self._client.loop_stop()

    def abort(self) -> None:
        """Close the socket without DISCONNECT: the broker publishes the will."""
        self._client.loop_stop()
        sock = self._client.socket()
        if sock is not None:
            sock.close()

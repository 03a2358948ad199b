"""A broker many hosts share, some of them hostile: `ibsnmp publish` of
hosts (fake sysfs trees), an aggregator with --max-nodes-per-publisher, and
attackers of the test's own (plain MQTT clients) that claim other hosts'
nodes, say they are offline, announce 5,000 made-up nodes, spread nodes
over made-up client ids and send garbage.

Every test runs twice: with the shipped ACL (examples/mosquitto/acl, users
made by `mosquitto_passwd -b`, each attacker just another host user:
mosquitto itself refuses their writes under other names) and on an
anonymous broker without ACL (the aggregator's ownership rules and limits
alone). Last, the shipped mosquitto.conf with TLS, passwords or client
certificates, set up by running every shell command of
docs/mqtt-security.md.

"Nothing happened" is shown by a later positive signal (`Shared.sync`): a
host of the test's own renames its node and the aggregator serves the new
name, so every message the broker took before has been taken or refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shlex
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ibsnmp.mqtt import topics
from tests.support import sysfs_trees as trees
from tests.support.mosquitto import Agent, Mosquitto, Process
from tests.support.shared_broker import (NODE_DESCRIPTION, NODE_TABLE_GUIDS, MqttClient, Received, Watch,
                                         fake_states, forged_state, memory_kib)
from tests.support.paths import PROJECT_ROOT

FABRIC_ID = "fab"
ACL = PROJECT_ROOT / "examples" / "mosquitto" / "acl"
GARBAGE = ("binary", "nul", "nan-text", "nan-time", "infinity", "list", "ports-string", "description-number")
# Broker users: the aggregator's, one per host, and the attackers' (just more hosts).
USERS = ("aggregator", "host-a", "host-b", "host-c", "host-d", "host-v", "prober", "mallory", "sprawl",
         "junk-own", *(f"junk-{name}" for name in GARBAGE))
PASSWORDS = {user: f"{user}-secret" for user in USERS}
MAX_PER_PUBLISHER = 4
PUBLISH_TIMING = ("--interval", "1", "--refresh", "2")
A, B = trees.MLX_NODE_GUID, 0x0C42A1030017D000
PROBE = 0x0C42A103001A0000  # the prober's node (Shared.sync)
DESCRIPTION = "node01 HCA-1"  # of every fake sysfs tree here
FLOOD = 5000
FLOOD_FIRST_GUID = 0xBAD0000000000000
# Resident memory an aggregator may gain from the flood: what it keeps is
# bounded (4 nodes, one notice); what it passes through is not kept. (Seen:
# 160 kB; all 5,000 nodes kept would be about 32 MB.)
FLOOD_RSS_BOUND_KIB = 16 * 1024


def _until(check: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@dataclass
class Shared:
    """One broker (ACL or open), hosts A and B publishing, an aggregator, an
    onlooker subscribed to the whole tree (with the ACL as the aggregator's
    user: only aggregators may read) and the prober (see `sync`)."""

    mode: str
    workdir: Path
    broker: Mosquitto
    stack: contextlib.ExitStack
    aggregator: Agent | None = None
    onlooker: MqttClient | None = None
    prober: MqttClient | None = None
    probe_state: bytes = b""
    marks: int = 0

    @property
    def acl(self) -> bool:
        return self.mode == "acl"

    @property
    def agent(self) -> Agent:
        assert self.aggregator is not None
        return self.aggregator

    @property
    def spy(self) -> MqttClient:
        assert self.onlooker is not None
        return self.onlooker

    def url(self, user: str) -> str:
        login = f"{user}@" if self.acl else ""
        return f"mqtt://{login}127.0.0.1:{self.broker.port}"

    def env(self, user: str) -> dict[str, str]:
        return {"IBSNMP_MQTT_PASSWORD": PASSWORDS[user]} if self.acl else {}

    def owner(self, user: str) -> str:
        """The owner level `ibsnmp publish` as `user` writes under."""
        return user if self.acl else topics.ANONYMOUS

    @staticmethod
    def tree(owner: str, client_id: str) -> topics.PublisherTopics:
        return topics.PublisherTopics(FABRIC_ID, topics.Publisher(owner, client_id))

    def client(self, user: str, client_id: str, *, stack: contextlib.ExitStack | None = None,
               will: tuple[str, bytes] | None = None) -> MqttClient:
        """A plain client logged in as `user` (anonymous without ACL)."""
        login = {"user": user, "password": PASSWORDS[user]} if self.acl else {}
        client = MqttClient(self.broker.port, client_id, will=will,
                            **login)  # type: ignore[arg-type]  # user and password only
        (stack or self.stack).callback(client.close)
        return client

    def publisher(self, name: str, root: Path, user: str, *extra: str,
                  stack: contextlib.ExitStack | None = None) -> Process:
        process = Process(self.workdir / f"{name}.log", "publish", "--provider", "sysfs", "--sysfs-root", str(root),
                          "--poll-interval", "0.5", "--broker", self.url(user), "--fabric-id", FABRIC_ID,
                          *PUBLISH_TIMING, *extra, env=self.env(user))
        (stack or self.stack).callback(process.stop)
        return process

    def sync(self) -> None:
        """Return once the aggregator and the onlooker have every message
        the broker acknowledged before the call: the prober (a host of its
        own) renames its node, and both see the new name."""
        assert self.prober is not None
        self.marks += 1
        name = f"mark {self.marks}"
        topic = self.tree(self.owner("prober"), "prober").node(PROBE, "state")
        payload = forged_state(self.probe_state, description=name)
        self.prober.publish(topic, payload, retain=True)
        assert _until(lambda: self.agent.get(f"{PROBE:016x}", NODE_DESCRIPTION) == name), name
        self.spy.wait_for(lambda got: Received(topic, payload, False) in got)

    def denied(self, client_id: str, topic: str) -> bool:
        """Whether mosquitto logged refusing `client_id`'s publish on `topic`."""
        return any(f"Denied PUBLISH from {client_id} (" in line and f"'{topic}'" in line
                   for line in self.broker.log_text().splitlines())

    def lines(self, needle: str) -> list[str]:
        return [line for line in self.agent.text().splitlines() if needle in line]

    def real_state(self, user: str, client_id: str, guid: int) -> bytes:
        """The node's state as `ibsnmp publish` put it on the broker (retained)."""
        topic = self.tree(self.owner(user), client_id).node(guid, "state")
        got = self.spy.wait_for(lambda got: any(r.topic == topic and r.payload for r in got))
        return [r.payload for r in got if r.topic == topic and r.payload][-1]


def host_tree(workdir: Path, name: str, guid: int) -> Path:
    root = workdir / name
    root.mkdir()
    trees.mlx5_two_port(root, guid=guid)
    return root


@pytest.fixture(scope="module", params=["acl", "open"])
def shared(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    mode = request.param
    workdir = tmp_path_factory.mktemp(mode)
    with contextlib.ExitStack() as stack:
        if mode == "acl":
            broker = Mosquitto(workdir, users=PASSWORDS, acl=ACL, log_types=("all",), persistence=False)
        else:
            broker = Mosquitto(workdir, log_types=("all",), persistence=False)
        broker.start()
        stack.callback(broker.stop)
        env = Shared(mode, workdir, broker, stack)
        for name, guid in (("host-a", A), ("host-b", B)):
            env.publisher(name, host_tree(workdir, name, guid), name, "--client-id", name)
        agent = Agent(workdir / "aggregator.log", "--provider", "mqtt", "--broker", env.url("aggregator"),
                      "--fabric-id", FABRIC_ID, "--client-id", "aggregator", "--max-nodes-per-publisher",
                      str(MAX_PER_PUBLISHER), env=env.env("aggregator"))
        stack.callback(agent.stop)
        agent.wait_for("ibsnmp: serving")
        agent.warm_up()
        for guid in (A, B):
            agent.wait_for(f"node {guid:016x} ({DESCRIPTION}) joins the fabric")
        env.aggregator = agent
        env.onlooker = env.client("aggregator", "onlooker")
        env.spy.subscribe("ibsnmp/v2/#")
        # The prober's node: host A's state under its own GUID, refreshed
        # only by `sync` (its record says so: it is not stale within the module).
        _, probe = next(fake_states(env.real_state("host-a", "host-a", A), PROBE, 1))
        env.probe_state = json.dumps(dict(json.loads(probe), refresh=3600)).encode()
        env.prober = env.client("prober", "prober")
        env.prober.publish(env.tree(env.owner("prober"), "prober").node(PROBE, "state"), env.probe_state,
                           retain=True)
        # Asked for only once served: the agent keeps answering "unknown
        # context" to a context asked for before its node came, until
        # another context is asked for (agent/context_hooks.py).
        agent.wait_for(f"node {PROBE:016x} (fake 0) joins the fabric")
        env.sync()
        yield env


@pytest.fixture
def local() -> Iterator[contextlib.ExitStack]:
    """What one test starts beside the module's processes, stopped after it."""
    with contextlib.ExitStack() as stack:
        yield stack


def _served(agent: Agent) -> set[int]:
    """GUIDs of IB-SM-MIB's node table: every node the aggregator serves."""
    guids = set()
    for line in agent.walk("", NODE_TABLE_GUIDS):
        value = line.split("=", 1)[1].split(":", 1)[1]
        guids.add(int(re.sub(r"[^0-9A-Fa-f]", "", value), 16))
    return guids


# -- claims on another host's node ---------------------------------------------------------


def test_a_copy_of_a_hosts_state_under_another_name_is_refused_naming_both(shared: Shared) -> None:
    env, agent = shared, shared.agent
    evil = forged_state(env.real_state("host-a", "host-a", A), description="EVILHOST")
    attacker = env.client("mallory", "evil-claim")
    mine = env.tree("mallory", "evil-claim")
    attacker.publish(mine.node(A, "state"), evil, retain=True)
    owner = f"{env.owner('host-a')}/host-a"
    agent.wait_for(f"mqtt: publisher mallory/evil-claim claims node {A:016x}, which publisher {owner} owns: "
                   f"refused until {owner} has been silent for")
    assert agent.get(f"{A:016x}", NODE_DESCRIPTION) == DESCRIPTION
    # Again, after the owner's next refresh: still its own, and not said again.
    theirs = env.tree(env.owner("host-a"), "host-a").node(A, "state")
    states = sum(r.topic == theirs for r in env.spy.received())
    env.spy.wait_for(lambda got: sum(r.topic == theirs for r in got) > states)
    attacker.publish(mine.node(A, "state"), evil, retain=True)
    env.sync()
    assert agent.get(f"{A:016x}", NODE_DESCRIPTION) == DESCRIPTION
    assert len(env.lines("mqtt: publisher mallory/evil-claim claims node")) == 1
    if env.acl:
        # Under the owner's own name mosquitto refuses it: nobody receives it.
        forged_topic = env.tree("host-a", "host-a").node(A, "state")
        attacker.publish(forged_topic, evil, retain=True)
        env.sync()
        assert env.denied("evil-claim", forged_topic)
        assert not [r for r in env.spy.received() if r.topic == forged_topic and b"EVILHOST" in r.payload]
        assert agent.get(f"{A:016x}", NODE_DESCRIPTION) == DESCRIPTION


def test_offline_under_the_attackers_own_name_takes_nothing_away(shared: Shared) -> None:
    env, agent = shared, shared.agent
    mine = env.tree("mallory", "evil-offline")
    attacker = env.client("mallory", "evil-offline")
    attacker.publish(mine.node(A, "status"), topics.OFFLINE, retain=True)
    agent.wait_for(f"mqtt: publisher mallory/evil-offline: status message of node {A:016x} refused: the node "
                   f"belongs to publisher {env.owner('host-a')}/host-a")
    attacker.publish(mine.status, topics.OFFLINE, retain=True)
    env.sync()
    assert agent.get(f"{A:016x}", NODE_DESCRIPTION) == DESCRIPTION
    assert agent.get(f"{B:016x}", NODE_DESCRIPTION) == DESCRIPTION
    assert not env.lines(f"node {A:016x} leaves the fabric")
    # A publisher that owns nothing going offline is not worth a line.
    assert not env.lines("mqtt: publisher mallory/evil-offline is offline")


def test_writes_on_the_owners_own_topics(shared: Shared, local: contextlib.ExitStack) -> None:
    """With the ACL mosquitto refuses them (and never publishes a last will
    there); without, they are the owner's own word, which the aggregator
    cannot tell apart: a forged state is served until the owner's next
    one, a forged offline holds until the owner sends again."""
    env, agent = shared, shared.agent
    victim, context = 0x0C42A10300170000, "0c42a10300170000"
    root = host_tree(env.workdir, "host-v", victim)
    # A refresh longer than the test: only what the test does changes the node.
    timing = ("--client-id", "host-v", "--refresh", "600")
    publisher = env.publisher("host-v", root, "host-v", *timing, stack=local)
    agent.wait_for(f"node {context} ({DESCRIPTION}) joins the fabric")
    theirs = env.tree(env.owner("host-v"), "host-v")
    evil = forged_state(env.real_state("host-v", "host-v", victim), description="EVILHOST")
    attacker = env.client("mallory", "evil-status", stack=local)
    attacker.publish(theirs.node(victim, "state"), evil, retain=True)
    env.sync()
    if env.acl:
        assert env.denied("evil-status", theirs.node(victim, "state"))
        assert not [r for r in env.spy.received() if r.topic.startswith(theirs.base) and b"EVILHOST" in r.payload]
        assert agent.get(context, NODE_DESCRIPTION) == DESCRIPTION
    else:
        assert agent.get(context, NODE_DESCRIPTION) == "EVILHOST"
    attacker.publish(theirs.status, topics.OFFLINE, retain=True)
    env.sync()
    if not env.acl:
        agent.wait_for(f"node {context} leaves the fabric: its publisher anonymous/host-v is offline")
        assert victim not in _served(agent)
        assert agent.get(context, NODE_DESCRIPTION, timeout=1) is None
        # Back when the owner sends again: here at its next connection (its
        # refresh is longer than the test), with its own state.
        publisher.stop()
        env.publisher("host-v", root, "host-v", *timing, stack=local)
        agent.wait_for(f"node {context} (", count=2)
        assert _until(lambda: agent.get(context, NODE_DESCRIPTION) == DESCRIPTION)
        return
    assert env.denied("evil-status", theirs.status)
    # A last will on the owner's status topic is accepted with the
    # connection, and never published; one on its own topic is.
    foreign = env.client("mallory", "evil-will", stack=local, will=(theirs.status, topics.OFFLINE))
    foreign.abort()
    assert _until(lambda: "Client evil-will closed its connection" in env.broker.log_text())
    own_status = env.tree("mallory", "evil-will-2").status
    control = env.client("mallory", "evil-will-2", stack=local, will=(own_status, topics.OFFLINE))
    control.abort()
    env.spy.wait_for(lambda got: Received(own_status, topics.OFFLINE, False) in got)
    env.sync()
    assert not [r for r in env.spy.received() if r.topic == theirs.status and r.payload == topics.OFFLINE]
    assert agent.get(context, NODE_DESCRIPTION) == DESCRIPTION
    assert not env.lines(f"node {context} leaves the fabric")


# -- made-up nodes ----------------------------------------------------------------------------


def test_5000_made_up_nodes_are_bounded_by_the_publisher_limit(
        shared: Shared, record_property: Callable[[str, object], None]) -> None:
    env, agent = shared, shared.agent
    flood = list(fake_states(env.real_state("host-a", "host-a", A), FLOOD_FIRST_GUID, FLOOD))
    pid = agent.process.pid
    before = memory_kib(pid)
    watch = Watch(agent, {f"{A:016x}": DESCRIPTION, f"{B:016x}": DESCRIPTION})
    watch.start()
    started = time.monotonic()
    try:
        attacker = env.client("mallory", "flood")
        mine = env.tree("mallory", "flood")
        attacker.publish_many([(mine.node(guid, "state"), payload) for guid, payload in flood], retain=True)
        env.sync()
    finally:
        watch.stop()
    took = time.monotonic() - started
    after, peak = memory_kib(pid), memory_kib(pid, "VmHWM")
    record_property("aggregator_rss_kib", {"before": before, "after": after, "peak": peak})
    print(f"\n{env.mode}: {FLOOD} states ({sum(len(p) for _, p in flood)} bytes) in {took:.1f} s; aggregator "
          f"VmRSS {before} kB before, {after} kB after (+{after - before} kB), VmHWM {peak} kB; "
          f"{watch.rounds} rounds of reads of A and B meanwhile")
    assert watch.rounds >= 1 and watch.wrong == []
    limit_lines = env.lines("mqtt: publisher mallory/flood: new node")
    assert len(limit_lines) == 1, limit_lines
    assert f"max_nodes_per_publisher ({MAX_PER_PUBLISHER}) reached; the nodes served stay" in limit_lines[0]
    served = _served(agent)
    assert len(served & {guid for guid, _ in flood}) == MAX_PER_PUBLISHER and {A, B} <= served
    assert after - before < FLOOD_RSS_BOUND_KIB


def test_made_up_client_ids_share_their_users_limit(shared: Shared) -> None:
    """The ACL binds a topic's owner level to the user; the client id level
    is the user's to fill. 50 nodes under 50 client ids of one user are
    held to the user's limit; 5,000 offline statuses under made-up client
    ids cost no line."""
    env, agent = shared, shared.agent
    nodes = list(fake_states(env.real_state("host-a", "host-a", A), 0xBAD3000000000000, 50))
    attacker = env.client("sprawl", "sprawl")
    attacker.publish_many([(env.tree("sprawl", f"c{n}").node(guid, "state"), payload)
                           for n, (guid, payload) in enumerate(nodes)], retain=True)
    attacker.publish_many([(env.tree("sprawl", f"gone{n}").status, topics.OFFLINE) for n in range(FLOOD)])
    env.sync()
    assert len(_served(agent) & {guid for guid, _ in nodes}) == MAX_PER_PUBLISHER
    assert len(env.lines("mqtt: publisher sprawl/")) == 1
    assert agent.get(f"{A:016x}", NODE_DESCRIPTION) == DESCRIPTION


# -- garbage --------------------------------------------------------------------------------------


def _garbage(template: bytes, guid: int) -> dict[str, tuple[bytes, str]]:
    """name -> (a state payload for node `guid`, what the aggregator says of it)."""
    _, real = next(fake_states(template, guid, 1))
    data = json.loads(real)
    return {
        "binary": (bytes(range(256)), "malformed JSON"),
        "nul": (real[:40] + b"\x00" + real[40:], "malformed JSON"),
        "nan-text": (b"NaN", "malformed: expected a JSON object, got float"),
        "nan-time": (json.dumps(dict(data, time=float("nan"))).encode(),
                     "time: expected seconds since 1970, got nan"),
        "infinity": (real.replace(b'"value":0,', b'"value":Infinity,', 1),
                     "ports[0].counters.excessive_buffer_overrun_errors: expected a counter"),
        "list": (b"[1, 2, 3]", "malformed: expected a JSON object, got list"),
        "ports-string": (json.dumps(dict(data, ports="none")).encode(), "ports: expected a list of 1 to 256 ports"),
        "description-number": (json.dumps(dict(data, node=dict(data["node"], description=5))).encode(),
                               "node.description: expected a string"),
    }


def test_garbage_is_dropped_with_a_line_and_good_nodes_stay(shared: Shared,
                                                            local: contextlib.ExitStack) -> None:
    env, agent = shared, shared.agent
    template = env.real_state("host-a", "host-a", A)
    guid = 0xBAD1000000000000
    garbage = _garbage(template, guid)
    assert set(garbage) == set(GARBAGE)
    for name, (payload, said) in garbage.items():
        user = f"junk-{name}"  # each from a host of its own: one line per host a minute
        env.client(user, user, stack=local).publish(env.tree(user, "junk").node(guid, "state"), payload,
                                                     retain=True)
        line = f"mqtt: publisher {user}/junk: state message of node {guid:016x} dropped: {said}"
        agent.wait_for(line)
    # A node of its own, then garbage about it on every other topic.
    own = env.tree("junk-own", "junk")
    attacker = env.client("junk-own", "junk-own", stack=local)
    mine, payload = next(fake_states(template, 0xBAD2000000000000, 1))
    attacker.publish(own.node(mine, "state"), payload, retain=True)
    agent.wait_for(f"node {mine:016x} (fake 0) joins the fabric")
    attacker.publish(own.node(mine, "events"), b"\xff\x00\xfe")
    agent.wait_for(f"mqtt: publisher junk-own/junk: event message of node {mine:016x} dropped: malformed JSON")
    attacker.publish(own.node(mine, "status"), b"offline\x00", retain=True)
    agent.wait_for(f"mqtt: publisher junk-own/junk: status message of node {mine:016x} dropped: expected "
                   "online or offline, got b'offline\\x00'")
    attacker.publish(own.counters, b'{"version":1,"time":NaN,"nodes":{}}')
    agent.wait_for("mqtt: publisher junk-own/junk: counters message dropped: time: expected seconds since 1970")
    attacker.publish(own.status, b"\x00\xff")  # not online or offline: ignored
    env.sync()
    for context in (A, B):
        assert agent.get(f"{context:016x}", NODE_DESCRIPTION) == DESCRIPTION
    assert agent.get(f"{mine:016x}", NODE_DESCRIPTION) == "fake 0"
    assert agent.get(f"{guid:016x}", NODE_DESCRIPTION, timeout=1) is None
    assert agent.process.poll() is None


# -- client ids ----------------------------------------------------------------------------------------


def test_two_publishers_of_one_host_both_stay_served(shared: Shared,
                                                     local: contextlib.ExitStack) -> None:
    env, agent = shared, shared.agent
    guids = (0x0C42A1030017E000, 0x0C42A1030017F000)
    publishers = [env.publisher(f"host-c{n}", host_tree(env.workdir, f"host-c{n}", guid), "host-c", stack=local)
                  for n, guid in enumerate(guids)]
    for guid in guids:
        agent.wait_for(f"node {guid:016x} ({DESCRIPTION}) joins the fabric")
    # Their default client ids differ in the node each publishes from.
    names = {re.search(r" as (\S+), fabric",  # type: ignore[union-attr]  # every one logs it
                       p.text()).group(1) for p in publishers}
    assert names == {f"ibsnmp-publisher-{FABRIC_ID}-{socket.gethostname()}-{guid:016x}" for guid in guids}
    # While each publisher refreshes its node's retained state three times
    # more (every 2 s), both nodes are served at every read.
    def states(got: list[Received]) -> list[int]:
        return [sum(r.topic.endswith(f"/node/{guid:016x}/state") for r in got) for guid in guids]

    before = states(env.spy.received())
    watch = Watch(agent, {f"{guid:016x}": DESCRIPTION for guid in guids})
    watch.start()
    try:
        env.spy.wait_for(lambda got: bool(watch.wrong) or all(
            now >= then + 3 for now, then in zip(states(got), before)), timeout=30)
    finally:
        watch.stop()
    assert watch.rounds >= 5 and watch.wrong == []
    for guid in guids:
        assert not env.lines(f"node {guid:016x} leaves the fabric")
    for publisher in publishers:
        assert publisher.text().count("connected to") == 1 and "ERROR" not in publisher.text()


def test_one_client_id_used_twice_is_an_error_in_both(shared: Shared,
                                                      local: contextlib.ExitStack) -> None:
    env = shared
    publishers = [env.publisher(f"host-d{n}", host_tree(env.workdir, f"host-d{n}", guid), "host-d",
                                "--client-id", "host-d-twice", stack=local)
                  for n, guid in enumerate((0x0C42A10300180000, 0x0C42A10300190000))]
    for publisher in publishers:
        publisher.wait_for("another client probably connects with the same client id 'host-d-twice'", timeout=60)
        (line,) = [line for line in publisher.text().splitlines() if "same client id" in line]
        assert " ERROR " in line


# -- the shipped configuration, and every command of docs/mqtt-security.md ---------------------------

DOC = PROJECT_ROOT / "docs" / "mqtt-security.md"
# The machines the page's shell blocks run on (each block's first line says which).
MACHINES = {"# on the broker": "broker", "# on host17": "host17", "# on the management node": "manager"}
PKI = "root/ibsnmp-pki"  # the page's working directory on the broker, under the broker's root
# What a machine is given from the broker before its first block (the page says so in prose).
GIVEN = {"host17": "host17", "manager": "aggregator"}


@dataclass(frozen=True)
class Block:
    machine: str
    text: str  # without its first line


def _page_blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)


def _shell_blocks() -> list[Block]:
    blocks = []
    for text in _page_blocks("sh"):
        first, _, rest = text.partition("\n")
        assert first in MACHINES, f"a shell block of {DOC.name} must say where it runs: {first!r}"
        blocks.append(Block(MACHINES[first], rest))
    return blocks


def _on(root: Path, text: str, port: int | None = None) -> str:
    """The page's `text` as it runs on a machine whose / is `root`: /etc,
    /var, /run and /root under it, the broker at localhost (the name in its
    certificate too) on `port`, examples/ from this source tree."""
    text = text.replace("examples/mosquitto/", f"{PROJECT_ROOT}/examples/mosquitto/")
    if port is not None:
        text = re.sub(r"(?<=[/@])broker\.example\.org", f"localhost:{port}", text)
    text = text.replace("broker.example.org", "localhost")
    return re.sub(r"(?<![\w.-])/(etc|var|run|root)/", lambda m: f"{root}/{m.group(1)}/", text)


def _ibsnmp_commands(block: Block) -> list[list[str]]:
    """The `ibsnmp ...` commands of a block, each as its arguments after `ibsnmp`."""
    lines = block.text.replace("\\\n", " ").splitlines()
    assert all(line.startswith("ibsnmp ") for line in lines), block
    return [shlex.split(line)[1:] for line in lines]


@dataclass
class Machines:
    """The page's shell commands run, in order, each on its machine: a
    directory standing for that machine's /, the broker's laid out as
    Debian's mosquitto package leaves it (mosquitto's own directories
    owned by its user, who reads the rest once it has dropped root)."""

    roots: dict[str, Path]
    checks: list[Block]  # what the page says to look at once something happened
    commands: list[tuple[str, list[str]]]  # (machine, arguments after `ibsnmp`), in the page's order
    toml: str  # the management node's configuration file

    def run(self, machine: str, script: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-euo", "pipefail", "-c", _on(self.roots[machine], script)],
                              cwd=self.roots[machine], capture_output=True, text=True, input=stdin, timeout=60)

    def command(self, machine: str, flag: str, port: int) -> list[str]:
        """The page's ibsnmp command on `machine` with `flag`, for the broker on `port`."""
        (args,) = [args for name, args in self.commands if name == machine and flag in args]
        return [_on(self.roots[machine], arg, port) for arg in args]

    def pki(self, name: str) -> Path:
        return self.roots["broker"] / PKI / name

    def broker(self, workdir: Path, *, certificates: bool) -> Mosquitto:
        """mosquitto with the installed mosquitto.conf on a free port of
        127.0.0.1, its debug log on (as the page says, to see refusals),
        with client certificates instead of passwords if asked; its state
        and log of an earlier start gone."""
        root = self.roots["broker"]
        for old in ("var/lib/mosquitto/mosquitto.db", "var/log/mosquitto/mosquitto.log"):
            (root / old).unlink(missing_ok=True)
        text = (root / "etc/mosquitto/mosquitto.conf").read_text()
        changes = {"listener 8883": "listener {port} 127.0.0.1", "#log_type debug": "log_type debug"}
        if certificates:
            changes.update({f"#{line}": line for line in ("require_certificate true", "use_identity_as_username true")})
        for old, new in changes.items():
            assert f"\n{old}\n" in text, old
            text = text.replace(f"\n{old}\n", f"\n{new}\n")
        text = _on(root, text)
        broker = Mosquitto(workdir, config=lambda port: text.replace("{port}", str(port)))
        broker.log = root / "var/log/mosquitto/mosquitto.log"
        return broker


@pytest.fixture(scope="module")
def machines() -> Iterator[Machines]:
    if os.getuid() != 0:
        pytest.skip("the page's broker commands are run as root")
    try:
        mosquitto_user = pwd.getpwnam("mosquitto")
    except KeyError:
        pytest.skip("no user mosquitto: the page is for a broker with the mosquitto package installed")
    # Outside pytest's own 0700 directories, so that mosquitto can reach its files.
    top = Path(tempfile.mkdtemp(prefix="ibsnmp-mqtt-doc-"))
    try:
        top.chmod(0o755)
        roots = {name: top / name for name in ("broker", "host17", "manager")}
        for root in roots.values():
            (root / "root").mkdir(parents=True)
            root.chmod(0o755)
        (roots["broker"] / "etc/mosquitto/certs").mkdir(parents=True)
        for owned in ("var/lib/mosquitto", "var/log/mosquitto", "run/mosquitto"):
            (roots["broker"] / owned).mkdir(parents=True)
            os.chown(roots["broker"] / owned, mosquitto_user.pw_uid, mosquitto_user.pw_gid)
        page = Machines(roots, [], [], "")
        given: set[str] = set()
        for block in _shell_blocks():
            if block.text.startswith("ibsnmp "):
                page.commands += [(block.machine, args) for args in _ibsnmp_commands(block)]
            elif block.text.startswith("grep "):
                page.checks.append(block)
            else:
                if block.machine in GIVEN and block.machine not in given:
                    given.add(block.machine)
                    user = GIVEN[block.machine]
                    for name in ("ca.crt", f"{user}.password", f"{user}.crt", f"{user}.key"):
                        shutil.copy(page.pki(name), roots[block.machine] / name)
                done = page.run(block.machine, block.text)
                assert done.returncode == 0, (block, done.stdout, done.stderr)
        (page.toml,) = _page_blocks("toml")
        assert given == set(GIVEN) and len(page.commands) == 3 and len(page.checks) == 1
        yield page
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_the_page_shows_the_shipped_acl(machines: Machines) -> None:
    installed = machines.roots["broker"] / "etc/mosquitto"
    assert (installed / "acl").read_text() == ACL.read_text()
    assert (installed / "mosquitto.conf").read_text() == (ACL.parent / "mosquitto.conf").read_text()
    rules = "".join(line + "\n" for line in ACL.read_text().splitlines() if line and not line.startswith("#"))
    assert rules.replace("\n", "") in [block.replace("\n", "") for block in _page_blocks("text")]


def test_the_shipped_broker_with_passwords_over_tls(machines: Machines, tmp_path: Path,
                                                    local: contextlib.ExitStack) -> None:
    # A user added by hand, as the page says: mosquitto_passwd asks for the password (twice).
    (by_hand,) = re.findall(r"`(mosquitto_passwd /etc/mosquitto/passwd \w+)`", DOC.read_text())
    assert machines.run("broker", by_hand, stdin="host19-secret\nhost19-secret\n").returncode == 0
    broker = machines.broker(tmp_path, certificates=False).start()
    local.callback(broker.stop)
    port = broker.port
    host17 = machines.roots["host17"]
    publisher = Process(tmp_path / "host17.log", *machines.command("host17", "--broker-password-file", port),
                        "--sysfs-root", str(host_tree(tmp_path, "host17-sysfs", A)), "--poll-interval", "0.5",
                        *PUBLISH_TIMING)
    local.callback(publisher.stop)
    config = tmp_path / "ibsnmp.toml"
    config.write_text(_on(machines.roots["manager"], machines.toml, port))
    agent = Agent(tmp_path / "aggregator.log", "--config", str(config))
    local.callback(agent.stop)
    agent.wait_for("ibsnmp: serving")
    agent.warm_up()
    agent.wait_for(f"node {A:016x} ({DESCRIPTION}) joins the fabric")
    assert agent.get(f"{A:016x}", NODE_DESCRIPTION) == DESCRIPTION
    assert f"connected to mqtts://host17@localhost:{port}" in publisher.text()
    assert host17.joinpath("etc/ibsnmp/broker-password").stat().st_mode & 0o777 == 0o600
    # host18 writes under host17's name: mosquitto refuses it, as the page's check shows.
    tls = ssl.create_default_context(cafile=str(machines.pki("ca.crt")))
    password = machines.pki("host18.password").read_text().strip()
    host18 = MqttClient(port, "host18-forger", user="host18", password=password, tls=tls, host="localhost")
    local.callback(host18.close)
    theirs = topics.PublisherTopics("default", topics.Publisher("host17", f"ibsnmp-publisher-default-"
                                                                          f"{socket.gethostname()}-{A:016x}"))
    host18.publish(theirs.status, topics.OFFLINE, retain=True)
    (check,) = machines.checks
    assert _until(lambda: machines.run("broker", check.text).returncode == 0)
    denied = machines.run("broker", check.text).stdout
    assert f"Denied PUBLISH from host18-forger (d0, q1, r1, m1, '{theirs.status}'" in denied
    assert agent.get(f"{A:016x}", NODE_DESCRIPTION) == DESCRIPTION
    # The user added by hand logs in; a wrong password does not.
    MqttClient(port, "host19", user="host19", password="host19-secret", tls=tls, host="localhost").close()
    with pytest.raises(AssertionError, match="did not accept"):
        MqttClient(port, "host19-bad", user="host19", password="wrong", tls=tls, host="localhost")


def test_the_shipped_broker_with_client_certificates(machines: Machines, tmp_path: Path,
                                                     local: contextlib.ExitStack) -> None:
    broker = machines.broker(tmp_path, certificates=True).start()
    local.callback(broker.stop)
    port = broker.port
    publisher = Process(tmp_path / "host17.log", *machines.command("host17", "--broker-cert", port),
                        "--sysfs-root", str(host_tree(tmp_path, "host17-sysfs", A)), "--poll-interval", "0.5",
                        *PUBLISH_TIMING)
    local.callback(publisher.stop)
    run = machines.command("manager", "--broker-cert", port)
    assert run[0] == "run"
    agent = Agent(tmp_path / "aggregator.log", *run[1:])
    local.callback(agent.stop)
    agent.wait_for("ibsnmp: serving")
    agent.warm_up()
    agent.wait_for(f"node {A:016x} ({DESCRIPTION}) joins the fabric")
    assert agent.get(f"{A:016x}", NODE_DESCRIPTION) == DESCRIPTION
    # The certificate's name is the owner, in the topic the ACL let it write.
    tls = ssl.create_default_context(cafile=str(machines.pki("ca.crt")))
    tls.load_cert_chain(str(machines.pki("aggregator.crt")), str(machines.pki("aggregator.key")))
    reader = MqttClient(port, "reader", tls=tls, host="localhost")
    local.callback(reader.close)
    reader.subscribe("ibsnmp/v2/#")
    state = f"ibsnmp/v2/default/host17/ibsnmp-publisher-default-{socket.gethostname()}-{A:016x}/node/{A:016x}/state"
    reader.wait_for(lambda got: any(r.topic == state for r in got))
    # Without a certificate there is no connection at all.
    with pytest.raises((AssertionError, OSError)):
        MqttClient(port, "no-certificate", tls=ssl.create_default_context(cafile=str(machines.pki("ca.crt"))),
                   host="localhost")

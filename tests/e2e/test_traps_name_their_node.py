"""Every notification names its node, in SNMPv1 and v2c too, as a real
snmptrapd shows it with only the MIBs ibsnmp ships: linkDown / linkUp end
with ifName.n, ifAlias.n, ibSmaNodeGuid.0 and ibSmaNodeString.0, trap 128
with the node's GUID and description after its ibSmaNodeLid.0, each with
the value a GET of it reads in the node's context; and ifLastChange, read
right after the linkDown that reports the change, is not later than that
linkDown's sysUpTime."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.support.e2e import RunningAgent, ibsnmp_agent, varbinds
from tests.support.link_ends import leaf_to_host
from tests.support.trapd import AGENT_USERS, Received, TrapReceiver

from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.model import Port

SPEC = "fat-tree:spines=2,leaves=2,hosts=2"
SEED = 3
LINK_DOWN = "OID: IF-MIB::linkDown"
TRAP_128 = "OID: SMA-MIB::ibSmaPortLinkStateChange"
NAMES = ("IF-MIB::ifName", "IF-MIB::ifAlias")
NODE = ("SMA-MIB::ibSmaNodeGuid.0", "SMA-MIB::ibSmaNodeString.0")
# Per receiver: leaf01's trap 128, then a linkDown from each end of the link.
PER_RECEIVER = 3


@dataclass(frozen=True)
class Seen:
    """What the receivers got for one port going down, and what GETs read
    in each end's context right after: `reads[guid][name] = value`."""

    v2c: list[Received]
    v1: list[Received]
    reads: dict[int, dict[str, str]]
    leaf: Port
    host: Port


def scenario(port: Port) -> str:
    """leaf01's port down 6 s after the provider starts (after the agent is
    up), and not up again while the test runs."""
    return (f'[scenario]\ntime_scale = 0.2\n\n[[event]]\nat = 30\naction = "port-down"\n'
            f'node = "leaf01"\nport = {port.num}\nup_after = 600\n')


def config(receiver: TrapReceiver) -> str:
    targets = "".join(f'\n[[trap_target]]\naddress = "{receiver.address}"\nversion = "{v}"\n'
                      for v in ("2c", "1"))
    return AGENT_USERS + targets


def read_in_context(agent: RunningAgent, port: Port) -> dict[str, str]:
    """ifLastChange, the names and the node's objects, read in the context of
    the port's node."""
    n = port.num
    result = agent.snmp("snmpget", "-v2c", "-c", f"public@{port.node_guid:016x}",
                        f"IF-MIB::ifLastChange.{n}", *(f"{name}.{n}" for name in NAMES), *NODE)
    assert result.returncode == 0, result.stderr
    return {name: value.strip() for name, value in varbinds(result.stdout)}


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seen]:
    work = tmp_path_factory.mktemp("named")
    fabric = build_fabric(SPEC, seed=SEED)
    leaf, host = leaf_to_host(fabric)
    (work / "down.toml").write_text(scenario(leaf))
    with TrapReceiver(work / "trapd") as receiver:
        (work / "ibsnmp.toml").write_text(config(receiver))
        with ibsnmp_agent("--config", str(work / "ibsnmp.toml"), "--scenario",
                          str(work / "down.toml"), fabric=SPEC, seed=SEED) as agent:
            got = wait_for_events(receiver, 2 * PER_RECEIVER)
            reads = {port.node_guid: read_in_context(agent, port) for port in (leaf, host)}
    yield Seen([r for r in got if r.version == "v2c"], [r for r in got if r.version == "v1"],
               reads, leaf, host)


def wait_for_events(receiver: TrapReceiver, count: int, timeout: float = 30.0) -> list[Received]:
    """The first `count` notifications but the agent's coldStarts."""
    deadline = time.monotonic() + timeout
    while True:
        got = [r for r in receiver.received()
               if r.trap_oid != "OID: SNMPv2-MIB::coldStart" and (r.version, r.generic) != ("v1", "0")]
        if len(got) >= count or time.monotonic() > deadline:
            assert len(got) == count, got
            return got
        time.sleep(0.05)


def guid_text(guid: int) -> str:
    return f"STRING: {guid:016x}"


def if_index(received: Received) -> int:
    (name,) = (name for name, _ in received.varbinds if name.startswith("IF-MIB::ifIndex."))
    return int(name.rpartition(".")[2])


def link_down_of(received: list[Received], port: Port) -> Received:
    """The linkDown that speaks for `port`'s node."""
    (found,) = (r for r in received if r.value(NODE[0]) == guid_text(port.node_guid)
                and (r.trap_oid == LINK_DOWN or r.generic == "2"))
    return found


def names_and_node(received: Received, n: int) -> list[tuple[str, str]]:
    """The varbinds after linkDown's OBJECTS (ifIndex, ifAdminStatus, ifOperStatus)."""
    binds = [b for b in received.varbinds if not b[0].startswith("SNMPv2-MIB::")]
    assert [name for name, _ in binds[:3]] == [
        f"IF-MIB::ifIndex.{n}", f"IF-MIB::ifAdminStatus.{n}", f"IF-MIB::ifOperStatus.{n}"]
    return binds[3:]


@pytest.mark.parametrize("version", ["v2c", "v1"])
def test_a_link_down_names_its_node(seen: Seen, version: str) -> None:
    received = seen.v2c if version == "v2c" else seen.v1
    for port, name in ((seen.leaf, f"leaf01/{seen.leaf.num}"), (seen.host, None)):
        down = link_down_of(received, port)
        n = port.num
        assert if_index(down) == n
        after = names_and_node(down, n)
        assert [key for key, _ in after] == [f"{NAMES[0]}.{n}", f"{NAMES[1]}.{n}", *NODE], down
        values = dict(after)
        if name is not None:
            assert values[f"IF-MIB::ifName.{n}"] == f"STRING: {name}"
        assert values[NODE[0]] == guid_text(port.node_guid)
        # Each has the value a GET of it reads in the node's context.
        reads = seen.reads[port.node_guid]
        assert {key: value.strip() for key, value in after} == {key: reads[key] for key in values}


def test_two_nodes_port_numbers_are_told_apart(seen: Seen) -> None:
    """The issue's case: the same community and agent address, told apart
    by the node's GUID and name."""
    downs = [link_down_of(seen.v2c, port) for port in (seen.leaf, seen.host)]
    assert {r.security for r in downs} == {"TRAP2, SNMP v2c, community public"}
    assert len({(r.value(NODE[0]), r.value(NODE[1])) for r in downs}) == 2


@pytest.mark.parametrize("version", ["v2c", "v1"])
def test_trap_128_names_its_node(seen: Seen, version: str) -> None:
    received = seen.v2c if version == "v2c" else seen.v1
    (trap,) = (r for r in received if r.trap_oid == TRAP_128 or (r.generic, r.specific) == ("6", "1"))
    binds = [b for b in trap.varbinds if not b[0].startswith("SNMPv2-MIB::")]
    # Its OBJECTS first, as SMA-MIB defines them, then the node.
    assert [name for name, _ in binds] == ["SMA-MIB::ibSmaNodeLid.0", *NODE]
    assert dict(binds)[NODE[0]] == guid_text(seen.leaf.node_guid)
    assert dict(binds)[NODE[1]] == "STRING: leaf01"
    reads = seen.reads[seen.leaf.node_guid]
    assert [dict(binds)[name] for name in NODE] == [reads[name] for name in NODE]


def ticks(value: str) -> int:
    """`Timeticks: (566) 0:00:05.66` -> 566."""
    match = re.match(r"Timeticks: \((\d+)\)", value)
    assert match, value
    return int(match[1])


def test_if_last_change_is_not_later_than_its_link_down(seen: Seen) -> None:
    for port in (seen.leaf, seen.host):
        down = link_down_of(seen.v2c, port)
        last_change = ticks(seen.reads[port.node_guid][f"IF-MIB::ifLastChange.{port.num}"])
        assert 0 < last_change <= ticks(down.value("SNMPv2-MIB::sysUpTime.0")), down

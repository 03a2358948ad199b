"""IF-MIB end to end: `ibsnmp run` read by net-snmp's clients with the stock IF-MIB names.

One agent serves a small simulated fat-tree; the same spec and seed rebuilt
here say what each switch and host has.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.e2e import READ_CONFIG, V3_AUTH_PRIV, RunningAgent, assert_ok, ibsnmp_agent, varbinds
from tests.support.narrow import present
from tests.support.waiting import wait_for

from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.interfaces import interface_ports, oper_status
from ibsnmp.fabric.model import Fabric, Node
from ibsnmp.mib.targets import context_name

SPEC = "fat-tree:spines=2,leaves=2,hosts=2"
SEED = 5
CONFIG = READ_CONFIG + """
[[community]]
name = "private"
access = "write"
"""
# The order a walk of the whole agent meets the groups in.
GROUPS = (("system", (1, 3, 6, 1, 2, 1, 1)), ("interfaces", (1, 3, 6, 1, 2, 1, 2)),
          ("snmp", (1, 3, 6, 1, 2, 1, 11)), ("ifMIB", (1, 3, 6, 1, 2, 1, 31)),
          ("infiniband", (1, 3, 6, 1, 3, 117)), ("snmpModules", (1, 3, 6, 1, 6, 3)))


@pytest.fixture(scope="module")
def fabric() -> Fabric:
    return build_fabric(SPEC, seed=SEED)


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningAgent]:
    config = tmp_path_factory.mktemp("config") / "ibsnmp.toml"
    config.write_text(CONFIG)
    with ibsnmp_agent("--config", str(config), fabric=SPEC, seed=SEED) as running:
        yield running


def a_switch(fabric: Fabric) -> Node:
    return next(n for n in sorted(fabric.nodes.values(), key=lambda n: n.guid) if n.is_switch)


def by_column(output: str) -> dict[str, dict[int, str]]:
    """'IF-MIB::ifName' -> {ifIndex: value} from net-snmp output."""
    table: dict[str, dict[int, str]] = {}
    for name, value in varbinds(output):
        column, _, index = name.rpartition(".")
        table.setdefault(column, {})[int(index)] = value
    return table


def test_a_switch_context_shows_its_ports_like_a_switch(agent: RunningAgent, fabric: Fabric) -> None:
    switch = a_switch(fabric)
    community = f"public@{context_name(switch.guid)}"
    first = by_column(assert_ok(agent.snmp("snmpwalk", "-v2c", "-c", community, "IF-MIB::ifXTable")))
    ports = interface_ports(switch)
    assert first["IF-MIB::ifName"] == {p.num: f"STRING: {switch.description}/{p.num}" for p in ports}
    up = [p.num for p in ports if oper_status(p) == 1]
    assert up and len(up) < len(ports)  # some ports are linked, some are not
    for num in up:
        assert first["IF-MIB::ifHighSpeed"][num].startswith("Gauge32: ")
        assert int(first["IF-MIB::ifHighSpeed"][num].split()[1]) >= 10_000
        remote = present(present(switch.port(num)).remote)
        peer = fabric.nodes[remote.guid]
        assert first["IF-MIB::ifAlias"][num] == f"STRING: {peer.description}/{remote.port}"
    assert all(v.startswith("Counter64: ") for v in first["IF-MIB::ifHCInOctets"].values())
    columns = ("IF-MIB::ifHCInOctets", "IF-MIB::ifHCOutOctets", "IF-MIB::ifHCInUcastPkts")

    def moved() -> dict[str, dict[int, str]] | None:
        """A later walk in which every column counted on some linked port."""
        later = by_column(assert_ok(agent.snmp("snmpbulkwalk", "-v2c", "-c", community,
                                                "IF-MIB::ifXTable")))
        counted = all(any(int(later[column][i].split()[1]) > int(first[column][i].split()[1])
                          for i in up) for column in columns)
        return later if counted else None

    second = wait_for(moved, 10, "the linked ports' counters to move")
    for column in columns:
        before = {i: int(v.split()[1]) for i, v in first[column].items()}
        after = {i: int(v.split()[1]) for i, v in second[column].items()}
        assert after.keys() == before.keys() == {p.num for p in ports}
        assert all(after[i] >= before[i] for i in before), column
        assert any(after[i] > before[i] for i in up), column
    table = by_column(assert_ok(agent.snmp("snmpbulkwalk", "-v2c", "-c", community, "IF-MIB::ifTable")))
    assert set(table["IF-MIB::ifType"].values()) == {"INTEGER: infiniband(199)"}
    assert {table["IF-MIB::ifOperStatus"][n] for n in up} == {"INTEGER: up(1)"}
    number = agent.snmp("snmpget", "-v2c", "-c", community, "-Oqv", "IF-MIB::ifNumber.0")
    assert assert_ok(number).strip() == str(len(ports))


def test_snmpv3_reads_a_node_context(agent: RunningAgent, fabric: Fabric) -> None:
    switch = a_switch(fabric)
    out = assert_ok(agent.snmp("snmpbulkwalk", *V3_AUTH_PRIV, "-n", context_name(switch.guid),
                               "IF-MIB::ifName"))
    assert [value for _, value in varbinds(out)] == [
        f"STRING: {switch.description}/{p.num}" for p in interface_ports(switch)]


def test_if_mib_objects_are_not_writable(agent: RunningAgent, fabric: Fabric) -> None:
    community = f"private@{context_name(a_switch(fabric).guid)}"
    for name, kind, value in (("IF-MIB::ifAdminStatus.1", "i", "2"), ("IF-MIB::ifAlias.1", "s", "x")):
        done = agent.snmp("snmpset", "-v2c", "-c", community, name, kind, value)
        assert done.returncode != 0 and "notWritable" in done.stderr, (name, done.stderr)
    status = agent.snmp("snmpget", "-v2c", "-c", "public@" + context_name(a_switch(fabric).guid),
                        "-Oqv", "IF-MIB::ifAdminStatus.1")
    assert assert_ok(status).strip() == "up"


def walked_oids(output: str) -> list[tuple[int, ...]]:
    return [tuple(int(arc) for arc in name.strip(".").split(".")) for name, value in varbinds(output)
            if name.startswith(".") and not value.startswith("No more variables")]


def group_order(oids: list[tuple[int, ...]]) -> list[str]:
    order: list[str] = []
    for oid in oids:
        for label, root in GROUPS:
            if oid[: len(root)] == root and (not order or order[-1] != label):
                order.append(label)
    return order


@pytest.mark.parametrize("tool,version", [("snmpbulkwalk", "2c"), ("snmpwalk", "1")])
def test_a_walk_of_everything_is_in_order(agent: RunningAgent, fabric: Fabric, tool: str,
                                          version: str) -> None:
    # Without -Cc, net-snmp itself fails a walk whose OIDs do not increase.
    out = assert_ok(agent.snmp(tool, f"-v{version}", "-c", "public", "-On", ".1", timeout=300))
    oids = walked_oids(out)
    assert all(a < b for a, b in zip(oids, oids[1:]))
    assert group_order(oids) == [label for label, _ in GROUPS]
    hc = [oid for oid in oids if oid[:10] == (1, 3, 6, 1, 2, 1, 31, 1, 1, 1) and 6 <= oid[10] <= 13]
    assert bool(hc) is (version == "2c")  # SNMPv1 steps over Counter64 (RFC 2576)


def test_link_traps_off_shows_in_if_link_up_down_trap_enable(tmp_path: Path, fabric: Fabric) -> None:
    config = tmp_path / "ibsnmp.toml"
    config.write_text(READ_CONFIG + "\n[traps]\nif_mib = false\n")
    community = f"public@{context_name(a_switch(fabric).guid)}"
    with ibsnmp_agent("--config", str(config), fabric=SPEC, seed=SEED) as running:
        def trap_enable() -> str:
            done = running.snmp("snmpget", "-v2c", "-c", community, "-Oqv",
                                "IF-MIB::ifLinkUpDownTrapEnable.1")
            return assert_ok(done).strip()

        assert trap_enable() == "disabled"
        config.write_text(READ_CONFIG)  # a reload turns them on again
        running.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 20
        while trap_enable() != "enabled" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert trap_enable() == "enabled"

"""A node's own system group in its context: sysName (the node's name),
sysDescr (what it is), sysObjectID (its kind); the default context keeps
the agent's; nothing of it is writable in a node's context."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support import sysfs_trees as trees
from tests.support.e2e import RunningAgent, assert_ok, ibsnmp_agent, varbinds
from tests.support.fast_diff import TwoPaths, assert_same_response
from tests.support.narrow import present
from tests.support.wire import community_request, decode_response

from ibsnmp.mib.node_identity import AGENT_OBJECT_ID, NODE_OBJECT_IDS
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.iba import NodeType
from ibsnmp.fabric.model import Fabric, Node
from ibsnmp.fabric.naming import node_name, node_summary
from ibsnmp.mqtt.codec import decode_state, encode_state, record_of
from ibsnmp.providers.simulated import SimulatedProvider
from ibsnmp.providers.sysfs import build_fabric as sysfs_fabric
from ibsnmp.providers.sysfs_read import SysfsReader

SPEC = "fat-tree:spines=2,leaves=2,hosts=2"
SEED = 1
SYSTEM = (1, 3, 6, 1, 2, 1, 1)
SYS_DESCR, SYS_OBJECT_ID, SYS_NAME = SYSTEM + (1, 0), SYSTEM + (2, 0), SYSTEM + (5, 0)
USER = ("operator", "operator-auth-pass", "operator-priv-pass")
CONFIG = f"""
[[community]]
name = "public"

[[community]]
name = "private"
access = "write"

[[user]]
name = "{USER[0]}"
auth = "SHA256"
auth_key = "{USER[1]}"
priv = "AES"
priv_key = "{USER[2]}"
"""
V3 = ["-v3", "-l", "authPriv", "-u", USER[0], "-a", "SHA-256", "-A", USER[1], "-x", "AES",
      "-X", USER[2]]
NOT_WRITABLE = "notWritable"


@pytest.fixture(scope="module")
def fabric() -> Fabric:
    return build_fabric(SPEC, seed=SEED)


def first(fabric: Fabric, kind: NodeType) -> Node:
    return min((node for node in fabric.nodes.values() if node.node_type is kind),
               key=lambda node: node.guid)


def described(fabric: Fabric, description: str) -> Node:
    (node,) = (node for node in fabric.nodes.values() if node.description == description)
    return node


# -- the naming rule ------------------------------------------------------------------


def test_a_ca_is_named_by_its_host_a_switch_by_its_description(fabric: Fabric) -> None:
    ca, switch = first(fabric, NodeType.CA), first(fabric, NodeType.SWITCH)
    assert node_name(dataclasses.replace(ca, description="node-17 mlx5_0")) == "node-17"
    assert node_name(dataclasses.replace(ca, description="node-17 HCA-1")) == "node-17"
    assert node_name(dataclasses.replace(switch, description="MF0;ib-sw-3:MQM8700/U1")) \
        == "MF0;ib-sw-3:MQM8700/U1"
    assert node_name(dataclasses.replace(switch, description="leaf 07 row B")) == "leaf 07 row B"
    for node in (ca, switch):
        for unread in (None, "", "   "):
            assert node_name(dataclasses.replace(node, description=unread)) == f"{node.guid:016x}"


def test_sys_descr_names_only_what_was_read(fabric: Fabric) -> None:
    switch = first(fabric, NodeType.SWITCH)
    assert node_summary(switch) == ("InfiniBand switch Switch-IB 2 (MT53000), vendor 0x0002c9, "
                                    "device 0xcf08, revision 0x00")
    bare = dataclasses.replace(first(fabric, NodeType.CA), vendor_id=None, revision=None,
                               model_name="")
    assert node_summary(bare) == f"InfiniBand channel adapter, device 0x{bare.device_id:04x}"


def test_a_sysfs_host_names_its_firmware_also_through_mqtt(tmp_path: Path) -> None:
    trees.mlx5_two_port(tmp_path)
    host, _ = sysfs_fabric(SysfsReader(tmp_path).read(full=True))
    assert host is not None
    node = host.nodes[trees.MLX_NODE_GUID]
    assert node_name(node) == "node01"  # NodeDescription "node01 HCA-1"
    assert node_summary(node) == ("InfiniBand channel adapter MT4123, vendor 0x0002c9, "
                                  "device 0x101b, revision 0x00, firmware 20.31.1014")
    record = decode_state(encode_state(record_of(host, node, 1.0, 0.0)), node.guid)
    assert node_summary(record.node) == node_summary(node)


def test_object_ids_per_kind_are_distinct_and_under_the_agents_arc() -> None:
    assert AGENT_OBJECT_ID == (1, 3, 6, 1, 3, 117, 3)
    assert NODE_OBJECT_IDS == {NodeType.CA: AGENT_OBJECT_ID + (4, 1),
                               NodeType.SWITCH: AGENT_OBJECT_ID + (4, 2),
                               NodeType.ROUTER: AGENT_OBJECT_ID + (4, 3)}


# -- both responders ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def paths() -> TwoPaths:
    return TwoPaths(SimulatedProvider(SPEC, SEED, watch_interval=0))


def community_of(context: bytes) -> str:
    return "public" + ("@" + context.decode() if context else "")


def test_fast_and_pysnmp_paths_answer_the_same_in_every_context(paths: TwoPaths) -> None:
    fabric = paths.provider.snapshot
    for context in paths.contexts():
        community = community_of(context)
        requests = (community_request("get", [SYS_DESCR, SYS_OBJECT_ID, SYS_NAME],
                                      community=community),
                    community_request("next", [SYSTEM + (1,), SYSTEM + (2,), SYSTEM + (4, 0)],
                                      community=community),
                    community_request("bulk", [SYSTEM], max_repetitions=7, community=community))
        for data in requests:
            slow, fast = paths.pysnmp(data), paths.fast(data)
            assert_same_response(data, slow, fast)
        assert fast is not None
        values = {oid: value for oid, value in decode_response(present(paths.fast(requests[0])))[3]}
        name = bytes(values["1.3.6.1.2.1.1.5.0"]).decode()
        object_id = tuple(values["1.3.6.1.2.1.1.2.0"])
        if context:
            node = fabric.nodes[int(context, 16)]
            assert name == node_name(node)
            assert bytes(values["1.3.6.1.2.1.1.1.0"]).decode() == node_summary(node)
            assert object_id == NODE_OBJECT_IDS[node.node_type]
        else:
            assert name == "ibsnmp-test" and object_id == AGENT_OBJECT_ID


# -- net-snmp, v2c and v3 -----------------------------------------------------------------


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningAgent]:
    config = tmp_path_factory.mktemp("config") / "ibsnmp.toml"
    config.write_text(CONFIG)
    with ibsnmp_agent("--config", str(config), fabric=SPEC, seed=SEED) as running:
        yield running


def system_of(agent: RunningAgent, *args: str) -> dict[str, str]:
    out = assert_ok(agent.snmp("snmpget", *args, "SNMPv2-MIB::sysName.0",
                               "SNMPv2-MIB::sysDescr.0", "SNMPv2-MIB::sysObjectID.0"))
    return {name.split("::")[1]: value for name, value in varbinds(out)}


@pytest.mark.parametrize(("description", "name", "kind"), [
    ("leaf01", "leaf01", NodeType.SWITCH), ("host001 HCA-1", "host001", NodeType.CA)])
def test_net_snmp_reads_the_nodes_own_system_group(agent: RunningAgent, fabric: Fabric,
                                                   description: str, name: str,
                                                   kind: NodeType) -> None:
    node = described(fabric, description)
    expected = {"sysName.0": f"STRING: {name}",
                "sysDescr.0": f"STRING: {node_summary(node)}",
                "sysObjectID.0": f"OID: SMA-MIB::ibSmaMIB.4.{int(kind)}"}
    context = f"{node.guid:016x}"
    assert system_of(agent, "-v2c", "-c", f"public@{context}") == expected
    assert system_of(agent, *V3, "-n", context) == expected


def test_the_default_context_keeps_the_agents_own(agent: RunningAgent) -> None:
    for args in (("-v2c", "-c", "public"), (*V3,)):
        values = system_of(agent, *args)
        assert values["sysObjectID.0"] == "OID: SMA-MIB::ibSmaMIB"
        assert values["sysDescr.0"].startswith("STRING: ibsnmp ")
        assert values["sysName.0"] not in ("STRING: leaf01", "STRING: host001")


def test_a_set_in_a_nodes_context_is_not_writable(agent: RunningAgent, fabric: Fabric) -> None:
    switch = f"{described(fabric, 'leaf01').guid:016x}"
    for name in ("sysName.0", "sysContact.0", "sysLocation.0"):
        result = agent.snmp("snmpset", "-v2c", "-c", f"private@{switch}",
                            f"SNMPv2-MIB::{name}", "s", "renamed")
        assert result.returncode != 0 and NOT_WRITABLE in result.stderr, result.stderr
    assert system_of(agent, "-v2c", "-c", f"public@{switch}")["sysName.0"] == "STRING: leaf01"
    # The default context's stays writable, and a node's name does not follow it.
    assert_ok(agent.snmp("snmpset", "-v2c", "-c", "private", "SNMPv2-MIB::sysName.0", "s",
                         "agent-host"))
    assert system_of(agent, "-v2c", "-c", "public")["sysName.0"] == "STRING: agent-host"
    assert system_of(agent, "-v2c", "-c", f"public@{switch}")["sysName.0"] == "STRING: leaf01"

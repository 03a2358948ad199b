"""Objects that must have instances from the start, read over SNMP from a
running agent: the ibSmPartitionConfig operands read their initial values,
and a host's default context lists every CA of the host in IB-CA-MIB."""

from __future__ import annotations

from pathlib import Path

from tests.support import sysfs_trees as trees
from tests.support.e2e import assert_ok, ibsnmp_agent, varbinds
from pysnmp.proto import rfc1902
from tests.support.wire import community_request, decode_response, exchange

from ibsnmp.mib.loader import definitions

READ = ["-v2c", "-c", "public", "-On"]


def oid(name: str, *index: int) -> str:
    return ".".join(map(str, definitions().objects[name].oid + index))


def column(name: str) -> str:
    """A column's OID as net-snmp tools take it (leading dot)."""
    return "." + oid(name)


def scalar_values(address: str, names: list[str]) -> list[bytes | int]:
    answer = exchange(address, community_request("get", [oid(n, 0) for n in names]), timeout=5.0)
    assert answer is not None
    _, status, _, found = decode_response(answer)
    assert status == 0
    return [bytes(v) if hasattr(v, "asOctets") else int(v) for _, v in found]


def test_partition_config_operands_read_their_initial_values(tmp_path: Path) -> None:
    names = ["ibSmPartitionConfigSubnetPrefix", "ibSmPartitionConfigKey",
             "ibSmPartitionConfigAction", "ibSmPartitionConfigMemberNodeGUID",
             "ibSmPartitionConfigMemberPortNum", "ibSmPartitionConfigMemberType"]
    expected = [bytes.fromhex("fe80000000000000"),  # the fabric's subnet prefix
                b"\x00\x00",  # the invalid P_Key: no partition
                1,  # none(1), the DEFVAL
                bytes(8),  # no node
                0,  # a switch's port 0; every port of a CA
                2]  # limitedMembership(2)
    with ibsnmp_agent() as agent:  # read-only: no write store
        assert scalar_values(agent.address, names) == expected
    with ibsnmp_agent("--write-community", "private", "--state-dir", str(tmp_path)) as agent:
        assert scalar_values(agent.address, names) == expected
        # An action with nothing written acts on the initial values: key 0
        # names no partition, so it is refused and nothing changes.
        add_member = community_request("set", [oid("ibSmPartitionConfigAction", 0)],
                                       community="private", values=[rfc1902.Integer32(4)])
        answer = exchange(agent.address, add_member, timeout=5.0)
        assert answer is not None
        assert decode_response(answer)[1:3] == (12, 1)  # inconsistentValue
        assert scalar_values(agent.address, names) == expected


def test_a_hosts_default_context_lists_every_ca(tmp_path: Path) -> None:
    root = tmp_path / "infiniband"
    first, second = trees.two_hcas(root)
    trees.switch(root)  # a switch device of the same host is no CA
    with ibsnmp_agent("--provider", "sysfs", "--sysfs-root", str(root)) as agent:
        walk = dict(varbinds(assert_ok(agent.snmp("snmpwalk", *READ, column("ibCaNodeGuid")))))
        guids = {name.rsplit(".", 1)[1]: int(value.split(":", 1)[1].replace(" ", ""), 16)
                 for name, value in walk.items()}
        assert guids == {"1": first.node_guid, "2": second.node_guid}
        ports = dict(varbinds(assert_ok(agent.snmp("snmpwalk", *READ, column("ibCaNumPorts")))))
        assert list(ports.values()) == ["Gauge32: 1", "Gauge32: 1"]
        port_rows = varbinds(assert_ok(agent.snmp("snmpwalk", *READ, column("ibCaPortGuid"))))
        assert [name.rsplit(".", 2)[1:] for name, _ in port_rows] == [["1", "1"], ["2", "1"]]
        # Each CA's own context still describes that CA alone, as ibCaIndex 1.
        own = varbinds(assert_ok(agent.snmp(
            "snmpwalk", "-v2c", "-c", f"public@{second.node_guid:016x}", "-On",
            column("ibCaNodeGuid"))))
        assert [(name.rsplit(".", 1)[1], int(value.split(":", 1)[1].replace(" ", ""), 16))
                for name, value in own] == [("1", second.node_guid)]

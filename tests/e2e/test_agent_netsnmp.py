"""End to end with net-snmp's command-line tools against an in-process agent."""

from __future__ import annotations

import pytest
from tests.support.agent_support import (  # noqa: F401  (fixtures)
    LOCAL_GUID,
    NODE_DESC,
    NODE_GUIDS,
    NODE_NUMBER,
    PORT_STATE,
    PORT_XMIT,
    READ_COMMUNITY,
    UNKNOWN_GUID,
    WRITE_COMMUNITY,
    AgentThread,
    agent,
    agent_backend,
    dotted,
    needs_net_snmp,
    net_snmp,
    parse_varbinds,
)

from ibsnmp.mib.api import INFINIBAND_MIB

pytestmark = needs_net_snmp

SYSTEM = "1.3.6.1.2.1.1"
SNMP_IN_BAD_COMMUNITY_NAMES = "1.3.6.1.2.1.11.4.0"
V2C = ["-v2c", "-c", READ_COMMUNITY]
V1 = ["-v1", "-c", READ_COMMUNITY]
V3_READER = ["-v3", "-l", "authPriv", "-u", "reader", "-a", "SHA-256", "-A", "reader-auth-key",
             "-x", "AES", "-X", "reader-priv-key"]


def get(agent: AgentThread, options: list[str], *oids: str, ipv6: bool = False) -> dict[str, str]:
    result = net_snmp("snmpget", agent.endpoint(ipv6), options, *oids)
    assert result.returncode == 0, result.stderr
    return dict(parse_varbinds(result.stdout))


def test_system_group_answers(agent: AgentThread) -> None:
    values = get(agent, V2C, *(f"{SYSTEM}.{i}.0" for i in range(1, 8)))
    assert values[f"{SYSTEM}.1.0"] == (
        'STRING: "ibsnmp 0.1.0 InfiniBand SNMP agent (fake fabric, 3 nodes)"')
    assert values[f"{SYSTEM}.2.0"] == "OID: .1.3.6.1.3.117.3"
    assert values[f"{SYSTEM}.3.0"].startswith("Timeticks: ")
    assert values[f"{SYSTEM}.4.0"] == 'STRING: "ops@example.org"'
    assert values[f"{SYSTEM}.5.0"] == 'STRING: "ibsnmp-test"'
    assert values[f"{SYSTEM}.6.0"] == 'STRING: "rack 7"'
    assert values[f"{SYSTEM}.7.0"] == "INTEGER: 72"


@pytest.mark.parametrize("ipv6", [False, True], ids=["ipv4", "ipv6"])
@pytest.mark.parametrize("options", [V1, V2C, V3_READER], ids=["v1", "v2c", "v3"])
def test_reads_in_every_version(agent: AgentThread, options: list[str], ipv6: bool) -> None:
    values = get(agent, options, f"{SYSTEM}.5.0", dotted(NODE_DESC), dotted(NODE_NUMBER),
                 ipv6=ipv6)
    assert values == {
        f"{SYSTEM}.5.0": 'STRING: "ibsnmp-test"',
        dotted(NODE_DESC): 'STRING: "node-1"',
        dotted(NODE_NUMBER): "INTEGER: 1",
    }


def test_get_missing_objects_and_instances(agent: AgentThread) -> None:
    missing_object = dotted(INFINIBAND_MIB + (3, 7, 7, 0))
    missing_instance = dotted(PORT_STATE + (9,))
    values = get(agent, V2C, missing_object, missing_instance, f"{SYSTEM}.99.0")
    assert values[missing_object].startswith("No Such Object")
    assert values[missing_instance].startswith("No Such Instance")
    assert values[f"{SYSTEM}.99.0"].startswith("No Such Object")


def test_secrets_are_not_in_the_read_view(agent: AgentThread) -> None:
    # snmpCommunityName of the write community would hand out write access.
    community_table = "1.3.6.1.6.3.18.1.1.1.2"
    result = net_snmp("snmpbulkwalk", agent.endpoint(), V2C, "1.3.6.1")
    assert result.returncode == 0, result.stderr
    assert WRITE_COMMUNITY not in result.stdout
    assert community_table not in result.stdout
    assert "reader-auth-key" not in result.stdout


@pytest.mark.parametrize("number,guid", list(enumerate(NODE_GUIDS, start=1)))
def test_community_at_guid_selects_the_node(agent: AgentThread, number: int, guid: str) -> None:
    options = ["-v2c", "-c", f"{READ_COMMUNITY}@{guid}"]
    values = get(agent, options, dotted(NODE_DESC), f"{SYSTEM}.5.0")
    assert values[dotted(NODE_DESC)] == f'STRING: "node-{number}"'
    assert values[f"{SYSTEM}.5.0"] == f'STRING: "node-{number}"'  # the node's own sysName


def test_default_context_is_the_local_node(agent: AgentThread) -> None:
    default = get(agent, V2C, dotted(NODE_DESC))
    local = get(agent, ["-v2c", "-c", f"{READ_COMMUNITY}@{LOCAL_GUID}"], dotted(NODE_DESC))
    assert default == local == {dotted(NODE_DESC): 'STRING: "node-1"'}


def test_v1_community_at_guid(agent: AgentThread) -> None:
    values = get(agent, ["-v1", "-c", f"{READ_COMMUNITY}@{NODE_GUIDS[2]}"], dotted(NODE_DESC))
    assert values == {dotted(NODE_DESC): 'STRING: "node-3"'}


@pytest.mark.parametrize("number,guid", list(enumerate(NODE_GUIDS, start=1)))
def test_v3_context_name_selects_the_node(agent: AgentThread, number: int, guid: str) -> None:
    values = get(agent, [*V3_READER, "-n", guid], dotted(NODE_DESC))
    assert values == {dotted(NODE_DESC): f'STRING: "node-{number}"'}


def test_v3_default_context(agent: AgentThread) -> None:
    assert get(agent, V3_READER, dotted(NODE_DESC)) == {dotted(NODE_DESC): 'STRING: "node-1"'}


@pytest.mark.parametrize("community", [
    f"{READ_COMMUNITY}@{UNKNOWN_GUID}",   # well-formed, no such node
    f"{READ_COMMUNITY}@{LOCAL_GUID.upper()}",  # not lower-case hex
    f"{READ_COMMUNITY}@",
    "nobody",
    f"nobody@{LOCAL_GUID}",
])
def test_unknown_community_context_gets_no_response(agent: AgentThread, community: str) -> None:
    before = int(get(agent, V2C, SNMP_IN_BAD_COMMUNITY_NAMES)[SNMP_IN_BAD_COMMUNITY_NAMES]
                 .split()[-1])
    result = net_snmp("snmpget", agent.endpoint(), ["-v2c", "-c", community, "-r", "0"],
                      dotted(NODE_DESC))
    assert result.returncode != 0
    assert "Timeout" in result.stderr
    after = int(get(agent, V2C, SNMP_IN_BAD_COMMUNITY_NAMES)[SNMP_IN_BAD_COMMUNITY_NAMES]
                .split()[-1])
    assert after == before + 1


@pytest.mark.parametrize("context", [UNKNOWN_GUID, "bridge1", LOCAL_GUID.upper()])
def test_unknown_v3_context_gets_unknown_contexts_report(agent: AgentThread, context: str) -> None:
    result = net_snmp("snmpget", agent.endpoint(), [*V3_READER, "-n", context], dotted(NODE_DESC))
    assert result.returncode != 0
    # net-snmp's wording for a snmpUnknownContexts REPORT.
    assert "Bad context specified" in result.stderr
    counter = get(agent, V3_READER, "1.3.6.1.6.3.12.1.5.0")["1.3.6.1.6.3.12.1.5.0"]
    assert int(counter.split()[-1]) >= 1


def test_getnext_crosses_into_and_out_of_the_infiniband_subtree(agent: AgentThread) -> None:
    ep = agent.endpoint()
    last_ib = dotted(PORT_STATE + (2,))
    result = net_snmp("snmpgetnext", ep, V2C, "1.3.6.1.2.2", last_ib, "1.3.6.1.9")
    assert result.returncode == 0, result.stderr
    (into, _), (out_of, _), (end, end_value) = parse_varbinds(result.stdout)
    assert into == dotted(NODE_DESC)  # nothing of the base tree between
    assert out_of.startswith("1.3.6.1.6.3.")  # snmpModules follow 1.3.6.1.3
    assert end == "1.3.6.1.9" and end_value.startswith("No more variables left")


def test_walk_is_ordered_and_complete(agent: AgentThread) -> None:
    result = net_snmp("snmpwalk", agent.endpoint(), V2C, "1.3.6.1")
    assert result.returncode == 0, result.stderr
    oids = [oid for oid, value in parse_varbinds(result.stdout)
            if not value.startswith("No more variables")]
    keys = [tuple(map(int, oid.split("."))) for oid in oids]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    ib = [oid for oid in oids if oid.startswith("1.3.6.1.3.117.")]
    assert ib == [dotted(NODE_DESC), dotted(NODE_NUMBER), dotted(PORT_XMIT + (1,)),
                  dotted(PORT_XMIT + (2,)), dotted(PORT_STATE + (1,)), dotted(PORT_STATE + (2,))]
    assert oids[0] == f"{SYSTEM}.1.0"
    # snmpbulkwalk sees exactly the same.
    bulk = net_snmp("snmpbulkwalk", agent.endpoint(), [*V2C, "-Cr7"], "1.3.6.1")
    assert [oid for oid, value in parse_varbinds(bulk.stdout)
            if not value.startswith("No more variables")] == oids


def test_bulkwalk_in_a_node_context(agent: AgentThread) -> None:
    options = ["-v2c", "-c", f"{READ_COMMUNITY}@{NODE_GUIDS[1]}", "-Cr3"]
    result = net_snmp("snmpbulkwalk", agent.endpoint(), options, dotted(INFINIBAND_MIB))
    assert result.returncode == 0, result.stderr
    values = parse_varbinds(result.stdout)
    assert len(values) == 6
    assert values[0] == (dotted(NODE_DESC), 'STRING: "node-2"')
    assert values[2] == (dotted(PORT_XMIT + (1,)), f"Counter64: {2**40 + 21}")


def test_getbulk_past_the_end_stops_early(agent: AgentThread) -> None:
    result = net_snmp("snmpbulkget", agent.endpoint(), [*V2C, "-Cn0", "-Cr50"], "1.3.6.1.9")
    assert result.returncode == 0, result.stderr
    # One repetition of endOfMibView, not fifty.
    end = "No more variables left in this MIB View (It is past the end of the MIB tree)"
    assert parse_varbinds(result.stdout) == [("1.3.6.1.9", end)]


def test_getbulk_non_repeaters_and_repeaters(agent: AgentThread) -> None:
    options = [*V2C, "-Cn1", "-Cr3"]
    result = net_snmp("snmpbulkget", agent.endpoint(), options, f"{SYSTEM}.4", dotted(PORT_XMIT))
    assert result.returncode == 0, result.stderr
    assert [oid for oid, _ in parse_varbinds(result.stdout)] == [
        f"{SYSTEM}.4.0", dotted(PORT_XMIT + (1,)), dotted(PORT_XMIT + (2,)),
        dotted(PORT_STATE + (1,))]


def test_v1_getnext_skips_counter64(agent: AgentThread) -> None:
    result = net_snmp("snmpgetnext", agent.endpoint(), V1, dotted(PORT_XMIT))
    assert result.returncode == 0, result.stderr
    assert parse_varbinds(result.stdout) == [(dotted(PORT_STATE + (1,)), "INTEGER: 4")]
    walk = net_snmp("snmpwalk", agent.endpoint(), V1, dotted(INFINIBAND_MIB))
    assert "Counter64" not in walk.stdout
    assert len(parse_varbinds(walk.stdout)) == 4
    v2 = net_snmp("snmpgetnext", agent.endpoint(), V2C, dotted(PORT_XMIT))
    assert parse_varbinds(v2.stdout)[0][1].startswith("Counter64:")


def test_v1_getnext_at_the_end_is_no_such_name(agent: AgentThread) -> None:
    result = net_snmp("snmpgetnext", agent.endpoint(), V1, "1.3.6.1.9")
    assert "noSuchName" in result.stdout + result.stderr


@pytest.mark.parametrize("options,reason", [
    (["-v2c", "-c", WRITE_COMMUNITY], "notWritable"),
    (V2C, "noAccess"),  # a read-only community: not in its write view
    (["-v3", "-l", "authPriv", "-u", "admin", "-a", "SHA-512", "-A", "admin-auth-key",
      "-x", "AES-256", "-X", "admin-priv-key"], "notWritable"),
    (["-v1", "-c", WRITE_COMMUNITY], "noSuchName"),  # v1 maps both to noSuchName
], ids=["v2c-write", "v2c-read", "v3-write", "v1-write"])
def test_set_on_infiniband_objects_is_refused(agent: AgentThread, options: list[str],
                                              reason: str) -> None:
    result = net_snmp("snmpset", agent.endpoint(), options, dotted(NODE_DESC), "s", "renamed")
    assert result.returncode != 0
    assert reason in result.stdout + result.stderr
    assert get(agent, V2C, dotted(NODE_DESC)) == {dotted(NODE_DESC): 'STRING: "node-1"'}


def test_set_in_a_node_context_is_refused(agent: AgentThread) -> None:
    options = ["-v2c", "-c", f"{WRITE_COMMUNITY}@{NODE_GUIDS[1]}"]
    result = net_snmp("snmpset", agent.endpoint(), options, dotted(NODE_NUMBER), "i", "5")
    assert "notWritable" in result.stdout + result.stderr


def test_set_of_system_objects_follows_pysnmp(agent: AgentThread) -> None:
    contact = f"{SYSTEM}.4.0"
    denied = net_snmp("snmpset", agent.endpoint(), V2C, contact, "s", "intruder")
    # Outside a read-only community's write view: noAccess (RFC 3416 4.2.5).
    assert denied.returncode != 0 and "noAccess" in denied.stdout + denied.stderr
    options = ["-v2c", "-c", WRITE_COMMUNITY]
    try:
        allowed = net_snmp("snmpset", agent.endpoint(), options, contact, "s", "noc@example.org")
        assert allowed.returncode == 0, allowed.stderr
        assert get(agent, V2C, contact) == {contact: 'STRING: "noc@example.org"'}
    finally:
        net_snmp("snmpset", agent.endpoint(), options, contact, "s", "ops@example.org")


def test_set_with_the_wrong_type_is_wrong_type(agent: AgentThread) -> None:
    options = ["-v2c", "-c", WRITE_COMMUNITY]
    result = net_snmp("snmpset", agent.endpoint(), options, f"{SYSTEM}.4.0", "i", "5")
    assert "wrongType" in result.stdout + result.stderr
    denied = net_snmp("snmpset", agent.endpoint(), V2C, f"{SYSTEM}.4.0", "i", "5")
    assert "noAccess" in denied.stdout + denied.stderr  # access is checked first
    assert get(agent, V2C, f"{SYSTEM}.4.0") == {f"{SYSTEM}.4.0": 'STRING: "ops@example.org"'}


def test_a_set_is_all_or_nothing(agent: AgentThread) -> None:
    options = ["-v2c", "-c", WRITE_COMMUNITY]
    result = net_snmp("snmpset", agent.endpoint(), options, f"{SYSTEM}.4.0", "s", "changed",
                      dotted(NODE_DESC), "s", "renamed")
    assert "notWritable" in result.stdout + result.stderr
    assert get(agent, V2C, f"{SYSTEM}.4.0") == {f"{SYSTEM}.4.0": 'STRING: "ops@example.org"'}


def test_writers_cannot_touch_the_security_configuration(agent: AgentThread) -> None:
    # A new snmpCommunityTable row would be a new community.
    row = "1.3.6.1.6.3.18.1.1.1.8.4.101.118.105.108"
    options = ["-v2c", "-c", WRITE_COMMUNITY]
    result = net_snmp("snmpset", agent.endpoint(), options, row, "i", "4")
    assert result.returncode != 0
    assert "noAccess" in result.stdout + result.stderr  # outside the write view


def test_v3_walk_with_sha256_aes(agent: AgentThread) -> None:
    result = net_snmp("snmpwalk", agent.endpoint(ipv6=True), [*V3_READER, "-n", NODE_GUIDS[2]],
                      dotted(INFINIBAND_MIB))
    assert result.returncode == 0, result.stderr
    values = parse_varbinds(result.stdout)
    assert len(values) == 6 and values[0][1] == 'STRING: "node-3"'


def test_v3_security_level_below_the_users_is_refused(agent: AgentThread) -> None:
    options = ["-v3", "-l", "authNoPriv", "-u", "reader", "-a", "SHA-256", "-A", "reader-auth-key"]
    result = net_snmp("snmpget", agent.endpoint(), options, dotted(NODE_DESC))
    assert result.returncode != 0
    assert "node-1" not in result.stdout


def test_v3_auth_only_user(agent: AgentThread) -> None:
    options = ["-v3", "-l", "authNoPriv", "-u", "authonly", "-a", "SHA", "-A", "authonly-key"]
    assert get(agent, options, dotted(NODE_DESC)) == {dotted(NODE_DESC): 'STRING: "node-1"'}


def test_v3_wrong_key_is_refused(agent: AgentThread) -> None:
    options = ["-v3", "-l", "authPriv", "-u", "reader", "-a", "SHA-256", "-A", "wrong-auth-key",
               "-x", "AES", "-X", "reader-priv-key", "-r", "0"]
    result = net_snmp("snmpget", agent.endpoint(), options, dotted(NODE_DESC))
    assert result.returncode != 0
    assert "node-1" not in result.stdout


def test_getbulk_keeps_ended_repeaters_at_the_end(agent: AgentThread) -> None:
    options = [*V2C, "-Cn0", "-Cr4"]
    result = net_snmp("snmpbulkget", agent.endpoint(), options, "1.3.6.1.9", dotted(PORT_XMIT))
    assert result.returncode == 0, result.stderr
    got = parse_varbinds(result.stdout)
    assert len(got) == 8
    assert [oid for oid, _ in got[0::2]] == ["1.3.6.1.9"] * 4
    assert all(value.startswith("No more variables") for _, value in got[0::2])
    assert [oid for oid, _ in got[1::2]] == [
        dotted(PORT_XMIT + (1,)), dotted(PORT_XMIT + (2,)), dotted(PORT_STATE + (1,)),
        dotted(PORT_STATE + (2,))]

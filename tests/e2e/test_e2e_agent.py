"""`ibsnmp run` end to end, with net-snmp's own clients and names from mib_sources/.

One agent serves a small simulated fat-tree for the whole module; the same
spec and seed rebuilt here give the values to expect.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from tests.support.e2e import (
    READ_CONFIG,
    V3_AUTH_PRIV,
    V3_USER,
    RunningAgent,
    assert_ok,
    ibsnmp_agent,
    net_snmp,
    object_name,
    varbinds,
)
from tests.support.narrow import present

from ibsnmp.agent.views import KEY_OBJECTS
from ibsnmp.mib.targets import context_name, sm_node_guids
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.fabric.model import Fabric, Node
from ibsnmp.mib.loader import definitions

SPEC = "fat-tree:spines=2,leaves=2,hosts=2"
SEED = 3
USER = V3_USER
CONFIG = READ_CONFIG
MODULE_SUBTREES = {
    "SMA-MIB": "SMA-MIB::ibSmaMIB",
    "IB-CA-MIB": "IB-CA-MIB::ibCaMIB",
    "PMA-MIB": "PMA-MIB::ibPmaMIB",
    "IBCONNECTION-MIB": "IBCONNECTION-MIB::ibConnMIB",
}


@pytest.fixture(scope="module")
def fabric() -> Fabric:
    return build_fabric(SPEC, seed=SEED)


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningAgent]:
    config = tmp_path_factory.mktemp("config") / "ibsnmp.toml"
    config.write_text(CONFIG)
    with ibsnmp_agent("--config", str(config), fabric=SPEC, seed=SEED, ipv6=True) as running:
        yield running


@pytest.fixture(scope="module")
def default_walk(agent: RunningAgent) -> list[tuple[str, str]]:
    """The README's check: a bulk walk of everything under infinibandMIB."""
    result = agent.snmp("snmpbulkwalk", "-v2c", "-c", "public", "-Cr50", "-Oe", ".1.3.6.1.3.117",
                        timeout=300)
    return varbinds(assert_ok(result))


def switch_of(fabric: Fabric) -> Node:
    return next(node for node in fabric.nodes.values() if node.is_switch)


def plain_ca_of(fabric: Fabric) -> Node:
    """A channel adapter that runs no subnet manager."""
    sms = sm_node_guids(fabric)
    return next(n for n in fabric.nodes.values() if n.is_ca and n.guid not in sms)


def hex_octets(value: str) -> bytes:
    """Octets of 'Hex-STRING: EC 0D ..' or of the IbGuid hint form 'STRING: ec0d..'."""
    _kind, text = value.split(": ", 1)
    return bytes.fromhex(text.replace(" ", ""))


def values_of(walk: list[tuple[str, str]], name: str) -> list[str]:
    return [value for instance, value in walk if object_name(instance) == name]


def test_default_context_walk_shows_all_five_mibs(default_walk: list[tuple[str, str]],
                                                  fabric: Fabric) -> None:
    modules = {instance.split("::", 1)[0] for instance, _ in default_walk}
    assert modules == {"SMA-MIB", "IB-SM-MIB", "IB-CA-MIB", "PMA-MIB", "IBCONNECTION-MIB"}
    assert not [v for _, v in default_walk if "No Such" in v or "No more" in v]
    (guid,) = values_of(default_walk, "SMA-MIB::ibSmaNodeGuid")
    assert hex_octets(guid) == fabric.local_node.guid.to_bytes(8, "big")


def test_default_walk_is_in_strictly_increasing_oid_order(agent: RunningAgent) -> None:
    # net-snmp's walk stops on a non-increasing OID; -Cc would hide that.
    result = agent.snmp("snmpbulkwalk", "-v2c", "-c", "public", "-Cr25", "-On",
                        ".1.3.6.1.3.117.3")
    oids = [tuple(int(x) for x in name.strip(".").split(".")) for name, _ in
            varbinds(assert_ok(result))]
    assert len(oids) > 200 and oids == sorted(set(oids))


def test_switch_context_serves_the_switch(agent: RunningAgent, fabric: Fabric) -> None:
    switch = switch_of(fabric)
    community = f"public@{context_name(switch.guid)}"
    result = agent.snmp("snmpbulkwalk", "-v2c", "-c", community, "-Cr50", "-Oe",
                        "SMA-MIB::ibSmaMIB")
    walk = varbinds(assert_ok(result))
    (node_type,) = values_of(walk, "SMA-MIB::ibSmaNodeType")
    assert node_type.endswith("2") or "switch" in node_type
    (guid,) = values_of(walk, "SMA-MIB::ibSmaNodeGuid")
    assert hex_octets(guid) == switch.guid.to_bytes(8, "big")
    # Every routed LID of the fabric has a linear forwarding entry.
    egress = values_of(walk, "SMA-MIB::ibSmaLinForwEgressPort")
    assert len(egress) == len(fabric.lid_map)


def test_v3_context_name_and_community_at_guid_agree(agent: RunningAgent, fabric: Fabric) -> None:
    node = plain_ca_of(fabric)
    name = context_name(node.guid)
    v2 = agent.snmp("snmpget", "-v2c", "-c", f"public@{name}", "SMA-MIB::ibSmaNodeString.0")
    v3 = agent.snmp("snmpget", *V3_AUTH_PRIV, "-n", name, "SMA-MIB::ibSmaNodeString.0")
    assert present(node.description) in assert_ok(v2)
    assert assert_ok(v2).split(" = ", 1)[1] == assert_ok(v3).split(" = ", 1)[1]


def test_v3_auth_priv_walk(agent: RunningAgent, fabric: Fabric) -> None:
    result = agent.snmp("snmpbulkwalk", *V3_AUTH_PRIV, "-Cr50", "PMA-MIB::ibPmaMIB")
    walk = varbinds(assert_ok(result))
    ports = [p for p in fabric.local_node.data_ports]
    assert len(values_of(walk, "PMA-MIB::ibPmaPortXmitData")) == len(ports)


def test_wrong_v3_key_is_refused(agent: RunningAgent) -> None:
    wrong = list(V3_AUTH_PRIV)
    wrong[wrong.index(USER[1])] = "not-the-auth-pass"
    result = agent.snmp("snmpget", *wrong, "-r", "0", "-t", "2", "SMA-MIB::ibSmaNodeString.0")
    assert result.returncode != 0
    assert "Authentication failure" in result.stderr or "Timeout" in result.stderr


def test_scalars_by_snmpget(agent: RunningAgent, fabric: Fabric) -> None:
    local = fabric.local_node
    result = agent.snmp("snmpget", "-v2c", "-c", "public", "-Oe",
                        "SMA-MIB::ibSmaNodeString.0", "SMA-MIB::ibSmaNodeNumPorts.0",
                        "SMA-MIB::ibSmaNodeVendorId.0", ".1.3.6.1.2.1.1.3.0")
    out = dict(varbinds(assert_ok(result)))
    assert present(local.description) in out["SMA-MIB::ibSmaNodeString.0"]
    assert out["SMA-MIB::ibSmaNodeNumPorts.0"].endswith(f": {local.num_ports}")
    assert (hex_octets(out["SMA-MIB::ibSmaNodeVendorId.0"])
            == present(local.vendor_id).to_bytes(3, "big"))
    assert out["SNMPv2-MIB::sysUpTime.0"].startswith("Timeticks:")  # sysUpTime.0


def test_ipv6_listener_answers(agent: RunningAgent, fabric: Fabric) -> None:
    # The second --listen is [::1]:PORT; net-snmp takes it as udp6:[::1]:PORT.
    args = agent.process.args
    assert isinstance(args, list)  # ibsnmp_agent starts it with a list
    listen = [a for a in args if isinstance(a, str) and a.startswith("[::1]:")]
    assert listen
    result = net_snmp("snmpget", "-v2c", "-c", "public", f"udp6:{listen[0]}",
                      "SMA-MIB::ibSmaNodeString.0")
    assert present(fabric.local_node.description) in assert_ok(result)


def test_set_is_refused_with_an_snmp_error(agent: RunningAgent) -> None:
    result = agent.snmp("snmpset", "-v2c", "-c", "public", "-r", "0",
                        "SMA-MIB::ibSmaNodeString.0", "s", "renamed")
    assert result.returncode != 0
    assert re.search(r"notWritable|noAccess|authorizationError|readOnly", result.stderr)
    again = agent.snmp("snmpget", "-v2c", "-c", "public", "SMA-MIB::ibSmaNodeString.0")
    assert "renamed" not in assert_ok(again)


# -- snmptable of every table that should have rows ----------------------------

def _entries(module: str) -> list[str]:
    mib = definitions()
    return sorted(o.name for o in mib.objects.values() if o.module == module and o.kind == "entry")


def _table_of(entry: str) -> str:
    return entry[: -len("Entry")] + "Table" if entry != "ibGuidInfoEntry" else "ibSmaGuidInfoTable"


def _expect_rows(module: str, entry: str, kind: str) -> bool:
    absent = EMPTY_TABLES["all"] | EMPTY_TABLES[kind]
    return entry not in absent


EMPTY_TABLES: dict[str, set[str]] = {
    # No simulated switch has a random forwarding table (as Mellanox switches
    # report RandomFDBCap 0); ConnectX adapters have no reliable datagrams.
    "all": {"ibSmaRandomForwardingEntry", "ibConnRDEntry"},
    "ca": {"ibSmaLinForEntry", "ibSmaMulForEntry", "ibSmaSmInfoEntry",
           "ibPmaPortVlSwCongestionEntry"},
    "switch": {"ibSmaSmInfoEntry", "ibCaGeneralInfoEntry", "ibCaAttributeEntry",
               "ibCaPortAttributeEntry", "ibCaPortGidEntry", "ibConnUDEntry", "ibConnCEntry"},
}


@pytest.mark.parametrize("kind", ["ca", "switch"])
@pytest.mark.parametrize("module", sorted(MODULE_SUBTREES))
def test_snmptable_of_each_table(agent: RunningAgent, fabric: Fabric, module: str,
                                 kind: str) -> None:
    node = plain_ca_of(fabric) if kind == "ca" else switch_of(fabric)
    community = f"public@{context_name(node.guid)}"
    for entry in _entries(module):
        table = f"{module}::{_table_of(entry)}"
        result = agent.snmp("snmptable", "-v2c", "-c", community, "-Cf", "|", "-Cr", "50", table)
        if _expect_rows(module, entry, kind):
            out = assert_ok(result)
            rows = [line for line in out.splitlines()[3:] if line.strip()]
            assert rows, f"{table} has no rows in a {kind} context"
        else:
            assert "No entries" in result.stdout + result.stderr, f"{table} should be empty"


def test_snmptable_of_the_sm_tables(agent: RunningAgent, fabric: Fabric) -> None:
    for table, expected in (("ibSmNodeInfoTable", len(fabric.nodes)),
                            ("ibSmLinkTable", 2 * len(fabric.links)),
                            ("ibSmSMInfoTable", len(fabric.sms))):
        result = agent.snmp("snmptable", "-v2c", "-c", "public", "-Cf", "|", "-Cr", "50",
                            f"IB-SM-MIB::{table}")
        rows = [line for line in assert_ok(result).splitlines()[3:] if line.strip()]
        assert len(rows) == expected, table


# -- every readable object has an instance where the node kind has it -----------

NO_INSTANCE: dict[str, str] = {
    # pattern of object names -> why they have no instance in that context
    r"ibSmaRandom(DestLID|LMC|IsValid|ForwEgressPort)": "no random forwarding table",
    r"ibConnRD[LR](GID|LID|EEC)": "no reliable datagrams",
    "|".join(KEY_OBJECTS): "M_Key and SM_Key are outside the read-only view",
}
NO_INSTANCE_ON_CA = {
    r"ibSmaSw\w+|ibSmaLinForwEgressPort|ibSmaMulForwMask": "switch objects",
    r"ibPmaPortVlSwCongestion\d+": "switch congestion counters",
}
NO_INSTANCE_WITHOUT_SM = {r"ibSmaSm(Guid|Priority|SmKey|SmpCount|State)": "no SM on the node"}
NO_INSTANCE_ON_SWITCH = {r"ibCa\w+": "channel adapter objects", r"ibConn\w+": "connections"}
NO_INSTANCE_IN_SM_MIB = {
    r"ibSm(Path|MultiPath|Trace)(Req|Result)\w+|ibSmServiceAssoc\w+": "filled by SETs later",
}


def _readable(modules: set[str]) -> set[str]:
    mib = definitions()
    return {o.name for o in mib.objects.values()
            if o.module in modules and o.kind in ("scalar", "column") and mib.readable(o.name)}


def _check_instances(seen: set[str], modules: set[str], rules: dict[str, str]) -> None:
    allowed = re.compile("|".join(f"(?:{p})" for p in rules))
    expected = {name for name in _readable(modules) if not allowed.fullmatch(name)}
    missing = sorted(expected - seen)
    made_up = sorted(name for name in seen if allowed.fullmatch(name))
    assert not missing, f"objects without an instance: {missing}"
    assert not made_up, f"objects this node kind does not have: {made_up}"


def _walk_names(agent: RunningAgent, community: str) -> set[str]:
    seen: set[str] = set()
    for subtree in MODULE_SUBTREES.values():
        result = agent.snmp("snmpbulkwalk", "-v2c", "-c", community, "-Cr50", subtree)
        seen |= {object_name(i).split("::", 1)[1] for i, value in varbinds(assert_ok(result))
                 if not value.startswith("No Such")}  # an empty subtree answers that
    return seen


def test_every_object_has_an_instance_in_the_default_context(
        default_walk: list[tuple[str, str]]) -> None:
    seen = {object_name(i).split("::", 1)[1] for i, _ in default_walk}
    rules = NO_INSTANCE | NO_INSTANCE_ON_CA | NO_INSTANCE_IN_SM_MIB
    _check_instances(seen, set(MODULE_SUBTREES) | {"IB-SM-MIB"}, rules)


def test_every_object_has_an_instance_on_a_plain_ca(agent: RunningAgent, fabric: Fabric) -> None:
    seen = _walk_names(agent, f"public@{context_name(plain_ca_of(fabric).guid)}")
    _check_instances(seen, set(MODULE_SUBTREES),
                     NO_INSTANCE | NO_INSTANCE_ON_CA | NO_INSTANCE_WITHOUT_SM)


def test_every_object_has_an_instance_on_a_switch(agent: RunningAgent, fabric: Fabric) -> None:
    seen = _walk_names(agent, f"public@{context_name(switch_of(fabric).guid)}")
    _check_instances(seen, set(MODULE_SUBTREES),
                     NO_INSTANCE | NO_INSTANCE_ON_SWITCH | NO_INSTANCE_WITHOUT_SM)


# -- a pysnmp manager ----------------------------------------------------------

async def test_pysnmp_manager_reads_a_port_table_in_a_switch_context(
        agent: RunningAgent, fabric: Fabric) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from pysnmp.hlapi.v3arch.asyncio import (
            USM_AUTH_HMAC192_SHA256,
            USM_PRIV_CFB128_AES,
            ContextData,
            ObjectIdentity,
            ObjectType,
            SnmpEngine,
            UdpTransportTarget,
            UsmUserData,
            walk_cmd,
        )
    switch = switch_of(fabric)
    user = UsmUserData(USER[0], USER[1], USER[2], authProtocol=USM_AUTH_HMAC192_SHA256,
                       privProtocol=USM_PRIV_CFB128_AES)
    host, port = agent.address.rsplit(":", 1)
    column = definitions().objects["ibSmaPortLinkState"]
    engine = SnmpEngine()
    states: dict[int, int] = {}
    try:
        target = await UdpTransportTarget.create((host, int(port)), timeout=3, retries=1)
        context = ContextData(contextName=context_name(switch.guid).encode())
        async for error, status, _, var_binds in walk_cmd(
                engine, user, target, context, ObjectType(ObjectIdentity(column.oid)),
                lexicographicMode=False):
            assert error is None and not status
            for name, value in var_binds:
                states[tuple(name)[-1]] = int(value)
    finally:
        engine.close_dispatcher()
    # ibSmaPortLinkState is the IBA PortState plus one: active(5) is IBA's 4.
    assert states == {p.num: int(p.info.port_state) + 1 for p in switch.data_ports}

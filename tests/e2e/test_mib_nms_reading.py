"""The MIBs as the tools an NMS runs read them: snmp_exporter's generator,
net-snmp and pysnmp, on `ibsnmp mibs path` and compiled_mibs/.

The generator takes an OCTET STRING index as fixed-size only when a named
type carries the size, and treats the DISPLAY-HINT "1x:" as a 6-octet MAC
address; these tests prove that no InfiniBand index or GUID is read either
way (mib_sources/ERRATA.md, rule 6).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.support.e2e import MIB_DIRS, assert_ok, ibsnmp_agent, net_snmp, varbinds
from tests.support.narrow import present

from ibsnmp.fabric.generators import build_fabric
from ibsnmp.mib.loader import definitions, size_range

GENERATOR = "prometheus-snmp-generator"
SPEC = "fat-tree:spines=2,leaves=2,hosts=2"
SEED = 5
# Every IB-SM-MIB table with an octet-string index besides the subnet prefix,
# and SMA-MIB objects typed IbGuid.
WALKED = [
    "ibSmNodeInfoTable", "ibSmPortInfoTable", "ibSmSwitchInfoTable", "ibSmPartitionTable",
    "ibSmMcastGroupTable", "ibSmMcastMemberTable", "ibSmSMInfoTable", "ibSmLinkTable",
    "ibSmServiceTable", "ibSmServiceAssocTable", "ibSmSwSLtoVLMapTable",
    "ibSmCaSLtoVLMapTable", "ibSmVLArbitrationTable",
    "ibSmaNodeInfo", "ibSmaGuidInfoTable", "ibSmaSmInfoTable",
]
# The index columns the drafts declared inline, with their size in octets.
FIXED_INDEXES = {
    "ibSmNodeInfoNodeGUID": 8, "ibSmPortInfoNodeGUID": 8, "ibSmSwitchInfoNodeGUID": 8,
    "ibSmSMInfoGUID": 8, "ibSmLinkFromNodeGUID": 8, "ibSmSwSLtoVLMapNodeGUID": 8,
    "ibSmCaSLtoVLMapNodeGUID": 8, "ibSmVLArbitrationNodeGUID": 8, "ibSmServiceID": 8,
    "ibSmPartitionKey": 2, "ibSmServicePKey": 2, "ibSmMcastGroupMGID": 16,
    "ibSmMcastMemberMGID": 16, "ibSmServiceGID": 16, "ibSmServiceAssocKey": 16,
}

needs_generator = pytest.mark.skipif(shutil.which(GENERATOR) is None,
                                     reason="Debian's prometheus-snmp-exporter is not installed")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The metrics the generator makes of WALKED."""
    work: Path = tmp_path_factory.mktemp("generator")
    # JSON is YAML: the generator reads it as its generator.yml.
    (work / "generator.yml").write_text(json.dumps({"modules": {"probe": {"walk": WALKED}}}))
    result = subprocess.run([GENERATOR, "generate", "--fail-on-parse-errors"], cwd=work,
                            env={"MIBDIRS": MIB_DIRS, "PATH": "/usr/bin:/bin"},
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    metrics = generated_metrics((work / "snmp.yml").read_text())
    assert len(metrics) > len(WALKED)
    return metrics


def generated_metrics(snmp_yml: str) -> list[dict[str, Any]]:
    """Name, type and indexes of each metric of a generated snmp.yml without
    lookups (the generator writes one fixed layout: a metric at indent 2,
    its keys at 4, an index's keys at 6)."""
    metrics: list[dict[str, Any]] = []
    for line in snmp_yml.splitlines():
        key, _, value = line.strip().removeprefix("- ").partition(": ")
        indent = len(line) - len(line.lstrip())
        if line.startswith("  - name: "):
            metrics.append({"name": value, "indexes": []})
        elif indent == 4 and key == "type" and metrics:
            metrics[-1]["type"] = value
        elif line.startswith("    - labelname: "):
            metrics[-1]["indexes"].append({"labelname": value})
        elif indent == 6 and key in ("type", "fixed_size") and metrics[-1]["indexes"]:
            metrics[-1]["indexes"][-1][key] = int(value) if key == "fixed_size" else value
    return metrics


def octet_indexes(metrics: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each OCTET STRING index column the generator emitted, by label name."""
    return {index["labelname"]: index for metric in metrics
            for index in metric.get("indexes", []) if index["type"] == "OctetString"}


@needs_generator
def test_generator_reads_every_fixed_size_index_with_its_size(
        generated: list[dict[str, Any]]) -> None:
    indexes = octet_indexes(generated)
    assert FIXED_INDEXES.keys() <= indexes.keys()
    sizes = {name: index.get("fixed_size") for name, index in indexes.items()}
    assert {name: sizes[name] for name in FIXED_INDEXES} == FIXED_INDEXES


@needs_generator
def test_generator_size_agrees_with_the_compiled_modules(generated: list[dict[str, Any]]) -> None:
    """Every octet index of the walk, subnet prefixes included, is as long
    as the syntax pysnmp serves it with."""
    mib = definitions()
    for name, index in octet_indexes(generated).items():
        low, high = present(size_range(mib.objects[name].syntax))
        assert low == high == index.get("fixed_size"), (name, index)


@needs_generator
def test_generator_takes_no_guid_for_a_mac_address(generated: list[dict[str, Any]]) -> None:
    types = {metric["name"]: metric["type"] for metric in generated}
    types.update({i["labelname"]: i["type"] for m in generated for i in m.get("indexes", [])})
    assert "PhysAddress48" not in types.values(), types
    for guid in ("ibSmaNodeGuid", "ibSmaSystemImageGuid", "ibSmaNodePortGuid",
                 "ibSmaGuidVal", "ibSmaSmGuid", "ibSmNodeInfoNodeGUID"):
        assert types[guid] == "OctetString", guid


def test_pysnmp_prints_a_guid_as_16_hex_digits() -> None:
    ib_guid = definitions().textual_convention("IB-TC-MIB", "IbGuid")
    assert ib_guid.clone(bytes.fromhex("0002c90300a1b2c3")).prettyPrint() == "0002c90300a1b2c3"


def test_net_snmp_prints_a_served_guid_as_16_hex_digits() -> None:
    fabric = build_fabric(SPEC, seed=SEED)
    with ibsnmp_agent(fabric=SPEC, seed=SEED) as agent:
        node = assert_ok(agent.snmp("snmpget", "-v2c", "-c", "public",
                                    "SMA-MIB::ibSmaNodeGuid.0"))
        rows = assert_ok(agent.snmp("snmpbulkwalk", "-v2c", "-c", "public", "-On",
                                    "IB-SM-MIB::ibSmNodeInfoNodeGUID"))
        # GUID value columns the drafts declared inline (ERRATA.md, rule 6).
        local = fabric.local_node
        node_row = ".".join(str(b) for b in (fabric.subnet_prefix.to_bytes(8, "big")
                                             + local.guid.to_bytes(8, "big")))
        values = assert_ok(agent.snmp("snmpget", "-v2c", "-c", "public", "-Oqv",
                                      "IB-CA-MIB::ibCaNodeGuid.1",
                                      f"IB-SM-MIB::ibSmNodeInfoPortGUID.{node_row}"))
    assert node.split(" = ", 1)[1].strip() == f"STRING: {fabric.local_node.guid:016x}"
    assert values.split() == [f"{local.guid:016x}", f"{local.port_guid:016x}"]
    served = varbinds(rows)
    assert len(served) == len(fabric.nodes)
    for oid, value in served:
        index_octets = bytes(int(arc) for arc in oid.split(".")[-8:])
        assert value == f"STRING: {index_octets.hex()}", (oid, value)


@pytest.mark.parametrize(("name", "oid"), [
    ("IF-MIB::ifXTable", ".1.3.6.1.2.1.31.1.1"),
    ("IF-MIB::ifHCInOctets", ".1.3.6.1.2.1.31.1.1.1.6"),
    ("IF-MIB::linkDown", ".1.3.6.1.6.3.1.1.5.3"),
    ("IF-MIB::linkUp", ".1.3.6.1.6.3.1.1.5.4"),
    ("IANAifType-MIB::ianaifType", ".1.3.6.1.2.1.30"),
])
def test_snmptranslate_resolves_if_mib(name: str, oid: str) -> None:
    assert assert_ok(net_snmp("snmptranslate", "-On", name)).strip() == oid


def test_snmptranslate_knows_infiniband_as_an_interface_type() -> None:
    shown = assert_ok(net_snmp("snmptranslate", "-Td", "IF-MIB::ifType"))
    assert "TEXTUAL CONVENTION IANAifType" in shown
    assert "infiniband(199)" in shown

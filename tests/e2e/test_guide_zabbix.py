"""examples/zabbix/ibsnmp_templates.yaml and docs/zabbix.md.

The templates read by Zabbix 6.0's own import code (the frontend's reader,
validator and converters, without a database). Then the page run against
a Zabbix 6.0 server from Debian's packages: its API commands import the
file and make an agent host with each of its two interfaces, SNMPv2c for
one agent and SNMPv3 for another (another seed: other GUIDs), and the
server discovers every node of both and reads their active ports. The
discovery and polling intervals are the only change: 5 s instead of an
hour and a minute, set on the imported templates.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ibsnmp.fabric.generators import build_fabric
from ibsnmp.mib.targets import context_name
from tests.support.guides import FABRIC, LEAF01, Guide, guide_agent, ran, sh
from tests.support.paths import PROJECT_ROOT, SUPPORT_DIR
from tests.support.zabbix import FRONTEND, Zabbix, missing, zabbix_server

TEMPLATES = PROJECT_ROOT / "examples/zabbix/ibsnmp_templates.yaml"
GUIDE = Guide("zabbix.md")
FABRIC_TEMPLATE, NODE_TEMPLATE = "ibsnmp InfiniBand fabric by SNMP", "ibsnmp InfiniBand node by SNMP"


@pytest.mark.skipif(shutil.which("php") is None or not (FRONTEND / "api_jsonrpc.php").exists(),
                    reason="zabbix-frontend-php and php-cli are not installed")
def test_zabbix_60_import_code_reads_the_templates() -> None:
    done = subprocess.run(["php", str(SUPPORT_DIR / "zabbix_import_check.php"), str(FRONTEND), str(TEMPLATES),
                           "yaml"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "version": "6.0",
        "discovery_rules": {NODE_TEMPLATE: ["ib.port.discovery"], FABRIC_TEMPLATE: ["ib.node.discovery"]}}


def _leaf01(seed: int) -> str:
    fabric = build_fabric(FABRIC, seed=seed)
    (guid,) = [context_name(guid) for guid, node in fabric.nodes.items() if node.description == "leaf01"]
    return guid


def _faster(server: Zabbix) -> None:
    """Discovery and polling every 5 s: the templates' interval macros."""
    templates = server.api("template.get", {"output": ["templateid"],
                                            "filter": {"host": [FABRIC_TEMPLATE, NODE_TEMPLATE]}})
    macros = server.api("usermacro.get", {"output": ["hostmacroid", "macro"],
                                          "hostids": [t["templateid"] for t in templates]})
    for macro in macros:
        if macro["macro"] in ("{$IB.LLD.INTERVAL}", "{$IB.PORT.INTERVAL}"):
            server.api("usermacro.update", {"hostmacroid": macro["hostmacroid"], "value": "5s"})


def _ports_read(server: Zabbix, guid: str) -> dict[str, dict[str, str]] | None:
    """The items of node `guid`'s host by key, once its port 5 has values."""
    hosts = server.api("host.get", {"output": ["hostid"], "filter": {"host": [f"ib-{guid}"]}})
    if not hosts:
        return None
    items = server.api("item.get", {"hostids": [hosts[0]["hostid"]], "output": ["key_", "name", "lastvalue", "lastclock"]})
    by_key = {item["key_"]: item for item in items}
    read = [by_key.get(key, {}).get("lastclock", "0") != "0"
            for key in ("ib.port.status[ifOperStatus.5]", "ib.port.in[ifHCInOctets.5]")]
    return by_key if all(read) else None


@pytest.mark.skipif(missing() is not None, reason=missing() or "")
def test_zabbix_discovers_every_node_and_reads_its_ports(tmp_path: Path) -> None:
    access, imported, v2c, v3 = GUIDE.scripts()
    with zabbix_server() as server, guide_agent(GUIDE, tmp_path) as agent, \
            guide_agent(GUIDE, tmp_path, seed=2) as agent_v3:
        (tmp_path / "home").mkdir()
        (tmp_path / "home/.zabbix-token").write_text(server.session)

        def page(script: str, address: str) -> str:
            script = access.replace("https://zabbix.example.org/api_jsonrpc.php", server.url) + "\n" + script
            port = address.split(":")[1]
            script = script.replace('useip: 0, ip: "", dns: "ib-agent.example.org", port: "161"',
                                    f'useip: 1, ip: "127.0.0.1", dns: "", port: "{port}"')
            return ran(sh(script, address, tmp_path, cwd=PROJECT_ROOT))

        assert page(imported, agent.address).strip() == "true"
        _faster(server)
        assert "hostids" in page(v2c, agent.address)
        assert "hostids" in page(v3.replace('host: "ib-agent"', 'host: "ib-agent-v3"'), agent_v3.address)

        leaf01 = server.wait_for(lambda: _ports_read(server, LEAF01), 180, "leaf01's port 5 read over SNMPv2c")
        server.wait_for(lambda: _ports_read(server, _leaf01(2)), 60, "the other leaf01's port 5 read over SNMPv3")
        discovered = server.api("host.get", {"output": ["host", "name"], "selectTags": ["tag", "value"],
                                             "selectMacros": ["macro", "value"], "filter": {"flags": 4}})
    hosts = {host["host"]: host for host in discovered}
    assert len(hosts) == 44  # the 22 nodes of each agent's fabric
    leaf = hosts[f"ib-{LEAF01}"]
    assert leaf["name"] == f"leaf01 ({LEAF01})"
    assert {(t["tag"], t["value"]) for t in leaf["tags"]} == {("ib.node.kind", "switch"), ("ib.node.guid", LEAF01)}
    assert {(m["macro"], m["value"]) for m in leaf["macros"]} == \
        {("{$IB.COMMUNITY.SUFFIX}", f"@{LEAF01}"), ("{$IB.NODE.GUID}", LEAF01)}
    assert hosts["ib-98039b03007311d8"]["name"] == "host001 HCA-1 (98039b03007311d8)"
    # Its 6 active ports of 36, 9 items each, and the node's 3.
    assert len(leaf01) == 6 * 9 + 3
    assert leaf01["ib.port.in[ifHCInOctets.5]"]["name"] == "leaf01/5(spine01/1): Bits received"
    assert leaf01["ib.port.status[ifOperStatus.5]"]["lastvalue"] == "1"
    assert "ib.port.status[ifOperStatus.7]" not in leaf01

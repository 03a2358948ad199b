"""The shipped Prometheus configuration against Debian's snmp_exporter 0.21.

The generator regenerates examples/prometheus/snmp.yml from generator.yml;
`ibsnmp fabric targets` writes the per-node modules and file_sd targets,
which the real exporter loads.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from typing import Any
from dataclasses import dataclass
from pathlib import Path

import pytest

from ibsnmp.commands.prometheus_targets import (ScrapeAuth, TargetsError, exporter_config,
                                                module_bodies, read_auth)

from tests.support.e2e import MIB_DIRS, PROJECT_ROOT, RunningAgent, assert_ok, ibsnmp_agent, stop
from tests.support.mosquitto import free_tcp_port

EXAMPLES = PROJECT_ROOT / "examples" / "prometheus"  # links to ibsnmp/prometheus
EXPORTER = "prometheus-snmp-exporter"
GENERATOR = "prometheus-snmp-generator"
SMALL_FABRIC = "fat-tree:spines=2,leaves=2,hosts=2"

needs_exporter = pytest.mark.skipif(
    shutil.which(EXPORTER) is None or shutil.which(GENERATOR) is None,
    reason="Debian's prometheus-snmp-exporter is not installed")


def write_targets(tmp_path: Path, *extra: str,
                  agent: str = "127.0.0.1:161") -> tuple[Path, Path]:
    """`ibsnmp fabric targets` for the small fabric; (config, targets)."""
    config, targets = tmp_path / "snmp.yml", tmp_path / "targets.json"
    result = subprocess.run(
        [sys.executable, "-m", "ibsnmp", "fabric", "targets", "--fabric", SMALL_FABRIC,
         "--agent", agent, "--snmp-yml", str(EXAMPLES / "snmp.yml"),
         "--config-out", str(config), "--targets-out", str(targets), *extra],
        capture_output=True, text=True, cwd=PROJECT_ROOT, check=False)
    assert result.returncode == 0, result.stderr
    return config, targets


def dry_run(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXPORTER, f"--config.file={config}", "--dry-run"],
                          capture_output=True, text=True, timeout=120, check=False)


# -- the shipped snmp.yml is what the generator makes of generator.yml ---------------------------


@needs_exporter
def test_shipped_snmp_yml_is_the_generators_output(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "generator.yml", tmp_path / "generator.yml")
    result = subprocess.run(
        [GENERATOR, "generate", "--fail-on-parse-errors"], cwd=tmp_path,
        env={"MIBDIRS": MIB_DIRS, "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    regenerated = (tmp_path / "snmp.yml").read_text()
    assert regenerated == (EXAMPLES / "snmp.yml").read_text(), (
        "examples/prometheus/snmp.yml differs from the generator's output: regenerate it with "
        "`cd ibsnmp/prometheus && MIBDIRS=$(ibsnmp mibs path) prometheus-snmp-generator generate`")
    assert set(module_bodies(regenerated)) == {"ib_if", "ib_pma", "ib_sm_nodes", "ib_sm_ports"}


# -- ibsnmp fabric targets ------------------------------------------------------------------------


@needs_exporter
def test_targets_v2c_config_loads_in_the_exporter(tmp_path: Path) -> None:
    config, targets = write_targets(tmp_path)
    groups = json.loads(targets.read_text())
    assert len(groups) == 8  # 4 switches and 4 CAs
    assert {g["labels"]["node_kind"] for g in groups} == {"switch", "ca"}
    assert all(g["targets"] == ["127.0.0.1:161"] for g in groups)
    assert all(len(g["labels"]["node_guid"]) == 16 for g in groups)
    modules = module_bodies(config.read_text())
    for group in groups:
        guid = group["labels"]["node_guid"]
        assert {f"ib_if@{guid}", f"ib_pma@{guid}"} <= set(modules)
        assert f'    community: "public@{guid}"' in modules[f"ib_if@{guid}"]
    assert config.stat().st_mode & 0o077 == 0  # it may hold secrets
    result = dry_run(config)
    assert result.returncode == 0, result.stderr


@needs_exporter
def test_targets_v3_config_loads_in_the_exporter(tmp_path: Path) -> None:
    auth = tmp_path / "auth.toml"
    auth.write_text('version = 3\n[auth]\nusername = "monitor"\nsecurity_level = "authPriv"\n'
                    'password = "a\\"quoted: secret"\nauth_protocol = "SHA256"\n'
                    'priv_protocol = "AES"\npriv_password = "priv-secret"\n')
    config, targets = write_targets(tmp_path, "--auth", str(auth), "--kinds", "switch")
    groups = json.loads(targets.read_text())
    assert {g["labels"]["node_kind"] for g in groups} == {"switch"} and len(groups) == 4
    guid = groups[0]["labels"]["node_guid"]
    body = module_bodies(config.read_text())[f"ib_if@{guid}"]
    assert f'    context_name: "{guid}"' in body and "  version: 3" in body
    assert '    password: "a\\"quoted: secret"' in body
    result = dry_run(config)
    assert result.returncode == 0, result.stderr


def test_node_auth_points_at_the_context() -> None:
    v2c = ScrapeAuth(2, {"community": "ro"})
    assert v2c.for_node("0123456789abcdef") == {"community": "ro@0123456789abcdef"}
    v3 = ScrapeAuth(3, {"username": "u"})
    assert v3.for_node("0123456789abcdef") == {"username": "u",
                                               "context_name": "0123456789abcdef"}


@pytest.mark.parametrize("text, complaint", [
    ("version = 4\n", "version must be"),
    ('version = 3\n[auth]\ncommunity = "x"\n', "needs [auth] username"),
    ('[auth]\ncontext_name = "x"\n', "unknown [auth] keys"),
    ("[auth]\ncommunity = 1\n", "table of strings"),
])
def test_auth_file_mistakes_are_refused(tmp_path: Path, text: str, complaint: str) -> None:
    path = tmp_path / "auth.toml"
    path.write_text(text)
    with pytest.raises(TargetsError, match=re.escape(complaint)):
        read_auth(path)


def test_a_module_with_its_own_auth_is_refused() -> None:
    shipped = "m:\n  walk:\n  - 1.3.6.1\n  auth:\n    community: x\n"
    with pytest.raises(TargetsError, match="sets auth"):
        exporter_config(shipped, read_auth(None), [], per_node=["m"])


# -- the real exporter scraping a running agent ---------------------------------------------------

AUTH_KEY, PRIV_KEY = "monitor-auth-key", "monitor-priv-key"
AGENT_CONFIG = f"""
[[community]]
name = "public"

[[user]]
name = "monitor"
auth = "SHA256"
auth_key = "{AUTH_KEY}"
priv = "AES"
priv_key = "{PRIV_KEY}"
"""
V3_AUTH = f"""version = 3
[auth]
username = "monitor"
security_level = "authPriv"
password = "{AUTH_KEY}"
auth_protocol = "SHA256"
priv_protocol = "AES"
priv_password = "{PRIV_KEY}"
"""
# snmp_exporter wraps a Counter64 at 2^53 so that a float64 holds it exactly.
WRAP = 2**53
SAMPLE = re.compile(r"^(?P<name>\w+)(?:\{(?P<labels>.*)\})? (?P<value>\S+)$")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
GUID_LABEL = re.compile(r"^0x[0-9A-F]{16}$")


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


@dataclass
class Scrape:
    samples: list[Sample]
    types: dict[str, str]

    def named(self, name: str) -> list[Sample]:
        return [s for s in self.samples if s.name == name]


def parse_exposition(text: str) -> Scrape:
    """Prometheus' text format: samples and # TYPE lines."""
    samples, types = [], {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
        elif line and not line.startswith("#"):
            match = SAMPLE.match(line)
            assert match, f"not a sample line: {line!r}"
            labels = {k: v.replace('\\"', '"').replace("\\\\", "\\")
                      for k, v in LABEL.findall(match["labels"] or "")}
            samples.append(Sample(match["name"], labels, float(match["value"])))
    return Scrape(samples, types)


@dataclass
class Exporter:
    url: str
    process: subprocess.Popen[str]
    log: Path

    def scrape(self, module: str, target: str) -> Scrape:
        query = urllib.parse.urlencode({"module": module, "target": target})
        with urllib.request.urlopen(f"{self.url}/snmp?{query}", timeout=60) as answer:
            assert answer.status == 200
            text = answer.read().decode("utf-8")
        scrape = parse_exposition(text)
        returned = scrape.named("snmp_scrape_pdus_returned")
        assert returned and returned[0].value > 0, f"{module}: nothing returned\n{text[:2000]}"
        return scrape


def start_exporter(config: Path) -> Exporter:
    port = free_tcp_port()
    log = config.with_suffix(".log")
    with log.open("w") as out:
        process = subprocess.Popen(
            [EXPORTER, f"--config.file={config}", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=out, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"exporter exited: {log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return Exporter(url, process, log)
        except OSError:
            time.sleep(0.1)
    stop(process)
    raise RuntimeError("the exporter did not listen in time")


@dataclass
class Setup:
    agent: RunningAgent
    exporters: dict[str, Exporter]  # by SNMP version, "2c" and "3"
    nodes: list[dict[str, str]]  # file_sd labels
    targets: Path  # the file_sd list (the same for both versions)

    def node(self, kind: str) -> str:
        return next(n["node_guid"] for n in self.nodes if n["node_kind"] == kind)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    if shutil.which(EXPORTER) is None or shutil.which(GENERATOR) is None:
        pytest.skip("Debian's prometheus-snmp-exporter is not installed")
    work = tmp_path_factory.mktemp("prometheus")
    agent_config = work / "ibsnmp.toml"
    agent_config.write_text(AGENT_CONFIG)
    agent_config.chmod(0o600)
    auth = work / "v3.toml"
    auth.write_text(V3_AUTH)
    with ibsnmp_agent("--config", str(agent_config), fabric=SMALL_FABRIC) as agent:
        exporters: dict[str, Exporter] = {}
        try:
            for version, extra in (("2c", ()), ("3", ("--auth", str(auth)))):
                folder = work / version
                folder.mkdir()
                config, targets = write_targets(folder, *extra, agent=agent.address)
                exporters[version] = start_exporter(config)
            nodes = [g["labels"] for g in json.loads(targets.read_text())]
            yield Setup(agent, exporters, nodes, targets)
        finally:
            for exporter in exporters.values():
                stop(exporter.process)
            for exporter in exporters.values():
                # The exporter logs every failed scrape; none may have failed.
                assert "level=error" not in exporter.log.read_text(), exporter.log.read_text()


def snmp_auth(version: str, context: str) -> list[str]:
    if version == "3":
        return ["-v3", "-l", "authPriv", "-u", "monitor", "-a", "SHA-256", "-A", AUTH_KEY,
                "-x", "AES", "-X", PRIV_KEY, *(["-n", context] if context else [])]
    return ["-v2c", "-c", f"public@{context}" if context else "public"]


MIB_OF_PREFIX = {"if": "IF-MIB", "ibPma": "PMA-MIB", "ibSm": "IB-SM-MIB"}


def qualified(name: str) -> str:
    """'ifName.3' -> 'IF-MIB::ifName.3'."""
    prefix = max((p for p in MIB_OF_PREFIX if name.startswith(p)), key=len)
    return f"{MIB_OF_PREFIX[prefix]}::{name}"


def snmpget(agent: RunningAgent, auth: Sequence[str], names: Sequence[str]) -> list[str]:
    """Each instance's value as snmpget prints it alone (enums as numbers)."""
    values: list[str] = []
    for start in range(0, len(names), 40):
        chunk = [qualified(name) for name in names[start:start + 40]]
        out = assert_ok(agent.snmp("snmpget", *auth, "-Oqv", "-Oe", "-OU", "-Ot", *chunk))
        lines = out.splitlines()
        assert len(lines) == len(chunk), out
        values += lines
    return values


def index_of(labels: dict[str, str], index_labels: Sequence[str]) -> str:
    """The instance OID suffix of a sample: integers as they are, octet
    strings (0x...) as their octets (fixed-size indexes carry no length)."""
    parts = []
    for name in index_labels:
        value = labels[name]
        parts += ([str(b) for b in bytes.fromhex(value[2:])] if value.startswith("0x")
                  else [value])
    return ".".join(parts)


def check_counters(agent: RunningAgent, auth: Sequence[str], exporter: Exporter, module: str,
                   counters: Sequence[str], index_labels: Sequence[str]) -> Scrape:
    """Scrape between two snmpget reads of every counter instance: each
    scraped value lies in the window the two reads make."""
    probe = exporter.scrape(module, agent.address)
    instances = sorted({index_of(s.labels, index_labels) for s in probe.named(counters[0])})
    assert instances, f"{module}: no {counters[0]} samples"
    names = [f"{c}.{i}" for c in counters for i in instances]
    before = dict(zip(names, map(int, snmpget(agent, auth, names))))
    scrape = exporter.scrape(module, agent.address)
    after = dict(zip(names, map(int, snmpget(agent, auth, names))))
    for counter in counters:
        assert scrape.types[counter] == "counter", counter
        seen = {index_of(s.labels, index_labels): s.value for s in scrape.named(counter)}
        assert sorted(seen) == instances, counter
        for instance, value in seen.items():
            low, high = before[f"{counter}.{instance}"], after[f"{counter}.{instance}"]
            assert (int(value) - low) % WRAP <= (high - low) % WRAP, (counter, instance, value,
                                                                       low, high)
    return scrape


IF_COUNTERS = ("ifHCInOctets", "ifHCOutOctets", "ifHCInUcastPkts", "ifHCOutUcastPkts",
               "ifHCInMulticastPkts", "ifHCOutMulticastPkts")
IF_STATES = ("ifHighSpeed", "ifOperStatus", "ifAdminStatus")


@pytest.mark.parametrize("version", ["2c", "3"])
@pytest.mark.parametrize("kind", ["switch", "ca"])
def test_ib_if_in_a_node_context_equals_snmpget(setup: Setup, version: str, kind: str) -> None:
    guid = setup.node(kind)
    auth = snmp_auth(version, guid)
    scrape = check_counters(setup.agent, auth, setup.exporters[version], f"ib_if@{guid}",
                            IF_COUNTERS, ["ifIndex"])
    instances = sorted({s.labels["ifIndex"] for s in scrape.named("ifHCInOctets")})
    names = [f"{column}.{i}" for column in ("ifName", "ifAlias", *IF_STATES) for i in instances]
    read = dict(zip(names, snmpget(setup.agent, auth, names)))
    for sample in scrape.samples:
        if not sample.name.startswith("if"):
            continue
        i = sample.labels["ifIndex"]
        assert sample.labels["ifName"] == read[f"ifName.{i}"], sample
        assert sample.labels["ifAlias"] == read[f"ifAlias.{i}"], sample
        if sample.name in IF_STATES:
            assert sample.value == int(read[f"{sample.name}.{i}"]), sample
    assert {s.name for s in scrape.samples} >= {*IF_COUNTERS, *IF_STATES}


PMA_COUNTERS = ("ibPmaSymbolErrCounter", "ibPmaLinkErrRecoveryCntr", "ibPmaLinkDownedCntr",
                "ibPmaPortRcvErr", "ibPmaPortXmitDiscard", "ibPmaVl15Dropped")


@pytest.mark.parametrize("version", ["2c", "3"])
def test_ib_pma_in_a_switch_context_equals_snmpget(setup: Setup, version: str) -> None:
    guid = setup.node("switch")
    check_counters(setup.agent, snmp_auth(version, guid), setup.exporters[version],
                   f"ib_pma@{guid}", PMA_COUNTERS, ["ibPmaPortCntrsIndex"])


def descriptions(agent: RunningAgent, auth: Sequence[str]) -> dict[str, str]:
    """NodeDescription by node GUID (16 hex digits), from snmpbulkwalk."""
    out = assert_ok(agent.snmp("snmpbulkwalk", *auth, "-On", "-Oq",
                               "IB-SM-MIB::ibSmNodeInfoDescription"))
    found = {}
    for line in out.splitlines():
        oid, _, text = line.partition(" ")
        guid = bytes(int(arc) for arc in oid.split(".")[-8:]).hex()
        found[guid] = text
    return found


@pytest.mark.parametrize("version", ["2c", "3"])
def test_ib_sm_nodes_labels_equal_snmpget(setup: Setup, version: str) -> None:
    auth = snmp_auth(version, "")
    scrape = setup.exporters[version].scrape("ib_sm_nodes", setup.agent.address)
    named = descriptions(setup.agent, auth)
    samples = scrape.named("ibSmNodeInfoType")
    assert len(samples) == len(setup.nodes) == len(named)
    index = ["ibSmNodeInfoSubnetPrefix", "ibSmNodeInfoNodeGUID"]
    types = snmpget(setup.agent, auth,
                    [f"ibSmNodeInfoType.{index_of(s.labels, index)}" for s in samples])
    for sample, node_type in zip(samples, types):
        guid = sample.labels["ibSmNodeInfoNodeGUID"]
        assert GUID_LABEL.match(guid), sample
        assert sample.labels["ibSmNodeInfoDescription"] == named[guid[2:].lower()], sample
        assert sample.value == int(node_type), sample
    # GUID values: an info series each, the GUID as a label, all 8 octets.
    for column in ("ibSmNodeInfoPortGUID", "ibSmNodeInfoSystemImageGUID"):
        guids = scrape.named(column)
        assert len(guids) == len(samples), column
        read = snmpget(setup.agent, auth, [f"{column}.{index_of(s.labels, index)}"
                                           for s in guids])
        for sample, value in zip(guids, read):
            assert GUID_LABEL.match(sample.labels[column]), sample
            assert sample.labels[column][2:].lower() == re.sub(r"[^0-9a-f]", "", value.lower())


@pytest.mark.parametrize("version", ["2c", "3"])
def test_ib_sm_ports_carry_the_node_description(setup: Setup, version: str) -> None:
    auth = snmp_auth(version, "")
    scrape = setup.exporters[version].scrape("ib_sm_ports", setup.agent.address)
    named = descriptions(setup.agent, auth)
    port_samples = [s for s in scrape.samples if s.name.startswith("ibSmPortInfo")]
    assert port_samples
    for sample in port_samples:
        guid = sample.labels["ibSmPortInfoNodeGUID"]
        assert GUID_LABEL.match(guid), sample
        assert sample.labels["ibSmNodeInfoDescription"] == named[guid[2:].lower()], sample
    lids = scrape.named("ibSmPortInfoLID")
    index = ["ibSmPortInfoSubnetPrefix", "ibSmPortInfoNodeGUID", "ibSmPortInfoLocalPortNum"]
    read = snmpget(setup.agent, auth, [f"ibSmPortInfoLID.{index_of(s.labels, index)}"
                                       for s in lids])
    assert [s.value for s in lids] == [float(value) for value in read]


# -- Prometheus itself with the shipped scrape configuration -----------------------------------

PROMETHEUS = "/usr/bin/prometheus"


def prometheus_query(url: str, query: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{url}/api/v1/query?" + urllib.parse.urlencode(
            {"query": query}), timeout=10) as answer:
        body = json.load(answer)
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


@pytest.mark.skipif(not Path(PROMETHEUS).exists(), reason="Debian's prometheus is not installed")
def test_prometheus_with_the_written_scrape_config_gets_labeled_rates(
        setup: Setup, tmp_path: Path) -> None:
    exporter = setup.exporters["2c"].url.removeprefix("http://")
    # `ibsnmp fabric targets --prometheus-out`: used as written, unedited.
    write_targets(tmp_path, "--prometheus-out", str(tmp_path / "prometheus.yml"),
                  "--exporter", exporter, "--scrape-interval", "2s", agent=setup.agent.address)
    port = free_tcp_port()
    url = f"http://127.0.0.1:{port}"
    with (tmp_path / "prometheus.log").open("w") as log:
        process = subprocess.Popen(
            [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT)
    try:
        # Three scrapes of every target make a rate over the last two.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(1)
            try:
                counts = prometheus_query(url, "count_over_time(up[20s])")
            except OSError:
                continue
            if len(counts) == 2 * len(setup.nodes) + 2 and all(
                    int(c["value"][1]) >= 3 for c in counts):
                break
        up = prometheus_query(url, "up")
        assert len(up) == 2 * len(setup.nodes) + 2, up
        assert all(sample["value"][1] == "1" for sample in up), up
        rates = prometheus_query(url, "rate(ifHCInOctets[20s])")
        names = {node["node_guid"]: node["node_name"] for node in setup.nodes}
        assert {r["metric"]["node_guid"] for r in rates} == set(names)
        for series in rates:
            labels = series["metric"]
            assert labels["job"] == "ib_if" and labels["instance"] == labels["node_guid"]
            assert labels["node_name"] == names[labels["node_guid"]]
            assert labels["ifName"]
            assert float(series["value"][1]) >= 0
        # An empty ifAlias (a port without a far end) is no label in Prometheus.
        linked = [series for series in rates if series["metric"].get("ifAlias")]
        assert linked and any(float(series["value"][1]) > 0 for series in linked), rates
        described = prometheus_query(url, "ibSmPortInfoLID")
        assert described and all(s["metric"].get("node_name") for s in described)
    finally:
        stop(process)


def test_an_unknown_node_kind_is_refused(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ibsnmp", "fabric", "targets", "--fabric", SMALL_FABRIC,
         "--agent", "127.0.0.1:161", "--snmp-yml", str(EXAMPLES / "snmp.yml"), "--kinds",
         "switches", "--config-out", str(tmp_path / "a"), "--targets-out", str(tmp_path / "b")],
        capture_output=True, text=True, cwd=PROJECT_ROOT, check=False)
    assert result.returncode == 2 and "unknown node kinds ['switches']" in result.stderr
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize("version", ["2c", "3"])
def test_targets_from_the_agent_equal_the_fabrics(setup: Setup, tmp_path: Path,
                                                   version: str) -> None:
    extra = ["--from-agent"]
    if version == "3":
        (tmp_path / "v3.toml").write_text(V3_AUTH)
        extra += ["--auth", str(tmp_path / "v3.toml")]
    config, targets = write_targets(tmp_path, *extra, agent=setup.agent.address)
    assert json.loads(targets.read_text()) == json.loads(setup.targets.read_text())
    assert set(module_bodies(config.read_text())) == set(module_bodies(
        (setup.targets.parent / "snmp.yml").read_text()))

"""Debian's Prometheus and snmp_exporter against a running agent, with the
configuration and alert rules `ibsnmp fabric targets --prometheus-out`
writes, unedited: a flapping link raises IBPortDown and IBLinkDowned, and
the series of the three jobs join on node_guid and port."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.mqtt.test_prometheus_exporter import (EXPORTER, GENERATOR, PROMETHEUS, SMALL_FABRIC,
                                                 prometheus_query, start_exporter)
from tests.support.e2e import PROJECT_ROOT, ibsnmp_agent, stop
from tests.support.mosquitto import free_tcp_port

T = TypeVar("T")
DEADLINE_S = 90.0
# leaf01's port 3 (an uplink) is down 5 s of every 8, from 3 s after the
# agent starts: Prometheus (scraping every second) sees it Active, then Down.
SCENARIO = """
[[event]]
at = 3
action = "port-down"
node = "leaf01"
port = 3
up_after = 5
repeat = 30
period = 8
"""
GUID = re.compile(r"^[0-9a-f]{16}$")

pytestmark = pytest.mark.skipif(
    not Path(PROMETHEUS).exists() or shutil.which(EXPORTER) is None
    or shutil.which(GENERATOR) is None,
    reason="Debian's prometheus and prometheus-snmp-exporter are not installed")


def targets(work: Path, agent: str, *extra: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ibsnmp", "fabric", "targets", "--from-agent", "--agent", agent,
         "--config-out", str(work / "snmp.yml"), "--targets-out",
         str(work / "ibsnmp-targets.json"), *extra],
        capture_output=True, text=True, cwd=PROJECT_ROOT, check=False)
    assert result.returncode == 0, result.stderr


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.load(answer)


def wait_for(what: str, probe: Callable[[], T | None]) -> T:
    """Poll `probe` until it returns something, for DEADLINE_S at most."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        try:
            found = probe()
        except (urllib.error.URLError, ConnectionError):
            found = None
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"no {what} within {DEADLINE_S:.0f} s")


def prometheus(config: Path, work: Path) -> Iterator[str]:
    """Prometheus on a free local port, reading `config`; its URL."""
    port = free_tcp_port()
    with (work / "prometheus.log").open("w") as log:
        process = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={work / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for("ready Prometheus", lambda: get_json(f"{url}/api/v1/status/runtimeinfo"))
        yield url
    finally:
        stop(process)


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("alerts")
    scenario = work / "flaps.toml"
    scenario.write_text(SCENARIO)
    with ibsnmp_agent("--scenario", str(scenario), fabric=SMALL_FABRIC) as agent:
        # The exporter's configuration first: Prometheus' names the exporter.
        targets(work, agent.address)
        exporter = start_exporter(work / "snmp.yml")
        try:
            config = work / "prometheus.yml"
            targets(work, agent.address, "--prometheus-out", str(config),
                    "--exporter", exporter.url.removeprefix("http://"),
                    "--scrape-interval", "1s")
            yield from prometheus(config, work)
        finally:
            stop(exporter.process)


def alerts(url: str, name: str, **labels: str) -> list[dict[str, Any]]:
    """The pending or firing alerts of that name with those labels."""
    found = get_json(f"{url}/api/v1/alerts")["data"]["alerts"]
    return [a for a in found if a["labels"]["alertname"] == name
            and all(a["labels"].get(k) == v for k, v in labels.items())]


def test_a_port_that_goes_down_raises_ib_port_down(url: str) -> None:
    raised = wait_for("IBPortDown", lambda: alerts(url, "IBPortDown", node_name="leaf01",
                                                   port="3"))
    alert = raised[0]
    assert alert["state"] in ("pending", "firing")
    assert GUID.match(alert["labels"]["node_guid"]), alert
    assert alert["annotations"]["summary"] == "leaf01 port 3 is down"


def test_a_link_that_went_down_raises_ib_link_downed(url: str) -> None:
    # No `for`: firing as soon as the counter moved.
    raised = wait_for("IBLinkDowned", lambda: [
        a for a in alerts(url, "IBLinkDowned", node_name="leaf01", port="3")
        if a["state"] == "firing"])
    assert raised[0]["labels"]["job"] == "ib_pma"


def test_the_degraded_link_of_the_simulated_fabric_raises_ib_link_width_degraded(
        url: str) -> None:
    # The simulated fabric has one host link trained to 1x of 1x/4x.
    raised = wait_for("IBLinkWidthDegraded", lambda: alerts(url, "IBLinkWidthDegraded"))
    assert {a["annotations"]["summary"].split(" runs at ")[1] for a in raised} == {"1X"}


def test_sm_and_if_series_join_on_the_node_guid(url: str) -> None:
    nodes = wait_for("ib_if series", lambda: {
        s["metric"]["node_guid"] for s in prometheus_query(url, "ifHighSpeed")})
    joined = prometheus_query(
        url, "ifHighSpeed * on(node_guid) group_left(ibSmNodeInfoPortGUID) ibSmNodeInfoPortGUID")
    assert {s["metric"]["node_guid"] for s in joined} == nodes
    assert all(GUID.match(s["metric"]["ibSmNodeInfoPortGUID"]) for s in joined), joined


def test_every_ib_if_port_joins_its_ib_sm_port(url: str) -> None:
    ports = wait_for("ib_if ports", lambda: prometheus_query(url, "ifOperStatus"))
    joined = prometheus_query(
        url, "ibSmPortInfoLinkWidthActive and on(node_guid, port) ifOperStatus")
    assert {(s["metric"]["node_guid"], s["metric"]["port"]) for s in joined} == {
        (s["metric"]["node_guid"], s["metric"]["port"]) for s in ports}


def test_one_guid_form_in_every_job(url: str) -> None:
    for job in ("ib_if", "ib_pma", "ib_sm"):
        series = wait_for(f"{job} series", lambda: prometheus_query(
            url, f'{{job="{job}", node_guid!=""}}'))
        assert all(GUID.match(s["metric"]["node_guid"]) for s in series), job
        assert not any(name.endswith("NodeGUID") for s in series for name in s["metric"]), job


def test_key_violations_are_counters(url: str) -> None:
    metadata = wait_for("metadata", lambda: get_json(
        f"{url}/api/v1/metadata?" + urllib.parse.urlencode(
            {"metric": "ibSmPortInfoPKeyViolation"}))["data"])
    assert [m["type"] for m in metadata["ibSmPortInfoPKeyViolation"]] == ["counter"]

"""Prometheus' configuration for an ibsnmp agent read through snmp_exporter 0.21.

As `ibsnmp fabric targets --prometheus-out` writes it: the jobs ib_if and ib_pma (every node's
context, from the file_sd list) and ib_sm (the default context), and the alert rules shipped
beside this module. The relabeling gives every series of the three jobs the same labels, so
that PromQL joins them (`on(node_guid, port)`): node_guid (16 lower-case hex digits, which the
`lowercase` action makes of the exporter's `0x` form), node_name, port (ifIndex in a node's
context) and agent (so that a rule tells a silent agent from one silent node context).
Reference: docs/prometheus.md, 'Labels and joins'.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

ALERT_RULES = Path(__file__).with_name("ibsnmp-alerts.yml")
DEFAULT_EXPORTER = "127.0.0.1:9116"
DEFAULT_SCRAPE_INTERVAL = "60s"
DEFAULT_SCRAPE_TIMEOUT = "30s"
# Prometheus' duration syntax, largest unit first, each unit at most once.
_UNIT_MS = {"y": 365 * 86_400_000, "w": 7 * 86_400_000, "d": 86_400_000, "h": 3_600_000,
            "m": 60_000, "s": 1000, "ms": 1}
_DURATION = re.compile("".join(rf"(?:(\d+){unit})?" for unit in _UNIT_MS))


@dataclass(frozen=True, slots=True)
class PrometheusSetup:
    agent: str  # HOST:PORT, as the exporter reaches the agent
    exporter: str  # HOST:PORT, as Prometheus reaches the exporter
    targets_file: str  # the file_sd list, as Prometheus finds it
    rules_file: str | None  # the alert rules, as Prometheus finds them; None: no rules
    scrape_interval: str = DEFAULT_SCRAPE_INTERVAL
    scrape_timeout: str = DEFAULT_SCRAPE_TIMEOUT


def duration_ms(text: str) -> int:
    """A Prometheus duration ("90s", "1m30s") in milliseconds; ValueError
    for anything Prometheus would refuse, or zero."""
    match = _DURATION.fullmatch(text)
    if not text or match is None:
        raise ValueError(f"not a Prometheus duration: {text!r} (e.g. 60s, 2m, 1m30s)")
    total = sum(int(count) * unit_ms
                for count, unit_ms in zip(match.groups(), _UNIT_MS.values()) if count)
    if total == 0:
        raise ValueError(f"a duration of zero: {text!r}")
    return total


def check_scrape_times(interval: str, timeout: str) -> None:
    """Prometheus refuses a configuration whose timeout exceeds its interval."""
    if duration_ms(timeout) > duration_ms(interval):
        raise ValueError(f"scrape timeout {timeout} is longer than the scrape interval {interval}")


def default_timeout(interval: str) -> str:
    """DEFAULT_SCRAPE_TIMEOUT, or the interval when that is shorter."""
    return min(DEFAULT_SCRAPE_TIMEOUT, interval, key=duration_ms)


def prometheus_config(setup: PrometheusSetup) -> str:
    """The whole prometheus.yml text."""
    check_scrape_times(setup.scrape_interval, setup.scrape_timeout)
    values = {"agent": _quoted(setup.agent), "exporter": _quoted(setup.exporter),
              "targets": _quoted(setup.targets_file),
              "scrape_interval": setup.scrape_interval, "scrape_timeout": setup.scrape_timeout}
    rule_files = ("rule_files:\n  - " + _quoted(setup.rules_file) + "\n\n"
                  if setup.rules_file is not None else "")
    jobs = [_NODE_JOB % dict(values, module=module, about=about, metric_relabels=relabels)
            for module, about, relabels in _NODE_JOBS]
    return (_HEADER % values + rule_files + "scrape_configs:\n" + "\n".join(jobs)
            + "\n" + _SM_JOB % values)


def _quoted(text: str) -> str:
    # A JSON string is a YAML double-quoted scalar: any address or path is safe.
    return json.dumps(text)


_HEADER = """\
# Prometheus configuration for an ibsnmp agent read through snmp_exporter
# 0.21, written by `ibsnmp fabric targets --prometheus-out`
# (docs/prometheus.md). The agent is %(agent)s, the exporter %(exporter)s.
#
# Every series of the jobs ib_if, ib_pma and ib_sm carries the same labels
# for its node and port, so that PromQL joins them (on(node_guid, port)):
#   node_guid  the node GUID, 16 lower-case hex digits (the context name)
#   node_name  the NodeDescription
#   port       the port number
#   agent      the agent's address
# A larger fabric wants a longer scrape interval: see docs/prometheus.md.
global:
  scrape_interval: %(scrape_interval)s
  scrape_timeout: %(scrape_timeout)s
  evaluation_interval: %(scrape_interval)s

"""

# A job per per-node module: the file_sd list has a target per node (the
# agent's address, labeled node_guid, node_name and node_kind, labels every
# series keeps); the node's own module (ib_if@<guid>) reads its context.
_NODE_JOB = """\
  # %(about)s
  - job_name: %(module)s
    metrics_path: /snmp
    file_sd_configs:
      - files: [%(targets)s]
    relabel_configs:
      - source_labels: [__address__]
        target_label: __param_target
      - source_labels: [__address__]
        target_label: agent
      - source_labels: [node_guid]
        target_label: __param_module
        replacement: %(module)s@$1
      # Names may repeat, GUIDs do not.
      - source_labels: [node_guid]
        target_label: instance
      - target_label: __address__
        replacement: %(exporter)s
    metric_relabel_configs:
%(metric_relabels)s"""

_NODE_JOBS = (
    ("ib_if", "IF-MIB of every node's ports: traffic counters (64-bit), speed, states.",
     ("      # In a node's context ifIndex is the port number.\n"
      "      - source_labels: [ifIndex]\n"
      "        target_label: port\n")),
    ("ib_pma", "PMA-MIB error counters of every node's ports, by port number.",
     ("      - source_labels: [ibPmaPortCntrsIndex]\n"
      "        target_label: port\n"
      "      - action: labeldrop\n"
      "        regex: ibPmaPortCntrsIndex\n")),
)

_SM_JOB = """\
  # IB-SM-MIB: every node and every port of the fabric, in one scrape each,
  # from the agent's default context.
  - job_name: ib_sm
    metrics_path: /snmp
    static_configs:
      - targets: [%(agent)s]
        labels:
          __param_module: ib_sm_nodes
      - targets: [%(agent)s]
        labels:
          __param_module: ib_sm_ports
    relabel_configs:
      - source_labels: [__address__]
        target_label: __param_target
      - source_labels: [__address__]
        target_label: agent
      - source_labels: [__param_module]
        target_label: module
      - source_labels: [__address__]
        target_label: instance
      - target_label: __address__
        replacement: %(exporter)s
    metric_relabel_configs:
      # The exporter writes a GUID as 0x and 16 upper-case digits: node_guid
      # takes the digits, lower-cased, the form of the other two jobs.
      - source_labels: [ibSmNodeInfoNodeGUID, ibSmPortInfoNodeGUID]
        separator: ""
        regex: 0x([0-9A-Fa-f]+)
        target_label: node_guid
      - action: lowercase
        source_labels: [node_guid]
        target_label: node_guid
      # The GUIDs of the info series, in the same form.
      - source_labels: [ibSmNodeInfoPortGUID]
        regex: 0x([0-9A-Fa-f]+)
        target_label: ibSmNodeInfoPortGUID
      - action: lowercase
        source_labels: [ibSmNodeInfoPortGUID]
        target_label: ibSmNodeInfoPortGUID
      - source_labels: [ibSmNodeInfoSystemImageGUID]
        regex: 0x([0-9A-Fa-f]+)
        target_label: ibSmNodeInfoSystemImageGUID
      - action: lowercase
        source_labels: [ibSmNodeInfoSystemImageGUID]
        target_label: ibSmNodeInfoSystemImageGUID
      - source_labels: [ibSmNodeInfoDescription]
        target_label: node_name
      - source_labels: [ibSmPortInfoLocalPortNum]
        target_label: port
      # Their originals, now node_guid, node_name and port.
      - action: labeldrop
        regex: ibSm(Node|Port)InfoNodeGUID|ibSmNodeInfoDescription|ibSmPortInfoLocalPortNum
"""

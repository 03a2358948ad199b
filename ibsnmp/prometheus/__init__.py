"""The snmp_exporter module set shipped with the agent: generator.yml and the
snmp.yml Debian's prometheus-snmp-generator makes of it with ibsnmp's MIBs
(examples/prometheus links to both)."""

from __future__ import annotations

from pathlib import Path

SHIPPED_SNMP_YML = Path(__file__).with_name("snmp.yml")
GENERATOR_YML = Path(__file__).with_name("generator.yml")

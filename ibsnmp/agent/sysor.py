"""sysORTable: the MIB modules this agent serves (RFC 3418).

One row per module, its MODULE-IDENTITY OID in sysORID: the five
InfiniBand modules and IF-MIB (OIDs read from compiled_mibs/) and the SNMP modules
pysnmp implements, named and described as net-snmp's snmpd lists them.
Every row exists from start-up, so sysORUpTime and sysORLastChange are 0.
"""

from __future__ import annotations

from pysnmp.entity.engine import SnmpEngine

from ibsnmp.mib.api import Oid
from ibsnmp.mib.loader import SERVED_MODULES, definitions

SERVED_DESCRIPTIONS = {
    "SMA-MIB": "The MIB module for the InfiniBand Subnet Management Agent (SMA).",
    "IB-SM-MIB": "The MIB module for InfiniBand Subnet Managers (SM).",
    "IB-CA-MIB": "The MIB module for InfiniBand Channel Adapters (CA).",
    "PMA-MIB": "The MIB module for the InfiniBand Performance Management Agent (PMA).",
    "IBCONNECTION-MIB": "The MIB module for InfiniBand Channel Adapter transports "
                        "(UD, RD and connected services).",
    "IF-MIB": "IF-MIB (RFC 2863): every InfiniBand port as a network interface.",
}
SNMP_MODULES: tuple[tuple[Oid, str], ...] = (
    ((1, 3, 6, 1, 6, 3, 10, 3, 1, 1), "The SNMP Management Architecture MIB."),
    ((1, 3, 6, 1, 6, 3, 11, 3, 1, 1), "The MIB for Message Processing and Dispatching."),
    ((1, 3, 6, 1, 6, 3, 15, 2, 1, 1),
     "The management information definitions for the SNMP User-based Security Model."),
    ((1, 3, 6, 1, 6, 3, 1), "The MIB module for SNMPv2 entities"),
    ((1, 3, 6, 1, 6, 3, 16, 2, 2, 1), "View-based Access Control Model for SNMP."),
)
ROWS_MODULE = "__IBSNMP-SYSOR"


def sys_or_rows() -> list[tuple[Oid, str]]:
    """(sysORID, sysORDescr) of every row, in sysORIndex order from 1."""
    mibs = definitions()
    rows = list(SNMP_MODULES)
    rows += [(mibs.module_identity(module), SERVED_DESCRIPTIONS[module])
             for module in SERVED_MODULES]
    return rows


def install_sys_or_table(engine: SnmpEngine) -> None:
    builder = engine.get_mib_builder()
    instance_class, = builder.import_symbols("SNMPv2-SMI", "MibScalarInstance")
    sys_or_id, sys_or_descr, sys_or_up_time = builder.import_symbols(
        "SNMPv2-MIB", "sysORID", "sysORDescr", "sysORUpTime")
    instances = {}
    for index, (module_oid, text) in enumerate(sys_or_rows(), start=1):
        for column, value in ((sys_or_id, module_oid), (sys_or_descr, text),
                              (sys_or_up_time, 0)):
            instances[f"{column.label}.{index}"] = instance_class(
                column.name, (index,), column.syntax.clone(value))
    builder.export_symbols(ROWS_MODULE, **instances)

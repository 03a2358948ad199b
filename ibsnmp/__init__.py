"""ibsnmp: an SNMP agent for InfiniBand fabrics."""

__version__ = "0.1.0"

"""SNMP on the wire, read and written as octets without a full decode."""

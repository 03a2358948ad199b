"""Subnet administration over SNMP: SA queries computed from the fabric
model (query), request sessions with expiry and a cap (sessions), the
configuration a manager writes (config), and the store that keeps both,
saves configuration durably and applies it to the provider's snapshots
(store)."""

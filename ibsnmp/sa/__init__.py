"""Subnet administration (SA), both ways an SA answers the agent.

Computed from the fabric model: PathRecord, MultiPathRecord and TraceRecord answers (query),
the request sessions IB-SM-MIB's request tables open (sessions), and the interface of an SA
that answers them (backend). Asked of the subnet's own SA over MADs: SA MADs and their records
as field tables (records), the client that sends them (client) on a thread of its own
(worker), the Notices of its Reports as trap events (notices), the SaBackend that asks it
(mad_backend), the one that follows the master SM (following), and the snapshot lookups
from LIDs and GIDs to nodes and ports (snapshot_lookups). The generator of every MAD layout's
record type, mad's and sa's alike, lives here too (record_types)."""

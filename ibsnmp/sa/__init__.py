"""Subnet administration computed from the fabric model: SA queries
(PathRecord, MultiPathRecord, TraceRecord: query), the request sessions
IB-SM-MIB's request tables open (sessions), and the interface of an SA that
answers them (backend). The subnet's own SA, asked over MADs, is in
ibsnmp.live."""

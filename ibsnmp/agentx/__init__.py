"""AgentX (RFC 2741): ibsnmp as a subagent of a master agent such as net-snmp's snmpd.

pdu: the PDUs as bytes and back; session: one session's protocol state;
answers: requests answered from the served MIB; connection: the socket,
pings, reconnects; service: how `ibsnmp run --agentx` sets it up (the master's
address is configuration's: ibsnmp.agent.agentx_master).
"""

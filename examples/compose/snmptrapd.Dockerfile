# net-snmp's snmptrapd with ibsnmp's MIBs, for the compose example.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends snmptrapd \
    && rm -rf /var/lib/apt/lists/*
COPY ibsnmp/mibs /usr/share/ibsnmp/mibs
COPY examples/compose/snmptrapd.conf /etc/snmp/compose-snmptrapd.conf
EXPOSE 162/udp
CMD ["snmptrapd", "-f", "-Lo", "-C", "-c", "/etc/snmp/compose-snmptrapd.conf", \
     "-M", "/usr/share/ibsnmp/mibs/base:/usr/share/ibsnmp/mibs", "-m", "ALL", "udp:162"]

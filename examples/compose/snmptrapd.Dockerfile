# net-snmp's snmptrapd with ibsnmp's MIBs, for the compose example.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends snmptrapd \
    && rm -rf /var/lib/apt/lists/*
COPY ibsnmp/mib_sources /usr/share/ibsnmp/mib_sources
COPY examples/compose/snmptrapd.conf /etc/snmp/compose-snmptrapd.conf
EXPOSE 162/udp
CMD ["snmptrapd", "-f", "-Lo", "-C", "-c", "/etc/snmp/compose-snmptrapd.conf", \
     "-M", "/usr/share/ibsnmp/mib_sources/base:/usr/share/ibsnmp/mib_sources", "-m", "ALL", "udp:162"]

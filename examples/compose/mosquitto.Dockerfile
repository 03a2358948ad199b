# mosquitto from Debian's package, for the compose example.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mosquitto \
    && rm -rf /var/lib/apt/lists/*
COPY examples/compose/mosquitto.conf /etc/mosquitto/compose.conf
USER mosquitto
EXPOSE 1883
CMD ["mosquitto", "-c", "/etc/mosquitto/compose.conf"]

# ibsnmp container image: the agent as a non-root process serving UDP 161.
#
#   docker build -t ibsnmp .                 (or: podman build --format docker -t ibsnmp .)
#   docker run -d -p 161:161/udp ibsnmp
#   snmpbulkwalk -v2c -c public HOST .1.3.6.1.3.117
#
# Offline builds: when the build context holds wheelhouse/ (made by
# `pip wheel . -w wheelhouse`), everything is installed from it and nothing
# is downloaded. BASE is any Debian-like image with python3 (>= 3.11) and
# its venv module.
ARG BASE=python:3.11-slim-bookworm

FROM ${BASE} AS build
WORKDIR /src
COPY . /src
# The wheel is built here (or taken from wheelhouse/), then installed with
# its dependencies into a virtual environment that the final stage copies.
RUN set -eu; \
    python3 -m venv /opt/ibsnmp; \
    if ls wheelhouse/ibsnmp-*.whl >/dev/null 2>&1; then \
        /opt/ibsnmp/bin/pip install --no-cache-dir --no-index --find-links wheelhouse ibsnmp; \
    else \
        /opt/ibsnmp/bin/pip wheel --no-cache-dir --no-deps -w /tmp/wheels .; \
        /opt/ibsnmp/bin/pip install --no-cache-dir /tmp/wheels/ibsnmp-*.whl; \
    fi; \
    /opt/ibsnmp/bin/pip uninstall -y -q pip setuptools; \
    find /opt/ibsnmp -name __pycache__ -prune -exec rm -rf {} +; \
    /opt/ibsnmp/bin/python -m compileall -q /opt/ibsnmp/lib

FROM ${BASE}
COPY --from=build /opt/ibsnmp /opt/ibsnmp
# A fixed uid, so a state volume can be prepared on the host (chown 10161).
RUN set -eu; \
    useradd --system --uid 10161 --user-group --home-dir /var/lib/ibsnmp --no-create-home \
        --shell /usr/sbin/nologin ibsnmp; \
    install -d -o ibsnmp -g ibsnmp -m 0700 /var/lib/ibsnmp
ENV PATH=/opt/ibsnmp/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    IBSNMP_LISTEN=0.0.0.0:161 \
    IBSNMP_STATE_DIR=/var/lib/ibsnmp
# SETs, snmpEngineBoots and the engine ID live here: mount a volume.
VOLUME ["/var/lib/ibsnmp"]
USER ibsnmp
EXPOSE 161/udp
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["ibsnmp", "health", "--quiet"]
ENTRYPOINT ["ibsnmp"]
CMD ["run"]

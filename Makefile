# Set-up and everyday commands. `make test` works on a fresh Debian machine
# with Python 3.11: it installs the Debian packages the tests use (as root,
# or through sudo), creates .venv and installs ibsnmp with its test extras.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEBIAN_PACKAGES := python3-venv smitools snmp snmpd snmptrapd mosquitto podman runc debootstrap systemd-container \
  podman-compose ibsim-utils opensm infiniband-diags libibumad3 prometheus-snmp-exporter prometheus \
  mrtg collectd-core monitoring-plugins-basic monitoring-plugins-standard nagios4-core tshark curl jq \
  libcrypt-des-perl libdigest-hmac-perl libcrypt-rijndael-perl \
  zabbix-server-pgsql zabbix-frontend-php php-cli php-pgsql postgresql
STAMP := $(VENV)/.installed

.PHONY: test run quick bench setup debian-packages mibs check-mibs mad-records clean

RUN_FABRIC ?= fat-tree:spines=2,leaves=4,hosts=4
# Test processes (pytest-xdist): a file's tests stay in one, so a module's
# fixtures (an ibsim fabric, a Zabbix server) are built once. make test runs
# one more than the 2 cores: many tests wait on agents, brokers and SMs.
TEST_WORKERS ?= 3
QUICK_WORKERS ?= 2

# mypy runs beside the tests, on the CPU their waits leave idle; its report
# follows theirs, and either failing fails the target.
test: setup
	@$(BIN)/python -m mypy > $(VENV)/mypy.out 2>&1 & typing=$$!; \
	$(BIN)/python -m pytest -ra --durations=15 -n $(TEST_WORKERS) --dist loadfile; tests=$$?; \
	wait $$typing; typed=$$?; echo "mypy --strict:"; cat $(VENV)/mypy.out; \
	[ $$tests = 0 ] && [ $$typed = 0 ]

# The agent on a small simulated fat-tree, for a try from another shell; its
# state stays in the checkout, away from a production agent's /var/lib/ibsnmp.
run: setup
	$(BIN)/ibsnmp run --listen 127.0.0.1:1161 --fabric $(RUN_FABRIC) --state-dir $(CURDIR)/.run-state

# The in-process tests only (no agent process, ibsim, mosquitto or podman).
quick: setup
	$(BIN)/python -m pytest -q -m "(unit or wire or mib) and not slow" -n $(QUICK_WORKERS) --dist loadfile

# Benchmarks against peers measured in the same run (see README).
bench: setup
	$(BIN)/python -m pip install -q -e '.[test,bench]'
	$(BIN)/python bench/walk.py
	$(BIN)/python bench/traps.py
	$(BIN)/python bench/sysfs_poll.py
	$(BIN)/python bench/topology_load.py
	$(BIN)/python bench/flood.py
	$(BIN)/python bench/bulk_leak.py
	$(BIN)/python bench/hidden_keys.py
	$(BIN)/python bench/state_load.py
	$(BIN)/python bench/lookup.py
	$(BIN)/python bench/mqtt_ingest.py
	$(BIN)/python bench/mqtt_codec.py
	$(BIN)/python bench/live_sweep.py
	$(BIN)/python bench/live_provider.py
	$(BIN)/python bench/sa_queries.py
	$(BIN)/python bench/prometheus_scrape.py
	$(BIN)/python bench/churn.py
	$(BIN)/python bench/agentx.py
	$(BIN)/python bench/soak.py

setup: debian-packages $(STAMP)

debian-packages:
	@missing=""; for p in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

mibs: setup
	$(BIN)/ibsnmp mibs compile

check-mibs: setup
	$(BIN)/ibsnmp mibs check

# The TypedDict of each MAD layout's record (ibsnmp/mad/records_generated.py),
# after a layout changed: a unit test fails until it is rewritten.
mad-records: $(STAMP)
	$(BIN)/python -m ibsnmp.sa.record_types

clean:
	rm -rf $(VENV) build .pytest_cache .run-state

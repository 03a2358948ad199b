"""IBSNMP_* environment variables stand in for flags; flags win."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.e2e import PROJECT_ROOT, free_udp_port, net_snmp, stop

from ibsnmp.cli import parse
from ibsnmp.options import EnvironmentValueError


def test_variables_fill_options_that_were_not_given() -> None:
    args = parse(["run"], {"IBSNMP_LISTEN": "127.0.0.1:1161, [::1]:1161",
                           "IBSNMP_FABRIC": "single", "IBSNMP_POLL_INTERVAL": "2.5",
                           "IBSNMP_VERBOSE": "true", "IBSNMP_LOG_FORMAT": "json"})
    assert args.listen == ["127.0.0.1:1161", "[::1]:1161"]
    assert args.fabric == "single" and args.poll_interval == 2.5
    assert args.verbose is True and args.log_format == "json"


def test_a_flag_wins_over_its_variable() -> None:
    args = parse(["run", "--fabric", "fat-tree:spines=1,leaves=1,hosts=1", "--listen=[::1]:9"],
                 {"IBSNMP_FABRIC": "single", "IBSNMP_LISTEN": "127.0.0.1:1161"})
    assert args.fabric == "fat-tree:spines=1,leaves=1,hosts=1"
    assert args.listen == ["[::1]:9"]


def test_file_variant_reads_the_value_without_its_newline(tmp_path: Path) -> None:
    value = tmp_path / "sm-guid"
    value.write_text("0x0002c903000a1b2c\n")
    args = parse(["run"], {"IBSNMP_SM_GUID_FILE": str(value)})
    assert args.sm_guid == "0x0002c903000a1b2c"


def test_community_variables_are_left_to_the_settings() -> None:
    # IBSNMP_COMMUNITY is read by the agent's settings (one source per secret);
    # IBSNMP_COMMUNITY_FILE is --community-file.
    args = parse(["run"], {"IBSNMP_COMMUNITY": "x", "IBSNMP_COMMUNITY_FILE": "/run/c"})
    assert args.community is None and args.community_file == "/run/c"


@pytest.mark.parametrize("environ, message", [
    ({"IBSNMP_LOG_FORMAT": "xml"}, "IBSNMP_LOG_FORMAT: 'xml' is not one of: text, json"),
    ({"IBSNMP_POLL_INTERVAL": "soon"}, "IBSNMP_POLL_INTERVAL"),
    ({"IBSNMP_VERBOSE": "maybe"}, "IBSNMP_VERBOSE: expected true or false"),
    ({"IBSNMP_SM_GUID": "a", "IBSNMP_SM_GUID_FILE": "/x"}, "both set"),
    ({"IBSNMP_SM_GUID_FILE": "/nonexistent/guid"}, "cannot read /nonexistent/guid"),
])
def test_bad_values_name_the_variable(environ: dict[str, str], message: str) -> None:
    with pytest.raises(EnvironmentValueError, match=message.replace("[", r"\[")):
        parse(["run"], environ)


def test_agent_configured_only_by_environment(tmp_path: Path) -> None:
    port = free_udp_port()
    secret = tmp_path / "community"
    secret.write_text("from-a-file\n")
    secret.chmod(0o600)
    env = dict(os.environ, IBSNMP_LISTEN=f"127.0.0.1:{port}", IBSNMP_FABRIC="single",
               IBSNMP_COMMUNITY_FILE=str(secret), IBSNMP_STATE_DIR=str(tmp_path / "state"),
               IBSNMP_LOG_FORMAT="json")
    agent = subprocess.Popen([sys.executable, "-m", "ibsnmp", "run"], cwd=PROJECT_ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert agent.stdout is not None
        first = agent.stdout.readline()
        assert first.startswith("{") and '"level": "INFO"' in first, first
        while "ibsnmp: serving" not in agent.stdout.readline():
            assert agent.poll() is None
        result = net_snmp("snmpget", "-v2c", "-c", "from-a-file", "-Oqv", f"127.0.0.1:{port}",
                          "SMA-MIB::ibSmaNodeNumPorts.0")
        assert result.returncode == 0 and result.stdout.strip().isdigit(), result.stderr
        health = subprocess.run([sys.executable, "-m", "ibsnmp", "health"], cwd=PROJECT_ROOT,
                                env=env, capture_output=True, text=True, timeout=30)
        assert health.returncode == 0, health.stderr
    finally:
        stop(agent)


def test_a_required_flag_may_come_from_its_variable() -> None:
    args = parse(["trap", "ibSmaBadQueueKey"], {"IBSNMP_TARGET": "127.0.0.1:162"})
    assert args.target == "127.0.0.1:162"
    with pytest.raises(SystemExit):  # neither the flag nor the variable: argparse refuses
        parse(["trap", "ibSmaBadQueueKey"], {})

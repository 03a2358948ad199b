"""`ibsnmp run` as an operator starts it: from the config file, never simulated by
accident, checked without starting, telling systemd when it serves."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support import sysfs_trees as trees
from tests.support.agent_log import AgentLog
from tests.support.e2e import PROJECT_ROOT, V3_USER_CONFIG, free_udp_port, net_snmp, stop

IBSNMP = [sys.executable, "-m", "ibsnmp"]
SITE_CONFIG = """\
listen = ["127.0.0.1:{port}"]

[provider]
kind = "sysfs"
sysfs_root = "{root}"
poll_interval = 1

[agent]
state_dir = "{state}"

[[community]]
name = "site-ro"
""" + V3_USER_CONFIG.replace("{", "{{").replace("}", "}}")


def ibsnmp(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*IBSNMP, *args], cwd=PROJECT_ROOT, capture_output=True, text=True,
                          timeout=60, env=env)


def site_config(tmp_path: Path, **changes: str) -> tuple[Path, int]:
    """A host's config: the sysfs provider over a fake tree, a community, a v3 user."""
    root = tmp_path / "sys-class-infiniband"
    if not root.exists():
        trees.mlx5_two_port(root)
    port = free_udp_port()
    text = SITE_CONFIG.format(port=port, root=root, state=tmp_path / "state")
    for old, new in changes.items():
        text = text.replace(old, new)
    path = tmp_path / "ibsnmp.toml"
    path.write_text(text)
    path.chmod(0o600)
    return path, port


@contextmanager
def agent(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[subprocess.Popen[str], AgentLog]]:
    process = subprocess.Popen([*IBSNMP, "run", *args], cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env)
    try:
        yield process, AgentLog(process)
    finally:
        stop(process)


def test_run_without_a_provider_exits_2_and_names_the_providers(tmp_path: Path) -> None:
    result = ibsnmp("run", "--listen", f"127.0.0.1:{free_udp_port()}", "--state-dir", str(tmp_path))
    assert result.returncode == 2
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("ibsnmp: no provider: name one with --provider "
                                    "sysfs|topology|live|mqtt|simulated")
    assert not (tmp_path / "ibsnmp-engine.json").exists()  # nothing was started


def test_a_simulated_fabric_is_served_when_asked_for_and_says_so(tmp_path: Path) -> None:
    port = free_udp_port()
    with agent("--listen", f"127.0.0.1:{port}", "--fabric", "single",
               "--state-dir", str(tmp_path)) as (_, log):
        warning = log.wait_for("WARNING")
        assert "serving a simulated fabric" in warning and "invented" in warning
        assert log.wait_for("ibsnmp: serving").startswith("ibsnmp: serving simulated single")
        # The default community, not a secret, is shown as it is.
        assert f"try: snmpbulkwalk -v2c -c public 127.0.0.1:{port}" in log.wait_for("try:")


def test_the_config_file_alone_defines_a_production_agent(tmp_path: Path) -> None:
    config, port = site_config(tmp_path)
    with agent("--config", str(config)) as (_, log):
        assert log.wait_for("ibsnmp: serving").startswith("ibsnmp: serving sysfs")
        assert "WARNING" not in log.text()
        result = net_snmp("snmpget", "-v2c", "-c", "site-ro", "-Oqv", f"127.0.0.1:{port}",
                          "SMA-MIB::ibSmaNodeString.0")
        assert result.stdout.strip().strip('"') == "node01 HCA-1", result.stderr
        assert "-c COMMUNITY" in log.wait_for("try:")  # a configured community is a secret
        assert "site-ro" not in log.text()
    assert (tmp_path / "state" / "ibsnmp-engine.json").exists()  # [agent] state_dir


def test_a_variable_overrides_the_file_and_an_error_names_the_variable(tmp_path: Path) -> None:
    config, _ = site_config(tmp_path)
    env = dict(os.environ, IBSNMP_POLL_INTERVAL="0")
    result = ibsnmp("run", "--config", str(config), env=env)
    assert result.returncode == 2
    assert result.stderr == "ibsnmp: environment: IBSNMP_POLL_INTERVAL: must be positive, got 0\n"
    result = ibsnmp("run", "--config", str(site_config(tmp_path, **{
        "poll_interval = 1": "poll_interval = 0"})[0]))
    assert result.stderr == f"ibsnmp: {config}: provider.poll_interval: must be positive, got 0\n"


def test_an_unknown_event_loop_exits_2_with_one_line(tmp_path: Path) -> None:
    env = dict(os.environ, IBSNMP_EVENT_LOOP="tokio")
    result = ibsnmp("run", "--fabric", "single", "--listen", f"127.0.0.1:{free_udp_port()}",
                    "--state-dir", str(tmp_path), env=env)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "ibsnmp: IBSNMP_EVENT_LOOP='tokio': the event loop is one of uvloop, asyncio")
    assert "Traceback" not in result.stderr and "never awaited" not in result.stderr


def test_config_check_prints_the_effective_configuration_with_secrets_masked(tmp_path: Path) -> None:
    config, port = site_config(tmp_path)
    env = dict(os.environ, IBSNMP_POLL_INTERVAL="3")
    result = ibsnmp("config", "check", str(config), env=env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f'listen = ["127.0.0.1:{port}"]' in out
    assert 'kind = "sysfs"' in out and f"# {config}: provider.kind" in out
    assert "poll_interval = 3.0" in out and "# environment: IBSNMP_POLL_INTERVAL" in out
    assert 'name = "********"' in out and 'auth_key = "********"' in out
    for secret in ("site-ro", "monitor-auth-pass", "monitor-priv-pass"):
        assert secret not in out
    assert not (tmp_path / "state").exists()  # checked, not started
    import tomllib

    assert tomllib.loads(out)["provider"]["sysfs_root"].endswith("sys-class-infiniband")


def test_config_check_refuses_with_one_line(tmp_path: Path) -> None:
    example = PROJECT_ROOT / "examples" / "ibsnmp.toml"
    result = ibsnmp("config", "check", str(example))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"ibsnmp: {example}: community[0].name: still the example's "
                             "placeholder (change-me...): set a secret of your own\n")
    config, _ = site_config(tmp_path, **{'kind = "sysfs"': 'kind = "topology"'})
    result = ibsnmp("config", "check", str(config))
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1
    assert "provider.sysfs_root: an option of provider kind sysfs" in result.stderr


def test_a_closed_pipe_ends_a_listing_quietly() -> None:
    result = subprocess.run(f"{sys.executable} -m ibsnmp fabric show | head -1", shell=True,
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert result.stdout.startswith("fabric ") and len(result.stdout.splitlines()) == 1
    assert result.stderr == ""


def test_a_wrong_flag_shows_the_sub_commands_usage() -> None:
    result = ibsnmp("run", "--no-such-flag")
    assert result.returncode == 2
    assert result.stderr.startswith("usage: ibsnmp run ")
    assert result.stderr.rstrip().endswith("ibsnmp run: error: unrecognized arguments: --no-such-flag")
    result = ibsnmp("fabric", "show", "--bogus")
    assert "usage: ibsnmp fabric show" in result.stderr


def test_health_offers_only_what_it_asks_with() -> None:
    result = ibsnmp("health", "--help")
    assert "--community" in result.stdout and "--write-community" not in result.stdout


def test_make_run_keeps_its_state_in_the_checkout() -> None:
    result = subprocess.run(["make", "-n", "run"], cwd=PROJECT_ROOT, capture_output=True, text=True,
                            timeout=60)
    command = next(line for line in result.stdout.splitlines() if " run --listen" in line)
    assert f"--state-dir {PROJECT_ROOT}/.run-state" in command


def test_systemd_hears_ready_reloading_and_stopping(tmp_path: Path) -> None:
    """The Type=notify protocol, with a socket standing in for systemd's."""
    config, port = site_config(tmp_path)
    with tempfile.TemporaryDirectory() as sockets:
        address = str(Path(sockets) / "notify")
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
            notify.bind(address)
            notify.settimeout(30)
            env = dict(os.environ, NOTIFY_SOCKET=address)
            with agent("--config", str(config), env=env) as (process, log):
                ready = notify.recv(4096).decode().split("\n")
                assert ready[0] == "READY=1" and ready[1] == f"STATUS=serving on 127.0.0.1:{port}"
                # Ready means answering.
                assert net_snmp("snmpget", "-v2c", "-c", "site-ro", f"127.0.0.1:{port}",
                                "SNMPv2-MIB::sysUpTime.0").returncode == 0
                config.write_text(config.read_text().replace("poll_interval = 1",
                                                             "poll_interval = 2"))
                process.send_signal(signal.SIGHUP)
                assert notify.recv(4096).decode().startswith("RELOADING=1\n")
                assert notify.recv(4096).decode() == "READY=1\nSTATUS=serving"
                # What only a start applies is said to need one.
                assert "provider.poll_interval changed; it takes effect at the next start" in \
                    log.wait_for("provider.poll_interval changed")
                process.send_signal(signal.SIGTERM)
                assert notify.recv(4096).decode() == "STOPPING=1"
                assert process.wait(30) == 0

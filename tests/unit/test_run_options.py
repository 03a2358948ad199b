"""Every `ibsnmp run` option from a flag, its variable or the config file, in that order."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from ibsnmp.agent import settings_from_args
from ibsnmp.agent.config import ConfigError, load_config
from ibsnmp.agent.option_tables import RUN_OPTIONS
from ibsnmp.cli import build_parser, parse
from ibsnmp.commands.run import banner_lines, provider_kind
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.options import DEFAULT, Source, source_of

PROVIDER_FILE = """\
[provider]
kind = "sysfs"
sysfs_root = "/srv/ib"
poll_interval = 2

[agent]
state_dir = "/srv/state"
max_sessions = 7
log_format = "json"
verbose = true

[publish]
broker = "mqtt://broker.example.org"
refresh = 120
"""
# The run options that are the file's own tables, not [provider]/[publish]/[agent] keys.
OWN_TABLES = {"listen": "listen", "community": "[[community]]", "community_file": "[[community]] name_file",
              "write_community": "[[community]] access = \"write\"",
              "write_community_file": "[[community]] name_file", "trap_target": "[[trap_target]]",
              "agentx": "[agentx] socket", "config": "(the file itself)"}


def config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "ibsnmp.toml"
    path.write_text(text)
    path.chmod(0o600)
    return str(path)


def test_every_run_option_has_a_config_key() -> None:
    parser = build_parser()
    run = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["run"]
    dests = {a.dest for a in run._actions if a.option_strings and a.dest != "help"}
    keyed = {option.dest for option in RUN_OPTIONS} | set(OWN_TABLES)
    assert dests - keyed == set()


def test_the_file_gives_what_no_flag_or_variable_gives(tmp_path: Path) -> None:
    path = config(tmp_path, PROVIDER_FILE)
    args = parse(["run", "--config", path], {})
    assert (args.provider, args.sysfs_root, args.poll_interval) == ("sysfs", "/srv/ib", 2.0)
    assert (args.state_dir, args.max_sessions, args.log_format, args.verbose) == (
        "/srv/state", 7, "json", True)
    assert (args.publish, args.refresh) == ("mqtt://broker.example.org", 120.0)
    assert source_of(args, "poll_interval") == Source(path, "provider.poll_interval")
    assert source_of(args, "session_lifetime") == DEFAULT
    assert str(source_of(args, "provider")) == f"{path}: provider.kind"


def test_a_variable_wins_over_the_file_and_a_flag_over_both(tmp_path: Path) -> None:
    path = config(tmp_path, PROVIDER_FILE)
    args = parse(["run", "--config", path, "--poll-interval", "9"],
                 {"IBSNMP_POLL_INTERVAL": "4", "IBSNMP_SYSFS_ROOT": "/elsewhere"})
    assert args.poll_interval == 9.0 and args.sysfs_root == "/elsewhere"
    assert str(source_of(args, "poll_interval")) == "command line: --poll-interval"
    assert str(source_of(args, "sysfs_root")) == "environment: IBSNMP_SYSFS_ROOT"


def test_the_config_file_itself_may_come_from_its_variable(tmp_path: Path) -> None:
    path = config(tmp_path, PROVIDER_FILE)
    args = parse(["run"], {"IBSNMP_CONFIG": path})
    assert args.provider == "sysfs" and source_of(args, "provider").document == path


@pytest.mark.parametrize("text, message", [
    ('[provider]\nkind = "sysfs"\npoll_interval = "soon"\n',
     "provider.poll_interval: could not convert string to float"),
    ('[provider]\nkind = "sysfs"\npoll_interval = true\n', "provider.poll_interval: expected a number"),
    ('[provider]\nkind = "disk"\n', "provider.kind: expected one of: sysfs, topology, live, mqtt, simulated"),
    ('[provider]\nkind = "sysfs"\ntopology = "/x.topo"\n',
     "provider.topology: an option of provider kind topology, not of kind \"sysfs\""),
    ('[provider]\nkind = "sysfs"\nsysfs_rot = "/x"\n', "provider.sysfs_rot: unknown key"),
    ('[agent]\nverbose = "yes"\n', "agent.verbose: expected true or false"),
    ('[agent]\nmax_sessions = -1\n', "agent.max_sessions: must not be negative"),
    ('[agent]\nlog_format = "xml"\n', "agent.log_format: 'xml' is not one of: text, json"),
    ('[provider]\nkind = "mqtt"\nclient_id = "a"\n[publish]\nclient_id = "b"\n',
     "publish.client_id: also given as provider.client_id"),
])
def test_a_bad_file_value_names_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = config(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        parse(["run", "--config", path], {})
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


def test_a_file_key_of_another_kind_is_ignored_when_a_flag_chooses_the_kind(tmp_path: Path) -> None:
    path = config(tmp_path, PROVIDER_FILE)
    args = parse(["run", "--config", path, "--provider", "simulated"], {})
    assert provider_kind(args) == "simulated"


def test_a_bad_variable_is_blamed_on_the_variable() -> None:
    args = parse(["run", "--fabric", "single"], {"IBSNMP_LISTEN": "bad"})
    with pytest.raises(ConfigError) as caught:
        settings_from_args(args)
    assert str(caught.value).startswith("environment: IBSNMP_LISTEN: ")
    args = parse(["run", "--fabric", "single", "--listen", "bad"], {})
    with pytest.raises(ConfigError, match=r"^command line: --listen: "):
        settings_from_args(args)


def test_no_provider_is_an_error_and_fabric_means_simulated() -> None:
    with pytest.raises(ConfigError) as caught:
        provider_kind(parse(["run"], {}))
    assert "no provider" in str(caught.value)
    for kind in ("sysfs", "topology", "live", "mqtt", "simulated"):
        assert kind in str(caught.value)
    assert provider_kind(parse(["run", "--fabric", "single"], {})) == "simulated"
    assert provider_kind(parse(["run", "--scenario", "x.toml"], {})) == "simulated"
    assert provider_kind(parse(["run"], {"IBSNMP_PROVIDER": "sysfs"})) == "sysfs"
    assert provider_kind(parse(["publish", "--fabric", "single"], {})) == "simulated"
    with pytest.raises(ConfigError, match="no provider"):
        provider_kind(parse(["publish", "--broker", "mqtt://b"], {}))


@pytest.mark.parametrize("secret", ['name = "change-me-ro"', 'name = "Change-Me"'])
def test_placeholder_communities_are_refused(tmp_path: Path, secret: str) -> None:
    with pytest.raises(ConfigError, match=r"community\[0\].name: still the example's placeholder"):
        load_config(config(tmp_path, f"[[community]]\n{secret}\n"))


def test_placeholder_keys_are_refused_without_quoting_them(tmp_path: Path) -> None:
    text = '[[user]]\nname = "u"\nauth = "SHA256"\nauth_key = "change-me-auth"\n'
    with pytest.raises(ConfigError) as caught:
        load_config(config(tmp_path, text))
    assert "user[0].auth_key: still the example's placeholder" in str(caught.value)
    assert "change-me-auth" not in str(caught.value)


def test_the_shipped_example_is_safe(tmp_path: Path) -> None:
    example = Path(__file__).parents[2] / "examples" / "ibsnmp.toml"
    with pytest.raises(ConfigError, match="placeholder"):
        load_config(example)
    filled = config(tmp_path, example.read_text().replace("change-me-", "site-"))
    loaded = load_config(filled)
    assert loaded.engine_id is None  # the agent makes and keeps its own
    assert loaded.listen is not None and {e.host for e in loaded.listen} == {"127.0.0.1", "::1"}
    assert loaded.options["provider.kind"] == "sysfs"


def banner(settings_text: str, tmp_path: Path) -> list[str]:
    from ibsnmp.agent.transport import Endpoint

    args = parse(["run", "--fabric", "single", "--config", config(tmp_path, settings_text)], {})
    settings = settings_from_args(args)
    fabric = build_fabric("fat-tree:spines=1,leaves=1,hosts=1", 1)
    return banner_lines("x", settings, [Endpoint("127.0.0.1", 1161, False)], fabric)


def test_the_banner_shows_the_default_community_but_never_a_configured_one(tmp_path: Path) -> None:
    lines = banner("", tmp_path)
    assert "snmpbulkwalk -v2c -c public 127.0.0.1:1161" in lines[1]
    assert "-c public@" in lines[2]
    lines = banner('[[community]]\nname = "s3cret-ro"\n', tmp_path)
    assert "-c COMMUNITY 127.0.0.1:1161" in lines[1] and not any("s3cret" in line for line in lines)
    lines = banner('[[user]]\nname = "mon"\nauth = "SHA256"\nauth_key = "k3y-k3y-k3y"\n'
                   'priv = "AES256"\npriv_key = "pr1v-pr1v"\n', tmp_path)
    assert "-v3 -u mon -l authPriv -a SHA-256 -A AUTH_KEY -x AES-256 -X PRIV_KEY" in lines[1]
    assert "-n " in lines[2] and not any("k3y" in line or "pr1v" in line for line in lines)

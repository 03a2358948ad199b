"""Scenario files: checks at load and bind name the file, event and key;
repeats and jitter expand deterministically for a seed."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import MappingProxyType

import pytest

from ibsnmp.fabric import build_fabric
from ibsnmp.fabric.iba import CapabilityMask, PortPhysState, PortState
from ibsnmp.fabric.model import Fabric
from ibsnmp.providers.scenario import (
    DEFAULT_P_KEY,
    Scenario,
    ScenarioError,
    load_scenario,
    parse_scenario,
)
from ibsnmp.providers.simulated import SimulatedProvider

SMALL = "fat-tree:spines=1,leaves=2,hosts=2,faults=0"


@pytest.fixture(scope="module")
def small() -> Fabric:
    return build_fabric(SMALL, seed=3)


def _error(text: str, path: str = "s.toml") -> ScenarioError:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, path)
    return caught.value


def _bind_error(fabric: Fabric, text: str) -> ScenarioError:
    scenario = parse_scenario(text, "s.toml")
    with pytest.raises(ScenarioError) as caught:
        scenario.schedule(fabric, 1)
    return caught.value


EVENT = '[[event]]\nat = 1\naction = "port-down"\nnode = "leaf01"\nport = 1\n'


def test_a_good_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "ok.toml"
    path.write_text('[scenario]\nname = "x"\ntime_scale = 0.5\nwatch_interval = 2\n' + EVENT)
    scenario = load_scenario(path)
    assert isinstance(scenario, Scenario)
    assert (scenario.name, scenario.time_scale, scenario.watch_interval) == ("x", 0.5, 2.0)
    (event,) = scenario.events
    assert (event.index, event.action, event.at, event.repeat) == (1, "port-down", 1.0, 1)
    assert event.params["phys"] is PortPhysState.POLLING


def test_an_empty_file_is_an_empty_scenario() -> None:
    scenario = parse_scenario("")
    assert scenario.events == () and scenario.time_scale == 1.0


@pytest.mark.parametrize(
    ("text", "event", "key", "words"),
    [
        ('[[event]]\nat = 1\naction = "explode"\n', 1, "action", "unknown action 'explode'"),
        ("[[event]]\nat = 1\n", 1, "action", "missing"),
        ('[[event]]\naction = "port-up"\nnode = "leaf01"\nport = 1\n', 1, "at", "missing"),
        (EVENT + '[[event]]\nat = 2\naction = "port-down"\nnode = "leaf01"\n', 2, "port", "missing"),
        (EVENT.replace("port = 1", "prot = 1"), 1, "prot", "not a key of 'port-down'"),
        (EVENT.replace("port = 1", 'port = "one"'), 1, "port", "expected an integer"),
        (EVENT.replace("port = 1", "port = 300"), 1, "port", "out of range 0..254"),
        (EVENT.replace("at = 1", "at = -2"), 1, "at", "must not be negative"),
        (EVENT.replace("at = 1", 'at = "soon"'), 1, "at", "expected a number"),
        (EVENT + "repeat = 3\n", 1, "period", "repeat = 3 needs"),
        (EVENT + "repeat = 0\n", 1, "repeat", "out of range"),
        (EVENT + "repeat = 2\nperiod = 0\n", 1, "period", "must be more than 0"),
        (EVENT + "jitter = -1\n", 1, "jitter", "must not be negative"),
        (EVENT + "repeat = 2\nperiod = 5\nup_after = 5\n", 1, "up_after", "not shorter than period"),
        (EVENT + 'phys = "unplugged"\n', 1, "phys", 'expected "polling" or "disabled"'),
        ('[[event]]\nat = 1\naction = "port-up"\nnode = "leaf01"\nport = 1\nstate = "up"\n', 1, "state",
         'expected "active", "armed" or "init"'),
        ('[[event]]\nat = 1\naction = "error-burst"\nnode = "leaf01"\nport = 1\nerrors = { symbl = 3 }\n',
         1, "errors.symbl", "unknown error kind"),
        ('[[event]]\nat = 1\naction = "error-burst"\nnode = "leaf01"\nport = 1\nerrors = { symbol = -3 }\n',
         1, "errors.symbol", "-3 is out of range 0..1000000000"),
        ('[[event]]\nat = 1\naction = "error-burst"\nnode = "leaf01"\nport = 1\nerrors = 5\n',
         1, "errors", "table of error kinds"),
        ('[[event]]\nat = 1\naction = "capability-mask"\nnode = "leaf01"\nset = ["IS_FAST"]\n', 1, "set",
         "unknown capability 'IS_FAST'"),
        ('[[event]]\nat = 1\naction = "capability-mask"\nnode = "leaf01"\n', 1, "set", "at least one of"),
        ('[[event]]\nat = 1\naction = "bad-p-key"\nfrom = 3\nto = 5\nsl = 16\n', 1, "sl", "out of range 0..15"),
        ('[[event]]\nat = 1\naction = "bad-p-key"\nfrom = 3\nto = 5\nkey = 0x18005\n', 1, "key", "out of range"),
        ('[[event]]\nat = 1\naction = "bad-p-key"\nfrom = 3\n', 1, "to", "missing"),
        ('[[event]]\nat = 1\naction = "bad-p-key"\nfrom = 0\nto = 5\n', 1, "from", "not a unicast LID"),
        ('[[event]]\nat = 1\naction = "bad-q-key"\nfrom = 3\nto = 5\ngrh = "yes"\n', 1, "grh", "true or false"),
        ('[[event]]\nat = 1\naction = "bad-m-key"\nnode = "leaf01"\nkey = "0xZZ"\n', 1, "key",
         "expected an integer (or a '0x...' hex string)"),
        ('[[event]]\nat = 1\naction = "system-image-guid"\nnode = "leaf01"\nguid = "0x1ffffffffffffffff"\n',
         1, "guid", "out of range"),
    ],
)
def test_load_errors_name_the_file_event_and_key(text: str, event: int, key: str, words: str) -> None:
    error = _error(text, "scenarios/bad.toml")
    message = str(error)
    assert message.startswith("scenarios/bad.toml: event "), message
    assert f"event {event}" in message and f"key '{key}'" in message and words in message, message
    assert (error.path, error.event, error.key) == ("scenarios/bad.toml", event, key)


def test_structural_errors_name_the_file() -> None:
    assert str(_error("this is = = not toml", "x.toml")).startswith("x.toml: not valid TOML")
    assert "unknown top-level key 'events'" in str(_error("[[events]]\nat = 1\n"))
    assert "unknown key 'speed' in [scenario]" in str(_error("[scenario]\nspeed = 2\n"))
    assert "key 'scenario.time_scale'" in str(_error("[scenario]\ntime_scale = 0\n"))
    assert "'event' must be an array of tables" in str(_error("event = 3\n"))


def test_a_missing_file() -> None:
    with pytest.raises(ScenarioError, match=r"nowhere\.toml: cannot read"):
        load_scenario("nowhere.toml")


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        (EVENT.replace('"leaf01"', '"leaf09"'), "node", "no node is named 'leaf09'"),
        (EVENT.replace('"leaf01"', '"0x0000000000000001"'), "node", "no node has GUID 0000000000000001"),
        (EVENT.replace("port = 1", "port = 200"), "port", "'leaf01' has no port 200"),
        (EVENT.replace("port = 1", "port = 0"), "port", "no data port 0"),
        (EVENT.replace("port = 1", "port = 4"), "port", "has no cable in this fabric"),
        ('[[event]]\nat = 1\naction = "bad-p-key-switch"\nnode = "host001"\nport = 1\n', "node", "not a switch"),
        ('[[event]]\nat = 1\naction = "bad-p-key"\nfrom = 1\nto = 999\n', "to", "LID 999 is not a port"),
        ('[[event]]\nat = 1\naction = "bad-p-key"\nfrom = "host001"\nto = "host003"\nto_port = 2\n', "to_port",
         "has no LID"),
        ('[[event]]\nat = 1\naction = "bad-q-key"\nfrom = 3\nfrom_port = 1\nto = "leaf01"\n', "from_port",
         "is a LID"),
    ],
)
def test_bind_errors_name_the_event_and_key(small: Fabric, text: str, key: str, words: str) -> None:
    message = str(_bind_error(small, text))
    assert message.startswith("s.toml: event 1 (") and f"key '{key}'" in message and words in message, message


def test_the_provider_binds_at_construction(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(EVENT.replace('"leaf01"', '"nosuch"'))
    with pytest.raises(ScenarioError, match=r"bad\.toml: event 1 \(port-down\), key 'node': no node is named"):
        SimulatedProvider(SMALL, 3, scenario=path)


def test_nodes_by_description_first_word_guid_and_local(small: Fabric) -> None:
    host = next(n for n in small.nodes.values() if n.description == "host003 HCA-1")
    guid_colons = ":".join(f"{host.guid:016x}"[i:i + 4] for i in range(0, 16, 4))
    for name in ("host003 HCA-1", "host003", f"0x{host.guid:016x}", f"{host.guid:016x}", guid_colons):
        text = f'[[event]]\nat = 1\naction = "port-up"\nnode = "{name}"\nport = 1\n'
        (step,) = parse_scenario(text).schedule(small)
        assert step.target == (host.guid, 1), name
    text = '[[event]]\nat = 1\naction = "system-image-guid"\nnode = "local"\n'
    (step,) = parse_scenario(text).schedule(small)
    assert step.target.guid == small.local_node_guid


def test_a_node_without_a_description_is_named_by_its_guid(small: Fabric) -> None:
    leaf = next(n for n in small.nodes.values() if n.description == "leaf01")
    nameless = dataclasses.replace(small, nodes=MappingProxyType(
        {**small.nodes, leaf.guid: dataclasses.replace(leaf, description=None)}))
    (step,) = parse_scenario(EVENT.replace('"leaf01"', f'"{leaf.guid:016x}"')).schedule(nameless)
    assert step.target == (leaf.guid, 1)
    assert "no node is named 'leaf01'" in str(_bind_error(nameless, EVENT))
    # Its errors name it by GUID.
    message = str(_bind_error(nameless, EVENT.replace('"leaf01"', f'"{leaf.guid:016x}"')
                              .replace("port = 1", "port = 200")))
    assert f"'{leaf.guid:016x}' has no port 200" in message, message


def test_defaults_of_the_key_events(small: Fabric) -> None:
    text = ('[[event]]\nat = 1\naction = "bad-p-key"\nfrom = "host001"\nto = "host004"\n'
            '[[event]]\nat = 2\naction = "bad-m-key"\nnode = "leaf02"\n'
            '[[event]]\nat = 3\naction = "capability-mask"\nnode = "host002"\nset = ["IsSM", "trap_supported"]\n')
    pkey, mkey, caps = parse_scenario(text).schedule(small)
    assert pkey.params["key"] == DEFAULT_P_KEY and pkey.params["sl"] == 0 and pkey.params["qp1"] == 1
    assert pkey.params["grh"] is True
    assert mkey.params["key"] == 0 and mkey.params["method"] == 0x02 and mkey.params["attribute"] == 0x15
    assert mkey.params["from"].ref.guid == small.local_node_guid
    assert mkey.target.port == 0  # a switch's SMA is port 0
    assert caps.params["set"] == CapabilityMask.IS_SM | CapabilityMask.IS_TRAP_SUPPORTED


def test_large_keys_as_hex_strings(small: Fabric) -> None:
    text = '[[event]]\nat = 1\naction = "bad-m-key"\nnode = "leaf01"\nkey = "0xFFFF_FFFF_FFFF_FFFF"\n'
    (step,) = parse_scenario(text).schedule(small)
    assert step.params["key"] == (1 << 64) - 1


FLAPS = """
[[event]]
at = 1
action = "port-down"
node = "leaf01"
port = 1
up_after = 0.5
repeat = 4
period = 2
jitter = 0.4

[[event]]
at = 1
action = "bad-p-key"
from = "host001"
to = "host004"
repeat = 3
period = 1.5
"""


def test_repeat_expands_in_time_order(small: Fabric) -> None:
    steps = parse_scenario(FLAPS).schedule(small, seed=7)
    assert len(steps) == 4 * 2 + 3
    assert [s.at for s in steps] == sorted(s.at for s in steps)
    downs = [s for s in steps if s.action == "port-down"]
    ups = [s for s in steps if s.action == "port-up"]
    assert [s.occurrence for s in downs] == [0, 1, 2, 3]
    for k, (down, up) in enumerate(zip(downs, ups)):
        assert abs(down.at - (1 + 2 * k)) <= 0.4  # jitter bound
        assert up.at == pytest.approx(down.at + 0.5)  # the up follows its own down
        assert up.params["state"] is PortState.ACTIVE
    keys = [s.at for s in steps if s.action == "bad-p-key"]
    assert keys == [1.0, 2.5, 4.0]  # no jitter: exact


def test_jitter_is_deterministic_for_a_seed(small: Fabric) -> None:
    scenario = parse_scenario(FLAPS)
    one = [s.at for s in scenario.schedule(small, seed=7)]
    assert one == [s.at for s in scenario.schedule(small, seed=7)]
    assert one == [s.at for s in parse_scenario(FLAPS).schedule(build_fabric(SMALL, seed=3), seed=7)]
    other = [s.at for s in scenario.schedule(small, seed=8)]
    assert one != other
    # The provider draws with its own seed.
    provider = SimulatedProvider(SMALL, 3, scenario=scenario)
    assert [s.at for s in provider.steps] == [s.at for s in scenario.schedule(provider.snapshot, seed=3)]


def test_jitter_never_moves_before_the_epoch(small: Fabric) -> None:
    text = EVENT.replace("at = 1", "at = 0") + "jitter = 5\nrepeat = 20\nperiod = 0.1\n"
    steps = parse_scenario(text).schedule(small, seed=1)
    assert min(s.at for s in steps) >= 0.0

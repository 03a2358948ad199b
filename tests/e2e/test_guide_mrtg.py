"""docs/mrtg.md run as written: the switches' GUIDs from the agent, cfgmaker
on their contexts with 64-bit counters, indexmaker, then one poll as
Debian's mrtg service makes it (in the foreground, its files in the test's
folders)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.e2e import net_snmp
from tests.support.guides import LEAF01, Guide, for_test, guide_agent, ran, sh

pytestmark = pytest.mark.skipif(shutil.which("cfgmaker") is None, reason="mrtg is not installed")

GUIDE = Guide("mrtg.md")
SWITCHES = {"leaf01", "leaf02", "leaf03", "leaf04", "spine01", "spine02"}


def test_cfgmaker_and_mrtg_graph_every_active_switch_port(tmp_path: Path) -> None:
    find, configure = GUIDE.scripts()[:2]
    with guide_agent(GUIDE, tmp_path) as agent:
        (tmp_path / "var/www/html/mrtg").mkdir(parents=True)  # the mrtg package's
        (tmp_path / "etc/mrtg").mkdir(parents=True)
        ran(sh(find + "\n" + configure, agent.address, tmp_path))
        config = (tmp_path / "etc/mrtg/mrtg.cfg").read_text()
        targets = dict(re.findall(r"^Target\[(\S+)\]: (.*)$", config, flags=re.M))
        # Every switch, its active ports only, by ifName, each in its node's context, SNMPv2c.
        assert {name.split("_")[1] for name in targets} == SWITCHES
        assert targets["127.0.0.1_leaf01_5"] == rf"#leaf01/5:public\@{LEAF01}@{agent.address}::::2"
        assert "127.0.0.1_leaf01_7" not in targets and "it is operationally DOWN" in config
        assert not re.search(r"^noHC\[", config, flags=re.M)  # the 64-bit counters
        assert re.search(r"^# noHC\[127.0.0.1_leaf01_7\]: yes$", config, flags=re.M)
        assert "MaxBytes[127.0.0.1_leaf01_5]: 12500000000" in config
        index = (tmp_path / "var/www/html/mrtg/index.html").read_text()
        assert all(f'HREF="{target}.html"' in index for target in targets)

        # The service's poll: `mrtg --daemon --fhs` with LANG=C, once, its FHS files in the test.
        state = tmp_path / "var/lib/mrtg"
        state.mkdir(parents=True)
        before = _in_octets(agent.address)
        poll = subprocess.run(
            ["env", "LANG=C", "mrtg", "--confcache-file", str(state / "mrtg.ok"),
             "--lock-file", str(state / "mrtg.lck"), "--logging", str(tmp_path / "mrtg.log"),
             str(tmp_path / "etc/mrtg/mrtg.cfg")],
            capture_output=True, text=True, timeout=60, check=False)
        assert poll.returncode == 0, (poll.stdout, poll.stderr, (tmp_path / "mrtg.log").read_text())
        after = _in_octets(agent.address)
    work = tmp_path / "var/www/html/mrtg"
    for target in targets:
        assert (work / f"{target}.log").is_file() and (work / f"{target}-day.png").is_file()
    # The log's first line: time, then the in and out counters as the poll read them.
    first = (work / "127.0.0.1_leaf01_1.log").read_text().split("\n", 1)[0].split()
    assert before <= int(first[1]) <= after
    assert for_test("/var/www/html/mrtg", agent.address, tmp_path) == str(work)


def _in_octets(agent: str) -> int:
    read = net_snmp("snmpget", "-v2c", "-c", f"public@{LEAF01}", "-Oqv", agent, "IF-MIB::ifHCInOctets.1")
    return int(read.stdout)

"""docs/nagios.md run as written: the plugins on a node's context, what the
page says of SNMPv3 and of names without MIBs, check_ifstatus with the
unused ports it lists, then the page's objects in Debian's Nagios 4
configuration, checked and run until every check has answered."""

from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.guides import LEAF01, Guide, for_test, guide_agent, ran, sh, started, write_files
from tests.support.waiting import wait_for

PLUGINS = Path("/usr/lib/nagios/plugins")
pytestmark = pytest.mark.skipif(not (PLUGINS / "check_ifstatus").exists(), reason="monitoring-plugins are not installed")

GUIDE = Guide("nagios.md")
# A user Net::SNMP can speak (SHA-1, AES-128), for what the page says of its SNMPv3.
NET_SNMP_USER = """
[[user]]
name = "perl"
auth = "SHA"
auth_key = "perl-auth-key"
priv = "AES"
priv_key = "perl-priv-key"
"""
UNUSED = ",".join(str(port) for port in range(7, 37))


def test_the_plugins_read_a_nodes_ports_in_its_context(tmp_path: Path) -> None:
    commands = GUIDE.commands("cd /usr/lib/nagios/plugins")
    with guide_agent(GUIDE, tmp_path, NET_SNMP_USER) as agent:
        output = ran(sh("\n".join(commands), agent.address, tmp_path)).splitlines()
        assert output[0].startswith("SNMP OK - leaf01/5 1 |")
        assert output[1] == "OK: Interface leaf01/5 (index 5) is up."
        assert output[2].startswith('SNMP OK - "leaf01/5" |')  # SNMPv3, context name = GUID
        assert output[3].startswith("SNMP OK - 1 spine01/1 |")  # names, with ibsnmp's MIBs

        def plugin(*args: str) -> subprocess.CompletedProcess[str]:
            host, port = agent.address.split(":")
            env = {"PATH": "/usr/bin:/bin"}  # no MIBDIRS
            return subprocess.run([str(PLUGINS / args[0]), "-H", host, "-p", port, *args[1:]],
                                  capture_output=True, text=True, env=env, timeout=60, check=False)

        # Without the MIBs, a name: no word of it, a timeout (-t 1 -e 0: after 5 s).
        named = plugin("check_snmp", "-P", "2c", "-C", f"public@{LEAF01}", "-o", "IF-MIB::ifOperStatus.5",
                       "-c", "1:1", "-t", "1", "-e", "0")
        assert (named.returncode, named.stdout.strip()) == \
            (2, "CRITICAL - Plugin timed out while executing system call")
        # Net::SNMP's SNMPv3 leaves the context out: the default context's (host001's) port 1.
        v3 = plugin("check_ifoperstatus", "-v", "3", "-L", "authPriv", "-U", "perl", "-a", "SHA1",
                    "-A", "perl-auth-key", "-P", "AES", "-X", "perl-priv-key", "-c", LEAF01, "-k", "1")
        assert v3.stdout.strip() == "OK: Interface host001 HCA-1/1 (index 1) is up.", v3
        assert plugin("check_ifoperstatus", "-v", "2", "-C", f"public@{LEAF01}", "-k", "7").stdout.strip() == \
            "WARNING: Interface leaf01/7 (index 7) is administratively down."
        assert plugin("check_ifoperstatus", "-v", "2", "-C", f"public@{LEAF01}", "-k", "8").stdout.strip() == \
            "CRITICAL: Interface leaf01/8 (index 8) is down."
        every = plugin("check_ifstatus", "-v", "2", "-C", f"public@{LEAF01}")
        assert every.returncode == 2 and "interfaces up: 6, down: 29" in every.stdout

        listed = ran(sh(GUIDE.script("export MIBDIRS"), agent.address, tmp_path)).splitlines()
    assert listed[0] == UNUSED
    assert listed[1].startswith("OK: host '127.0.0.1', interfaces up: 6, down: 0, dormant: 0, "
                                "excluded: 0, unused: 30 |")
    assert f"check_ib_ports!{UNUSED}\n" in GUIDE.files()["/etc/nagios4/conf.d/ibsnmp.cfg"]


def _debian_nagios(root: Path) -> Path:
    """Debian's /etc/nagios4 (and the plugins' command files) under `root`, its
    paths there, without localhost.cfg; run as the test's user, every check
    at once and then every second, nothing sent."""
    for folder in ("/etc/nagios4", "/etc/nagios-plugins"):
        shutil.copytree(folder, for_test(folder + "/", "127.0.0.1:161", root), symlinks=True)
    config = root / "etc/nagios4/nagios.cfg"
    text = for_test(config.read_text(), "127.0.0.1:161", root)
    text = re.sub(r"^cfg_file=.*/localhost\.cfg\n", "", text, flags=re.M)
    for key, value in {"nagios_user": pwd.getpwuid(os.getuid()).pw_name,
                       "nagios_group": grp.getgrgid(os.getgid()).gr_name, "interval_length": "1",
                       "service_inter_check_delay_method": "n", "host_inter_check_delay_method": "n",
                       "retain_state_information": "0", "check_external_commands": "0",
                       "enable_notifications": "0", "status_update_interval": "1"}.items():
        text = re.sub(rf"^{key}=.*\n", "", text, flags=re.M) + f"{key}={value}\n"
    config.write_text(text)
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key in ("log_file", "status_file", "lock_file", "temp_file", "state_retention_file",
                   "object_cache_file", "precached_object_file", "debug_file", "command_file"):
            Path(value).parent.mkdir(parents=True, exist_ok=True)
        elif key in ("check_result_path", "temp_path"):
            Path(value).mkdir(parents=True, exist_ok=True)
    return root / "var/lib/nagios4/status.dat"


@pytest.mark.skipif(shutil.which("nagios4") is None and not Path("/usr/sbin/nagios4").exists(),
                    reason="nagios4-core is not installed")
def test_nagios_runs_the_pages_objects(tmp_path: Path) -> None:
    status = _debian_nagios(tmp_path)
    with guide_agent(GUIDE, tmp_path) as agent:
        port = agent.address.split(":")[1]
        write_files(GUIDE, agent.address, tmp_path, {
            "address         ib-agent.example.org": "address         127.0.0.1",
            "-H '$HOSTADDRESS$'": f"-H '$HOSTADDRESS$' -p {port}"})
        verify = GUIDE.script("nagios4 -v")
        assert "Things look okay" in ran(sh(verify, agent.address, tmp_path))
        with started("nagios4 /etc/nagios4/nagios.cfg", agent.address, tmp_path):
            def outputs() -> dict[str, str] | None:
                text = status.read_text() if status.exists() else ""
                found = {m[1] or "host": m[2] for m in re.finditer(
                    r"host_name=leaf01\n(?:\tservice_description=(.*)\n)?(?:\t.*\n)*?\tplugin_output=(.+)", text)}
                return found if len(found) == 3 else None

            checked = wait_for(outputs, 60, "Nagios to run the three checks")
    assert checked == {
        "host": 'SNMP OK - "leaf01"',
        "port 5": "OK: Interface leaf01/5 (index 5) is up.",
        "ports": "OK: host '127.0.0.1', interfaces up: 6, down: 0, dormant: 0, excluded: 0, unused: 30"}

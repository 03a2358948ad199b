"""docs/wireshark.md run as written: tshark captures the agent's port while
the page's SNMPv3 request goes out, then decrypts the capture with the
users given by `-o` and by the users file; and what the page says of
Wireshark's AES-256 with a SHA-1 user."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from tests.support.e2e import net_snmp
from tests.support.guides import LEAF01, Guide, guide_agent, ran, sh, started, write_files
from tests.support.waiting import wait_for
from tests.support.wire import split_address

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")

GUIDE = Guide("wireshark.md")
# SHA-1 users, AES-256 with each key extension: Wireshark's AES256 is Cisco's.
SHA1_USERS = "".join(f"""
[[user]]
name = "{name}"
auth = "SHA"
auth_key = "sha1-auth-key"
priv = "{priv}"
priv_key = "sha1-priv-key"
""" for name, priv in (("netsnmp256", "AES256"), ("cisco256", "AES256C")))


def _can_capture() -> bool:
    done = subprocess.run(["dumpcap", "-D"], capture_output=True, text=True, check=False)
    return done.returncode == 0 and "any" in done.stdout


# Sent to the agent's port until tshark prints one: it says "Capturing on"
# before dumpcap has opened the interface. The agent drops them unanswered.
PROBE = b"capture"


def _packets(output: Path) -> int:
    """The packets tshark printed (`-P`), but probes."""
    lines = [line for line in output.read_text().splitlines() if " → " in line]
    return sum(not line.endswith(f"Len={len(PROBE)}") for line in lines)


def _wait_until_captured(output: Path, address: str) -> None:
    host, port = split_address(address)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as sock:
        def seen() -> bool:
            sock.sendto(PROBE, (host, port))
            return f"Len={len(PROBE)}" in output.read_text()
        wait_for(seen, 30, "tshark to capture a probe", interval=0.2)


@pytest.mark.skipif(not _can_capture(), reason="no capture privilege (root, or the group wireshark)")
def test_tshark_decrypts_the_agents_snmpv3(tmp_path: Path) -> None:
    capture = GUIDE.script("tshark -i any").replace("tshark ", "tshark -l ", 1)
    with guide_agent(GUIDE, tmp_path, SHA1_USERS) as agent:
        port = agent.address.split(":")[1]
        (tmp_path / "tmp").mkdir()
        with started(capture.replace("udp port 161", f"udp port {port}"), agent.address, tmp_path,
                     stop=signal.SIGINT) as tshark:
            output = tmp_path / "output"
            _wait_until_captured(output, agent.address)
            assert ran(sh(GUIDE.script("snmpget -v3"), agent.address, tmp_path)).strip() == \
                'iso.3.6.1.2.1.31.1.1.1.1.5 = STRING: "leaf01/5"'
            for user, priv in (("netsnmp256", "AES-256"), ("cisco256", "AES-256-C")):
                asked = net_snmp("snmpget", "-v3", "-l", "authPriv", "-u", user, "-a", "SHA", "-A", "sha1-auth-key",
                                 "-x", priv, "-X", "sha1-priv-key", "-n", LEAF01, agent.address,
                                 "IF-MIB::ifName.5")
                assert "leaf01/5" in asked.stdout, asked
            # Each exchange: discovery, its report, the request, the response.
            wait_for(lambda: _packets(output) >= 12, 30, "the 12 packets")
        assert tshark.returncode == 0, output.read_text()

        def decoded(script: str, *more: str) -> str:
            script = script.replace("tshark -r", " ".join(("tshark", f"-d udp.port=={port},snmp", *more, "-r")))
            return ran(sh(script, agent.address, tmp_path))

        by_option = decoded(GUIDE.script("tshark -r /tmp/ibsnmp.pcapng -o"))
        write_files(GUIDE, agent.address, tmp_path)
        assert (tmp_path / "home/.config/wireshark/snmp_users").is_file()
        by_file = decoded(GUIDE.script("tshark -r /tmp/ibsnmp.pcapng -O"))
        sha1 = ['-o \'uat:snmp_users:"","{0}","SHA1","sha1-auth-key","AES256","sha1-priv-key"\''.format(user)
                for user in ("netsnmp256", "cisco256")]
        aes256 = decoded(GUIDE.script("tshark -r /tmp/ibsnmp.pcapng -O"), *sha1)
    for shown in (by_option, by_file):
        # The page's excerpt, line by line, in the decrypted response.
        for line in ("msgUserName: monitor", "[Authentication: OK]", "Decrypted ScopedPDU:",
                     f"contextName: {LEAF01}", "data: get-response (2)",
                     '1.3.6.1.2.1.31.1.1.1.1.5: "leaf01/5"'):
            assert line in shown, line
    frames = aes256.split("\nFrame ")
    assert [f for f in frames if "msgUserName: cisco256" in f and '1.3.6.1.2.1.31.1.1.1.1.5: "leaf01/5"' in f]
    # Decrypted with the wrong key: what Wireshark shows depends on the octets
    # that gives (not formatted as expected, a BER error, a malformed packet),
    # never a PDU.
    netsnmp = [f for f in frames if "msgUserName: netsnmp256" in f and "encryptedPDU" in f]
    failures = ("Decrypted data not formatted as expected", "BER Error", "[Malformed Packet: SNMP]")
    assert len(netsnmp) == 2 and all(any(shown in f for shown in failures)
                                     and "request-id" not in f for f in netsnmp), netsnmp
    assert not [f for f in frames if "msgUserName: netsnmp256" in f and '"leaf01/5"' in f]

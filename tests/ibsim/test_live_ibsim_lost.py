"""`ibsnmp run --provider live` when the fabric goes away under it: the agent
keeps serving the last snapshot and says so once."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.e2e import free_udp_port, net_snmp
from tests.support.ibsim import NET_DIR, ibsim_fabric
from tests.support.waiting import wait_for

POLL_S = 0.5
FAILED_TOO = re.compile(r"live: poll \d+ failed too")


def test_agent_keeps_the_last_snapshot_when_the_fabric_is_gone(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_udp_port()}"
    log = tmp_path / "agent.log"
    with tempfile.TemporaryDirectory(prefix="ibsnmp-state-") as state, open(log, "wb") as out:
        with ibsim_fabric(NET_DIR / "ring.net", tmp_path) as fabric:
            agent = subprocess.Popen(
                [sys.executable, "-m", "ibsnmp", "run", "--provider", "live", "--listen", address,
                 "--state-dir", state, "--poll-interval", str(POLL_S), "--verbose"],
                env=fabric.environment(), cwd=fabric.workdir, stdout=out,
                stderr=subprocess.STDOUT)
            try:
                deadline = time.monotonic() + 30
                while "ibsnmp: serving" not in log.read_text(errors="replace"):
                    assert agent.poll() is None and time.monotonic() < deadline, log.read_text()
                    time.sleep(0.1)
            except BaseException:
                agent.kill()
                agent.wait()
                raise
        try:
            wait_for(lambda: agent.poll() is not None
                     or len(FAILED_TOO.findall(log.read_text(errors="replace"))) >= 3,
                     30, "three polls that find no fabric, after the first")
            assert agent.poll() is None, log.read_text()
            done = net_snmp("snmpget", "-v2c", "-c", "public@0000000000200002", "-OQv", address,
                            "SMA-MIB::ibSmaNodeString.0")
            assert done.returncode == 0, done.stderr
            assert done.stdout.strip().strip('"') == "S-3"
            assert agent.poll() is None
        finally:
            agent.terminate()
            agent.wait(timeout=10)
    text = log.read_text(errors="replace")
    assert text.count("live: poll failed; serving the last snapshot") == 1, text

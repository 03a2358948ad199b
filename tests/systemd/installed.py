"""ibsnmp installed in a booted container as docs/systemd.md installs it, and
driven as an operator drives it: systemctl, journalctl, net-snmp from outside.

`install` runs the documented steps (a venv from the wheelhouse, the
sysusers group, the unit, the configuration root:ibsnmp 0640). The agent
listens on 127.0.0.1:<port> in the container, which shares the host's
network, so `get` asks it from the host like any manager would.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tests.support.e2e import net_snmp
from tests.support.nspawn import Machine
from tests.support.waiting import wait_for

WHEELHOUSE = "/wheelhouse"  # the host's wheelhouse, bound read-only
PACKAGING = "/usr/local/src/ibsnmp/packaging"  # the project's packaging/, bound read-only
SYSFS_ROOT = "/srv/ib/sys/class/infiniband"  # the fake sysfs tree, bound read-only
CONFIG = "/etc/ibsnmp/ibsnmp.toml"
DROP_INS = "/etc/systemd/system/ibsnmp.service.d"
ENGINE_FILE = "/var/lib/ibsnmp/ibsnmp-engine.json"
UNIT = "ibsnmp"
# The install of docs/systemd.md, but for the wheelhouse's place and the
# configuration, which `InstalledAgent.configure` writes (root:ibsnmp 0640).
INSTALL = f"""
python3 -m venv /opt/ibsnmp
/opt/ibsnmp/bin/pip install -q --no-index --find-links {WHEELHOUSE} ibsnmp
cd {PACKAGING}
install -D -m 0644 ibsnmp.sysusers /etc/sysusers.d/ibsnmp.conf
systemd-sysusers
install -d -o root -g ibsnmp -m 0750 /etc/ibsnmp
install -m 0644 ibsnmp.service /etc/systemd/system/
systemctl daemon-reload
"""
INSTALL_LIVE = f"""
cd {PACKAGING}
install -D -m 0644 ibsnmp-live.conf {DROP_INS}/live.conf
install -m 0644 70-ibsnmp-umad.rules /etc/udev/rules.d/
systemctl daemon-reload
"""
UNINSTALL_LIVE = f"""
rm -f {DROP_INS}/live.conf /etc/udev/rules.d/70-ibsnmp-umad.rules
systemctl daemon-reload
"""
ANSWER_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Provider:
    """The `[provider]` table of the configuration file."""

    kind: str
    options: Mapping[str, str | int | float]

    def toml(self) -> str:
        lines = ["[provider]", f"kind = {json.dumps(self.kind)}"]
        lines += [f"{key} = {json.dumps(value)}" for key, value in self.options.items()]
        return "\n".join(lines) + "\n"


SYSFS = Provider("sysfs", {"sysfs_root": SYSFS_ROOT, "poll_interval": 1})
LIVE = Provider("live", {})


class InstalledAgent:
    """The agent's unit in `machine`, configured to listen on 127.0.0.1:`port`."""

    def __init__(self, machine: Machine, port: int) -> None:
        self.machine = machine
        self.port = port

    def install(self) -> None:
        self.machine.sh(INSTALL, timeout=600)

    def configure(self, communities: Sequence[str], provider: Provider = SYSFS,
                  agent: str = "") -> None:
        """Write the configuration, root:ibsnmp 0640, as an operator would
        (`agent`: the lines of its [agent] table)."""
        text = f'listen = ["127.0.0.1:{self.port}"]\n\n' + provider.toml()
        if agent:
            text += f"\n[agent]\n{agent}\n"
        for name in communities:
            text += f'\n[[community]]\nname = "{name}"\n'
        self.machine.write_file(CONFIG, text, 0o640, "root:ibsnmp")

    # systemd's side

    def systemctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.machine.run("systemctl", *args, check=check, timeout=120)

    def show(self, *properties: str, unit: str = UNIT) -> dict[str, str]:
        """The unit's `properties` as `systemctl show` prints them."""
        flags = [f"--property={name}" for name in properties]
        lines = self.systemctl("show", *flags, unit).stdout.splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line)

    def main_pid(self, unit: str = UNIT) -> int:
        return int(self.show("MainPID", unit=unit)["MainPID"])

    def journal(self, unit: str = UNIT) -> list[str]:
        """The messages of the unit's current (or last) run, one a line."""
        invocation = self.show("InvocationID", unit=unit)["InvocationID"]
        result = self.machine.run("journalctl", "--no-pager", "-o", "cat",
                                  f"_SYSTEMD_INVOCATION_ID={invocation}")
        return result.stdout.splitlines()

    def wait_for_journal(self, start: str) -> str:
        """The first line of the current run's journal that starts with `start`."""
        def line() -> str | None:
            return next((text for text in self.journal() if text.startswith(start)), None)

        return wait_for(line, ANSWER_TIMEOUT_S, f"a journal line starting {start!r}", 0.5)

    def engine_state(self) -> dict[str, object]:
        state: dict[str, object] = json.loads(self.machine.read_file(ENGINE_FILE))
        return state

    def reset(self) -> None:
        """Stopped and its failure forgotten (NRestarts back to 0 at the next start)."""
        self.systemctl("stop", UNIT)
        self.systemctl("reset-failed", UNIT, check=False)

    def serving(self, community: str) -> None:
        """Started if it is not running, and answering `community`."""
        self.systemctl("start", UNIT)
        self.wait_until_answering(community)

    # the manager's side

    def get(self, community: str, *oids: str, timeout_s: int = 2,
            retries: int = 0) -> subprocess.CompletedProcess[str]:
        """snmpget over v2c from the host, values only."""
        return net_snmp("snmpget", "-v2c", "-c", community, "-t", str(timeout_s),
                        "-r", str(retries), "-Oqv", f"127.0.0.1:{self.port}", *oids,
                        timeout=timeout_s * (retries + 1) + 30)

    def answers(self, community: str, oid: str = "SNMPv2-MIB::sysUpTime.0") -> bool:
        return self.get(community, oid, timeout_s=1).returncode == 0

    def wait_until_answering(self, community: str) -> None:
        wait_for(lambda: self.answers(community), ANSWER_TIMEOUT_S,
                 f"the agent to answer community {community!r}", 0.2)

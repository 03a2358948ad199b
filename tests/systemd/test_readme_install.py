"""The README's "Install on a host", run as written in a freshly booted Debian.

The commands of the section's two shell blocks run in order, in a copy of
the checkout with the wheelhouse already built (the first command, `pip
wheel`, is the one step left out). Between the blocks the operator edits
the example configuration as the README says: a provider (a fake sysfs
tree here), a listen address, secrets of their own. Then a manager asks.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.support import sysfs_trees as trees
from tests.support.container import copy_build_context
from tests.support.e2e import free_udp_port, net_snmp
from tests.support.nspawn import Bind, booted, ensure_rootfs, missing_prerequisite
from tests.support.waiting import wait_for
from tests.support.paths import PROJECT_ROOT


def _missing() -> str | None:
    return missing_prerequisite() or (
        None if shutil.which("snmpget") else "net-snmp tools (snmpget) are not installed")


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")

CHECKOUT = "/usr/local/src/ibsnmp"
SYSFS_ROOT = "/srv/ib/sys/class/infiniband"
NODE_DESC = "readme-host HCA-1"


def readme_blocks() -> list[list[str]]:
    """The commands of the shell blocks under "## Install on a host"."""
    text = (PROJECT_ROOT / "README.md").read_text()
    section = text.split("\n## Install on a host\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    return [[line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]
            for block in blocks]


def test_the_readme_installs_a_serving_agent(wheelhouse: Path,
                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    install, start = readme_blocks()
    assert install[0] == "pip wheel . -w wheelhouse"  # built on the host: the wheelhouse
    work = tmp_path_factory.mktemp("readme")
    checkout = copy_build_context(PROJECT_ROOT, work / "checkout")
    shutil.copytree(wheelhouse, checkout / "wheelhouse")
    sysfs = work / "infiniband"
    guid = 0x0C42A10300BEEF00
    trees.write_device(sysfs, trees.DeviceSpec(
        name="mlx5_0", node_guid=guid, sys_image_guid=guid, node_desc=NODE_DESC,
        ports={1: trees.ib_port(guid, lid=0x5B)}))
    port = free_udp_port()
    with booted(ensure_rootfs(), [Bind(checkout, CHECKOUT), Bind(sysfs, SYSFS_ROOT)],
                work / "console.log") as machine:
        machine.sh(f"cd {CHECKOUT}\n" + "\n".join(install[1:]), timeout=600)
        # The operator's edit: the provider, the listen address, secrets of their own.
        config = "/etc/ibsnmp/ibsnmp.toml"
        machine.sh(f"""
sed -i -e 's|^sysfs_root = .*|sysfs_root = "{SYSFS_ROOT}"|' \\
       -e 's|^listen = .*|listen = ["127.0.0.1:{port}"]|' \\
       -e 's|change-me-|site-|' \\
       -e 's|^source = \\["10.0.0.0/8", "fd00::/8"\\]|source = "127.0.0.0/8"|' {config}
""")
        assert machine.run("stat", "-c", "%U:%G %a", config).stdout.split() == ["root:ibsnmp", "640"]
        done = machine.sh("\n".join(start), timeout=300)
        assert 'kind = "sysfs"' in done.stdout and "site-" not in done.stdout  # config check

        def answer() -> str | None:
            result = net_snmp("snmpget", "-v2c", "-c", "site-ro", "-t", "1", "-r", "0", "-Oqv",
                              f"127.0.0.1:{port}", "SMA-MIB::ibSmaNodeString.0")
            return result.stdout.strip().strip('"') if result.returncode == 0 else None

        assert wait_for(answer, 30, "the installed agent to answer") == NODE_DESC
        journal = machine.run("journalctl", "-u", "ibsnmp", "--no-pager", "-o", "cat").stdout
        assert "ibsnmp: serving sysfs" in journal and "simulated" not in journal

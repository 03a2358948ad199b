"""packaging/ibsnmp.service, started for real: Debian's systemd booted in
systemd-nspawn, ibsnmp installed as docs/systemd.md says, the sysfs provider
serving a fake /sys/class/infiniband, net-snmp asking from the host.

One boot serves the module; every test leaves the unit serving the sysfs
tree with community COMMUNITY, as the `agent` fixture hands it over.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import sysfs_trees as trees
from tests.support.e2e import free_udp_port
from tests.support.nspawn import Bind, booted, ensure_rootfs, missing_prerequisite
from tests.support.waiting import wait_for
from tests.support.paths import PROJECT_ROOT
from tests.systemd.installed import (
    ANSWER_TIMEOUT_S,
    CONFIG,
    DROP_INS,
    ENGINE_FILE,
    INSTALL_LIVE,
    LIVE,
    PACKAGING,
    SYSFS_ROOT,
    UNINSTALL_LIVE,
    UNIT,
    WHEELHOUSE,
    InstalledAgent,
)


def _missing() -> str | None:
    return missing_prerequisite() or (
        None if shutil.which("snmpget") else "net-snmp tools (snmpget) are not installed")


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")

COMMUNITY = "site-ro"
NODE_GUID = 0x0C42A10300FEED00
NODE_DESC = "unit-test HCA-1"
NODE_STRING = "SMA-MIB::ibSmaNodeString.0"
NODE_GUID_OID = "SMA-MIB::ibSmaNodeGuid.0"
ENGINE_ID_OID = "1.3.6.1.6.3.10.2.1.1.0"  # SNMP-FRAMEWORK-MIB::snmpEngineID.0
ENGINE_BOOTS_OID = "1.3.6.1.6.3.10.2.1.2.0"  # SNMP-FRAMEWORK-MIB::snmpEngineBoots.0
BOOT_TIMEOUT_S = 120.0
# The device nodes of systemd's PrivateDevices=yes /dev (terminals in /dev/pts apart).
PSEUDO_DEVICES = {f"/dev/{name}" for name in ("null", "zero", "full", "random", "urandom", "tty",
                                              "ptmx")}


def _write_host(root: Path) -> None:
    """One HCA whose GUID and description no other source has."""
    trees.write_device(root, trees.DeviceSpec(
        name="mlx5_0", node_guid=NODE_GUID, sys_image_guid=NODE_GUID, node_desc=NODE_DESC,
        ports={1: trees.ib_port(NODE_GUID, lid=0x5A)}))


def _octets(value: str) -> bytes:
    """An OCTET STRING as net-snmp prints it: `c:42:a1:3:...` (the GUID
    DISPLAY-HINT) or `80 00 4F B8 ...` (hex)."""
    value = value.strip().strip('"').strip()
    if ":" in value:
        return bytes(int(part, 16) for part in value.split(":"))
    return bytes.fromhex(value)


@pytest.fixture(scope="module")
def agent(wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[InstalledAgent]:
    """The unit installed, configured and serving; the container powered off after."""
    root = ensure_rootfs()
    work = tmp_path_factory.mktemp("systemd")
    sysfs = work / "infiniband"
    _write_host(sysfs)
    binds = [Bind(wheelhouse, WHEELHOUSE), Bind(PROJECT_ROOT / "packaging", PACKAGING),
             Bind(sysfs, SYSFS_ROOT)]
    with booted(root, binds, work / "console.log", BOOT_TIMEOUT_S) as machine:
        installed = InstalledAgent(machine, free_udp_port())
        installed.install()
        installed.configure([COMMUNITY])
        installed.serving(COMMUNITY)
        yield installed


def test_start_returns_once_the_agent_answers(agent: InstalledAgent) -> None:
    """Type=notify: `systemctl start` returns when the agent serves, so the
    first request after it, sent once, is answered."""
    agent.reset()
    agent.systemctl("start", UNIT)
    answer = agent.get(COMMUNITY, NODE_STRING, timeout_s=5, retries=0)  # one datagram
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.strip().strip('"') == NODE_DESC
    assert agent.show("Type", "ActiveState", "SubState") == {
        "Type": "notify", "ActiveState": "active", "SubState": "running"}


def test_the_configured_sysfs_tree_is_served(agent: InstalledAgent) -> None:
    agent.serving(COMMUNITY)
    answer = agent.get(COMMUNITY, NODE_GUID_OID, NODE_STRING, timeout_s=3, retries=2)
    assert answer.returncode == 0, answer.stderr
    guid, description = answer.stdout.splitlines()
    assert _octets(guid) == NODE_GUID.to_bytes(8, "big")
    assert description.strip('"') == NODE_DESC


def test_the_dynamic_user_reads_the_root_ibsnmp_0640_configuration(
        agent: InstalledAgent) -> None:
    agent.serving(COMMUNITY)
    owners = agent.machine.run("stat", "-c", "%U:%G %a", "/etc/ibsnmp", CONFIG).stdout
    assert owners.splitlines() == ["root:ibsnmp 750", "root:ibsnmp 640"]
    status = agent.machine.read_file(f"/proc/{agent.main_pid()}/status")
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    uid = int(fields["Uid"].split()[0])
    group = agent.machine.run("getent", "group", "ibsnmp").stdout.split(":")
    assert uid != 0 and int(group[2]) in map(int, fields["Groups"].split())
    assert agent.answers(COMMUNITY)  # the agent read the communities from that file


def test_the_hardening_is_in_force_on_the_running_agent(agent: InstalledAgent) -> None:
    """What the kernel shows of the agent: one capability, no new privileges,
    a seccomp filter (SystemCallFilter, MemoryDenyWriteExecute ...), and in
    its mount namespace a read-only root, a private /dev and a /proc of pids."""
    agent.serving(COMMUNITY)
    pid = agent.main_pid()
    status = agent.machine.read_file(f"/proc/{pid}/status")
    fields = {key: value.strip() for key, value in
              (line.split(":", 1) for line in status.splitlines() if ":" in line)}
    net_bind_service = f"{1 << 10:016x}"  # CAP_NET_BIND_SERVICE is capability 10
    assert {key: fields[key] for key in ("CapEff", "CapPrm", "CapBnd", "CapAmb")} == dict.fromkeys(
        ("CapEff", "CapPrm", "CapBnd", "CapAmb"), net_bind_service)
    assert fields["NoNewPrivs"] == "1" and fields["Seccomp"] == "2"

    def mount_options(path: str) -> set[str]:
        found = agent.machine.run("nsenter", "-t", str(pid), "-m", "findmnt", "-n", "-o",
                                  "OPTIONS", "--target", path).stdout.splitlines()[-1]
        return set(found.split(","))

    assert {"ro"} <= mount_options("/usr") and {"ro"} <= mount_options("/etc")
    assert {"hidepid=invisible", "subset=pid"} <= mount_options("/proc")
    # PrivateDevices: the pseudo-devices only (the container's /dev has /dev/net/tun).
    devices = agent.machine.run("nsenter", "-t", str(pid), "-m", "find", "/dev", "-maxdepth", "2",
                                "-path", "/dev/pts", "-prune", "-o", "-type", "c",
                                "-print").stdout.split()
    assert "/dev/null" in devices and set(devices) <= PSEUDO_DEVICES, " ".join(devices)


def test_the_journal_has_the_start_banner(agent: InstalledAgent) -> None:
    agent.serving(COMMUNITY)
    banner = agent.wait_for_journal("ibsnmp: serving")
    assert "sysfs" in banner, banner


def test_reload_applies_a_changed_community(agent: InstalledAgent) -> None:
    agent.serving(COMMUNITY)
    pid = agent.main_pid()
    try:
        agent.configure(["site-new"])
        agent.systemctl("reload", UNIT)
        agent.wait_until_answering("site-new")
        assert not agent.answers(COMMUNITY)
        assert agent.main_pid() == pid  # reloaded, not restarted
    finally:
        agent.configure([COMMUNITY])
        agent.systemctl("reload", UNIT)
        agent.wait_until_answering(COMMUNITY)


def test_a_killed_agent_is_restarted(agent: InstalledAgent) -> None:
    agent.serving(COMMUNITY)
    pid = agent.main_pid()
    restarts = int(agent.show("NRestarts")["NRestarts"])
    agent.machine.run("kill", "-KILL", str(pid))

    def restarted() -> bool:
        now = agent.show("MainPID", "ActiveState", "NRestarts")
        return (now["ActiveState"] == "active" and int(now["MainPID"]) not in (0, pid)
                and int(now["NRestarts"]) == restarts + 1)

    wait_for(restarted, ANSWER_TIMEOUT_S, "systemd to restart the killed agent", 0.2)
    agent.wait_until_answering(COMMUNITY)


def test_the_state_directory_survives_a_restart(agent: InstalledAgent) -> None:
    agent.serving(COMMUNITY)
    before = agent.engine_state()
    agent.systemctl("restart", UNIT)
    agent.wait_until_answering(COMMUNITY)
    after = agent.engine_state()
    assert after["engine_id"] == before["engine_id"]
    assert after["boots"] == int(str(before["boots"])) + 1
    answer = agent.get(COMMUNITY, ENGINE_ID_OID, ENGINE_BOOTS_OID, timeout_s=3, retries=2)
    assert answer.returncode == 0, answer.stderr
    engine_id, boots = answer.stdout.splitlines()
    assert _octets(engine_id) == bytes.fromhex(str(after["engine_id"]))
    assert int(boots) == after["boots"]
    # Private to the agent's user: /var/lib/ibsnmp -> private/ibsnmp, 0700 and 0600.
    modes = agent.machine.run("stat", "-L", "-c", "%a %u", "/var/lib/ibsnmp", ENGINE_FILE).stdout
    status = agent.machine.read_file(f"/proc/{agent.main_pid()}/status")
    uid = next(line.split()[1] for line in status.splitlines() if line.startswith("Uid:"))
    assert modes.splitlines() == [f"700 {uid}", f"600 {uid}"]


def test_the_live_drop_in_is_in_force_and_no_device_exits_2(agent: InstalledAgent) -> None:
    """With no InfiniBand device the live provider cannot start: exit 2, one
    `ibsnmp:` line in the journal, and no restart."""
    agent.machine.sh(INSTALL_LIVE)
    try:
        agent.configure([COMMUNITY], LIVE)
        verify = agent.machine.run("systemd-analyze", "verify",
                                   f"/etc/systemd/system/{UNIT}.service", check=False)
        assert verify.returncode == 0 and not (verify.stdout + verify.stderr).strip(), (
            verify.stdout + verify.stderr)
        assert agent.show("DropInPaths")["DropInPaths"] == f"{DROP_INS}/live.conf"
        in_force = agent.show("PrivateDevices", "DevicePolicy", "DeviceAllow",
                              "MemoryDenyWriteExecute", "ProtectKernelTunables",
                              "SupplementaryGroups", "DynamicUser")
        assert in_force == {
            "PrivateDevices": "no", "DevicePolicy": "closed",
            "DeviceAllow": "char-infiniband_mad rw", "MemoryDenyWriteExecute": "yes",
            "ProtectKernelTunables": "yes", "SupplementaryGroups": "ibsnmp",
            "DynamicUser": "yes"}

        agent.reset()
        started = agent.systemctl("start", UNIT, check=False)
        assert started.returncode != 0

        def failed() -> dict[str, str] | None:
            now = agent.show("ActiveState", "SubState", "Result", "ExecMainStatus", "NRestarts")
            return now if now["ActiveState"] == "failed" else None

        # failed, not auto-restart: RestartPreventExitStatus=2 held
        assert wait_for(failed, ANSWER_TIMEOUT_S, "the live unit to fail") == {
            "ActiveState": "failed", "SubState": "failed", "Result": "exit-code",
            "ExecMainStatus": "2", "NRestarts": "0"}
        errors = [line for line in agent.journal() if line.startswith("ibsnmp:")]
        assert len(errors) == 1, agent.journal()
    finally:
        agent.machine.sh(UNINSTALL_LIVE)
        agent.configure([COMMUNITY])
        agent.reset()
        agent.serving(COMMUNITY)


def test_a_copy_of_the_unit_shares_the_port_as_one_engine(agent: InstalledAgent) -> None:
    """docs/scaling.md under systemd: reuse_port in the file, the unit copied
    as ibsnmp-2: both run as the one dynamic user on the one port and state
    directory, the second joined the first's boot."""
    second = "ibsnmp-2"
    agent.configure([COMMUNITY], agent="reuse_port = true")
    agent.machine.sh(f"cp /etc/systemd/system/{UNIT}.service /etc/systemd/system/{second}.service\n"
                     "systemctl daemon-reload")
    try:
        agent.systemctl("restart", UNIT)
        agent.systemctl("start", second)
        assert any("joined the running agents of /var/lib/ibsnmp" in line
                   for line in agent.journal(second)), agent.journal(second)
        pids = [agent.main_pid(), agent.main_pid(second)]
        users = {next(line.split()[1] for line in agent.machine.read_file(f"/proc/{pid}/status")
                      .splitlines() if line.startswith("Uid:")) for pid in pids}
        assert len(users) == 1, users
        # Both hold a UDP socket bound to the port (the kernel's socket table
        # by inode; the container has no ss).
        bound = {line.split()[9] for line in agent.machine.read_file("/proc/net/udp").splitlines()[1:]
                 if line.split()[1].endswith(f":{agent.port:04X}")}
        for pid in pids:
            links = agent.machine.sh(f"readlink /proc/{pid}/fd/*", check=False).stdout
            assert bound & set(re.findall(r"socket:\[(\d+)\]", links)), (pid, bound, links)
        booted = agent.engine_state()
        for _ in range(8):  # new source ports: either unit answers, as the one engine
            answer = agent.get(COMMUNITY, ENGINE_ID_OID, ENGINE_BOOTS_OID, timeout_s=3, retries=1)
            assert answer.returncode == 0, answer.stderr
            engine_id, boots = answer.stdout.splitlines()
            assert _octets(engine_id) == bytes.fromhex(str(booted["engine_id"]))
            assert int(boots) == booted["boots"]
    finally:
        agent.systemctl("stop", second, check=False)
        agent.machine.sh(f"rm -f /etc/systemd/system/{second}.service\nsystemctl daemon-reload")
        agent.configure([COMMUNITY])
        agent.systemctl("restart", UNIT)
        agent.wait_until_answering(COMMUNITY)


def test_the_udev_rule_loads_with_the_group(agent: InstalledAgent) -> None:
    """udev has no device to apply the rule to here, but loading every rule
    (for /dev/null) reports an unknown key or group of ours by file name."""
    agent.machine.sh(INSTALL_LIVE)
    try:
        test = agent.machine.run("udevadm", "test", "--action=add",
                                 "/sys/devices/virtual/mem/null", check=False)
        said = [line for line in (test.stdout + test.stderr).splitlines()
                if "70-ibsnmp-umad.rules" in line]
        assert said == ["Reading rules file: /etc/udev/rules.d/70-ibsnmp-umad.rules"], said
    finally:
        agent.machine.sh(UNINSTALL_LIVE)

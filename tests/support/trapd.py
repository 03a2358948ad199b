"""Support for trap tests: a real snmptrapd with ibsnmp's MIBs, its log parsed.

`TrapReceiver` writes a config, starts `snmptrapd -f -Lo -n -c CONF -M ...
-m ALL -F FORMAT udp:127.0.0.1:PORT` on a free port and stops it (SIGTERM)
when done. Every notification becomes one log line in our -F format, parsed
into a `Received` (PDU kind, version, community/user/context, SNMPv1
enterprise/generic/specific, varbinds by name).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tests.support.e2e import MIB_DIRS, free_udp_port

from ibsnmp.events import TrapEvent
from ibsnmp.mib.loader import ObjectDef, size_range
from ibsnmp.traps.mapping import FIELD_OF, map_event

MARK = "=TRAP="
SEP = " ^^ "
# %P security info, %a agent address, %N enterprise, %w generic, %q specific,
# %v varbinds (tab-separated): one line per notification.
FORMAT = SEP.join([MARK + " %P", "%a", "%N", "%w", "%q", "%v"]) + "\n"
USER = ("trapuser", "trap-auth-pass", "trap-priv-pass")  # SHA-256 / AES
ENGINE_ID = "8000000001020304"  # the in-process originator's, for v3 traps
# An agent's config (TOML) with the community and the v3 user USER that trap targets use.
AGENT_USERS = f"""
[[community]]
name = "public"

[[user]]
name = "{USER[0]}"
auth = "SHA256"
auth_key = "{USER[1]}"
priv = "AES"
priv_key = "{USER[2]}"
"""


@dataclass(frozen=True)
class Received:
    security: str  # e.g. "TRAP2, SNMP v2c, community public"
    agent_address: str
    enterprise: str
    generic: str
    specific: str
    varbinds: tuple[tuple[str, str], ...]

    @property
    def kind(self) -> str:
        return self.security.split(",")[0]

    @property
    def version(self) -> str:
        match = re.search(r"SNMP (v\w+)", self.security)
        return match[1] if match else ""

    @property
    def context(self) -> str | None:
        match = re.search(r", context(?: (\S*))?$", self.security)
        return (match[1] or "") if match else None

    @property
    def trap_oid(self) -> str:
        """snmpTrapOID.0 (v2c/v3), by name."""
        return dict(self.varbinds).get("SNMPv2-MIB::snmpTrapOID.0", "")

    def value(self, name: str) -> str:
        return dict(self.varbinds)[name]


def parse_line(line: str) -> Received | None:
    if not line.startswith(MARK):
        return None
    parts = line[len(MARK):].strip("\n").split(SEP)
    if len(parts) != 6:
        return None
    security, address, enterprise, generic, specific, binds = (p.strip() for p in parts)
    varbinds = []
    for item in binds.split("\t"):
        name, sep, value = item.partition(" = ")
        if sep:
            varbinds.append((name.strip(), value.strip()))
    return Received(security, address, enterprise, generic, specific.lstrip("."),
                    tuple(varbinds))


class TrapReceiver:
    """One snmptrapd; `received()` parses what it logged so far."""

    def __init__(self, workdir: Path, *, port: int | None = None,
                 engine_ids: Iterable[str] = (ENGINE_ID,), strict_v3: bool = False,
                 v1_handler: bool = False, ipv6: bool = False) -> None:
        self.port = port or free_udp_port("::1" if ipv6 else "127.0.0.1")
        self.address = f"[::1]:{self.port}" if ipv6 else f"127.0.0.1:{self.port}"
        self.listen = f"udp6:[::1]:{self.port}" if ipv6 else f"udp:127.0.0.1:{self.port}"
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.log = self.dir / f"snmptrapd-{self.port}.log"
        self.handled = self.dir / f"handled-{self.port}.txt"
        lines = ["authCommunity log,execute,net public"]
        # strict_v3: no disableAuthorization, so only authPriv v3 messages
        # from USER are accepted (proves the level, not only the user).
        if strict_v3:
            lines.append(f"authUser log,execute,net {USER[0]} priv")
        else:
            lines.insert(0, "disableAuthorization yes")
        keys = f"{USER[0]} SHA-256 {USER[1]} AES {USER[2]}"
        for engine_id in engine_ids:  # v3 traps: the sender's engine ID
            lines.append(f"createUser -e 0x{engine_id} {keys}")
        lines.append(f"createUser {keys}")  # v3 informs: ours (discovered)
        if v1_handler:
            # What a receiver that translates v1 to v2 (RFC 3584 3.1) hands on.
            lines.append(f'traphandle default /bin/sh -c "cat >> {self.handled}; '
                         f'echo ---- >> {self.handled}"')
        self.conf = self.dir / f"snmptrapd-{self.port}.conf"
        self.conf.write_text("\n".join(lines) + "\n")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> TrapReceiver:
        env = dict(os.environ, MIBDIRS=MIB_DIRS, MIBS="ALL", SNMPCONFPATH=str(self.dir / "none"))
        self._out = open(self.log, "ab")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            ["snmptrapd", "-f", "-Lo", "-n", "-C", "-c", str(self.conf), "-M", MIB_DIRS,
             "-m", "ALL", "-F", FORMAT, self.listen],
            stdout=self._out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self._wait_ready()
        return self

    def _wait_ready(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"snmptrapd exited: {self.log.read_text()}")
            if "NET-SNMP version" in self.log.read_text(errors="replace"):
                return
            time.sleep(0.05)
        raise RuntimeError(f"snmptrapd did not start: {self.log.read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None:
            self._out.close()
        self.process = None

    def __enter__(self) -> TrapReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def received(self) -> list[Received]:
        text = self.log.read_text(errors="replace")
        return [r for r in map(parse_line, text.splitlines(keepends=True)) if r]

    def wait_for(self, count: int, timeout: float = 15.0, since: int = 0) -> list[Received]:
        """The first `count` notifications logged after the first `since`."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.received()[since:]
            if len(got) >= count or time.monotonic() > deadline:
                return got
            time.sleep(0.05)

    def handled_records(self) -> list[list[str]]:
        """traphandle input per notification (lines after the two address lines)."""
        if not self.handled.exists():
            return []
        records = self.handled.read_text(errors="replace").split("----\n")
        return [r.splitlines()[2:] for r in records if r.strip()]


# -- what snmptrapd prints for a value ------------------------------------------------


def display(obj: ObjectDef, value: int) -> str:
    """net-snmp's text for `value` of `obj` (as typed by ibsnmp's mapping)."""
    syntax = obj.syntax
    base = [c.__name__ for c in type(syntax).__mro__]
    if "OctetString" in base:
        octets = value.to_bytes(_size(obj), "big")
        if obj.name in ("ibSmaSystemImageGuid",):  # IbGuid: DISPLAY-HINT "1x"
            return "STRING: " + octets.hex()
        return "Hex-STRING: " + " ".join(f"{b:02X}" for b in octets)
    if "Unsigned32" in base:
        return f"Gauge32: {value}"
    return f"INTEGER: {value}"


def _size(obj: ObjectDef) -> int:
    bounds = size_range(obj.syntax)
    assert bounds is not None
    return bounds[1]


def expected_varbinds(event: TrapEvent, node_string: str | None = None) -> list[tuple[str, str]]:
    """(name, value) of the notification's OBJECTS, then of the node's GUID
    and (when the originator knows the node) `node_string`, as snmptrapd
    shows them."""
    spec = map_event(event).spec
    objects = [(f"SMA-MIB::{obj.name}.0", display(obj, getattr(event, FIELD_OF[obj.name])))
               for obj in spec.objects]
    node = [("SMA-MIB::ibSmaNodeGuid.0", f"STRING: {event.node_guid:016x}")]
    if node_string is not None:
        node.append(("SMA-MIB::ibSmaNodeString.0", f"STRING: {node_string}"))
    return objects + node

#!/usr/bin/env python3
"""ibsnmp benchmark: what a credentialed reader can make the agent spend.

    .venv/bin/python bench/readers.py            # about two minutes on 2 cores
    .venv/bin/python bench/readers.py --rounds 50

A reader (a read-only community, a read-only SNMPv3 user) may send any
well-formed request. Each row here is one such packet, sent to one
`ibsnmp run` on 127.0.0.1 in the rounds of bench/hostile.py (a few
packets, then one GET that is answered once they are handled), its CPU
per packet taken from the agent's CPU clock. Every row is set against a
v2c GET with a wrong community measured right before and after each of
its blocks (x ref): the cheapest refusal, measured in the same run, so
the machine's speed cancels out.

Two peers run the same packets in the same script, each against its own
wrong-community GET: net-snmp's snmpd (read-only communities, the v1/v2c
rows; it serves none of the IB tables, so a long name's GETNEXT answers
the object after it, its names read as ibsnmp's are), and a bare socket
(bench/bare_socket.py) that receives each SET and echoes it: what
echoing the list as RFC 3416 4.2.5 asks costs any process on this
kernel. A SET row's floor is the reference plus what that socket spends
to echo the datagram rather than drop the reference: the least any agent
whose refusal costs the reference can spend on it (x ref).

Ceilings (the rows fail the run above them):
- a reader's SET, v1/v2c: 2 x ref (it is refused from its header);
- a reader's SET, SNMPv3 authPriv: 2 x the same user's authPriv GET of
  sysDescr.0, sent in the same rounds (the cryptography is the floor);
- any read: 40 x ref (about 1 ms here): GETNEXT and GETBULK of long
  names in every kind of table of a switch's context, a GET carrying a
  65 KB value.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import (  # noqa: E402
    LOCALHOST,
    VENV_BIN,
    Processes,
    SnmpClient,
    cpu_seconds,
    free_udp_port,
    parse_oid,
    start_ibsnmp,
    wait_until_answers,
)
from bare_socket import ECHO, PROBE  # noqa: E402
from flood import start_snmpd  # noqa: E402
from hostile import LARGE, Packets, Row, cpu_per_packet  # noqa: E402
import hostile  # noqa: E402
import yardstick  # noqa: E402
from ibsnmp.agent.config import User  # noqa: E402
from ibsnmp.wire.ber import element, oid_octets  # noqa: E402
from ibsnmp.wire.usm_inbound import localize_users, seal_message  # noqa: E402
from ibsnmp.wire.usm_message import (FLAG_AUTH, FLAG_PRIV, FLAG_REPORTABLE,  # noqa: E402
                                     Outgoing, encode_scoped_pdu)
from tests.support.oversized import oversized_get  # noqa: E402
from tests.support.wire_v3 import discover  # noqa: E402
from tests.e2e.test_hostile_packets import READ, WRITE, oid_varbind  # noqa: E402

FABRIC = "fat-tree:spines=2,leaves=2,hosts=2"
SYS_DESCR = parse_oid("1.3.6.1.2.1.1.1.0")
SYS_CONTACT = (1, 3, 6, 1, 2, 1, 1, 4, 0)
NODE_TYPES = parse_oid("1.3.6.1.3.117.7.1.2.1.1.5")  # IB-SM-MIB ibSmNodeInfoType: switch(2)
# Columns of a switch's SMA-MIB tables, each with rows to step between.
TABLES = {
    "LFT": parse_oid("1.3.6.1.3.117.3.1.9.1.1.2"),  # ibSmaLinForwEgressPort
    "MFT": parse_oid("1.3.6.1.3.117.3.1.11.1.1.2"),  # ibSmaMulForwMask
    "SL-to-VL": parse_oid("1.3.6.1.3.117.3.1.7.1.1.4"),  # ibSmaVirtualLane
    "port info": parse_oid("1.3.6.1.3.117.3.1.5.1.1.2"),  # ibSmaPortLinkWidthEnabled
}
REFERENCE = "v2c GET wrong community (reference)"
V3_REFERENCE = "v3 authPriv reader GET sysDescr.0 (v3 reference)"
SET_CEILING, V3_SET_CEILING, READ_CEILING = 2.0, 2.0, 40.0
BLOCKS = 5
MOST = 64  # [limits] max_varbinds' default
READER, READER_AUTH, READER_PRIV = "bench-reader", "bench-reader-auth", "bench-reader-priv"
CONFIG = f"""[limits]
requests_per_second = 0

[[user]]
name = "{READER}"
auth = "SHA256"
auth_key = "{READER_AUTH}"
priv = "AES"
priv_key = "{READER_PRIV}"
"""


def pdu(tag: int, varbinds: bytes, fields: bytes = b"\x02\x01\x00\x02\x01\x00") -> bytes:
    return element(tag, b"\x02\x01\x07" + fields + element(0x30, varbinds))


def community(tag: int, varbinds: bytes, *, version: int = 1, name: bytes = READ,
              fields: bytes = b"\x02\x01\x00\x02\x01\x00") -> bytes:
    """A v1 (version 0) or v2c (1) request of community `name`."""
    return element(0x30, element(0x02, bytes((version,))) + element(0x04, name)
                   + pdu(tag, varbinds, fields))


def set_varbind(name: tuple[int, ...], value: bytes) -> bytes:
    return element(0x30, element(0x06, oid_octets(name)) + element(0x04, value))


class V3Reader:
    """authPriv (SHA-256, AES) datagrams of the read-only user, in the agent's time window."""

    def __init__(self, address: str) -> None:
        self.engine = discover(address)
        self.keys = localize_users([User(READER, "SHA256", READER_AUTH, "AES", READER_PRIV)],
                                   self.engine.engine_id)[READER.encode()]

    def seal(self, pdu_element: bytes, context: bytes = b"") -> bytes:
        engine = self.engine
        out = Outgoing(message_id=5, max_size=65507,
                       flags=FLAG_AUTH | FLAG_PRIV | FLAG_REPORTABLE,
                       engine_id=engine.engine_id, boots=engine.boots,
                       engine_time=engine.engine_time, user=READER.encode(),
                       mac_length=self.keys.mac.mac_length, priv_params=bytes(8))
        return seal_message(out, self.keys, encode_scoped_pdu(engine.engine_id, context,
                                                              pdu_element))


def switch_context(port: int) -> bytes:
    """The GUID (16 hex digits) of a switch of the bench fabric: from the index
    (subnet prefix, node GUID: its last 8 arcs) of a switch(2) row."""
    with SnmpClient(port, timeout=5.0) as client:
        rows = list(client.walk(NODE_TYPES))
    index = next(oid[len(NODE_TYPES):] for oid, _, value in rows if int(value) == 2)
    return bytes(index[-8:]).hex().encode()


def rows_of(column: tuple[int, ...], port: int, context: bytes) -> list[tuple[int, ...]]:
    with SnmpClient(port, timeout=5.0, community=(READ + b"@" + context).decode()) as client:
        return [oid for oid, _, _ in client.walk(column, limit=5000)]


def long_names(rows: list[tuple[int, ...]], n: int) -> bytes:
    """MOST GETNEXT names, each just after one row (spread over `rows`), made as
    long as RFC 2578 allows (128 arcs), their last arcs new in every datagram."""
    varbinds = []
    for i in range(MOST):
        row = rows[i * len(rows) // MOST]
        junk = (2**32 - 1,) * (128 - len(row) - 2)
        varbinds.append(oid_varbind(row + junk + (n + (1 << 28), i + (1 << 28))))
    return b"".join(varbinds)


class Kind(NamedTuple):
    """A row's packets, the counter they move, its ceiling ("set", "v3 set" or
    "read"), and the packets snmpd is sent (None: not a v1/v2c row)."""

    packets: Packets
    counter: str
    ceiling: str
    at_snmpd: Packets | None


def kinds(port: int, v3: V3Reader) -> dict[str, Kind]:
    """Row name -> what it sends."""
    context = switch_context(port)
    at_switch = READ + b"@" + context
    long_value = set_varbind(SYS_CONTACT + (2**32 - 1,) * 110, b"x" * 20)  # ~590 octets
    short = set_varbind(SYS_CONTACT, b"x")

    def alike(packets: Packets, counter: str, ceiling: str) -> Kind:
        return Kind(packets, counter, ceiling, packets)  # the same datagrams to snmpd

    found: dict[str, Kind] = {
        f"v2c reader SET of {MOST} long varbinds": alike(
            community(0xA3, long_value * MOST), "answered", "set"),
        f"v2c reader SET of {MOST} short varbinds": alike(
            community(0xA3, short * MOST), "answered", "set"),
        "v2c reader SET of 1 varbind": alike(community(0xA3, short), "answered", "set"),
        f"v1 reader SET of {MOST} short varbinds": alike(
            community(0xA3, short * MOST, version=0), "answered", "set"),
        f"v3 authPriv reader SET of {MOST} short varbinds": Kind(
            v3.seal(pdu(0xA3, short * MOST)), "answered", "v3 set", None),
        "v2c reader GET of sysDescr.0 (the cheapest answer)": alike(
            community(0xA0, oid_varbind(SYS_DESCR)), "answered", "read"),
        "v2c GET of 1 varbind carrying 65 KB": alike(community(0xA0, element(0x30, element(
            0x06, oid_octets(SYS_DESCR)) + element(0x04, b"v" * 65_000))), "answered", "read"),
    }
    for table, column in TABLES.items():
        rows = rows_of(column, port, context)
        if not rows:
            raise SystemExit(f"the bench fabric's switch has no {table} rows")
        for version, label in ((0, "v1"), (1, "v2c")):
            found[f"{label} GETNEXT of {MOST} long names in the {table}"] = Kind(
                _getnexts(rows, at_switch, version), "answered", "read",
                _getnexts(rows, READ, version))
        found[f"v2c GETBULK of {MOST} long names in the {table}, max-repetitions 10"] = Kind(
            _getbulks(rows, at_switch), "answered", "read", _getbulks(rows, READ))
    lft = rows_of(TABLES["LFT"], port, context)
    found[f"v3 authPriv reader GETNEXT of {MOST} long names in the LFT"] = Kind(
        lambda n: v3.seal(pdu(0xA1, long_names(lft, n)), context), "answered", "read", None)
    return found


class BareSocket:
    """bench/bare_socket.py on a free port: the floor's CPU per datagram."""

    def __init__(self, procs: Processes) -> None:
        self.port = free_udp_port()
        self.proc = procs.start("bare socket", [str(VENV_BIN / "python"),
                                                str(Path(__file__).with_name("bare_socket.py")),
                                                str(self.port)])
        self.proc.wait_for_line(r"listening", 30)

    def cpu_per_datagram(self, size: int, echoed: bool, rounds: int) -> float:
        """CPU per datagram of `size` octets, echoed or dropped, measured as
        cpu_per_packet does (bursts, each followed by a probe answered)."""
        datagram = bytes((ECHO if echoed else 0x30,)) + bytes(size - 1)
        burst = 2 if size > LARGE else 20
        target = (LOCALHOST, self.port)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
            sock.settimeout(10.0)

            def probe() -> None:
                sock.sendto(PROBE, target)
                while sock.recv(65535) != PROBE:  # the echoes before it
                    pass

            start = cpu_seconds(self.proc.pid)
            for _ in range(rounds):
                probe()
            alone = cpu_seconds(self.proc.pid) - start
            start = cpu_seconds(self.proc.pid)
            for _ in range(rounds):
                for _ in range(burst):
                    sock.sendto(datagram, target)
                probe()
            spent = cpu_seconds(self.proc.pid) - start
        return max(0.0, spent - alone) / (rounds * burst)


def _getnexts(rows: list[tuple[int, ...]], name: bytes, version: int) -> Callable[[int], bytes]:
    return lambda n: community(0xA1, long_names(rows, n), version=version, name=name)


def _getbulks(rows: list[tuple[int, ...]], name: bytes) -> Callable[[int], bytes]:
    return lambda n: community(0xA5, long_names(rows, n), name=name,
                               fields=b"\x02\x01\x00\x02\x01\x0a")


def measured(name: str, size: int, cpu: Callable[[], float],
             reference: Callable[[], float]) -> Row:
    """A Row of BLOCKS of `cpu`, each between two of `reference`."""
    row = Row(name, size)
    row.references.append(reference())
    for _ in range(BLOCKS):
        row.cpus.append(cpu())
        row.references.append(reference())
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=100,
                        help="rounds per packet kind (default %(default)s)")
    parser.add_argument("--only", help="only the rows whose name holds this text")
    args = parser.parse_args()
    rows: list[tuple[Row, str]] = []
    v3_rows: dict[str, list[float]] = {}
    at_snmpd: dict[str, Row] = {}
    floors: dict[str, float] = {}
    with Processes() as procs, tempfile.TemporaryDirectory(prefix="ibsnmp-readers-") as tmp:
        config = Path(tmp) / "agent.toml"
        config.write_text(CONFIG)
        proc, port, _ = start_ibsnmp(procs, FABRIC, extra=(
            "--config", str(config), "--community", READ.decode(),
            "--write-community", WRITE.decode()),
            launcher=[str(VENV_BIN / "python"), str(yardstick.LAUNCHER)])
        wait_until_answers(port, SYS_DESCR, timeout=60, proc=proc)
        snmpd_pid, snmpd_port = start_snmpd(procs, Path(tmp), ("public", READ.decode()))
        bare = BareSocket(procs)
        hostile._PORT[0] = port
        v3 = V3Reader(f"127.0.0.1:{port}")
        every = kinds(port, v3)
        if args.only:
            every = {name: kind for name, kind in every.items() if args.only in name}
        reference_packet = oversized_get(b"wrong", 1)
        v3_reference = v3.seal(pdu(0xA0, oid_varbind(SYS_DESCR)))
        rounds = max(args.rounds // BLOCKS, 1)

        def reference() -> float:
            return cpu_per_packet(proc.pid, port, reference_packet, "bad community", rounds)[0]

        def v3_floor() -> float:
            return cpu_per_packet(proc.pid, port, v3_reference, "answered", rounds)[0]

        def snmpd_reference() -> float:
            return cpu_per_packet(snmpd_pid, snmpd_port, reference_packet, "bad community",
                                  rounds)[0]

        def bare_drop() -> float:
            return bare.cpu_per_datagram(len(reference_packet), False, rounds)

        for name, kind in every.items():
            packet = kind.packets
            row = Row(name, len(packet(0) if callable(packet) else packet))
            row.references.append(reference())
            floors_v3 = [v3_floor()] if kind.ceiling == "v3 set" else []
            sent = 0
            for _ in range(BLOCKS):
                cpu, _, block_sent = cpu_per_packet(proc.pid, port, packet, kind.counter, rounds,
                                                    first=sent)
                sent += block_sent
                row.cpus.append(cpu)
                row.references.append(reference())
                if floors_v3:
                    floors_v3.append(v3_floor())
            if floors_v3:
                v3_rows[name] = [cpu / ((a + b) / 2) for cpu, a, b in
                                 zip(row.cpus, floors_v3, floors_v3[1:])]
            rows.append((row, kind.ceiling))
            line = (f"{name}: {statistics.mean(row.cpus) * 1000:.3f} ms CPU per packet, "
                    f"{statistics.median(row.in_references()):.1f} x ref")
            snmpd_packets = kind.at_snmpd
            if snmpd_packets is not None:
                sent_to_snmpd = [0]

                def at_peer(packets: Packets = snmpd_packets) -> float:
                    cpu, _, block_sent = cpu_per_packet(snmpd_pid, snmpd_port, packets,
                                                        kind.counter, rounds,
                                                        first=sent_to_snmpd[0])
                    sent_to_snmpd[0] += block_sent
                    return cpu

                snmpd_row = at_snmpd[name] = measured(name, row.size, at_peer, snmpd_reference)
                line += (f"; snmpd {statistics.mean(snmpd_row.cpus) * 1000:.3f} ms, "
                         f"{statistics.median(snmpd_row.in_references()):.1f} x its ref")
            if kind.ceiling == "set":
                echoes = measured(name, row.size,
                                  lambda: bare.cpu_per_datagram(row.size, True, rounds),
                                  bare_drop)
                # What echoing the datagram adds to dropping the reference, for
                # any process: added to this agent's reference, the least its
                # answer can cost.
                drops = echoes.references
                added = statistics.median(echo - (before + after) / 2 for echo, before, after
                                          in zip(echoes.cpus, drops, drops[1:]))
                floors[name] = 1 + max(0.0, added) / statistics.median(row.references)
                line += f"; floor {floors[name]:.1f} x ref"
            print(line, flush=True)
    print(f"\nsummary (CPU per packet; x ref: the median over {BLOCKS} blocks of the row's CPU "
          "against the wrong-community GET measured right before and after each block; "
          "snmpd: the same against its own; floor: the reference plus what a bare socket "
          "spends to echo the datagram rather than drop the reference, x ref)")
    print(f"  {'packet':62} {'octets':>7} {'ms':>7} {'x ref':>6} {'snmpd ms':>8} "
          f"{'x ref':>6} {'floor':>6} {'ceiling':>12}")
    over = []
    for row, ceiling in rows:
        ratio = statistics.median(row.in_references())
        if ceiling == "v3 set":
            ratio_v3 = statistics.median(v3_rows[row.name])
            shown, limit = f"{ratio_v3:.1f} x v3", f"{V3_SET_CEILING:g} x v3 GET"
            fails = not ratio_v3 <= V3_SET_CEILING
        else:
            limit_value = SET_CEILING if ceiling == "set" else READ_CEILING
            shown, limit, fails = f"{ratio:.1f}", f"{limit_value:g} x ref", not ratio <= limit_value
        peer = at_snmpd.get(row.name)
        snmpd = (f"{statistics.mean(peer.cpus) * 1000:>8.3f} "
                 f"{statistics.median(peer.in_references()):>6.1f}"
                 if peer else f"{'-':>8} {'-':>6}")
        floor = f"{floors[row.name]:>6.1f}" if row.name in floors else f"{'-':>6}"
        print(f"  {row.name:62} {row.size:>7,} {statistics.mean(row.cpus) * 1000:>7.3f} "
              f"{shown:>6} {snmpd} {floor} {limit:>12}" + ("  OVER" if fails else ""))
        if fails:
            over.append(row.name)
    print("  every row within its ceiling" if not over else "  OVER: " + ", ".join(over))
    return 0 if not over else 1


if __name__ == "__main__":
    sys.exit(main())

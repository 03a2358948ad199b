#!/usr/bin/env python3
"""ibsnmp benchmark: the agent's CPU per hostile packet, against a fixed piece of Python work.

    .venv/bin/python bench/hostile.py            # about half a minute on 2 cores
    .venv/bin/python bench/hostile.py --rounds 50

Every packet of tests/e2e/test_hostile_packets.py and
64 KB worst cases are sent to one `ibsnmp run` on 127.0.0.1, in rounds of
a few packets followed by one GET of sysDescr.0 (answered once the agent
has handled the packets before it, so the socket buffer never overflows).
CPU is the agent process's CPU clock (common.cpu_seconds), minus the same GETs
alone, divided by the packets the agent counted (the counter each kind
moves), so a datagram the kernel dropped is not counted as cheap.

The budget, 1 ms of CPU per packet, is judged against bench/yardstick.py:
a fixed piece of pure Python (reading and answering a message of varbinds)
sized to take 1 ms on this machine, run in the agent's own process (the
agent starts through it and runs it on SIGUSR2) right before and after
each of a row's BLOCKS blocks. A block's figure is its CPU per packet
against the quicker of those two yardsticks; a row's is the median over its
blocks, and it meets the budget at BUDGET_MS / yardstick.SIZED_MS or less.
The machine's speed drifts within a minute and from day to day; the
yardstick drifts with the Python work the rows do, and no commit of the
agent changes it.

Each block is also set against a v2c GET with a wrong community measured
right before and after it (x ref), for scale: what the cheapest refusal
costs. That one is mostly system calls, and drifts apart from the Python
work (docs/performance.md, "CPU per hostile packet").
The "answered" rows are well-formed reads with the read community: what
they cost is mostly the answer (ibsnmp.agent.fast_reads), shown for scale.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import (  # noqa: E402
    LOCALHOST,
    VENV_BIN,
    Processes,
    SnmpClient,
    cpu_seconds,
    parse_oid,
    start_ibsnmp,
    wait_until_answers,
)
import yardstick  # noqa: E402
from ibsnmp.agent.config import DEFAULT_MAX_VARBINDS  # noqa: E402
from ibsnmp.wire.ber import element, oid_octets  # noqa: E402
from tests.support.wire import community_request  # noqa: E402
from tests.support.wire_v3 import discover  # noqa: E402

from ibsnmp.agent.config import User  # noqa: E402
from ibsnmp.wire.usm_inbound import localize_users, seal_message  # noqa: E402
from ibsnmp.wire.usm_message import (FLAG_AUTH, FLAG_PRIV, FLAG_REPORTABLE,  # noqa: E402
                                     Outgoing, encode_scoped_pdu)
from tests.support.oversized import FLOOD_VARBINDS, oversized_get, v3_plaintext_get  # noqa: E402
from tests.e2e.test_hostile_packets import (  # noqa: E402
    MALFORMED,
    NULL_VARBIND_OF_SYS_DESCR,
    READ,
    VARBIND,
    WRITE,
    oid_varbind,
    request,
)

FABRIC = "fat-tree:spines=2,leaves=2,hosts=2"
SYS_DESCR = parse_oid("1.3.6.1.2.1.1.1.0")
COUNTERS = {
    "parse error": parse_oid("1.3.6.1.2.1.11.6.0"),  # snmpInASNParseErrs
    "bad community": parse_oid("1.3.6.1.2.1.11.4.0"),  # snmpInBadCommunityNames
    "tooBig": parse_oid("1.3.6.1.2.1.11.20.0"),  # snmpOutTooBigs
    "answered": parse_oid("1.3.6.1.2.1.11.28.0"),  # snmpOutGetResponses
    "unknown user": parse_oid("1.3.6.1.6.3.15.1.1.3.0"),  # usmStatsUnknownUserNames
    "unknown engine ID": parse_oid("1.3.6.1.6.3.15.1.1.4.0"),  # usmStatsUnknownEngineIDs
    "silent drop": parse_oid("1.3.6.1.2.1.11.31.0"),  # snmpSilentDrops
}
BUDGET_MS = 1.0
REFERENCE = "v2c GET wrong community (reference)"
# The aggregate rate cap would drop the probes among thousands of packets a second.
V3_USER, V3_AUTH, V3_PRIV = "bencher", "bench-auth-key", "bench-priv-key"
NO_RATE_LIMIT = f"""[limits]
requests_per_second = 0

[[user]]
name = "{V3_USER}"
auth = "SHA256"
auth_key = "{V3_AUTH}"
priv = "AES"
priv_key = "{V3_PRIV}"
"""
# Each row is measured in BLOCKS blocks, each between two yardsticks (and two
# references): the machine's speed drifts within a minute, and a block's ratio
# to the yardsticks right around it follows the code, not the drift.
BLOCKS = 5
MAX_DATAGRAM = 65507  # the largest UDP/IPv4 payload
LARGE = 10_000  # octets: rounds of such packets hold two, small ones twenty
MOST = DEFAULT_MAX_VARBINDS  # the most varbinds a request may hold ([limits] max_varbinds)
# The longest OID RFC 2578 allows that the reader still accepts: 128 arcs, 5 octets each.
LONGEST_OID = (1, 3) + (2**32 - 1,) * 126
# Just past IB-SM-MIB's GUID-indexed ibSmNodeInfoTable (its entry is ...7.1.2.1.1):
# names here fall between two tables, before ibSmPortInfoTable's first column.
IB_SM_NODE_COLUMN = (1, 3, 6, 1, 3, 117, 7, 1, 2, 1, 2)
IB_SM_NODE_GUID_COLUMN = (1, 3, 6, 1, 3, 117, 7, 1, 2, 1, 1, 2)  # ibSmNodeInfoNodeGUID
IB_SM_PORT_STATE_COLUMN = (1, 3, 6, 1, 3, 117, 7, 1, 3, 1, 1, 15)  # ibSmPortInfoState
# PMA-MIB's port counters (ibPmaPortCntrsTable): values that move, so never kept.
PMA_COUNTERS_TABLE = (1, 3, 6, 1, 3, 117, 6, 1, 1, 1)
# Every counter table of PMA-MIB: more rows of moving values than the one above.
PMA_COUNTERS = (1, 3, 6, 1, 3, 117, 6, 1)


def counter_oids(count: int) -> list[tuple[int, ...]]:
    """`count` instances of moving counters (PMA port counters) of the bench fabric:
    24 distinct ones (12 columns of its 2 ports), some named twice."""
    return instances(PMA_COUNTERS_TABLE, count)


def instances(subtree: tuple[int, ...], count: int) -> list[tuple[int, ...]]:
    """`count` instances of `subtree` in the default context, spread over it
    (distinct when it has that many)."""
    if subtree not in _WALKED:
        with SnmpClient(_PORT[0], timeout=5.0) as client:
            _WALKED[subtree] = [oid for oid, _, _ in client.walk(subtree, limit=5000)]
    found = _WALKED[subtree]
    return [found[i * len(found) // count] for i in range(count)]


def between_rows(subtree: tuple[int, ...]) -> Callable[[int], bytes]:
    """GETNEXTs of MOST names, new in every datagram, each just after a different
    instance of `subtree` (one more arc): each one's answer is another row."""
    rows = instances(subtree, MOST)
    return lambda n: request(b"".join(oid_varbind(row + (n * MOST + i,))
                                      for i, row in enumerate(rows)), pdu_tag=0xA1)


_WALKED: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
_PORT: list[int] = [0]


Packets = bytes | Callable[[int], bytes]


def worst_cases() -> dict[str, tuple[Packets, str]]:
    """64 KB packets that cost the most to read whole, and what each moves."""
    # Its last value, an INTEGER 2^31, is bad; over the varbind limit and not all
    # { OID, NULL }, it is dropped without being read varbind by varbind.
    last_bad = request(VARBIND * (FLOOD_VARBINDS - 2)
                       + bytes.fromhex("3008 06012b 02050080000000"))
    longest = oid_varbind(LONGEST_OID)
    fitting = (MAX_DATAGRAM - 40) // len(longest)
    # The same length under a served table: a name that must be looked up.
    longest_under = oid_varbind(IB_SM_NODE_COLUMN + (2**32 - 1,) * (128 - len(IB_SM_NODE_COLUMN)))
    fitting_under = min((MAX_DATAGRAM - 40) // len(longest_under), MOST)
    return {
        REFERENCE: (oversized_get(b"wrong", 1), "bad community"),
        "64 KB wrong community": (oversized_get(b"wrong"), "bad community"),
        "64 KB 9,142 varbinds, tooBig": (oversized_get(READ), "tooBig"),
        "64 KB, last value bad": (last_bad, "silent drop"),
        f"64 KB {fitting} longest OIDs, answered": (request(longest * fitting), "answered"),
        "64 KB longest OIDs, last value bad": (request(
            longest * (fitting - 1) + element(0x30, element(0x06, oid_octets(LONGEST_OID))
                                              + bytes.fromhex("02050080000000"))),
            "parse error"),
        # A manager's largest well-formed requests: MOST varbinds (the limit).
        f"GET of {MOST} x sysDescr.0, answered": (request(NULL_VARBIND_OF_SYS_DESCR * MOST),
                                                  "answered"),
        f"GET of {MOST} counters (never kept), answered": (request(b"".join(
            oid_varbind(oid) for oid in counter_oids(MOST))), "answered"),
        f"GETNEXT of {MOST} counters, answered": (request(b"".join(
            oid_varbind(oid) for oid in counter_oids(MOST)), pdu_tag=0xA1), "answered"),
        "GETBULK max-repetitions 10000, answered": (community_request(
            "bulk", [(1, 3, 6, 1)], community=READ, max_repetitions=10_000), "answered"),
        f"GETBULK of {MOST} counters, answered": (community_request(
            "bulk", counter_oids(MOST), community=READ, max_repetitions=10_000), "answered"),
        f"64 KB {fitting_under} longest OIDs under IB-SM-MIB, GET": (
            request(longest_under * fitting_under), "answered"),
        # Names that differ from one datagram to the next: no step was kept for them.
        f"64 KB {fitting_under} longest OIDs under IB-SM-MIB, GETNEXT": (
            lambda n: request(b"".join(long_name(n, i) for i in range(fitting_under)),
                              pdu_tag=0xA1), "answered"),
        # The same under a column: only the arcs up to the longest row's (and
        # one more) matter, those of a GUID index, 30 of 5 octets.
        f"64 KB {fitting_under} longest OIDs under an IB-SM-MIB column, GETNEXT": (
            lambda n: request(b"".join(long_name(n, i, IB_SM_NODE_GUID_COLUMN)
                                       for i in range(fitting_under)), pdu_tag=0xA1),
            "answered"),
        # Short names, new in every datagram, past a GUID-indexed table (after
        # its entry, arcs over 255): each one a lookup of its own, that ends in
        # the next table's first row.
        f"GETNEXT of {MOST} short names past a column's rows, answered": (
            lambda n: request(b"".join(oid_varbind(IB_SM_NODE_COLUMN + (256 + n * MOST + i,))
                                       for i in range(MOST)), pdu_tag=0xA1), "answered"),
        # The same past the last row of a column, then between its rows: each
        # name in a gap of its own, whose answer is another row.
        f"GETNEXT of {MOST} short names past a column's last row, answered": (
            lambda n: request(b"".join(oid_varbind(IB_SM_NODE_GUID_COLUMN + (256 + n * MOST + i,))
                                       for i in range(MOST)), pdu_tag=0xA1), "answered"),
        f"GETNEXT of {MOST} fresh names between a column's rows, answered": (
            between_rows(IB_SM_PORT_STATE_COLUMN), "answered"),
        # Between rows of moving counters: answers never kept, each looked up.
        f"GETNEXT of {MOST} fresh names between counters' rows, answered": (
            between_rows(PMA_COUNTERS), "answered"),
        # An empty engine ID: USM refuses it before the user (RFC 3414 3.2 step 3).
        "64 KB v3 plaintext discovery, unknown user": (
            v3_plaintext_get(b"nobody", FLOOD_VARBINDS - 10), "unknown engine ID"),
        # With credentials, authPriv: the HMAC and AES over the whole message.
        f"v3 authPriv GET of {MOST} counters, answered": (v3_auth_priv(request_pdu(b"".join(
            oid_varbind(oid) for oid in counter_oids(MOST)))), "answered"),
        f"v3 authPriv 38 KB {MOST} longest OIDs under IB-SM-MIB, GET": (v3_auth_priv(
            request_pdu(longest_under * MOST)), "answered"),
    }


def long_name(n: int, i: int, under: tuple[int, ...] = IB_SM_NODE_COLUMN) -> bytes:
    """A name as long as RFC 2578 allows under `under` (by default just past a
    GUID-indexed IB-SM-MIB table), its last arcs unique to (n, i)."""
    junk = (2**32 - 1,) * (128 - len(under) - 2)
    return oid_varbind(under + junk + (n + (1 << 28), i + (1 << 28)))


def request_pdu(varbinds: bytes, tag: int = 0xA0) -> bytes:
    """A request PDU (request-id 7) around the varbind elements."""
    return element(tag, bytes.fromhex("020107 020100 020100") + element(0x30, varbinds))


def v3_auth_priv(pdu: bytes) -> bytes:
    """`pdu` sent authPriv (SHA-256, AES) by V3_USER, in the agent's time window
    (the bench runs for minutes; the window is 150 s either way of its clock)."""
    engine = _ENGINE[0]
    keys = localize_users([User(V3_USER, "SHA256", V3_AUTH, "AES", V3_PRIV)],
                          engine.engine_id)[V3_USER.encode()]
    out = Outgoing(message_id=5, max_size=65507, flags=FLAG_AUTH | FLAG_PRIV | FLAG_REPORTABLE,
                   engine_id=engine.engine_id, boots=engine.boots,
                   engine_time=engine.engine_time, user=V3_USER.encode(),
                   mac_length=keys.mac.mac_length, priv_params=bytes(8))
    return seal_message(out, keys, encode_scoped_pdu(engine.engine_id, b"", pdu))


_ENGINE: list = []  # the agent's engine ID, boots and time, once discovered


def issue_packets() -> dict[str, tuple[bytes, str]]:
    return {f"issue: {name}": (packet, "parse error") for name, packet in MALFORMED.items()}


def counted(client: SnmpClient, counter: str) -> int:
    return int(client.request("get", [COUNTERS[counter]])[0][2] or 0)


def cpu_per_packet(pid: int, port: int, packets: Packets, counter: str,
                   rounds: int, first: int = 0) -> tuple[float, int, int]:
    """(CPU seconds per packet, packets the agent counted, packets sent);
    `packets`: one sent again and again, or a function giving the n-th
    (from the `first`-th on)."""
    nth = packets if callable(packets) else (lambda n: packets)
    burst = 2 if len(nth(0)) > LARGE else 20
    # Built before the clock starts: built between sends (12 ms for a datagram
    # of long names), they kept the other core busy and slowed the agent.
    datagrams = [nth(first + n) for n in range(rounds * burst)]
    with SnmpClient(port, timeout=10.0, retries=0) as client, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        sender.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        start = cpu_seconds(pid)
        for _ in range(rounds):
            client.request("get", [SYS_DESCR])
        gets_alone = cpu_seconds(pid) - start
        before = counted(client, counter)
        start = cpu_seconds(pid)
        for number in range(rounds):
            for part in range(burst):
                sender.sendto(datagrams[number * burst + part], (LOCALHOST, port))
            client.request("get", [SYS_DESCR])
        spent = cpu_seconds(pid) - start
        after = counted(client, counter)
    moved = after - before
    if counter == "answered":
        moved -= rounds + 1  # the probe GETs and the counter GET are answered too
    return max(0.0, spent - gets_alone) / max(moved, 1), moved, rounds * burst


class Row:
    """One kind of packet's blocks, each between two yardsticks and two references."""

    def __init__(self, name: str, size: int) -> None:
        self.name, self.size = name, size
        self.cpus: list[float] = []
        self.yardsticks: list[float] = []
        self.references: list[float] = []

    def in_yardsticks(self) -> list[float]:
        """Each block's CPU in yardsticks: against the quicker of the two around
        it, so that a slow moment of the yardstick never makes a block look cheap."""
        return [cpu / min(before, after)
                for cpu, before, after in zip(self.cpus, self.yardsticks, self.yardsticks[1:])]

    def in_references(self) -> list[float]:
        """Each block's CPU against the mean of the two references around it."""
        return [cpu / ((before + after) / 2) if before + after else float("nan")
                for cpu, before, after in zip(self.cpus, self.references, self.references[1:])]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=100,
                        help="rounds per packet kind (default %(default)s)")
    args = parser.parse_args()
    rows: list[Row] = []
    with Processes() as procs, tempfile.TemporaryDirectory(prefix="ibsnmp-hostile-") as tmp:
        config = Path(tmp) / "agent.toml"
        config.write_text(NO_RATE_LIMIT)
        proc, port, _ = start_ibsnmp(procs, FABRIC, extra=(
            "--config", str(config), "--community", READ.decode(),
            "--write-community", WRITE.decode()),
            launcher=[str(VENV_BIN / "python"), str(yardstick.LAUNCHER)])
        wait_until_answers(port, SYS_DESCR, timeout=60, proc=proc)
        _PORT[0] = port
        _ENGINE.append(discover(f"{LOCALHOST}:{port}"))
        kinds: dict[str, tuple[Packets, str]] = {**worst_cases(), **issue_packets()}
        reference_packet, reference_counter = kinds.pop(REFERENCE)
        measure_yardstick = yardstick.AgentYardstick(proc)
        rounds = max(args.rounds // BLOCKS, 1)

        def reference() -> float:
            return cpu_per_packet(proc.pid, port, reference_packet, reference_counter,
                                  rounds)[0]

        for name, (packet, counter) in kinds.items():
            row = Row(name, len(packet(0) if callable(packet) else packet))
            row.yardsticks.append(measure_yardstick())
            row.references.append(reference())
            moved = sent = 0
            for _ in range(BLOCKS):
                cpu, block_moved, block_sent = cpu_per_packet(
                    proc.pid, port, packet, counter, rounds, first=sent)
                row.cpus.append(cpu)
                row.yardsticks.append(measure_yardstick())
                row.references.append(reference())
                moved, sent = moved + block_moved, sent + block_sent
            rows.append(row)
            print(f"{name}: {statistics.mean(row.cpus) * 1000:.3f} ms CPU per packet "
                  f"({row.size:,} octets, {moved} of {sent} counted as {counter}); "
                  "yardsticks per block " + " ".join(f"{x:.2f}" for x in row.in_yardsticks())
                  + "; yardstick " + " ".join(f"{y * 1000:.3f}" for y in row.yardsticks)
                  + " ms; reference " + " ".join(f"{r * 1000:.3f}" for r in row.references)
                  + " ms", flush=True)
    limit = BUDGET_MS / yardstick.SIZED_MS
    print(f"\nsummary (CPU per packet; yardsticks: the median over {BLOCKS} blocks of the "
          f"row's CPU against the quicker of the yardsticks measured in the agent right "
          f"before and after the block; x ref: the same against the wrong-community GET)")
    print(f"  {'packet':48} {'octets':>7} {'ms':>7} {'yardsticks':>10} {'x ref':>6}  "
          "yardstick (ms)")
    over = []
    for row in rows:
        ratio = statistics.median(row.in_yardsticks())
        print(f"  {row.name:48} {row.size:>7,} {statistics.mean(row.cpus) * 1000:>7.3f} "
              f"{ratio:>10.2f} {statistics.median(row.in_references()):>6.1f}  "
              f"{min(row.yardsticks) * 1000:.3f}-{max(row.yardsticks) * 1000:.3f}")
        if not ratio <= limit:
            over.append(row.name)
    every_yardstick = [y for row in rows for y in row.yardsticks]
    every_reference = [r for row in rows for r in row.references]
    print(f"  yardstick: median {statistics.median(every_yardstick) * 1000:.3f} ms "
          f"({yardstick.SIZED_MS:g} ms when sized); wrong-community reference: median "
          f"{statistics.median(every_reference) * 1000:.3f} ms")
    print(f"  budget {BUDGET_MS:g} ms per packet ({limit:.2f} yardsticks): "
          + ("met by every packet" if not over else "NOT met by " + ", ".join(over)))
    return 0 if not over else 1


if __name__ == "__main__":
    sys.exit(main())

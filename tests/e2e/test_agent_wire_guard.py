"""Packets an attacker sends, sent to a running `ibsnmp run`: what is refused
before it is decoded, how it is counted, and that good managers still get
their answers; the notification originator's sockets serve no request."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import cast

from tests.support.e2e import free_udp_port, ibsnmp_agent, net_snmp
from tests.support.oversized import oversized_get
from pyasn1.codec.ber import decoder, encoder
from pysnmp.proto.api import v2c as api_v2c
from tests.support.wire import V1, V2C, community_request, decode_response, exchange

from ibsnmp.fabric.generators import build_fabric

AGENT_FABRIC = "fat-tree:spines=2,leaves=2,hosts=2"  # ibsnmp_agent's default, seed 1
SYS_DESCR = "1.3.6.1.2.1.1.1.0"
IN_PKTS = "1.3.6.1.2.1.11.1.0"
IN_BAD_COMMUNITY_NAMES = "1.3.6.1.2.1.11.4.0"
IN_ASN_PARSE_ERRS = "1.3.6.1.2.1.11.6.0"
OUT_TOO_BIGS = "1.3.6.1.2.1.11.20.0"
IN_GET_REQUESTS = "1.3.6.1.2.1.11.15.0"
OUT_GET_RESPONSES = "1.3.6.1.2.1.11.28.0"
OUT_PKTS = "1.3.6.1.2.1.11.2.0"
UNKNOWN_PDU_HANDLERS = "1.3.6.1.6.3.11.2.1.3.0"
FLOOD = 20  # oversized packets; a full decode of one costs about 0.5 s of CPU
CPU_BOUND_S = 0.05  # per oversized packet and legitimate GET


def counters(address: str, *oids: str, community: str = "public") -> list[int]:
    answer = exchange(address, community_request("get", list(oids), community=community),
                      timeout=10)
    assert answer is not None, "no answer to the counter GET"
    # A counter pysnmp has not created yet (no event so far) reads as 0.
    return [0 if value.tagSet == api_v2c.NoSuchInstance.tagSet else int(value)
            for _, value in decode_response(answer)[3]]


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "agent.toml"
    path.write_text(text)
    return str(path)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_oversized_packets_with_a_wrong_community_are_dropped_before_decoding() -> None:
    flood = oversized_get(b"not-the-community")
    get = community_request("get", [SYS_DESCR])
    with ibsnmp_agent() as agent:
        packets, bad = counters(agent.address, IN_PKTS, IN_BAD_COMMUNITY_NAMES)
        assert exchange(agent.address, flood) is None
        host, port = agent.address.split(":")
        cpu = cpu_seconds(agent.process.pid)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
            client.settimeout(10)
            for _ in range(FLOOD):
                client.sendto(flood, (host, int(port)))
                client.sendto(get, (host, int(port)))  # answered after the flood packet
                assert "ibsnmp" in str(decode_response(client.recv(65535))[3][0][1])
        # CPU time, not wall-clock: a full decode of each packet cost about 0.5 s.
        assert cpu_seconds(agent.process.pid) - cpu < FLOOD * CPU_BOUND_S
        after = counters(agent.address, IN_PKTS, IN_BAD_COMMUNITY_NAMES)
        # Every packet counted: the flood, the GETs and this counter GET.
        assert after == [packets + 1 + 2 * FLOOD + 1, bad + 1 + FLOOD]


def test_garbage_counts_as_a_parse_error() -> None:
    with ibsnmp_agent() as agent:
        (errors,) = counters(agent.address, IN_ASN_PARSE_ERRS)
        for garbage in (b"\x30\x03\x02\x01", b"\x30\x80\x02\x01\x01\x00\x00", b"\xff" * 40):
            assert exchange(agent.address, garbage, timeout=0.3) is None
        assert counters(agent.address, IN_ASN_PARSE_ERRS) == [errors + 3]


def test_requests_over_the_varbind_limit_get_too_big(tmp_path: Path) -> None:
    config = write(tmp_path, '[[community]]\nname = "public"\n\n[limits]\nmax_varbinds = 3\n')
    with ibsnmp_agent("--config", config) as agent:
        (too_bigs,) = counters(agent.address, OUT_TOO_BIGS)
        answer = exchange(agent.address, community_request("get", [SYS_DESCR] * 3))
        assert answer is not None and decode_response(answer)[1] == 0
        answer = exchange(agent.address, community_request("get", [SYS_DESCR] * 4,
                                                           request_id=31337))
        assert answer is not None and decode_response(answer) == (31337, 1, 0, [])
        answer = exchange(agent.address, oversized_get(b"public", request_id=5), timeout=5)
        assert answer is not None and decode_response(answer) == (5, 1, 0, [])
        # SNMPv1 (RFC 1157 4.1.2): the request's varbinds come back with tooBig.
        answer = exchange(agent.address, community_request("next", [SYS_DESCR] * 5, version=V1))
        assert answer is not None
        _, status, index, varbinds = decode_response(answer)
        assert (status, index, len(varbinds)) == (1, 0, 5)
        assert counters(agent.address, OUT_TOO_BIGS) == [too_bigs + 3]
        # Answered before the responders, yet counted as they count.
        statistics = (IN_GET_REQUESTS, OUT_GET_RESPONSES, OUT_PKTS)
        first, second = counters(agent.address, *statistics), counters(agent.address, *statistics)
        reading = [b - a for a, b in zip(first, second)]  # what one read adds
        exchange(agent.address, community_request("get", [SYS_DESCR] * 4))
        third = counters(agent.address, *statistics)
        assert [c - b for b, c in zip(second, third)] == [r + 1 for r in reading]


def test_communities_are_limited_to_their_source_networks(tmp_path: Path) -> None:
    config = write(tmp_path, """
[[community]]
name = "public"
source = "10.0.0.0/8"

[[community]]
name = "local"
source = ["127.0.0.0/8", "::1"]
""")
    with ibsnmp_agent("--config", config, ipv6=True) as agent:
        switch = next(n for n in build_fabric(AGENT_FABRIC, seed=1).nodes.values()
                      if n.is_switch)
        guid = f"{switch.guid:016x}"
        (bad,) = counters(agent.address, IN_BAD_COMMUNITY_NAMES, community="local")
        for community in ("public", f"public@{guid}"):
            assert exchange(agent.address, community_request("get", [SYS_DESCR],
                                                             community=community)) is None
        assert counters(agent.address, IN_BAD_COMMUNITY_NAMES, community=f"local@{guid}") \
            == [bad + 2]
        args = cast(list[str], agent.process.args)  # ibsnmp_agent starts it with a list
        v6 = args[args.index("--listen", 3) + 1]
        result = net_snmp("snmpget", "-v2c", "-c", "local", "-On", "-t", "2", "-r", "0", v6,
                          SYS_DESCR)
        assert result.returncode == 0 and "ibsnmp" in result.stdout, result.stderr


def test_per_source_rate_limit(tmp_path: Path) -> None:
    # One request, then one token per 100 s: whatever follows at once is dropped.
    config = write(tmp_path, "[limits]\nrequests_per_second_per_source = 0.01\n")
    with ibsnmp_agent("--config", config) as agent:
        get = community_request("get", [SYS_DESCR])
        assert exchange(agent.address, get) is not None
        assert [exchange(agent.address, get, timeout=0.3) for _ in range(3)] == [None] * 3
        # From another source address the agent answers.
        port = int(agent.address.rsplit(":", 1)[1])
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other:
            other.bind(("127.0.0.2", 0))
            other.settimeout(5)
            other.sendto(get, ("127.0.0.1", port))
            assert decode_response(other.recv(65535))[1] == 0


# -- the notification originator's sockets ---------------------------------------------

SCENARIO = """
[scenario]
time_scale = 1

[[event]]
at = 1
action = "port-down"
node = "leaf02"
port = 1
"""


def answer_inform(receiver: socket.socket) -> tuple[str, int]:
    """Receive one SNMPv2c inform, acknowledge it; return where it came from."""
    source: tuple[str, int]
    data, source = receiver.recvfrom(65535)
    message, _ = decoder.decode(data, asn1Spec=api_v2c.Message())
    inform = api_v2c.apiMessage.get_pdu(message)
    assert inform.isSameTypeWith(api_v2c.InformRequestPDU())
    ack = api_v2c.apiMessage.get_response(message)
    api_v2c.apiPDU.set_varbinds(api_v2c.apiMessage.get_pdu(ack),
                                api_v2c.apiPDU.get_varbinds(inform))
    receiver.sendto(encoder.encode(ack), source)
    return source


def test_the_originator_socket_answers_informs_and_no_request(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
        receiver.bind(("127.0.0.1", 0))
        receiver.settimeout(30)
        trap_port = receiver.getsockname()[1]
        scenario = tmp_path / "scenario.toml"
        scenario.write_text(SCENARIO)
        # One notification per port-down: trap 128 alone (no IF-MIB linkDowns).
        config = write(tmp_path, f"""
engine_id = "0x80001f8804696273"

[traps]
if_mib = false

[[community]]
name = "public"

[[user]]
name = "admin"
auth = "SHA256"
auth_key = "admin-auth-key"
priv = "AES"
priv_key = "admin-priv-key"

[[trap_target]]
address = "127.0.0.1:{trap_port}"
kind = "inform"
community = "trapcomm"
timeout = 0.5
retries = 2
""")
        with ibsnmp_agent("--config", config, "--scenario", str(scenario)) as agent:
            answer_inform(receiver)  # the agent's coldStart, first
            host, port = answer_inform(receiver)
            originator = f"{host}:{port}"
            # Acknowledged: the agent does not send the same inform again.
            receiver.settimeout(2.0)
            try:
                again = receiver.recv(65535)
            except TimeoutError:
                again = None
            assert again is None, "the inform was re-sent: the acknowledgement was lost"
            (refused,) = counters(agent.address, UNKNOWN_PDU_HANDLERS)
            requests = [community_request(kind, [SYS_DESCR], community=community,
                                          version=version)
                        for kind in ("get", "next", "set")
                        for community in ("public", "trapcomm") for version in (V1, V2C)]
            requests += [community_request("bulk", [SYS_DESCR])]
            values = [api_v2c.OctetString("x")]
            requests += [community_request("set", ["1.3.6.1.2.1.1.5.0"], values=values)]
            for request in requests:
                assert exchange(originator, request, timeout=0.3) is None
            # SNMPv3 authPriv, engine ID known (no discovery): refused as well.
            v3 = ["-v3", "-l", "authPriv", "-u", "admin", "-a", "SHA-256", "-A",
                  "admin-auth-key", "-x", "AES", "-X", "admin-priv-key", "-e",
                  "0x80001f8804696273", "-t", "1", "-r", "0", "-On"]
            assert net_snmp("snmpget", *v3, originator, SYS_DESCR).returncode != 0
            answered = net_snmp("snmpget", *v3, agent.address, SYS_DESCR)
            assert answered.returncode == 0, answered.stderr
            # public requests (v1/v2c get, next, set, bulk, set): counted as unhandled.
            (now,) = counters(agent.address, UNKNOWN_PDU_HANDLERS)
            assert now - refused >= 7

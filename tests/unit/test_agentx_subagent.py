"""The subagent's options and connection behaviour.

`--agentx`, IBSNMP_AGENTX and the [agentx] table; then the connection
against a scripted master on a Unix socket of the test's own (written with
the codec under test): registrations that follow the fabric, pings that
go unanswered, a master that closes or talks garbage, Close at stop, and
Notify.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from pyasn1.type import univ
from pysnmp.proto import rfc1902

from ibsnmp.agent.pysnmp_cells import tag_of
from ibsnmp.agent.config import AgentxSettings, ConfigError, merge_settings, parse_config
from ibsnmp.agent.context_hooks import ContextDirectory
from ibsnmp.agentx import pdu as ax
from ibsnmp.agent.agentx_master import (
    DEFAULT_SOCKET,
    AgentxAddressError,
    MasterAddress,
    parse_master_address,
)
from ibsnmp.agentx.answers import MasterRequests
from ibsnmp.agentx.connection import Subagent, SubagentOptions
from ibsnmp.agentx.pdu import Packet, PacketReader, VarBind
from ibsnmp.agentx.service import notify_varbinds
from ibsnmp.cli import build_parser, parse
from ibsnmp.events import IbaTrap
from ibsnmp.fabric.generators import build_fabric
from ibsnmp.mib.api import INFINIBAND_MIB
from ibsnmp.mib.subtrees import SERVED_SUBTREES, Subtrees
from ibsnmp.traps.defaults import default_event
from ibsnmp.traps.mapping import map_event
from ibsnmp.traps.originator import Outgoing
from ibsnmp.wire.ber import END_OF_MIB_VIEW, OBJECT_IDENTIFIER

PduT = TypeVar("PduT", bound=ax.Pdu)

# -- options ------------------------------------------------------------------------


@pytest.mark.parametrize("text, address", [
    ("/run/agentx/master", MasterAddress(path="/run/agentx/master")),
    ("unix:/tmp/m", MasterAddress(path="/tmp/m")),
    ("", MasterAddress(path=DEFAULT_SOCKET)),
    ("tcp:127.0.0.1:7050", MasterAddress(host="127.0.0.1", port=7050)),
    ("tcp:[::1]:705", MasterAddress(host="::1", port=705)),
    ("tcp:localhost", MasterAddress(host="localhost", port=705)),
])
def test_master_addresses(text: str, address: MasterAddress) -> None:
    assert parse_master_address(text) == address
    assert parse_master_address(str(address)) == address


@pytest.mark.parametrize("text", ["master", "tcp:", "tcp:host:x", "tcp:host:70000", "tcp:[::1"])
def test_bad_master_addresses(text: str) -> None:
    with pytest.raises(AgentxAddressError):
        parse_master_address(text)


def test_agentx_table_flag_and_listen() -> None:
    file = parse_config({"agentx": {"socket": "tcp:127.0.0.1:705", "ping_interval": 5}})
    assert file.agentx == AgentxSettings(MasterAddress(host="127.0.0.1", port=705), 5.0)
    settings = merge_settings(file)
    assert settings.agentx == file.agentx and settings.listen == ()  # no UDP unless asked
    both = merge_settings(file, listen=["127.0.0.1:1161"], agentx="/tmp/m")
    assert [str(e) for e in both.listen] == ["127.0.0.1:1161"]
    assert both.agentx == AgentxSettings(MasterAddress(path="/tmp/m"), 5.0)  # flag wins
    assert merge_settings(None).agentx is None and merge_settings(None).listen != ()
    with pytest.raises(ConfigError, match="agentx.socket"):
        parse_config({"agentx": {"socket": "relative/path"}})
    with pytest.raises(ConfigError, match="agentx.ping_interval"):
        parse_config({"agentx": {"ping_interval": -1}})
    with pytest.raises(ConfigError, match="agentx.port"):
        parse_config({"agentx": {"port": 705}})
    with pytest.raises(ConfigError, match="--agentx"):
        merge_settings(None, agentx="tcp:host:0")


def test_flag_and_environment_variable() -> None:
    parser = build_parser()
    assert parser.parse_args(["run", "--agentx"]).agentx == ""
    assert parser.parse_args(["run", "--agentx", "/x/master"]).agentx == "/x/master"
    assert parser.parse_args(["run"]).agentx is None
    assert parse(["run"], {"IBSNMP_AGENTX": "tcp:127.0.0.1:705"}).agentx == "tcp:127.0.0.1:705"


def test_health_of_a_subagent_without_udp_says_what_to_add(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`ibsnmp health` asks a UDP address; a subagent alone has none (exit 2)."""
    config = tmp_path / "ibsnmp.toml"
    config.write_text('[agentx]\nsocket = "/nonexistent/master"\n')
    config.chmod(0o600)
    args = build_parser().parse_args(["health", "--config", str(config)])
    assert args.handler(args) == 2
    assert "--listen 127.0.0.1:PORT" in capsys.readouterr().err


# -- the connection, against a scripted master -----------------------------------------

CONTEXT_A, CONTEXT_B = b"0000000000000001", b"0000000000000002"


class ScriptedMaster:
    """A master on a Unix socket: opens sessions (ids 1, 2, ...), answers
    Register/Unregister/Notify/Close, answers pings only when `answer_pings`,
    and keeps every PDU it received per connection."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.connections: list[list[Packet]] = []
        self.writers: list[asyncio.StreamWriter] = []
        self.answer_pings = True
        self.refuse_open = False
        self.server: asyncio.AbstractServer | None = None

    async def __aenter__(self) -> ScriptedMaster:
        self.server = await asyncio.start_unix_server(self._serve, str(self.path))
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.writers:
            writer.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received: list[Packet] = []
        self.connections.append(received)
        self.writers.append(writer)
        session_id = len(self.connections)
        try:
            await self._answer(reader, writer, received, session_id)
        except (asyncio.CancelledError, ConnectionError):
            pass  # the test is over, or the subagent went away

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      received: list[Packet], session_id: int) -> None:
        stream = PacketReader()
        while data := await reader.read(65536):
            for packet in stream.feed(data):
                received.append(packet)
                if isinstance(packet.pdu, ax.Ping) and not self.answer_pings:
                    continue
                error = ax.OPEN_FAILED if isinstance(packet.pdu, ax.Open) and self.refuse_open \
                    else 0
                writer.write(ax.encode(Packet(ax.Response(0, error), session_id,
                                              packet.transaction_id, packet.packet_id,
                                              packet.big_endian)))

    def pdus(self, kind: type[PduT], connection: int = -1) -> list[PduT]:
        return [p.pdu for p in self.connections[connection] if isinstance(p.pdu, kind)]

    def send(self, pdu: ax.Pdu) -> None:
        """`pdu` in the latest connection's session."""
        self.writers[-1].write(ax.encode(Packet(pdu, len(self.connections))))


async def until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def make_subagent(path: Path, contexts: set[bytes], ping_interval: float = 0.0) -> Subagent:
    regions = Subtrees((INFINIBAND_MIB,))
    requests = MasterRequests(None,  # type: ignore[arg-type]  # no MIB: nothing is read
                              ContextDirectory(lambda _name: None),
                              lambda _c: regions)
    options = SubagentOptions((1, 3, 6, 1, 3, 117, 3), b"test", regions, SERVED_SUBTREES,
                              ping_interval=ping_interval, first_retry=0.05, max_retry=0.2)
    return Subagent(MasterAddress(path=str(path)), options, requests, lambda: set(contexts))


async def test_registrations_follow_the_contexts_and_stop_closes(tmp_path: Path) -> None:
    contexts = {CONTEXT_A}
    async with ScriptedMaster(tmp_path / "m") as master:
        subagent = make_subagent(master.path, contexts)
        subagent.start()
        await until(lambda: subagent.registered == {None, CONTEXT_A})
        registers = master.pdus(ax.Register)
        assert ax.Register(INFINIBAND_MIB) in registers  # the default context: IB only
        assert {r.subtree for r in registers if r.context == CONTEXT_A} == set(SERVED_SUBTREES.roots)
        assert all(r.priority == 127 and r.timeout == 0 for r in registers)
        contexts.clear()
        contexts.add(CONTEXT_B)  # A vanished, B appeared
        await until(lambda: subagent.registered == {None, CONTEXT_B}, 5)
        assert {u.context for u in master.pdus(ax.Unregister)} == {CONTEXT_A}
        await subagent.stop()
        assert master.pdus(ax.Close) == [ax.Close(ax.REASON_SHUTDOWN)]
        assert len(master.connections) == 1


async def test_unanswered_pings_and_a_closing_master_mean_reconnect(tmp_path: Path) -> None:
    async with ScriptedMaster(tmp_path / "m") as master:
        master.answer_pings = False
        subagent = make_subagent(master.path, set(), ping_interval=0.1)
        subagent.start()
        await until(lambda: len(master.connections) >= 2)  # two pings missed: start over
        assert len(master.pdus(ax.Ping, 0)) >= 2
        master.answer_pings = True
        await until(lambda: subagent.open_event.is_set() and len(master.connections) == 2)
        pinged = len(master.pdus(ax.Ping, 1))
        await until(lambda: len(master.pdus(ax.Ping, 1)) >= pinged + 3)  # three more, answered
        assert len(master.connections) == 2  # answered pings keep the session
        master.send(ax.Close(ax.REASON_BY_MANAGER))
        await until(lambda: len(master.connections) == 3 and subagent.open_event.is_set())
        await subagent.stop()
        assert subagent.sessions_opened == 3


async def test_garbage_and_a_refused_open(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "ibsnmp.agentx")
    async with ScriptedMaster(tmp_path / "m") as master:
        subagent = make_subagent(master.path, set())
        subagent.start()
        await until(lambda: subagent.open_event.is_set())
        master.writers[-1].write(b"\x07" * 20)  # AgentX version 7
        await until(lambda: len(master.connections) == 2 and subagent.open_event.is_set())
        assert master.pdus(ax.Close, 0) == [ax.Close(ax.REASON_PARSE_ERROR)]
        master.refuse_open = True
        master.send(ax.Close(ax.REASON_OTHER))
        await until(lambda: len(master.connections) >= 4)
        await subagent.stop()
    text = caplog.text
    assert "not an AgentX PDU" in text and "refused the Open (openFailed)" in text
    assert "Traceback" not in text


async def test_notify_goes_to_the_master_only_while_open(tmp_path: Path) -> None:
    varbinds = (VarBind((1, 3, 6, 1, 2, 1, 1, 3, 0), ax.TIME_TICKS, 5),
                VarBind((1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0), OBJECT_IDENTIFIER,
                        (1, 3, 6, 1, 3, 117, 3, 0, 1)))
    async with ScriptedMaster(tmp_path / "m") as master:
        subagent = make_subagent(master.path, set())
        assert not subagent.notify(varbinds)  # not connected yet
        subagent.start()
        await until(lambda: subagent.open_event.is_set())
        assert subagent.notify(varbinds)
        await until(lambda: bool(master.pdus(ax.Notify)))
        assert master.pdus(ax.Notify) == [ax.Notify(varbinds)]
        await subagent.stop()


async def test_a_lone_read_is_answered_and_a_failing_one_gets_gen_err(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with ScriptedMaster(tmp_path / "m") as master:
        subagent = make_subagent(master.path, set())
        subagent.start()
        await until(lambda: subagent.open_event.is_set())
        master.writers[-1].write(ax.encode(Packet(
            ax.GetNext((ax.SearchRange(INFINIBAND_MIB),)), 1, 7, 70)))
        await until(lambda: any(p.packet_id == 70 for p in master.connections[-1]))
        [answer] = [p for p in master.connections[-1] if p.packet_id == 70]
        assert answer.pdu == ax.Response(answer.pdu.sys_up_time, 0, 0,  # type: ignore[union-attr]
                                         (VarBind(INFINIBAND_MIB, END_OF_MIB_VIEW),))

        def broken(_context: bytes | None) -> Subtrees:
            raise RuntimeError("a bug")

        subagent.requests.regions = broken
        master.writers[-1].write(ax.encode(Packet(
            ax.GetNext((ax.SearchRange(INFINIBAND_MIB),)), 1, 8, 80)))
        await until(lambda: any(p.packet_id == 80 for p in master.connections[-1]))
        [failed] = [p for p in master.connections[-1] if p.packet_id == 80]
        assert isinstance(failed.pdu, ax.Response) and failed.transaction_id == 8
        assert (failed.pdu.error, failed.pdu.index) == (ax.SNMP_ERRORS["genErr"], 1)
        assert subagent.open_event.is_set() and len(master.connections) == 1  # session kept
        await subagent.stop()
    assert "AgentX request failed" in caplog.text


async def test_missing_socket_is_retried_with_a_clear_line(tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "ibsnmp.agentx")
    subagent = make_subagent(tmp_path / "absent", set())
    subagent.start()
    await until(lambda: caplog.text.count("the socket does not exist") >= 2)
    await subagent.stop()
    assert "retrying in 0.05 s" in caplog.text and "retrying in 0.1 s" in caplog.text


def test_notify_varbinds_are_the_udp_notification() -> None:
    fabric = build_fabric("fat-tree:spines=1,leaves=1,hosts=2", seed=1)
    notification = map_event(default_event(fabric, IbaTrap.BAD_P_KEY))
    item = Outgoing(notification, b"", rfc1902.TimeTicks(4321))
    varbinds = notify_varbinds(item)
    udp = notification.v2_varbinds(item.uptime)
    assert [v.name for v in varbinds] == [tuple(oid) for oid, _ in udp]
    assert varbinds[0] == VarBind((1, 3, 6, 1, 2, 1, 1, 3, 0), ax.TIME_TICKS, 4321)
    assert varbinds[1] == VarBind((1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0), OBJECT_IDENTIFIER,
                                  notification.oid)
    assert len(varbinds) > 2
    for varbind, (_, value) in zip(varbinds[2:], udp[2:]):
        assert varbind.type == tag_of(value)
        plain = value.asOctets() if isinstance(value, univ.OctetString) else int(value)
        assert varbind.value == plain
    # Encoded and read back as a Notify, the values stay the same.
    assert ax.decode(ax.encode(Packet(ax.Notify(varbinds)))).pdu == ax.Notify(varbinds)

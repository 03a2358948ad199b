"""The nodes a running agent serves, read from its IB-SM-MIB NodeInfo table
(default context): each row's GUID, NodeType and NodeDescription.

`ibsnmp fabric targets --from-agent` uses it, so the targets follow what
the agent really serves, whatever its provider.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Mapping
from typing import Any

from ibsnmp.fabric.naming import KIND_WORDS
from ibsnmp.mib.loader import definitions

from .prometheus_targets import NodeTarget, ScrapeAuth, TargetsError

TYPE_COLUMN, DESCRIPTION_COLUMN = "ibSmNodeInfoType", "ibSmNodeInfoDescription"
KIND_OF_TYPE = {int(kind): word for kind, word in KIND_WORDS.items()}  # IbNodeType is IBA's
PREFIX_AND_GUID = 16  # the row index: subnet prefix and node GUID, 8 octets each
MAX_REPETITIONS = 50


def _credentials(auth: ScrapeAuth) -> Any:
    with warnings.catch_warnings():  # pysnmp's hlapi imports pysmi's deprecated names
        warnings.simplefilter("ignore", DeprecationWarning)
        from pysnmp.hlapi.v3arch.asyncio import CommunityData, UsmUserData

    from ibsnmp.agent.engine import AUTH, PRIV

    settings = auth.auth
    if auth.version != 3:
        return CommunityData(settings.get("community", "public"), mpModel=auth.version - 1)
    level = settings.get("security_level", "noAuthNoPriv")
    try:
        auth_protocol = AUTH[settings.get("auth_protocol", "MD5")]
        priv_protocol = PRIV[settings.get("priv_protocol", "DES")]
    except KeyError as exc:
        raise TargetsError(f"auth file: unknown protocol {exc.args[0]}") from None
    if level == "authPriv":
        return UsmUserData(settings["username"], settings.get("password"),
                           settings.get("priv_password"), authProtocol=auth_protocol,
                           privProtocol=priv_protocol)
    if level == "authNoPriv":
        return UsmUserData(settings["username"], settings.get("password"),
                           authProtocol=auth_protocol)
    return UsmUserData(settings["username"])


async def _walk_column(address: tuple[str, int], auth: ScrapeAuth, column: str,
                       timeout: float) -> dict[tuple[int, ...], Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from pysnmp.hlapi.v3arch.asyncio import (ContextData, ObjectIdentity, ObjectType,
                                                 SnmpEngine, Udp6TransportTarget,
                                                 UdpTransportTarget, bulk_walk_cmd)

    root = definitions().objects[column].oid
    engine = SnmpEngine()
    found: dict[tuple[int, ...], Any] = {}
    try:
        kind = Udp6TransportTarget if ":" in address[0] else UdpTransportTarget
        target = await kind.create(address, timeout=timeout, retries=2)
        async for error, status, _index, varbinds in bulk_walk_cmd(
                engine, _credentials(auth), target, ContextData(), 0, MAX_REPETITIONS,
                ObjectType(ObjectIdentity(root)), lexicographicMode=False):
            if error or status:
                raise TargetsError(f"{address[0]}:{address[1]}: {error or status.prettyPrint()}")
            for name, value in varbinds:
                found[tuple(name)[len(root):]] = value
    finally:
        engine.close_dispatcher()
    return found


def parse_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise TargetsError(f"--agent {text!r}: give HOST:PORT")
    return host.strip("[]"), int(port)


def nodes_from_rows(types: Mapping[tuple[int, ...], Any],
                    descriptions: Mapping[tuple[int, ...], Any]) -> list[NodeTarget]:
    """One NodeTarget per NodeInfo row, by GUID; a row without a
    description is named by its GUID, as `ibsnmp fabric show` names it."""
    nodes = []
    for index, node_type in types.items():
        if len(index) != PREFIX_AND_GUID:
            continue
        guid = bytes(index[8:]).hex()
        text = descriptions.get(index)
        name = bytes(text.asOctets()).decode("utf-8", "replace") if text is not None else guid
        nodes.append(NodeTarget(guid, name, KIND_OF_TYPE.get(int(node_type), "other")))
    return sorted(nodes, key=lambda node: node.guid)


def read_agent_nodes(agent: str, auth: ScrapeAuth, timeout: float = 5.0) -> list[NodeTarget]:
    """Every node the agent at HOST:PORT lists in its NodeInfo table."""
    address = parse_address(agent)

    async def both() -> list[NodeTarget]:
        types = await _walk_column(address, auth, TYPE_COLUMN, timeout)
        descriptions = await _walk_column(address, auth, DESCRIPTION_COLUMN, timeout)
        return nodes_from_rows(types, descriptions)

    try:
        return asyncio.run(both())
    except OSError as exc:
        raise TargetsError(f"{agent}: {exc}") from None

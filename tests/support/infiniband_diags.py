"""infiniband-diags run on an ibsim fabric, their output read back as values."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.support.ibsim import Fabric


def run_diag(fabric: Fabric, *command: str) -> str:
    if shutil.which(command[0]) is None:
        pytest.skip(f"{command[0]} is not installed (Debian package infiniband-diags)")
    done = fabric.run(list(command))
    assert done.returncode == 0, done.stderr
    return done.stdout


def saquery_records(output: str) -> list[dict[str, str]]:
    """saquery's `name.....value` dumps, one dict per record."""
    records: list[dict[str, str]] = []
    for line in output.splitlines():
        if line.endswith("dump:"):
            records.append({})
        elif match := re.match(r"\s+(\w+)\.{2,}(.*)$", line):
            records[-1][match[1]] = match[2].strip()
    return records


def labelled_values(output: str) -> dict[str, str]:
    """The `Label:.....value` lines of smpquery and perfquery."""
    values = {}
    for line in output.splitlines():
        label, colon, value = line.partition(":")
        if colon and value.startswith("."):
            values[label.strip()] = value.lstrip(".")
    return values


# smpquery's labels for the NodeInfo fields, and how it prints node types.
SMPQUERY_NODE_INFO = {
    "BaseVers": "BaseVersion", "ClassVers": "ClassVersion", "NodeType": "NodeType",
    "NumPorts": "NumPorts", "SystemGuid": "SystemImageGUID", "Guid": "NodeGUID",
    "PortGuid": "PortGUID", "PartCap": "PartitionCap", "DevId": "DeviceID",
    "Revision": "Revision", "LocalPort": "LocalPortNum", "VendorId": "VendorID",
}
NODE_TYPES = {"Channel Adapter": 1, "Switch": 2, "Router": 3}


def smpquery_node_info(fabric: Fabric, target: str, directed: bool = True) -> dict[str, int]:
    """NodeInfo by `smpquery nodeinfo`: a directed route ("0,1") or a LID."""
    output = run_diag(fabric, "smpquery", *(["-D"] if directed else []), "nodeinfo", target)
    values = {SMPQUERY_NODE_INFO[label]: NODE_TYPES[value] if label == "NodeType"
              else int(value, 0)
              for label, value in labelled_values(output).items() if label in SMPQUERY_NODE_INFO}
    assert len(values) == len(SMPQUERY_NODE_INFO), output
    return values


IBNETDISCOVER_NODE = re.compile(r'^(Switch|Ca)\s+(\d+)\s+"[SH]-([0-9a-f]{16})"\s+#\s+"([^"]*)"')
IBNETDISCOVER_PORT = re.compile(
    r'^\[(\d+)\](?:\([0-9a-f]+\))?\s+"[SH]-([0-9a-f]{16})"\[(\d+)\].*\b(\d+)x(SDR|DDR|QDR)\b')
WIDTHS = {1: 1, 4: 2, 8: 4, 12: 8}  # ibnetdiscover's "4x" as a LinkWidthActive bit
SPEEDS = {"SDR": 1, "DDR": 2, "QDR": 4}


def ibnetdiscover(fabric: Fabric) -> tuple[dict[int, tuple[int, int, str]],
                                           dict[tuple[int, int], tuple[int, int, int, int]]]:
    """Nodes (type, ports, description) and each port's (peer GUID, peer port, width, speed)."""
    output = run_diag(fabric, "ibnetdiscover")
    nodes: dict[int, tuple[int, int, str]] = {}
    ports: dict[tuple[int, int], tuple[int, int, int, int]] = {}
    guid = 0
    for line in output.splitlines():
        if match := IBNETDISCOVER_NODE.match(line):
            kind, count, hex_guid, description = match.groups()
            guid = int(hex_guid, 16)
            nodes[guid] = (2 if kind == "Switch" else 1, int(count), description)
        elif match := IBNETDISCOVER_PORT.match(line):
            port, peer, peer_port, width, speed = match.groups()
            ports[(guid, int(port))] = (int(peer, 16), int(peer_port), WIDTHS[int(width)],
                                        SPEEDS[speed])
    return nodes, ports




IBROUTE_ENTRY = re.compile(r"^0x([0-9a-f]+) (\d+) :")


def ibroute(fabric: Fabric, route: str) -> dict[int, int]:
    """The unicast LFT `ibroute -D` prints for the switch at a directed route: LID -> port."""
    output = run_diag(fabric, "ibroute", "-D", route)
    return {int(m.group(1), 16): int(m.group(2))
            for m in map(IBROUTE_ENTRY.match, output.splitlines()) if m}

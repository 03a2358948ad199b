"""How a node is named and described to an NMS: one rule for the node's
sysName and sysDescr in its own SNMP context and for `ibsnmp fabric show`.

The name follows OpenSM's node name map convention: a channel adapter's
NodeDescription is "<host> <device>" ("node-17 mlx5_0", "node-17 HCA-1"),
so a CA is named by its first word, the host; a switch or router keeps
its whole description. A node whose description was not read (or is
blank) is named by its GUID in 16 hex digits, the name of its context.
"""

from __future__ import annotations

from .iba import NodeType
from .model import Node

MAX_DISPLAY_STRING = 255  # SNMPv2-TC DisplayString

KIND_NAMES = {NodeType.CA: "channel adapter", NodeType.SWITCH: "switch",
              NodeType.ROUTER: "router"}
# Short forms for tables (`ibsnmp fabric show`).
KIND_WORDS = {NodeType.CA: "ca", NodeType.SWITCH: "switch", NodeType.ROUTER: "router"}


def node_name(node: Node) -> str:
    """The node's name: its host name part for a CA, its description for
    a switch or router, its GUID (16 hex digits) where none was read."""
    description = display_text(node.description or "").strip()
    if not description:
        return f"{node.guid:016x}"
    if node.node_type is NodeType.CA:
        return description.split()[0]
    return description


def node_summary(node: Node) -> str:
    """What the node is, from what was read of it: kind, model, vendor,
    device, revision, firmware ("InfiniBand switch Quantum (MT54000),
    vendor 0x0002c9, device 0xd2f0, revision 0x00, firmware 27.2010.1202")."""
    text = f"InfiniBand {KIND_NAMES.get(node.node_type, 'node')}"
    model = display_text(node.model_name).strip()
    if model:
        text += f" {model}"
    parts = [f"{label} {value}" for label, value in (
        ("vendor", _hex(node.vendor_id, 6)), ("device", _hex(node.device_id, 4)),
        ("revision", _hex(node.revision, 2)),
        ("firmware", display_text(node.firmware_version or "").strip() or None))
        if value is not None]
    if parts:
        text += ", " + ", ".join(parts)
    return text[:MAX_DISPLAY_STRING]


def _hex(value: int | None, digits: int) -> str | None:
    return None if value is None else f"0x{value:0{digits}x}"


def display_text(text: str) -> str:
    """`text` as a DisplayString holds it: printable ASCII, at most 255
    octets (a NodeDescription is 64 octets of UTF-8; others become '?')."""
    printable = "".join(c if " " <= c <= "~" else "?" for c in text)
    return printable[:MAX_DISPLAY_STRING]

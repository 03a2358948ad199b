"""Write a fabric as `ibnetdiscover` prints it (infiniband-diags topology
format), byte for byte as the C tool lays it out, so the files it reads
and ours are interchangeable.  `ibnetdiscover_read` reads it back.
"""

from __future__ import annotations

import time

from .iba import CapabilityMask, NodeType
from .model import Fabric, Node, Port, PortRef

__all__ = ["export"]

_SPEED = {1: "SDR", 2: "DDR", 4: "QDR"}
_SPEED_EXT = {1: "FDR", 2: "EDR", 4: "HDR", 8: "NDR"}
_WIDTH = {1: "1x", 2: "4x", 4: "8x", 8: "12x", 16: "2x"}
_PREFIX = {NodeType.SWITCH: "S", NodeType.CA: "H", NodeType.ROUTER: "R"}


def export(fabric: Fabric, generated_at: float | None = None) -> str:
    """The topology text; `generated_at` (epoch seconds) fixes the header date."""
    stamp = time.ctime(time.time() if generated_at is None else generated_at)
    local = fabric.local_node
    out = [
        f"#\n# Topology file: generated on {stamp}\n#\n",
        f"# Initiated from node {local.guid:016x} port {local.port_guid:016x}\n",
    ]
    # libibnetdisc prepends each node to its type list, so the tool prints
    # each type in reverse discovery order.
    discovered = list(fabric.nodes.values())[::-1]
    for node in discovered:
        if node.is_switch:
            _switch(fabric, node, out)
    for kind in (NodeType.CA, NodeType.ROUTER):
        for node in discovered:
            if node.node_type is kind:
                _channel_adapter(fabric, node, out)
    return "".join(out)


def _name(node: Node) -> str:
    return f'"{_PREFIX[node.node_type]}-{node.guid:016x}"'


def _description(node: Node) -> str:
    # libibnetdisc keeps a NodeDescription that did not answer as zeros: the
    # tool prints it as "".
    return node.description if node.description is not None else ""


def _ids(node: Node, out: list[str]) -> None:
    out.append(f"\nvendid=0x{node.vendor_id:x}\ndevid=0x{node.device_id:x}\n")
    if node.system_image_guid:
        out.append(f"sysimgguid=0x{node.system_image_guid:x}\n")


def _switch(fabric: Fabric, node: Node, out: list[str]) -> None:
    _ids(node, out)
    port0 = node.management_port
    enhanced = "enhanced" if node.switch is not None and node.switch.enhanced_port0 else "base"
    out.append(f"switchguid=0x{node.guid:x}({node.port_guid:x})\n")
    out.append(
        f'Switch\t{node.num_ports} {_name(node)}\t\t# "{_description(node)}" {enhanced} port 0'
        f" lid {port0.lid} lmc {port0.lmc}\n"
    )
    # The tool reads extended speeds only if port 0 says it has them.
    ext_ok = _reads_extended_speeds(port0)
    fdr10 = _fdr10(fabric)
    for port in node.data_ports:
        remote = _remote(fabric, port)
        if remote is None:
            continue
        far_node, far_port = remote
        line = f"[{port.num}]\t{_name(far_node)}[{far_port.num}]"
        if not far_node.is_switch:
            line += f"({far_port.guid:x}) "
        line += (f'\t\t# "{_description(far_node)}" lid {_lid_of(far_node, far_port)} '
                 f"{_rate(port, ext_ok, port.ref in fdr10)}\n")
        out.append(line)


def _channel_adapter(fabric: Fabric, node: Node, out: list[str]) -> None:
    _ids(node, out)
    kind = "ca" if node.node_type is NodeType.CA else "rt"
    label = "Ca" if node.node_type is NodeType.CA else "Rt"
    out.append(f"{kind}guid=0x{node.guid:x}\n")
    out.append(f'{label}\t{node.num_ports} {_name(node)}\t\t# "{_description(node)}"\n')
    fdr10 = _fdr10(fabric)
    for port in node.ports:
        remote = _remote(fabric, port)
        if remote is None:
            continue
        far_node, far_port = remote
        ext_ok = _reads_extended_speeds(port)
        line = f"[{port.num}]({port.guid:x}) \t{_name(far_node)}[{far_port.num}]"
        if not far_node.is_switch:
            line += f" ({far_port.guid:x}) "
        line += (
            f'\t\t# lid {port.lid} lmc {port.lmc} "{_description(far_node)}"'
            f" lid {_lid_of(far_node, far_port)} {_rate(port, ext_ok, port.ref in fdr10)}\n"
        )
        out.append(line)


def _reads_extended_speeds(port: Port) -> bool:
    """The tool reads extended speeds only where the capability mask has
    them; a mask that was not read (a fabric from a dump) hides nothing."""
    mask = port.info.capability_mask
    return mask is None or bool(mask & CapabilityMask.IS_EXTENDED_SPEEDS_SUPPORTED)


def _remote(fabric: Fabric, port: Port) -> tuple[Node, Port] | None:
    if port.remote is None:
        return None
    far_node = fabric.nodes.get(port.remote.guid)
    far_port = far_node.port(port.remote.port) if far_node is not None else None
    if far_node is None or far_port is None:
        return None
    return far_node, far_port


def _lid_of(node: Node, port: Port) -> int:
    return node.management_port.lid if node.is_switch else port.lid


def _fdr10(fabric: Fabric) -> frozenset[PortRef]:
    """Ports a topology file showed at FDR10 (a Mellanox speed PortInfo
    cannot express: it reads QDR there); none in a simulated fabric."""
    return fabric.fdr10_ports


def _rate(port: Port, ext_ok: bool, fdr10: bool = False) -> str:
    """'4xEDR': active width, then the extended speed if one is active
    (and the tool may read it), else FDR10 where the file that made the
    fabric said so, else the original speed."""
    info = port.info
    width = _WIDTH.get(int(info.link_width_active or 0), "??")
    ext = int(info.link_speed_ext_active or 0) if ext_ok else 0
    if ext:
        return width + _SPEED_EXT.get(ext, "???")
    if fdr10:
        return width + "FDR10"
    return width + _SPEED.get(int(info.link_speed_active or 0), "???")

"""The link notification tests' port: one leaf-to-host link of a simulated fabric."""

from __future__ import annotations

from ibsnmp.fabric.model import Fabric, Port


def leaf_to_host(fabric: Fabric) -> tuple[Port, Port]:
    """leaf01's first active port cabled to a host other than the local
    node (whose notifications would go out in the default context), and
    the host's port at its other end."""
    leaf = next(n for n in fabric.nodes.values() if n.description == "leaf01")
    for port in leaf.data_ports:
        remote = port.remote
        if port.info.is_active and remote is not None and remote.guid != fabric.local_node_guid \
                and fabric.nodes[remote.guid].is_ca:
            return port, fabric.port_at(remote)
    raise AssertionError("leaf01 has no active port to a host")

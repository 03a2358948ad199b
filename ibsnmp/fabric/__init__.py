"""The fabric model: what every MIB binding reads.  Knows nothing of SNMP.

    from ibsnmp.fabric import build_fabric, routing, traffic
    fabric = build_fabric("fat-tree:spines=2,leaves=4,hosts=8", seed=1)

Snapshots never change; `changes` makes new ones from old (a port's state,
PortInfo/NodeInfo fields, error bursts, counter clears).
"""

from . import changes, counters, iba, routing, traffic
from .generators import build_fabric, generate
from .ibnetdiscover import export as export_ibnetdiscover
from .jsonexport import to_json
from .model import (
    CaInfo,
    ConnectedQp,
    Fabric,
    Link,
    LinkTraining,
    McMember,
    MulticastGroup,
    Node,
    NodeConnections,
    Partition,
    PartitionMember,
    Port,
    PortHistory,
    PortInfo,
    PortRef,
    RdConnection,
    ServiceRecord,
    SmConfig,
    SmInfo,
    SwitchInfo,
    UdEndpoint,
    VlArbEntry,
)
from .spec import FabricSpec, FatTreeSpec, SingleSpec, SpecError, parse_spec

__all__ = [
    "changes",
    "counters",
    "iba",
    "routing",
    "build_fabric",
    "generate",
    "export_ibnetdiscover",
    "to_json",
    "parse_spec",
    "SpecError",
    "FabricSpec",
    "FatTreeSpec",
    "SingleSpec",
    "CaInfo",
    "ConnectedQp",
    "Fabric",
    "Link",
    "LinkTraining",
    "McMember",
    "MulticastGroup",
    "Node",
    "NodeConnections",
    "Partition",
    "PartitionMember",
    "Port",
    "PortHistory",
    "PortInfo",
    "PortRef",
    "RdConnection",
    "ServiceRecord",
    "SmConfig",
    "SmInfo",
    "SwitchInfo",
    "UdEndpoint",
    "VlArbEntry",
]

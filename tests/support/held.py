"""A provider whose snapshot a test sets: FabricContexts and TwoPaths read it as
they read a real provider's (`snapshot`, `epoch`), and nothing else."""

from __future__ import annotations

import time

from ibsnmp.fabric.model import Fabric, PortRef


class Held:
    """`snapshot` is the fabric served until the test assigns another;
    `epoch` (monotonic seconds) is now unless given."""

    def __init__(self, fabric: Fabric, epoch: float | None = None) -> None:
        self.snapshot = fabric
        self.epoch = time.monotonic() if epoch is None else epoch


def linked_host_port(fabric: Fabric) -> PortRef:
    """The first port with a link of the first CA node (by GUID)."""
    host = next(n for _, n in sorted(fabric.nodes.items()) if n.is_ca)
    return next(p.ref for p in host.ports if p.remote is not None)

"""An in-process agent MIB with a write store, for SET tests without SNMP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pysnmp.proto import rfc1902

from ibsnmp.fabric.model import Fabric
from ibsnmp.mib.targets import FabricContexts
from ibsnmp.mib.api import NO_SUCH_INSTANCE, NO_SUCH_OBJECT, ContextTarget, Oid
from ibsnmp.mib.index import IndexCodec
from ibsnmp.mib.loader import definitions
from ibsnmp.mib.registry import build_mib
from ibsnmp.mib.write import state_value_problem
from ibsnmp.providers.simulated import SimulatedProvider
from ibsnmp.state.store import AgentState, ConfiguredProvider

DEFS = definitions()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def oid_of(name: str) -> Oid:
    return DEFS.objects[name].oid


def entry_of(column: str) -> str:
    prefix = oid_of(column)[:-1]
    return next(o.name for o in DEFS.objects.values() if o.kind == "entry" and o.oid == prefix)


def instance(column: str, *index: Any) -> Oid:
    """The OID of `column`'s instance for these index values (scalar: none)."""
    obj = DEFS.objects[column]
    if obj.kind == "scalar":
        return obj.oid + (0,)
    return obj.oid + IndexCodec(DEFS.index_of(entry_of(column))).encode(index)


def i(value: int) -> rfc1902.Integer32:
    return rfc1902.Integer32(value)


def s(value: bytes | str) -> rfc1902.OctetString:
    return rfc1902.OctetString(value)


class Agent:
    """The MIB `ibsnmp run` serves, over a simulated fabric, without SNMP."""

    def __init__(self, spec: str, seed: int = 1, path: Path | None = None, **options: Any) -> None:
        self.clock = FakeClock()
        self.spec, self.seed, self.path, self.options = spec, seed, path, options
        self.state = AgentState.open(path, state_value_problem, clock=self.clock, **options)
        self.raw = SimulatedProvider(spec, seed, watch_interval=0)
        self.provider = ConfiguredProvider(self.raw, self.state)
        self.contexts = FabricContexts(self.provider)
        self.mib = build_mib(self.state)

    def restarted(self) -> Agent:
        return Agent(self.spec, self.seed, self.path, **self.options)

    @property
    def fabric(self) -> Fabric:
        return self.provider.snapshot

    @property
    def prefix(self) -> bytes:
        return self.fabric.subnet_prefix.to_bytes(8, "big")

    def target(self, context: bytes = b"") -> ContextTarget:
        target = self.contexts(context)
        assert target is not None
        return target

    def set(self, *varbinds: tuple[Oid, Any], context: bytes = b"") -> None:
        """One SET; raises api.SetError (index = the varbind's position)."""
        self.mib.prepare_write(self.target(context), list(varbinds)).commit()

    def get(self, oid: Oid, context: bytes = b"") -> Any:
        value: Any = self.mib.get(self.target(context), oid)
        if value is NO_SUCH_INSTANCE or value is NO_SUCH_OBJECT:
            return None
        return bytes(value) if isinstance(value, rfc1902.OctetString) else int(value)

    def column(self, name: str, context: bytes = b"") -> dict[Oid, Any]:
        """Every instance of a column: suffix -> plain value."""
        base = oid_of(name)
        out: dict[Oid, Any] = {}
        oid = base
        target = self.target(context)
        while True:
            found = self.mib.get_next(target, oid)
            if found is None or found[0][: len(base)] != base:
                return out
            oid, value = found
            out[oid[len(base):]] = (bytes(value) if isinstance(value, rfc1902.OctetString)
                                    else int(value))
